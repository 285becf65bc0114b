"""Time to simulate a fleet (issue 25.7): REQUESTS requests (default 1,000,000; the issue's target
30 s here) over 8 replicas with prefix caching and prefix-affinity routing (`serving.fleet`, each
replica by prefix caching's fast path, `serving.fast_prefix`), with a progress bar on stderr, against
baselines measured in the same run:

- the same requests split round-robin beforehand and served by 8 independent engines (`engine.serve`,
  prefix caching, its fast path): what routing in time costs above the engines themselves;
- with GENERAL (default 1 when REQUESTS <= 100,000): the same fleet with `fast=False` (every replica in
  the general loop, the schedule the fast path reproduces bit for bit): the fast path's speed-up.

GPT-3 13B on an A100 40GB, 16 groups of 512-token prefixes (zipf) before Orca's U(32, 512) prompts,
U(1, 128) outputs, 8 x 10 req/s. One core (OPENBLAS_NUM_THREADS=1). The projection to 1,000,000 is
linear in the requests (the run's cost per request).

Usage: python bench/fleet.py [REQUESTS] [REPLICAS] [GENERAL]
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llm_cost.catalog import load_accelerator, load_model  # noqa: E402
from llm_cost.serving.engine import serve  # noqa: E402
from llm_cost.serving.fleet import workload_subset, serve_fleet  # noqa: E402
from llm_cost.serving.prefixes import with_prefix_groups  # noqa: E402
from llm_cost.serving.replica import Replica  # noqa: E402
from llm_cost.serving.serve_config import ServeConfig  # noqa: E402
from llm_cost.serving.workload import poisson_workload  # noqa: E402
from llm_cost.report.render import print_notes  # noqa: E402  (lines wrapped at 100 when piped)

TARGET_S = 30.0
TARGET_N = 1_000_000


def _bar(done: int, total: int) -> None:
    if not sys.stderr.isatty():
        return  # piped or logged: no bar (the README's rule for progress)
    filled = 40 * done // max(total, 1)
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (40 - filled)}] {done:,}/{total:,}")
    if done >= total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def _timed(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else TARGET_N
    r = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    general = bool(int(sys.argv[3])) if len(sys.argv) > 3 else n <= 100_000
    server = Replica.from_specs(load_model("gpt-3-13b"), load_accelerator("a100-40gb"))
    cfg = ServeConfig(reservation="paged", prefix_caching=True)
    wl = with_prefix_groups(poisson_workload(n, 10.0 * r, seed=0), 16, 512, "zipf", seed=0)
    fleet, wall, cpu = _timed(lambda: serve_fleet(wl, server, cfg, r, "prefix-affinity", on_progress=_bar))
    assert fleet.fleet.finished == n
    print_notes([f"fleet: {n:,} requests over {r} replicas, prefix caching + prefix-affinity: {wall:.2f} s wall "
          f"({cpu:.2f} s CPU); at this rate {TARGET_N:,} take {wall * TARGET_N / n:.1f} s wall "
          f"({cpu * TARGET_N / n:.1f} s CPU), {wall * TARGET_N / n / TARGET_S:.2f} x the {TARGET_S:g} s target; "
          f"token hit rate {fleet.prefix_token_hit_rate:.3f}, imbalance {fleet.imbalance:.3f}, "
          f"preemptions {fleet.fleet.preemptions}"], hang="    ")
    base, base_wall, base_cpu = _timed(lambda: [serve(workload_subset(wl, list(range(k, n, r))), server, cfg)
                                                for k in range(r)])
    assert sum(b.finished for b in base) == n and {b.path for b in base} == {"fast_prefix"}
    print_notes([f"baseline: {r} independent engines (fast path) on round-robin shares: {base_wall:.2f} s wall "
          f"({base_cpu:.2f} s CPU); fleet / baseline {wall / base_wall:.2f} wall, {cpu / base_cpu:.2f} CPU"],
         hang="    ")
    if general:
        slow, slow_wall, slow_cpu = _timed(lambda: serve_fleet(wl, server, cfg, r, "prefix-affinity", fast=False))
        assert slow.fleet.finish_s == fleet.fleet.finish_s and slow.assignment == fleet.assignment
        print_notes([f"general loop: the same fleet with fast=False: {slow_wall:.2f} s wall ({slow_cpu:.2f} s CPU), "
              f"the same finish times; general / fast {slow_wall / wall:.2f} wall, {slow_cpu / cpu:.2f} CPU"],
                hang="    ")


if __name__ == "__main__":
    main()
