"""Time to simulate a fleet (issue 25.7): REQUESTS requests (default 1,000,000; the issue's target
30 s here) over 8 replicas with prefix caching and prefix-affinity routing (`serving.fleet`), against
a baseline measured in the same run: the same requests split round-robin beforehand and served by 8
independent engines (`engine.serve`, general loop, prefix caching), i.e. what routing in time costs
above the engines themselves. GPT-3 13B on an A100 40GB, 16 groups of 512-token prefixes (zipf) before
Orca's U(32, 512) prompts, U(1, 128) outputs, 8 x 10 req/s. One core (OPENBLAS_NUM_THREADS=1).

Usage: python bench/fleet.py [REQUESTS] [REPLICAS]
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

TARGET_S = 30.0


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    r = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    server = Replica.from_specs(load_model("gpt-3-13b"), load_accelerator("a100-40gb"))
    cfg = ServeConfig(reservation="paged", prefix_caching=True)
    wl = with_prefix_groups(poisson_workload(n, 10.0 * r, seed=0), 16, 512, "zipf", seed=0)
    t0, c0 = time.perf_counter(), time.process_time()
    fleet = serve_fleet(wl, server, cfg, r, "prefix-affinity")
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert fleet.fleet.finished == n
    t0 = time.perf_counter()
    base = [serve(workload_subset(wl, list(range(k, n, r))), server, cfg, fast=False) for k in range(r)]
    base_wall = time.perf_counter() - t0
    assert sum(b.finished for b in base) == n
    print(f"fleet: {n:,} requests over {r} replicas, prefix caching + prefix-affinity: {wall:.2f} s wall "
          f"({cpu:.2f} s CPU), {wall / TARGET_S:.2f} x the {TARGET_S:g} s target; token hit rate "
          f"{fleet.prefix_token_hit_rate:.3f}, imbalance {fleet.imbalance:.3f}")
    print(f"baseline: {r} independent engines on round-robin shares: {base_wall:.2f} s wall; "
          f"fleet / baseline {wall / base_wall:.2f}")


if __name__ == "__main__":
    main()
