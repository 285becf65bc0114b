"""The `llm-cost` command line: parse options, call the library, render rows.

Thin by design: every number comes from `llm_cost`. The Typer app and the shared options live in
`llm_cost/commands/base.py`; each area's commands in a module beside it. Heavy imports (numpy,
matplotlib, hypothesis) happen inside the commands that need them.

Startup is paid on every run, so `main` imports only the module of the command being run and
lets Typer build only that command (it inspects the signature of every registered command
before it dispatches). `app`, as imported by tests or other code, has every command.
"""

from __future__ import annotations

import importlib
import sys

# Command -> the module under llm_cost/commands that defines it. A new command adds its line here.
COMMAND_MODULES = {
    "model": "model", "roofline": "roofline", "catalog": "catalog",
    "capacity": "serving", "waste": "serving", "batching": "serving",
    "spec": "speculative", "gamma": "speculative", "tree": "speculative", "leviathan": "speculative",
    "request": "requests", "selective": "requests", "plan": "plan",
    "table": "table", "plot": "plot",
    "check": "check",
    "validate": "calibrate", "calibrate": "calibrate",
}
MODULE_ORDER = ("model", "roofline", "catalog", "requests", "plan", "serving", "speculative", "table", "plot", "calibrate", "check")  # the order of --help


def _register(modules) -> object:
    for name in modules:
        importlib.import_module(f"llm_cost.commands.{name}")
    return importlib.import_module("llm_cost.commands.app").app


def __getattr__(name: str):
    if name == "app":  # `from llm_cost.cli import app`: the whole app
        return _register(MODULE_ORDER)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str] | None = None) -> None:
    """Entry point of the `llm-cost` script."""
    args = sys.argv[1:] if argv is None else argv
    first = next((a.lower() for a in args if not a.startswith("-")), None)  # names ignore case
    module = COMMAND_MODULES.get(first)
    app = _register([module] if module else MODULE_ORDER)
    if module is None:  # --help, --version, an unknown command: every command, as `app` has
        app(args=args)
        return
    # Typer builds a Click command, inspecting the signature, of every registered command before
    # it dispatches; the module's other commands cannot run now, so only this one is built.
    registered = app.registered_commands
    app.registered_commands = [info for info in registered if info.name == first]
    try:
        app(args=args)
    finally:
        app.registered_commands = registered


if __name__ == "__main__":
    main()
