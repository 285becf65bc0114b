"""Startup time of `llm-cost` commands against the import floor each one cannot avoid, same run.

Each command is timed against the Python process that only imports what its output needs:

    llm-cost model llama-3-8b                   vs  python -c "import typer, rich.console, rich.table"
    llm-cost spec --alpha 0.8 --gamma 4 --batch 64
                                                vs  python -c "import typer, rich.console, rich.table, numpy"

The commands run as `python -m llm_cost.cli ...` with this interpreter (the `llm-cost` script
wrapper adds one `import re` on top). Runs are interleaved (floor, command, floor, command, ...)
so that a slow spell of the machine hits both sides. Prints the machine, the median and the
quartiles of each side, and the ratio of medians (target: 1.15x or less); the ratio range is
(command q1 / floor q3) to (command q3 / floor q1).

Two settings: "as run" inherits the environment; "bytecode cached" points PYTHONPYCACHEPREFIX at
a temporary folder (warmed first) and clears PYTHONDONTWRITEBYTECODE, as an installed package
has .pyc files. With PYTHONDONTWRITEBYTECODE=1 (set in some sandboxes) a source checkout's
modules are compiled on every run while typer, rich and numpy load their installed .pyc, so the
first setting charges the command for compiling the checkout and the floor for nothing.

Usage: python bench/cli_startup.py [RUNS]   (default 30)
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1.15

CASES = [  # (label, command arguments, the floor's imports)
    ("model llama-3-8b", ["model", "llama-3-8b"], "import typer, rich.console, rich.table"),
    ("spec --alpha 0.8 --gamma 4 --batch 64", ["spec", "--alpha", "0.8", "--gamma", "4", "--batch", "64"],
     "import typer, rich.console, rich.table, numpy"),
]


def machine() -> str:
    """Platform, CPUs, Python and numpy versions: what a timing needs to be compared."""
    import numpy

    return (f"{platform.platform()}, {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
            f"Python {platform.python_version()}, numpy {numpy.__version__}")


def seconds(cmd: list[str], env: dict) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=ROOT, env=env)
    return time.perf_counter() - start


def quartiles(samples: list[float]) -> tuple[float, float, float]:
    q1, q2, q3 = statistics.quantiles(samples, n=4)
    return q1, q2, q3


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    print(f"machine: {machine()}")
    print(f"command: {sys.executable} -m llm_cost.cli ...; {runs} interleaved runs per side; "
          f"ms as median [q1-q3]")
    with tempfile.TemporaryDirectory() as cache:
        cached = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        cached["PYTHONPYCACHEPREFIX"] = cache
        bytecode = "not written" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "as the environment has it"
        for setting, env in ((f"as run (checkout bytecode {bytecode})", dict(os.environ)),
                             ("bytecode cached", cached)):
            print(f"-- {setting}")
            for label, args, floor_imports in CASES:
                floor_cmd = [sys.executable, "-c", floor_imports]
                cli_cmd = [sys.executable, "-m", "llm_cost.cli", *args]
                for _ in range(2):  # warm the file cache (and the bytecode cache)
                    seconds(floor_cmd, env), seconds(cli_cmd, env)
                floor, cli = [], []
                for _ in range(runs):
                    floor.append(seconds(floor_cmd, env))
                    cli.append(seconds(cli_cmd, env))
                report(label, floor_imports, floor, cli)


def report(label: str, floor_imports: str, floor: list[float], cli: list[float]) -> None:
    f1, f2, f3 = quartiles(floor)
    c1, c2, c3 = quartiles(cli)
    ratio = c2 / f2
    print(f"llm-cost {label}")
    print(f"  floor python -c '{floor_imports}': {f2 * 1e3:6.1f} ms [{f1 * 1e3:.1f}-{f3 * 1e3:.1f}]")
    print(f"  command: {c2 * 1e3:6.1f} ms [{c1 * 1e3:.1f}-{c3 * 1e3:.1f}]")
    print(f"  ratio {ratio:.2f}x [{c1 / f3:.2f}-{c3 / f1:.2f}], beyond the floor {(c2 - f2) * 1e3:+.1f} ms: "
          f"{'meets' if ratio <= TARGET else 'does NOT meet'} the {TARGET:g}x target")


if __name__ == "__main__":
    main()
