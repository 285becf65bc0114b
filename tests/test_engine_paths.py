"""`serve` is the one scheduler (issue 24, deliverables 1 and 3): every path it may take for a config
(the fast paths `fast_reservations` and `fast_engine`, each by its allow-list, and the general loop)
gives the same schedule, and each agrees with the plain oracles in tests/reference_scheduler.py.

GPT-3 13B on one A100 40GB with the lecture preset (the Orca setting), Orca's workload scaled down.
"""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from llm_cost.catalog import load_accelerator, load_model
from llm_cost.errors import InvalidValueError
from llm_cost.serving.engine import FAST_PATHS, path_of, serve
from llm_cost.serving.replica import IterationCost, Replica
from llm_cost.serving.serve_config import ServeConfig, SpecConfig
from llm_cost.serving.workload import Workload, poisson_workload
from llm_cost.specs import PRESETS
from reference_scheduler import KvRequest, request_level_steps, run_steps

SERVER = Replica.from_specs(load_model("gpt-3-13b"), load_accelerator("a100-40gb"), PRESETS["lecture"])
REL = 1e-9  # the fast reservations path sums decode stretches by increments: the same times to 1e-9
# every way to ask serve for paths: all of them, each fast path alone, none (the general loop)
PATH_CHOICES = (True, *((name,) for name in FAST_PATHS), False)

specs = st.one_of(st.none(), st.builds(
    SpecConfig, gamma=st.integers(1, 5), alpha=st.floats(0.0, 0.95), c=st.floats(0.0, 0.2),
    policy=st.sampled_from(["fixed", "off-above-batch"]), off_above=st.integers(1, 80), seed=st.integers(0, 3)))
configs = st.builds(
    ServeConfig, max_batch=st.integers(1, 64), reservation=st.sampled_from(["declared", "max_len", "none", "paged"]),
    block_size=st.sampled_from([1, 16, 32]), watermark=st.sampled_from([0.0, 0.01]),
    prefill_chunk=st.one_of(st.none(), st.none(), st.integers(64, 1024)), spec=specs,
    pipeline=st.sampled_from(["orca", "serial"]))


def _same_schedule(a, b, what) -> None:
    """The same finishes (nan where neither finished), first tokens, iterations and deadlock."""
    assert a.iterations == b.iterations, what
    assert (a.deadlock is None) == (b.deadlock is None), what
    if a.deadlock is not None:
        assert a.deadlock.iterations_done == b.deadlock.iterations_done, what
        assert a.deadlock.holders == b.deadlock.holders, what
    for x, y in zip(a.finish_s + a.first_token_s, b.finish_s + b.first_token_s):
        assert (math.isnan(x) and math.isnan(y)) or x == pytest.approx(y, rel=REL), what


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), rate=st.floats(1.0, 40.0), seed=st.integers(0, 5))
def test_every_path_gives_the_same_schedule(data, rate, seed):
    try:
        cfg = data.draw(configs)
    except InvalidValueError:  # speculation without a reservation: refused in one line
        assume(False)
    wl = poisson_workload(120, rate, seed=seed)
    general = serve(wl, SERVER, cfg, fast=False)
    assert general.path == "general"
    for fast in PATH_CHOICES[:-1]:
        r = serve(wl, SERVER, cfg, fast=fast)
        assert r.path == path_of(wl, SERVER, cfg, fast=fast)
        _same_schedule(r, general, (fast, r.path, cfg))
        assert r.kv_used_peak_tokens == pytest.approx(general.kv_used_peak_tokens, rel=REL), (fast, r.path)
        assert r.busy_s == pytest.approx(general.busy_s, rel=REL) and r.scheduler == general.scheduler


def test_the_default_config_takes_each_fast_path_it_allows():
    wl = poisson_workload(300, 12.4, seed=1)
    runs = {fast: serve(wl, SERVER, ServeConfig(), fast=fast) for fast in PATH_CHOICES}
    assert [runs[f].path for f in PATH_CHOICES] == ["fast_reservations", "fast_reservations", "fast_engine", "general",
                                                    "general", "general"]  # fast_pipeline: pipelines; fast_prefix: prefixes
    for fast, r in runs.items():
        _same_schedule(r, runs[False], fast)


def _random_case(seed: int):
    """Up to 12 requests of whole-step arrivals and short lengths, a reservation, the least capacity
    that starts every request (plus up to 30), a batch limit."""
    rnd = random.Random(seed)
    requests, t = [], 0
    for _ in range(rnd.randint(1, 12)):
        t += rnd.choice([0, 0, 1, 2, 5])
        out = rnd.randint(1, 8)
        requests.append(KvRequest(rnd.randint(1, 8), out, t, out + rnd.choice([0, 0, 3])))
    reservation = rnd.choice(["none", "declared", "max_len"])
    need = {"none": max(r.prompt for r in requests), "declared": max(r.prompt + r.declared for r in requests),
            "max_len": 20}[reservation]
    return requests, rnd.randint(need, need + 30), rnd.randint(1, 6), reservation


def _workload(requests) -> Workload:
    return Workload(1.0, tuple(float(r.arrival_step) for r in requests), tuple(r.prompt for r in requests),
                    tuple(r.output for r in requests), tuple(r.declared for r in requests))


def test_every_path_matches_the_step_oracle():
    # every iteration costing 1 s, each path's finish times are the oracle's iteration counts
    # (tests/reference_scheduler.run_steps), deadlocks and their holders included
    deadlocks = 0
    for seed in range(150):
        requests, cap, max_batch, reservation = _random_case(seed)
        ref = run_steps(requests, cap, reservation=reservation, max_batch=max_batch, max_len=20)
        wl, unit = _workload(requests), Replica(IterationCost.unit(), cap, 20)
        cfg = ServeConfig(max_batch=max_batch, reservation=reservation)
        for fast in PATH_CHOICES:
            r = serve(wl, unit, cfg, fast=fast)
            assert tuple(None if math.isnan(f) else int(f) for f in r.finish_s) == ref.finish_step, (seed, fast)
            assert (r.deadlock is None) == (ref.deadlock is None), (seed, fast)
            if ref.deadlock is not None:
                assert r.deadlock.holders == ref.deadlock.holders, (seed, fast)
        deadlocks += ref.deadlock is not None
    assert deadlocks > 5  # the cases do exercise stalls and deadlocks


def test_request_level_batches_match_their_oracle():
    # FasterTransformer's whole batches (scheduler request) with every iteration costing 1 s: a batch
    # that starts at t returns at t + its longest output (one prefill, then decodes to the longest)
    for seed in range(150):
        requests, _, max_batch, _ = _random_case(seed)
        cap = 20 * max_batch  # a max_len reservation (20) per row: max_batch rows fit
        r = serve(_workload(requests), Replica(IterationCost.unit(), cap, 20),
                  ServeConfig(scheduler="request", reservation="max_len", max_batch=max_batch))
        want = request_level_steps([q.arrival_step for q in requests], [q.output for q in requests], max_batch)
        assert tuple(int(f) for f in r.finish_s) == want, seed
        assert r.path == "request_level" and r.kv_reserved_peak_tokens <= cap
