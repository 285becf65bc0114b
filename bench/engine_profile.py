"""Where the fast engine's time goes on bench/simulator.py's largest case: 10^6 requests at 12.4 req/s,
paged K/V and speculation in the batch (gamma 4, alpha 0.8, c 0.05), GPT-3 13B on an A100 40GB.

Per phase, CPU time (`time.process_time`) of each of RUNS runs on a freshly drawn workload (drawn
outside the timing, its arrival times computed inside it, as bench/simulator.py times it): the
workload's arrival times, validation and the path's choice, the fast path's set-up (its arrays and
acceptance streams), the trajectories (`_Fast.chunk_of`, called from the loop), the loop itself (the
rest of `_Fast.run` and the hand-overs), the general loop's stretches around the preemptions, the
statistics (`handover.close_segment`) and the result (`ServeResult.build` and what feeds it). The
phases are timed by wrapping those functions, so they add a few calls each (not per iteration).
`--profile` then prints cProfile's top functions by own time for one more run.

Usage: python bench/engine_profile.py [REQUESTS] [RUNS] [--profile]  (defaults 1,000,000 and 3)
"""

from __future__ import annotations

import cProfile
import os
import pstats
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one core, as bench/simulator.py
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llm_cost.catalog import load_accelerator, load_model  # noqa: E402
from llm_cost.serving import engine, fast_engine, handover  # noqa: E402
from llm_cost.serving.replica import Replica  # noqa: E402
from llm_cost.serving.serve_config import ServeConfig, SpecConfig  # noqa: E402
from llm_cost.serving.workload import poisson_workload  # noqa: E402
from llm_cost.specs import PRESETS  # noqa: E402

SPENT: dict[str, float] = defaultdict(float)
# (owner, attribute, phase); the loop calls chunk_of (its time is taken out of the loop's)
TIMED = [(engine, "_validated", "validate"), (engine, "_path", "validate"),
         (fast_engine._Fast, "__init__", "set-up"), (fast_engine._Fast, "chunk_of", "trajectories"),
         (fast_engine._Fast, "run", "loop"), (engine, "general_loop", "general loop"),
         (handover, "close_segment", "statistics"), (handover, "result", "result")]
OWN_ONLY = {"loop": ("trajectories",)}  # inner phases taken out of the outer


def _wrap(owner, name: str, phase: str) -> None:
    inner = getattr(owner, name)

    def timed(*args, **kwargs):
        start = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            SPENT[phase] += time.process_time() - start
    setattr(owner, name, timed)


def _inners(spent: dict) -> dict:
    """The phases with each outer phase's nested ones taken out of it."""
    own = dict(spent)
    for outer, inners in OWN_ONLY.items():
        own[outer] = own.get(outer, 0.0) - sum(spent.get(i, 0.0) for i in inners)
    return own


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    requests = int(args[0]) if args else 1_000_000
    runs = int(args[1]) if len(args) > 1 else 3
    for owner, name, phase in TIMED:
        _wrap(owner, name, phase)
    server = Replica.from_specs(load_model("gpt-3-13b"), load_accelerator("a100-40gb"), PRESETS["lecture"])
    cfg = ServeConfig(max_batch=32, reservation="paged", spec=SpecConfig(gamma=4, alpha=0.8, c=0.05))
    engine.serve(poisson_workload(2000, 12.4, seed=1), server, cfg)  # warm up, as bench/simulator.py
    rows = []
    for _ in range(runs):
        wl = poisson_workload(requests, 12.4, seed=0)
        SPENT.clear()
        cpu, wall = time.process_time(), time.perf_counter()
        start = time.process_time()
        wl.arrival_s
        SPENT["arrival times"] += time.process_time() - start
        r = engine.serve(wl, server, cfg)
        rows.append((time.process_time() - cpu, time.perf_counter() - wall, _inners(SPENT)))
    phases = list(rows[0][2])
    print(f"fast engine, {requests:,} requests, paged + speculation gamma 4, {r.iterations:,} iterations,")
    print(f"  {r.preemptions} preemptions, path {r.path}; CPU seconds, median of {runs} runs [min-max]")
    for phase in phases:
        values = [row[2].get(phase, 0.0) for row in rows]
        print(f"  {phase:14s} {statistics.median(values):6.3f} [{min(values):.3f}-{max(values):.3f}]")
    cpus, walls = [row[0] for row in rows], [row[1] for row in rows]
    other = [row[0] - sum(row[2].values()) for row in rows]
    print(f"  {'other':14s} {statistics.median(other):6.3f}")
    print(f"  {'total CPU':14s} {statistics.median(cpus):6.3f} [{min(cpus):.3f}-{max(cpus):.3f}]; wall "
          f"{statistics.median(walls):.3f} [{min(walls):.3f}-{max(walls):.3f}]")
    if "--profile" in sys.argv:
        wl = poisson_workload(requests, 12.4, seed=0)
        profile = cProfile.Profile()
        profile.runcall(engine.serve, wl, server, cfg)
        pstats.Stats(profile).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
