"""CPU seconds per candidate of `plan --verify` by the path its runs take (issue 26.4: the ETA's weights,
`planner.verify.RELATIVE_COST`): bench_verify.py's case (Llama-3-8B on up to 2 H100 SXM, ISL 1024,
OSL 128, 20 req/s, lecture preset), each candidate served alone in this process, without and with an
engine's defaults (`--engine vllm`: prompts in chunks of its budget, which the general loop serves).

    .venv/bin/python bench/bench_verify_paths.py [--candidates 6] [--requests 4000] [--engine vllm]

Prints each candidate's path and CPU seconds (process_time) and, per 1,000 requests a replica serves and per kind of candidate (one GPU, tp > 1,
pp > 1), the mean of each path over the one-GPU fast path's: the numbers RELATIVE_COST holds.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections import defaultdict

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--candidates", type=int, default=6)
    ap.add_argument("--requests", type=int, default=4000)
    ap.add_argument("--rate", type=float, default=20.0)
    ap.add_argument("--engine", default="vllm")
    a = ap.parse_args()

    import llm_cost as lc
    from llm_cost.planner.verify import (ServeSettings, ServeTask, WorkloadRecipe, candidates_of, replica_and_config,
                                         serve_task)
    from llm_cost.planner.rows import plan_rows
    from llm_cost.serving.engine import path_of

    space = lc.plan_space(lc.load_model("llama-3-8b"), [lc.load_accelerator("h100-sxm")], 2)
    grid = lc.evaluate(space, lc.PRESETS["lecture"], isl=1024, osl=128)
    result = lc.plan(grid, lc.Target(ttft_s=0.5, tpot_s=0.02))
    meets = np.flatnonzero(result.meets)
    best = meets[np.argsort(-grid.output_tokens_per_s_per_gpu[meets], kind="stable")]
    deps = [grid.space.groups[grid.group[i]].deployment for i in best]
    # a spread of kinds: the best one-GPU, tp > 1 and pp > 1 candidates in turn
    kinds = {"one GPU": [i for i, d in zip(best, deps) if d.gpus_per_replica == 1],
             "tp > 1": [i for i, d in zip(best, deps) if d.tp > 1 and d.pp == 1],
             "pp > 1": [i for i, d in zip(best, deps) if d.pp > 1]}
    per = max(1, a.candidates // 3)
    chosen = [i for picks in kinds.values() for i in picks[:per]]
    result = dataclasses.replace(result, frontier=np.asarray(chosen))
    recipe = WorkloadRecipe(requests=a.requests, rate_req_per_s=a.rate, prompt="1024", output="128")
    cands = candidates_of(result, plan_rows(result), len(chosen))
    seconds = defaultdict(list)
    for cand in cands:
        dep = cand.deployment
        kind = "pp > 1" if dep.pp > 1 else "tp > 1" if dep.gpus_per_replica > 1 else "one GPU"
        for settings in (ServeSettings(), ServeSettings(a.engine)):
            replica, config = replica_and_config(cand, settings)
            served = recipe.for_replicas(dep.replicas)  # one replica's share of the stream
            path = path_of(served, replica, config)
            t0 = time.process_time()
            serve_task(ServeTask(cand, recipe, 0.5, 0.02, settings=settings))
            dt = time.process_time() - t0
            seconds[(kind, path)].append(dt / len(served) * 1e3)
            print(f"{cand.key[:35]:35s} {kind:8s} engine {settings.engine or '-':5s} {path:13s} {len(served):6d} "
                  f"requests {dt:6.2f} CPU s", flush=True)  # 100 characters
    base = np.mean(seconds[("one GPU", "fast_engine")])
    for (kind, path), ts in sorted(seconds.items()):
        print(f"{kind:8s} {path:13s} {np.mean(ts):7.4f} CPU s per 1,000 requests served: "
              f"{np.mean(ts) / base:5.1f} x the one-GPU fast path")


if __name__ == "__main__":
    main()
