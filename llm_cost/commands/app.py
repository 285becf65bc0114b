"""The Typer app, its error handling, and the options every command shares.

Command modules beside this one register on `app` with `command`; `cli.py` imports them.
"""

from __future__ import annotations

import functools
import gc
import sys
from typing import Annotated

import typer
from typer.core import TyperCommand, TyperGroup

from llm_cost import __version__
from llm_cost.errors import LlmCostError
from llm_cost.report.render import FORMATS

try:  # typer >= 0.26 vendors click
    from typer._click.exceptions import ClickException, UsageError
    from typer._click.globals import get_current_context
except ImportError:  # pragma: no cover - older typer depends on click
    from click import get_current_context
    from click.exceptions import ClickException, UsageError

EXIT_BAD_INPUT = 2


LONGEST_WORD = 120  # characters of one word an error line echoes (a 4 KB value is cut to its start)


def shortened(message: str) -> str:
    """`message` on one line with every word longer than LONGEST_WORD cut to its start and its length:
    an error echoes what the user gave, never 4 KB of it."""
    import re

    one_line = " ".join(message.split())
    return re.sub(rf"\S{{{LONGEST_WORD + 1},}}",
                  lambda match: f"{match.group()[:40]}... ({len(match.group())} characters)", one_line)


class OneLineErrors(TyperGroup):
    """Usage errors (a bad number, an unknown option) as one line on stderr, exit 2, no usage dump."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except ClickException as err:
            if type(err).__name__ == "NoArgsIsHelpError":  # bare `llm-cost`: the help, not an error
                typer.echo(err.format_message())
                sys.exit(0)
            say(f"Error: {shortened(err.format_message())}")
            sys.exit(err.exit_code)
        except typer.Abort:
            typer.echo("Aborted.", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


# Flags a command renamed (issue 24.4): the old one is refused with the new one's name. waste's per-request
# lengths were --prompt and --output; --output is a file in every other command, --prompt capacity's mean.
RENAMED = {"waste": {"--prompt": "--isl", "--output": "--osl"}}


class OneValueCommand(TyperCommand):
    """A command whose single-value options refuse a second value (`--gpu h100-sxm --gpu h200`):
    click keeps the last one silently; here it is an error naming the option.

    The parser reports each occurrence of an option in the order it met them, so the arguments are
    parsed once first to count them (no callbacks run), then as usual.
    """

    def parse_args(self, ctx, args):
        renamed = RENAMED.get(ctx.info_name, {})
        old = next((arg.partition("=")[0].lower() for arg in args if arg.partition("=")[0].lower() in renamed), None)
        if old:
            raise UsageError(f"{old} is now {renamed[old]} (each request's tokens, as `request` names them)", ctx=ctx)
        if not ctx.resilient_parsing:
            _, _, order = self.make_parser(ctx).parse_args(args=list(args))
            seen = set()
            for param in order:
                if (param.param_type_name != "option" or param.multiple or param.nargs != 1
                        or param.is_eager):  # repeatable, or --help / --version
                    continue
                if param.name in seen:
                    given = _given(param, args)
                    got = f", got {', '.join(given)}" if len(given) > 1 else ", given more than once"
                    if param.is_flag:
                        name = "/".join([max(param.opts, key=len), *param.secondary_opts])
                        raise UsageError(f"{name} is one switch: give it once{got}", ctx=ctx)
                    raise UsageError(f"{max(param.opts, key=len)} takes one value{got}", ctx=ctx)
                seen.add(param.name)
        return super().parse_args(ctx, args)


def _given(param, args) -> list[str]:
    """What `args` gave the option `param`, occurrence by occurrence (`--gpu h200`: h200; a flag:
    itself)."""
    flags = [*param.opts, *param.secondary_opts]
    given = []
    for index, arg in enumerate(args):
        if arg == "--":
            break
        if arg.lower() in flags:  # option names ignore case (the app's token_normalize_func)
            given.append(arg if param.is_flag else (args[index + 1] if index + 1 < len(args) else ""))
        elif not param.is_flag and any(arg.lower().startswith(flag + "=") for flag in flags if flag.startswith("--")):
            given.append(arg.partition("=")[2])
    return given


app = typer.Typer(
    cls=OneLineErrors,
    name="llm-cost",
    help="What LLM inference costs on an accelerator: roofline time, bytes, capacity, "
         "batching and speculative decoding. SI inside; GB = 1e9 bytes.",
    no_args_is_help=True,
    add_completion=False,
    context_settings={"token_normalize_func": str.lower},  # `Roofline --GPU h100` as `roofline --gpu h100`
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

# `llm-cost` (cli.main) sets "paused" when it starts without the collector; "frozen" once the command
# froze the start's objects (`resume_collector`), so that main can give them back when it returns
COLLECTOR = {"paused": False, "frozen": False}


def resume_collector() -> None:
    """The collector back on as the command runs, after a start without it (cli.main): the objects the
    start made (modules, classes, the Click command: they live until exit) frozen first, out of the
    collector's sight, so that its first passes do not scan them all. A no-op otherwise (`app` called
    by tests or other code keeps the collector as it found it)."""
    if COLLECTOR["paused"]:
        COLLECTOR["paused"] = False
        if gc.get_freeze_count() == 0:  # a caller that froze objects of its own keeps them (and ours) frozen
            COLLECTOR["frozen"] = True
            gc.freeze()
        gc.enable()


def command(*names, **kwargs):
    """Register a command whose library errors become one line on stderr and exit code 2."""

    def decorate(fn):
        @functools.wraps(fn)
        def run(*args, **kw):
            from llm_cost.commands.progress import QUIET

            resume_collector()

            QUIET["on"] = bool(kw.get("quiet", False))  # --quiet: this run only
            try:
                return fn(*args, **kw)
            except LlmCostError as err:
                say(f"Error: {shortened(_as_flags(err))}")
                raise typer.Exit(EXIT_BAD_INPUT) from None
            finally:
                QUIET["on"] = False

        return app.command(*names, **{"cls": OneValueCommand, **kwargs})(run)

    return decorate


def given(name: str, value):
    """`value` if the user gave option `name` (on the command line or from the environment), None where
    Typer filled in its declared default: what was given is read from the parser, not guessed by
    comparing the value with the default. Outside a command (no parser), `value`."""
    ctx = get_current_context(silent=True)
    if ctx is None:
        return value
    source = ctx.get_parameter_source(name)
    return None if source is None or source.name in ("DEFAULT", "DEFAULT_MAP") else value


def _as_flags(err: LlmCostError) -> str:
    """The library's message with the parameters it names written as this command's flags."""
    if not err.params:
        return str(err)
    from llm_cost.commands.parse import flags_in

    ctx = get_current_context(silent=True)
    options = ctx.command.params if ctx is not None else []
    flags = {option.name: max(option.opts, key=len) for option in options
             if option.opts and option.opts[0].startswith("-")}
    return flags_in(str(err), err.params, flags)


def say(line: str) -> None:
    """An "Error: ...", "Warning: ..." or "Note: ..." line on stderr: ONE line when stderr is piped (a script greps it);
    on a terminal wrapped to its width at word boundaries, continuation lines indented two spaces
    (a word longer than the width stays whole)."""
    import os

    try:
        width = os.get_terminal_size(sys.stderr.fileno()).columns if sys.stderr.isatty() else 0
    except (AttributeError, OSError, ValueError):  # no file descriptor (a test runner's buffer)
        width = 0
    if width >= 20:
        import textwrap

        line = textwrap.fill(line, width, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)
    typer.echo(line, err=True)


def warn(text: str) -> None:
    """One warning on stderr ("Warning: TEXT"), wrapped as `say` does."""
    say(f"Warning: {text}")


def note(text: str) -> None:
    """One line on stderr beside the output (an option that changed nothing, and how to make it count);
    none with --quiet."""
    from llm_cost.commands.progress import quiet

    if not quiet():
        say(f"Note: {text}")


EXIT_INTERRUPTED = 130  # Ctrl-C: the shell's 128 + SIGINT


def interrupted(done: int, total: int, what: str) -> None:
    """After Ctrl-C, once the rows that finished are printed: "Warning: interrupted: N of M WHAT finished"
    on stderr (even with --quiet: it is about the result), exit 130; none finished: nothing printed, not said to be."""
    warn(f"interrupted: {done} of {total} {what} finished" + ("; the rows printed are those" if done else ""))
    raise typer.Exit(EXIT_INTERRUPTED)


def warn_unfit(rows, strict: bool = False, skipped: int = 0, what: str = "point",
               suffix: str = " (the times assume it does)") -> None:
    """One warning line on stderr when rows do not fit (`fits` False, `fit_note`): the reason, or with
    several rows "N of M rows do not fit; the worst: ..." (the largest shortfall); one line for the
    `skipped` points a search left out. `--strict` exits 2 (after the output) when a printed row does
    not fit (a search that left points out still printed rows that run)."""
    unfit = [row for row in rows if row.get("fits") is False]
    if unfit:
        worst = max(unfit, key=lambda row: (row.get("memory_needed_bytes") or 0)
                    - (row.get("memory_available_bytes") or 0))
        if len({row.get("fit_note") for row in unfit}) == 1:
            warn(f"does not fit: {worst.get('fit_note')}{suffix}")
        else:
            warn(f"{len(unfit)} of {len(rows)} rows do not fit; the worst: {worst.get('fit_note')}{suffix}")
    if skipped:
        warn(f"skipped {skipped} {what}{'s' if skipped != 1 else ''} that do not fit")
    if strict and unfit:
        raise typer.Exit(EXIT_BAD_INPUT)


def emit(rows, columns, fmt: str, **kwargs) -> None:
    from llm_cost.commands.parse import choice
    from llm_cost.report.render import render

    render(rows, columns, choice("fmt", fmt, FORMATS), **kwargs)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"llm-cost {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """What LLM inference costs on an accelerator. SI inside; GB = 1e9 bytes."""
