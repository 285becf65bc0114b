"""Bench of `validate` on served rows (issue 23.7: 400 served rows within 60 s here), against the same
command with the general loop's decode stretches off (`serving.decode_stretch.ENABLED`), same run.

    python bench/validate.py [--file tests/data/measured/train_inferencex.csv] [--rows N] [--skip-baseline]

Runs `llm-cost validate FILE --profile measured --summary --quiet` in a child process with stretches on,
then (unless --skip-baseline) in another with them off, and prints each one's wall and CPU seconds
(user + system of the child, from wait4: it moves less than wall time when other work shares the
machine), the CPU ratio off / on and whether the two printed summaries are identical (they must be:
a stretch is the run iterating gives). `--rows N` takes the file's first N rows only (the baseline
of all 372 rows of train_inferencex.csv takes about ten minutes).
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHILD = """
import runpy, sys
import llm_cost.serving.decode_stretch as stretch
stretch.ENABLED = {enabled}
sys.argv = ["llm-cost", "validate", {path!r}, "--profile", "measured", "--summary", "--quiet"]
runpy.run_path({cli!r}, run_name="__main__")
"""


def _run(path: str, enabled: bool) -> tuple[float, float, str]:
    """(wall s, child CPU s, stdout) of one validate run in a child process."""
    import resource

    code = CHILD.format(enabled=enabled, path=path, cli=os.path.join(ROOT, "cli.py"))
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), COLUMNS="100")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, env=env, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        lines = proc.stderr.strip().splitlines()
        sys.exit(f"validate failed (exit {proc.returncode}): {lines[-1] if lines else ''}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout


def _first_rows(path: str, rows: int) -> str:
    """A temporary copy of `path` with its header and first `rows` rows."""
    with open(path, newline="") as f:
        table = list(csv.reader(f))
    tmp = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False, newline="")
    with tmp:
        csv.writer(tmp).writerows(table[:rows + 1])
    return tmp.name


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--file", default=os.path.join(ROOT, "tests", "data", "measured", "train_inferencex.csv"))
    ap.add_argument("--rows", type=int, default=None, help="the file's first N rows only")
    ap.add_argument("--skip-baseline", action="store_true", help="time stretches on only")
    a = ap.parse_args()
    path = _first_rows(a.file, a.rows) if a.rows else a.file
    try:
        _bench(a, path)
    finally:
        if path != a.file:  # the temporary copy of the first rows
            os.unlink(path)


def _bench(a, path: str) -> None:
    with open(path, newline="") as f:
        served = sum(1 for row in csv.DictReader(f) if row.get("batch_kind", "").startswith(("concurrency", "request")))
    runs = {}
    for enabled in ((True,) if a.skip_baseline else (True, False)):
        wall, cpu, out = runs[enabled] = _run(path, enabled)
        print(f"decode stretches {'on ' if enabled else 'off'}: validate of {served} served rows in {wall:.1f} s wall,")
        print(f"  {cpu:.1f} s CPU (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)", flush=True)
    on = runs[True]
    print(f"target: 400 served rows within 60 s; on: {on[0]:.1f} s wall, {on[1]:.1f} s CPU for {served} rows")
    if False in runs:
        off = runs[False]
        print(f"ratio off / on (CPU): {off[1] / on[1]:.1f}x; summaries identical: {on[2] == off[2]}")


if __name__ == "__main__":
    main()
