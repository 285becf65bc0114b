"""Issue 24.4: library errors name parameters, the CLI maps them to flags (`commands.parse.flags_in`).

No module below `llm_cost/commands/` raises a message, or checks a value under a name, that holds a
`--flag`: an AST scan of the string constants in every `raise` statement and in the name argument
of every `check_*` call. Another program's flags in `code` (backticks) are the user's to type there
and are not ours (`executor`'s `ray start --head`)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import llm_cost

LIBRARY = Path(llm_cost.__file__).parent
FRONT_END = LIBRARY / "commands"
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9_-]*")
CODE = re.compile(r"`[^`]*`")


def _strings(node):
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            yield sub.value


def _messages(tree):
    """(line, text) of each string constant a raise holds and of each check_* call's first argument."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            yield from ((node.lineno, s) for s in _strings(node.exc))
        elif isinstance(node, ast.Call) and node.args:
            name = getattr(node.func, "id", getattr(node.func, "attr", ""))
            if name.startswith("check_"):
                yield from ((node.lineno, s) for s in _strings(node.args[0]))


def flags_in_library_messages(root: Path = LIBRARY) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        if FRONT_END in path.parents:
            continue
        for line, text in _messages(ast.parse(path.read_text(), str(path))):
            for flag in FLAG.findall(CODE.sub("", text)):
                found.append(f"{path.relative_to(root.parent)}:{line}: {flag}")
    return found


def test_no_library_message_names_a_cli_flag():
    assert flags_in_library_messages() == []


def test_the_scan_finds_a_flag_in_a_raise_and_in_a_check(tmp_path):
    # the scan itself can fail: a raise and a check naming flags are found, code in backticks is not
    (tmp_path / "m.py").write_text(
        'def f(x):\n'
        '    check_number("--usd-per-kwh", x, low=0)\n'
        '    if x:\n'
        '        raise ValueError(f"give --tp or {x}")\n'
        '    raise ValueError("run `ray start --head` first")\n')
    assert flags_in_library_messages(tmp_path) == ["tmp_path_name/m.py:2: --usd-per-kwh".replace(
        "tmp_path_name", tmp_path.name), f"{tmp_path.name}/m.py:4: --tp"]


def test_the_cli_maps_the_parameter_back_to_its_flag():
    from llm_cost.commands.parse import flags_in

    from llm_cost.errors import InvalidValueError

    try:
        from llm_cost.roofline.energy import add_energy_usd
        add_energy_usd([], -1.0)
    except InvalidValueError as err:
        assert err.params == ("usd_per_kwh",)
        assert flags_in(str(err), err.params, {"usd_per_kwh": "--usd-per-kwh"}).startswith("--usd-per-kwh must be")
    else:
        raise AssertionError("a negative price passed")
