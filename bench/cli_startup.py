"""Startup time of `llm-cost model llama-3-8b` against `python -c "import typer"`, same run.

Prints the median of N runs of each and their ratio (target: 1.5x or less).
Usage: python bench/cli_startup.py [N]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def median_seconds(cmd: list[str], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    baseline = median_seconds([sys.executable, "-c", "import typer"], runs)
    cases = {
        "model llama-3-8b (table)": ["model", "llama-3-8b"],
        "model llama-3-8b --format json": ["model", "llama-3-8b", "--format", "json"],
        "roofline (table)": ["roofline"],
    }
    print(f"baseline python -c 'import typer': {baseline * 1e3:.1f} ms (median of {runs})")
    for label, args in cases.items():
        t = median_seconds([sys.executable, "-m", "llm_cost.cli", *args], runs)
        print(f"llm-cost {label}: {t * 1e3:.1f} ms, ratio {t / baseline:.2f}x")


if __name__ == "__main__":
    main()
