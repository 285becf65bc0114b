"""Bench of `plan --verify` (issue 26.5): 50 candidates x 20,000 requests served with --jobs 2 and
--jobs 1; prints both wall times, their ratio and whether the results are identical.

    .venv/bin/python bench/bench_verify.py [--candidates 50] [--requests 20000] [--rate 20] [--engine vllm]

Candidates: Llama-3-8B on up to 2 H100 SXM, ISL 1024, OSL 128, TTFT <= 500 ms, TPOT <= 20 ms (lecture
preset); the configurations that meet the target, best tokens/s per GPU first (the frontier alone
has 7 rows, fewer than 50). `--engine`: that engine's serving defaults (`plan --verify --engine`: its
tokens per iteration as prefill chunks, its K/V block), which take the engine's general loop where the
fast paths do not chunk prompts.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import resource
import time

import numpy as np


def _cpu_s() -> float:
    """User + system CPU seconds of this process and of its finished children (the pool's workers)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--candidates", type=int, default=50)
    ap.add_argument("--requests", type=int, default=20_000)
    ap.add_argument("--rate", type=float, default=20.0)
    ap.add_argument("--skip-serial", action="store_true", help="time --jobs 2 only")
    ap.add_argument("--engine", default=None, help="serve with this engine's defaults (plan --verify --engine)")
    a = ap.parse_args()

    import llm_cost as lc
    from llm_cost.planner.verify import ServeSettings, ServeTask, WorkloadRecipe, candidates_of, verify
    from llm_cost.planner.rows import plan_rows

    space = lc.plan_space(lc.load_model("llama-3-8b"), [lc.load_accelerator("h100-sxm")], 2)
    grid = lc.evaluate(space, lc.PRESETS["lecture"], isl=1024, osl=128)
    result = lc.plan(grid, lc.Target(ttft_s=0.5, tpot_s=0.02))
    meets = np.flatnonzero(result.meets)
    best = meets[np.argsort(-grid.output_tokens_per_s_per_gpu[meets], kind="stable")][:a.candidates]
    result = dataclasses.replace(result, frontier=best)
    recipe = WorkloadRecipe(requests=a.requests, rate_req_per_s=a.rate, prompt="1024", output="128")
    settings = ServeSettings(a.engine)
    tasks = [ServeTask(c, recipe, 0.5, 0.02, settings=settings)
             for c in candidates_of(result, plan_rows(result), a.candidates)]
    times = {}
    out = {}
    for jobs in ((2,) if a.skip_serial else (2, 1)):
        t0, c0 = time.perf_counter(), _cpu_s()
        out[jobs] = verify(tasks, jobs=jobs)
        times[jobs] = time.perf_counter() - t0
        print(f"--jobs {jobs}: {len(tasks)} candidates x {a.requests} requests"
              f"{f' (--engine {a.engine})' if a.engine else ''} in {times[jobs]:.1f} s")
        print(f"  (CPU {_cpu_s() - c0:.1f} s, this process and its workers; load average "
              f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)", flush=True)
    if 1 in times:
        print(f"ratio jobs2/jobs1 wall time: {times[2] / times[1]:.2f} (speed-up {times[1] / times[2]:.2f}x); "
              f"results identical: {out[1] == out[2]}")


if __name__ == "__main__":
    main()
