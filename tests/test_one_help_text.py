"""Issue 24.4: a CLI flag has ONE help text and means one thing, of one type, in every command.

`test_structure.option_declarations` gathers every option as Typer reads it (each registered command's
signature, the deployment and prefix options included); here each flag's declarations are compared.
A flag may be of two kinds, one value in some commands and a repeatable list in others, only where
`SINGLE_AND_LIST` says why; its list form's help is then the single form's followed by the suffix
`options.repeatable` writes (" Repeatable." or " Repeatable: how."), nothing else differs. Since every
command shows its flag's one text, a shared flag's text names only commands that show it (a remark for one
command goes in its docstring, or in the suffix of the form only it takes); a short flag names one long one.
"""

from __future__ import annotations

import re
import typing

from test_structure import option_declarations

# Flags deliberately of two kinds: one value beside a repeatable list (rows or curves, or a search's grid).
SINGLE_AND_LIST = {
    "--model": "one model to serve (batching, spec, tree, waste, plan) or a row each (request, capacity, ...)",
    "--gpu": "one GPU to serve on, or a row each / the accelerators plan searches",
    "--mfu": "one override (request, roofline, plan) or a row or curve each (spec, plot)",
    "--batch": "table's one batch beside the others' rows of batches",
    "--context": "one context beside table's rows of contexts",
    "--isl": "one request's prompt (plan, table, plot) beside request's rows and waste's batch",
    "--osl": "one request's output (plan, plot) beside request's rows and waste's batch",
    "--alpha": "table's one acceptance rate beside the sweeps' rows or curves",
    "--gamma": "table's one gamma beside the sweeps' rows or curves",
    "--mtp-alpha": "plan's one MTP acceptance beside table's rows",
    "--c": "one draft cost (request, batching, plan, table, tree) beside the sweeps' rows or curves",
    "--tau": "request's one mean accepted length beside spec's rows",
    "--max-batch": "one batch limit to serve with beside plot's curves",
    "--scheduler": "batching's one scheduler beside plot's curves",
    "--tp": "a deployment's one degree beside the degrees plan searches",
    "--pp": "a deployment's one degree beside the degrees plan searches",
    "--ep": "a deployment's one degree beside the degrees plan searches",
    "--kv-dtype": "a deployment's one KV type beside the types plan searches",
    "--weights": "one weight format beside the formats plan searches",
    "--usd-per-gpu-hour": "one GPU's price beside plan's price of each GPU searched",
}
# Flags whose values are of two types (beyond one value vs a list of the same), and why.
TWO_TYPES = {
    "--max-gen": "capacity counts a workload's mean (the lecture's 272 + 64.5: fractional, a float); batching "
                 "gives every simulated request its whole tokens (an int); results must not change",
    "--usd-per-gpu-hour": "plan prices each GPU it searches as GPU=PRICE (a string); the others take the one "
                          "GPU's price (a float)",
    "--disaggregate": "plan's is a switch (search the split, a bool); batching's is the split P:D (a string)",
}
SUFFIX = " Repeatable"


def kind(annotation) -> tuple[str, bool]:
    """(element type, repeatable) of an option's type, Optional taken off: `Optional[List[int]]` is (int, True)."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) is typing.Union and len(args) == 1:
        return kind(args[0])
    if typing.get_origin(annotation) in (list, typing.List):
        return str(typing.get_args(annotation)[0]), True
    return str(annotation), False


def declared() -> dict[str, list[tuple[str, str, bool, set]]]:
    """--flag -> [(help, element type, repeatable, commands)] over every command."""
    return {flag: [(info.help or "", *kind(base), users) for info, base, users in infos.values()]
            for flag, infos in option_declarations().items()}


def help_problems(found: dict, two_kinds: dict) -> list[str]:
    """Each flag with more than one help text, unless it is in `two_kinds` and its list form's help
    is its single form's with the suffix; and each `two_kinds` entry no flag needs (stale)."""
    problems = []
    for flag, decls in found.items():
        single = {help_text for help_text, _, many, _ in decls if not many}
        lists = {help_text for help_text, _, many, _ in decls if many}
        if flag not in two_kinds:
            if len(single | lists) > 1:
                problems.append(f"{flag}: {len(single | lists)} help texts {sorted(single | lists)}")
            continue
        if len(single) != 1 or len(lists) != 1:
            problems.append(f"{flag}: allowed two kinds, found single {sorted(single)} and lists {sorted(lists)}")
            continue
        (base,), (listed,) = single, lists
        if not listed.startswith(base + SUFFIX):
            problems.append(f"{flag}: the list's help {listed!r} is not {base!r} + '{SUFFIX}...'")
    problems += [f"{flag}: in the allow-list of two kinds but declared one way"
                 for flag in two_kinds if flag in found and len({many for *_, many, _ in found[flag]}) < 2]
    problems += [f"{flag}: in the allow-list but no command declares it" for flag in two_kinds if flag not in found]
    return problems


def type_problems(found: dict, two_types: dict) -> list[str]:
    """Each flag whose values are of more than one type, unless in `two_types`; and stale entries."""
    problems = []
    for flag, decls in found.items():
        types = {element: sorted(users) for _, element, _, users in decls}
        if (len(types) > 1) != (flag in two_types):
            problems.append(f"{flag}: types {types}" if len(types) > 1 else f"{flag}: allowed two types, has one")
    return problems


def test_every_flag_has_one_help_text():
    problems = help_problems(declared(), SINGLE_AND_LIST)
    assert not problems, "\n".join(problems)


def test_a_flag_has_one_type_everywhere():
    problems = type_problems(declared(), TWO_TYPES)
    assert not problems, "\n".join(problems)


def short_flags(found: dict) -> dict[str, dict[str, set]]:
    """-x -> {--long flag it stands for: the commands where it does}, over `option_declarations()`."""
    longs: dict[str, dict[str, set]] = {}
    for flag, infos in found.items():
        for info, _, users in infos.values():
            for short in [d for d in (info.default, *(info.param_decls or ())) if isinstance(d, str)
                          and d.startswith("-") and not d.startswith("--")]:
                longs.setdefault(short, {}).setdefault(flag, set()).update(users)
    return longs


def test_a_short_flag_names_one_option():
    # -o is a file everywhere, -m a model, -r roofline's --rows (selective's --request has no short form):
    # a short flag stands for one long flag in every command
    longs = short_flags(option_declarations())
    assert {"-f", "-m", "-r"} <= set(longs)  # the walk found the short flags
    twice = {short: {flag: sorted(users) for flag, users in flags.items()}
             for short, flags in longs.items() if len(flags) > 1}
    assert not twice, twice


def commands_named(text: str, commands) -> set[str]:
    """The `commands` a help text speaks of, as the help texts name one: `X: ` opening a clause (at the start,
    after "(", ": ", "; " or ". "), `X only`, `X search...`, `X --flag`, or `X's` not after an article ("a
    model's" is a model's). A pointer `llm-cost X` (a command to run, true in any --help) is not one; names are
    lowercase, so "Leviathan's c" is the paper's."""
    text = re.sub(r"llm-cost [a-z]+", "", text)
    alternation = "|".join(map(re.escape, commands))
    clause = rf"(?:^|(?<=\()|(?<=: )|(?<=; )|(?<=\. ))({alternation}): "
    remark = rf"(?<![\w-])({alternation})(?: only\b| search| --)"
    owner = rf"(?<![\w-])(?<!\ba )(?<!\bthe )(?<!\bone )(?<!\beach )(?<!\bevery )(?<!\bits )({alternation})'s\b"
    return {match.group(1) for pattern in (clause, remark, owner) for match in re.finditer(pattern, text)}


def foreign_names(found: dict, commands) -> list[str]:
    """Each help text of a shared flag (two commands or more) naming a command that does not show that text:
    a remark for one command belongs in that command's docstring, or in the suffix of the form it takes."""
    problems = []
    for flag, decls in found.items():
        if len(set().union(*(users for *_, users in decls))) < 2:
            continue  # one command's own option: its help may speak of plot's kinds (roofline, ...)
        showing: dict[str, set] = {}
        for help_text, *_, users in decls:
            showing.setdefault(help_text, set()).update(users)
        problems += [f"{flag}: {sorted(commands_named(text, commands) - users)} named in {text!r}, shown by "
                     f"{sorted(users)}" for text, users in showing.items() if commands_named(text, commands) - users]
    return problems


def test_a_shared_help_text_names_only_commands_showing_it():
    from llm_cost.cli import COMMAND_MODULES

    problems = foreign_names(declared(), COMMAND_MODULES)
    assert not problems, "\n".join(problems)


def test_the_command_finder_reads_remarks_not_words():
    commands = ("plan", "batching", "model", "waste", "tree", "gamma", "calibrate", "leviathan")
    assert commands_named("Tokens (plan: >= 2; waste: the lecture's).", commands) == {"plan", "waste"}
    assert commands_named("Each. Repeatable: plan searches each; batching only: x.", commands) == {"plan", "batching"}
    assert commands_named("none (a tree: one level's; a model's MTP; poisson or gamma:SHAPE; gamma gaps)", commands) == set()
    assert commands_named("A file (llm-cost calibrate -o); Leviathan's c; plan's price; plan --verify", commands) == {"plan"}
    one = ("Tokens (waste: its batch).", "<class 'int'>", False, {"plan"})
    assert foreign_names({"--x": [one, (one[0], "<class 'int'>", True, {"waste"})]}, commands) == []
    assert foreign_names({"--x": [one, (one[0] + " Repeatable.", "<class 'int'>", True, {"waste"})]}, commands) != []
    assert foreign_names({"--x": [one]}, commands) == []  # one command's own option


def test_the_checks_find_what_they_look_for():
    one = ("Tokens.", "<class 'int'>", False, {"a"})
    many = ("Tokens. Repeatable: a row each.", "<class 'int'>", True, {"b"})
    other = ("Other tokens.", "<class 'float'>", False, {"c"})
    assert help_problems({"--x": [one, many]}, {"--x": "why"}) == []
    assert help_problems({"--x": [one, many]}, {}) != []  # two texts, not allowed
    assert help_problems({"--x": [one, other]}, {}) != []  # two texts, both single
    assert help_problems({"--x": [other, many]}, {"--x": "why"}) != []  # the list's is not the single's + suffix
    assert help_problems({"--x": [one]}, {"--x": "why"}) != []  # a stale allow-list entry
    assert type_problems({"--x": [one, other]}, {}) != [] and type_problems({"--x": [one, other]}, {"--x": ""}) == []
    assert type_problems({"--x": [one, many]}, {}) == [] and type_problems({"--x": [one]}, {"--x": ""}) != []
    assert kind(typing.Optional[typing.List[int]]) == ("<class 'int'>", True) and kind(float) == ("<class 'float'>", False)
