"""One statistics type for every path (issue 24, "one engine built from named parts"): `RunStats`,
its `+` over replicas, and one rule for a deadlocked run's positions needed on every path.

The lecture's deadlock (§3.5, Exercise 10: no reservation, no preemption, two requests of 4 + 5
tokens in a K/V of 10) and a Poisson workload on a small K/V stop on the same deadlock on the fast
reservations path, the general loop and a fleet of one replica; each reports the same positions
needed, and that is the finished requests' prompt + output - 1 plus the holders' K/V
(prompt + generated - 1, `Deadlock.holders`).
"""

from __future__ import annotations

import pytest

from llm_cost.catalog import load_accelerator, load_model
from llm_cost.serving.disaggregated import serve_disaggregated
from llm_cost.serving.engine import serve
from llm_cost.serving.fleet import serve_fleet
from llm_cost.serving.replica import IterationCost, Replica
from llm_cost.serving.run_stats import FIELDS, PEAKS, RunStats, positions_needed
from llm_cost.serving.serve_config import ServeConfig
from llm_cost.serving.workload import fixed_workload, poisson_workload
from llm_cost.specs import PRESETS

SERVER = Replica.from_specs(load_model("gpt-3-13b"), load_accelerator("a100-40gb"), PRESETS["lecture"])
SMALL = Replica(SERVER.cost, 3000, SERVER.max_len)
NONE = ServeConfig(reservation="none", max_batch=64)
CASES = {
    "lecture": (fixed_workload([(4, 5), (4, 5)]), Replica(IterationCost.unit(), 10, 2048)),
    "poisson": (poisson_workload(150, 30.0, seed=1), SMALL),
}


def _by_holders(wl, result) -> int:
    """Prompt + output - 1 of the finished requests plus what the deadlock's holders hold."""
    done = sum(p + o - 1 for p, o, f in zip(wl.prompt, wl.output, result.finish_s) if f == f)
    return done + sum(h.prompt + h.generated - 1 for h in result.deadlock.holders)


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_deadlocked_run_needs_the_same_positions_on_every_path(case):
    wl, replica = CASES[case]
    fast = serve(wl, replica, NONE)
    general = serve(wl, replica, NONE, fast=False)
    fleet = serve_fleet(wl, replica, NONE, 1)
    assert (fast.path, general.path) == ("fast_reservations", "general")
    for result in (fast, general, fleet.fleet, fleet.replicas[0]):
        assert result.deadlock is not None and result.finished < len(wl)
        assert result.deadlock.holders == fast.deadlock.holders
        assert result.positions_needed == _by_holders(wl, result) == fast.positions_needed
    assert fast.positions_needed > sum(p + o - 1 for p, o, f in zip(wl.prompt, wl.output, fast.finish_s) if f == f)
    if case == "lecture":  # both hold prompt 4 + generated 2 - 1 = 5 tokens: the whole K/V of 10
        assert fast.positions_needed == fast.deadlock.kv_held_tokens == 10


def test_a_deadlocked_disaggregated_run_counts_the_first_token_and_the_decode_pools_tokens():
    wl = poisson_workload(150, 30.0, seed=1)
    d = serve_disaggregated(wl, SMALL, NONE, prefill=1, decode=1, link_bytes_per_s=1e11)
    assert d.deadlock is not None
    finished = sum(p + o - 1 for p, o, f in zip(wl.prompt, wl.output, d.served.finish_s) if f == f)
    assert d.served.positions_needed > finished  # the stopped requests' tokens count too


def test_positions_needed_counts_finished_stopped_and_unstarted_requests():
    nan = float("nan")
    prompt, output, finish = (4, 4, 4, 4), (5, 5, 5, 5), (9.0, nan, nan, nan)
    # finished: 4 + 5 - 1; stopped after 2 tokens: 4 + 2 - 1; prefilling 3 of 4: 3; not started: 0
    assert positions_needed(prompt, output, finish, (5, 2, 0, 0), (4, 4, 3, 0)) == 8 + 5 + 3 + 0
    assert positions_needed(prompt, output, finish) == 8  # nothing known of the unfinished


def test_adding_run_stats_sums_the_sums_and_keeps_the_larger_peak():
    one = RunStats(*range(1, len(FIELDS) + 1))
    two = RunStats(*range(len(FIELDS) + 1, 1, -1))
    both = one + two
    for name in FIELDS:
        a, b = getattr(one, name), getattr(two, name)
        assert getattr(both, name) == (max(a, b) if name in PEAKS else a + b), name
    assert PEAKS == {"peak_kv_used", "peak_kv_reserved", "peak_kv_written"}
    assert sum((one, two), RunStats()) == both


def test_a_fleets_statistics_are_its_replicas_summed():
    wl = poisson_workload(120, 20.0, seed=3)
    fleet = serve_fleet(wl, SERVER, ServeConfig(reservation="paged"), 3, "least-loaded")
    replicas = fleet.replicas
    assert fleet.fleet.busy_s == sum(r.busy_s for r in replicas)
    assert fleet.fleet.iterations == sum(r.iterations for r in replicas)
    assert fleet.fleet.kv_used_peak_tokens == max(r.kv_used_peak_tokens for r in replicas)
    assert fleet.fleet.positions_needed == sum(r.positions_needed for r in replicas)
