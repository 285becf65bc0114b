"""Time to simulate 10,000 requests (issue 4: under 2 s on one core), with baselines from the same run.

For each case: the best of R runs of `simulate`, its ratio to the 2 s target, and its ratio to a
plain Python loop doing one float max-add per simulated iteration (the least any per-iteration
simulator could cost in pure Python). GPT-3 13B on an A100 40GB, lecture preset, Orca's workload.
Usage: python bench/simulator.py [REQUESTS] [RUNS]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llm_cost.catalog import load_accelerator, load_model  # noqa: E402
from llm_cost.server import Server  # noqa: E402
from llm_cost.simulator import simulate  # noqa: E402
from llm_cost.specs import PRESETS  # noqa: E402
from llm_cost.workload import poisson_workload  # noqa: E402

TARGET_S = 2.0
CASES = [  # (scheduler, max batch, rate req/s, max_gen): the lecture's operating points
    ("request", 8, 0.94, None),
    ("iteration", 32, 12.4, None),
    ("iteration", 32, 1.0, None),  # light load: ~1 request per iteration, the most iterations
    ("none", 64, 4.0, 512),
]


def best_of(fn, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def plain_loop(steps: int) -> None:
    t, a, b = 0.0, 0.02, 0.01
    for _ in range(steps):
        t += (a if a > b else b) + 0.001
        a += 1e-9


def main() -> None:
    requests = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    server = Server.from_specs(load_model("gpt-3-13b"), load_accelerator("a100-40gb"), PRESETS["lecture"])
    print(f"{requests} requests, best of {runs}; target {TARGET_S:.1f} s")
    for scheduler, max_batch, rate, max_gen in CASES:
        wl = poisson_workload(requests, rate, seed=0, max_gen=max_gen)
        result = simulate(wl, server, scheduler=scheduler, max_batch=max_batch)
        t = best_of(lambda: simulate(wl, server, scheduler=scheduler, max_batch=max_batch), runs)
        loop = best_of(lambda: plain_loop(result.iterations), runs)
        print(f"{scheduler:9s} bs {max_batch:2d} at {rate:5.2f} req/s: {t * 1e3:7.1f} ms, "
              f"{result.iterations:7d} iterations, ratio to target {t / TARGET_S:.3f}, "
              f"ratio to a plain loop of as many iterations {t / loop:.2f}x")


if __name__ == "__main__":
    main()
