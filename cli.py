"""The `llm-cost` command line: parse options, call the library, render rows.

Thin by design: every number comes from `llm_cost`. The Typer app lives in
`llm_cost/commands/app.py`, the shared options in `options.py` beside it, each area's commands in
a module of their own there. Heavy imports (numpy, matplotlib, hypothesis) happen inside the
commands that need them.

Startup is paid on every run, so `main` imports only the module of the command being run and
lets Typer build only that command (it inspects the signature of every registered command
before it dispatches), starts without the cyclic garbage collector (the imports and the Click
command allocate objects that live until exit, with few cycles: its passes over them are wasted,
about 10 ms), turns it back on as the command runs (`llm_cost.commands.app.resume_collector`,
those objects frozen out of its sight first), and skips the collector's pass over the whole heap
at exit (`_exit_without_collecting`). `app`, as imported by tests or other code, has every command.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import sys

# Command -> the module under llm_cost/commands that defines it. A new command adds its line here.
COMMAND_MODULES = {
    "model": "model", "roofline": "roofline", "catalog": "catalog",
    "capacity": "serving", "waste": "serving", "batching": "serving",
    "spec": "speculative", "gamma": "speculative", "tree": "trees", "leviathan": "speculative",
    "request": "requests", "selective": "requests", "plan": "plan",
    "table": "table", "plot": "plot",
    "check": "check",
    "validate": "calibrate", "calibrate": "calibrate",
}
MODULE_ORDER = ("model", "roofline", "catalog", "requests", "plan", "serving", "speculative", "trees", "table", "plot", "calibrate", "check")  # the order of --help


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
    _exit_without_collecting()
    collecting = gc.isenabled()
    gc.disable()  # while the process starts; the command runs with it (`app.resume_collector`)
    try:
        _run(sys.argv[1:] if argv is None else argv, collecting)
    finally:  # the collector as it was, over every object (a caller of `main` in a long-lived process)
        state = getattr(sys.modules.get("llm_cost.commands.app"), "COLLECTOR", {})
        if state.pop("frozen", False):
            gc.unfreeze()
        state.update(paused=False, frozen=False)
        if collecting:
            gc.enable()


def _run(args: list[str], collecting: bool) -> None:
    first = next((arg.lower() for arg in args if not arg.startswith("-")), None)  # names ignore case
    module = COMMAND_MODULES.get(first)
    app = _register([module] if module else MODULE_ORDER)
    importlib.import_module("llm_cost.commands.app").COLLECTOR["paused"] = collecting
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


def _exit_without_collecting() -> None:
    """At exit, skip the collector's last passes over every object the process holds.

    Finalizing the interpreter clears each module and then collects the cycles left, which with
    typer and rich loaded takes 10-20 ms of a 100-150 ms command: memory freed that the OS takes
    back anyway. `gc.freeze()`, run as an atexit handler, moves the live objects out of the
    collector's sight, so exit is the module clearing alone. Nothing observable changes: every
    atexit handler runs, stdout and stderr are flushed and the exit code is kept as usual, and an
    object freed by its last reference (a file closed by it) is finalized as before; only objects
    held in reference cycles at exit stay unfreed. Registered, not run now, so that a caller of
    `main` in a long-lived process keeps its collector until that process ends.
    """
    atexit.unregister(gc.freeze)  # once, however often `main` runs
    atexit.register(gc.freeze)


if __name__ == "__main__":
    main()
