"""Startup time of `llm-cost` commands against the import floor each one cannot avoid, same run.

Each command is timed against the Python process that only imports what its output needs:

    llm-cost model llama-3-8b                   vs  python -c "import typer, rich.console, rich.table"
    llm-cost spec --alpha 0.8 --gamma 4 --batch 64
                                                vs  python -c "import typer, rich.console, rich.table, numpy"

The commands run as `python -m llm_cost.cli ...` with this interpreter (the `llm-cost` script
wrapper adds one `import re` on top). Runs are interleaved (floor, command, floor with the same
exit, floor, ...) so that a slow spell of the machine hits every side. Prints the machine, the
median and the quartiles of each side, and the ratio of medians (target: 1.15x or less); the
ratio range is (command q1 / floor q3) to (command q3 / floor q1). Wall time is the target; the
CPU time of each child (user + system, from wait4) is printed beside it, as it moves less when
other work shares the CPUs (numpy's thread pool makes it exceed wall time on the spec floor).

`llm-cost` starts without the cyclic collector (on again, the start's objects frozen, as the
command runs) and skips the collector's passes over the whole heap at exit (`gc.freeze()` as an
atexit handler, see cli.py), which the plain floor pays. So that the saving can be told apart from
the command's own work, a third side times the floor with the same collector settings ("floor,
same gc": its imports without the collector, then frozen, and the same exit), and its ratio is
printed too; the target is against the floor as defined above.

Two settings: "as run" inherits the environment; "bytecode cached" points PYTHONPYCACHEPREFIX at
a temporary folder (warmed first) and clears PYTHONDONTWRITEBYTECODE, as an installed package
has .pyc files. With PYTHONDONTWRITEBYTECODE=1 (set in some sandboxes) a source checkout's
modules are compiled on every run while typer, rich and numpy load their installed .pyc, so the
first setting charges the command for compiling the checkout and the floor for nothing.

Usage: python bench/cli_startup.py [RUNS] [CASE]   (default 30 runs; CASE: model or spec, default both)
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


SAME_GC = ("import atexit, gc; gc.disable(); {}; gc.freeze(); gc.enable(); atexit.register(gc.freeze)")
# ^ the floor with llm-cost's collector settings (cli.py): off while it imports, frozen, and its exit


def seconds(cmd: list[str], env: dict) -> tuple[float, float]:
    """Wall time and CPU time (user + system) of one run of `cmd`."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, cwd=ROOT, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, cmd)
    return wall, usage.ru_utime + usage.ru_stime


def quartiles(samples: list[float]) -> tuple[float, float, float]:
    q1, q2, q3 = statistics.quantiles(samples, n=4)
    return q1, q2, q3


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    cases = [c for c in CASES if len(sys.argv) < 3 or c[0].startswith(sys.argv[2])]
    print(f"machine: {machine()}")
    print(f"command: {sys.executable} -m llm_cost.cli ...;")  # a path of its own line: no line past 100 beside it
    print(f"  {runs} interleaved runs per side; ms as median [q1-q3]")
    with tempfile.TemporaryDirectory() as cache:
        cached = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        cached["PYTHONPYCACHEPREFIX"] = cache
        bytecode = "not written" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "as the environment has it"
        for setting, env in ((f"as run (checkout bytecode {bytecode})", dict(os.environ)),
                             ("bytecode cached", cached)):
            print(f"-- {setting}")
            for label, args, floor_imports in cases:
                sides = {"floor": [sys.executable, "-c", floor_imports],
                         "command": [sys.executable, "-m", "llm_cost.cli", *args],
                         "floor, same gc": [sys.executable, "-c", SAME_GC.format(floor_imports)]}
                for _ in range(2):  # warm the file cache (and the bytecode cache)
                    for cmd in sides.values():
                        seconds(cmd, env)
                samples = {side: [] for side in sides}
                for _ in range(runs):
                    for side, cmd in sides.items():
                        samples[side].append(seconds(cmd, env))
                report(label, floor_imports, samples)


def report(label: str, floor_imports: str, samples: dict[str, list[tuple[float, float]]]) -> None:
    wall = {side: [w for w, _ in s] for side, s in samples.items()}
    cpu = {side: statistics.median(c for _, c in s) for side, s in samples.items()}
    f1, f2, f3 = quartiles(wall["floor"])
    c1, c2, c3 = quartiles(wall["command"])
    e2 = statistics.median(wall["floor, same gc"])
    ratio = c2 / f2
    print(f"llm-cost {label}")
    print(f"  floor python -c '{floor_imports}':")  # the imports on their own line: they vary in length
    print(f"    {f2 * 1e3:6.1f} ms [{f1 * 1e3:.1f}-{f3 * 1e3:.1f}], CPU {cpu['floor'] * 1e3:.1f} ms")
    print(f"  command: {c2 * 1e3:6.1f} ms [{c1 * 1e3:.1f}-{c3 * 1e3:.1f}], CPU {cpu['command'] * 1e3:.1f} ms")
    print(f"  ratio {ratio:.2f}x [{c1 / f3:.2f}-{c3 / f1:.2f}] (CPU {cpu['command'] / cpu['floor']:.2f}x), "
          f"beyond the floor {(c2 - f2) * 1e3:+.1f} ms:")
    print(f"    {'meets' if ratio <= TARGET else 'does NOT meet'} the {TARGET:g}x target")
    print(f"  floor, same gc (no collector importing, frozen at exit): {e2 * 1e3:6.1f} ms, "
          f"CPU {cpu['floor, same gc'] * 1e3:.1f} ms;")
    print(f"    ratio {c2 / e2:.2f}x (CPU {cpu['command'] / cpu['floor, same gc']:.2f}x), "
          f"beyond it {(c2 - e2) * 1e3:+.1f} ms")


if __name__ == "__main__":
    main()
