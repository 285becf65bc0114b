"""`serve` is the one scheduler (issue 24, deliverables 1 and 3): every path it may take for a config
(the fast paths `fast_reservations`, `fast_engine`, `fast_pipeline` and `fast_prefix`, each by its
allow-lists, and the general loop) gives the same schedule, over random configs that draw every
`ServeConfig` field (`any_config`: swap, prefix caching, K/V offload, microbatches, adaptive gamma ...)
on one stage, two pipeline stages and a small K/V, and each agrees with the plain oracles in
tests/reference_scheduler.py.

GPT-3 13B on one A100 40GB with the lecture preset (the Orca setting), Orca's workload scaled down; the
random configs also run on costs without inline coefficients (the `measured` profile's GEMM ramp on
Llama-3.1-8B, Mixtral's routed experts on two GPUs), where the fast paths step their sums.
"""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from llm_cost.catalog import as_profile, load_accelerator, load_model
from llm_cost.errors import InvalidValueError
from llm_cost.serving.engine import FAST_PATHS, path_of, serve
from llm_cost.serving.replica import IterationCost, Replica
from llm_cost.serving.serve_config import ServeConfig, SpecConfig
from llm_cost.serving.workload import Workload, poisson_workload
from llm_cost.specs import PRESETS
from llm_cost.specs.deployment import Deployment
from reference_scheduler import KvRequest, request_level_steps, run_steps

SERVER = Replica.from_specs(load_model("gpt-3-13b"), load_accelerator("a100-40gb"), PRESETS["lecture"])
REL = 1e-9  # a decode stretch adds its span to the clock once, the loop each iteration: the same times to rounding
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


def _same_fields(a, b, what) -> None:
    """Every field of the two results but `path` alike (issue 24 review, 1: the result is the run's, not
    the path's): numbers to `REL`, None where the other is None."""
    import dataclasses

    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name == "path" or isinstance(x, tuple):  # the tuples: `_same_schedule`
            continue
        if isinstance(x, float) and isinstance(y, float) and not (math.isnan(x) and math.isnan(y)):
            assert x == pytest.approx(y, rel=REL, abs=1e-9), (f.name, what)
        elif f.name != "deadlock":
            assert x == y, (f.name, what)


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
        _same_fields(r, general, (fast, r.path, cfg))
        assert r.kv_used_peak_tokens == pytest.approx(general.kv_used_peak_tokens, rel=REL), (fast, r.path)
        assert r.busy_s == pytest.approx(general.busy_s, rel=REL) and r.scheduler == general.scheduler
        assert r.compute_bound_s == pytest.approx(general.compute_bound_s, rel=REL), (fast, r.path)


PIPELINED = Replica.from_specs(load_model("gpt-3-13b"), load_accelerator("a100-40gb"), PRESETS["lecture"],
                               deployment=Deployment(pp=2))
SMALL_KV = Replica(SERVER.cost, 6000, SERVER.max_len)  # preemptions under paged K/V
# costs without inline coefficients (`PassCost.time` on the fast paths, by calls or on arrays, and in the loop): the CLI's
# default `measured` profile (a GEMM ramp, engine fixed costs) on a dense model, and a MoE on two GPUs
# (routed experts: the weights read depend on the rows), both with a small K/V so that they preempt
MEASURED = Replica.from_specs(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"), as_profile("measured"))
MEASURED_SMALL = Replica(MEASURED.cost, 6000, MEASURED.max_len)
MOE_TP2 = Replica.from_specs(load_model("mixtral-8x7b"), load_accelerator("h100-sxm"), as_profile("measured"),
                             deployment=Deployment(tp=2))
MOE_SMALL = Replica(MOE_TP2.cost, 6000, MOE_TP2.max_len)


@st.composite
def any_config(draw):
    """A `ServeConfig` drawn over every field it has (each valid combination): paged K/V with recompute
    or swap, prefix caching, a host tier for K/V offload, chunked prefill, speculation (fixed,
    off-above-batch, adaptive), every pipeline, request-level batches."""
    reservation = draw(st.sampled_from(["paged", "declared", "max_len", "none", "paged", "paged"]))
    preemption = draw(st.sampled_from(["recompute", "swap"])) if reservation == "paged" else "recompute"
    recompute_paged = reservation == "paged" and preemption == "recompute"
    request = reservation == "max_len" and draw(st.booleans())
    spec = None if reservation == "none" or request else draw(st.one_of(st.none(), st.none(), st.builds(
        SpecConfig, gamma=st.integers(1, 4), alpha=st.floats(0.0, 0.95), c=st.floats(0.0, 0.2),
        policy=st.sampled_from(["fixed", "fixed", "off-above-batch", "adaptive"]), off_above=st.integers(1, 80),
        seed=st.integers(0, 3))))
    return ServeConfig(
        max_batch=draw(st.integers(1, 64)), reservation=reservation, block_size=draw(st.sampled_from([1, 16, 32])),
        watermark=draw(st.sampled_from([0.0, 0.01])), preemption=preemption,
        prefill_chunk=None if request else draw(st.sampled_from([None, None, None, 256, 1024])),
        spec=spec, pipeline=draw(st.sampled_from(["orca", "serial", "microbatch"])),
        host_bytes_per_s=draw(st.sampled_from([64e9, 1e9])), scheduler="request" if request else "iteration",
        prefix_caching=recompute_paged and draw(st.booleans()),
        kv_offload_bytes=draw(st.sampled_from([0.0, 0.0, 0.0, 2e9])) if recompute_paged else 0.0)


# the fields `any_config` draws: every field of `ServeConfig` (a new one must be drawn too)
DRAWN = {"max_batch", "reservation", "block_size", "watermark", "preemption", "prefill_chunk", "spec", "pipeline",
         "host_bytes_per_s", "scheduler", "prefix_caching", "kv_offload_bytes"}


def test_any_config_draws_every_field():
    import dataclasses

    assert {f.name for f in dataclasses.fields(ServeConfig)} == DRAWN


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(cfg=ServeConfig(max_batch=32), rate=30.0, seed=1, replica="measured", prefixed=False)  # timed by calls
@example(cfg=ServeConfig(max_batch=32, reservation="none"), rate=30.0, seed=2, replica="moe", prefixed=False)
@example(cfg=ServeConfig(reservation="paged", preemption="swap", pipeline="microbatch"), rate=30.0, seed=1,
         replica="small", prefixed=False)  # fast_engine, swaps handed to the general loop
@example(cfg=ServeConfig(reservation="paged", pipeline="orca", max_batch=16), rate=30.0, seed=2, replica="pp2",
         prefixed=True)  # fast_pipeline
@example(cfg=ServeConfig(reservation="paged", pipeline="microbatch", max_batch=16), rate=30.0, seed=2,
         replica="pp2", prefixed=False)  # microbatches: the general loop
@example(cfg=ServeConfig(reservation="paged", prefix_caching=True, block_size=16), rate=30.0, seed=3,
         replica="small", prefixed=True)  # fast_prefix, preempting
@example(cfg=ServeConfig(reservation="paged", prefix_caching=True, kv_offload_bytes=2e9), rate=30.0, seed=4,
         replica="small", prefixed=True)  # a host tier: the general loop
@given(cfg=any_config(), rate=st.floats(1.0, 40.0), seed=st.integers(0, 5),
       replica=st.sampled_from(["one", "pp2", "small", "measured", "moe"]), prefixed=st.booleans())
def test_random_configs_over_every_field_take_a_path_that_gives_the_general_loops_schedule(cfg, rate, seed, replica,
                                                                                          prefixed):
    # where a fast path accepts (its allow-lists), its finish times are the general loop's; where none
    # does, `serve` runs the general loop
    from llm_cost.serving.prefixes import prefix_segments

    server = {"one": SERVER, "pp2": PIPELINED, "small": SMALL_KV, "measured": MEASURED_SMALL, "moe": MOE_SMALL}[replica]
    wl = poisson_workload(100, rate, seed=seed)
    if prefixed:
        wl = prefix_segments(wl, shared=48, groups=3, group_tokens=64, seed=seed)
    try:
        general = serve(wl, server, cfg, fast=False)
    except InvalidValueError:  # what the config cannot run here (request-level on pp > 1 orca) is refused
        assume(False)
    if cfg.scheduler == "request":  # an admission policy of its own (its oracle: the test below)
        assert general.path == serve(wl, server, cfg).path == "request_level"
        return
    assert general.path == "general"
    taken = set()
    for name in FAST_PATHS:
        r = serve(wl, server, cfg, fast=(name,))
        assert r.path == path_of(wl, server, cfg, fast=(name,)) or (name, r.path) == ("fast_pipeline", "general")
        assert r.path in (name, "general")
        taken.add(r.path)
        _same_schedule(r, general, (name, r.path, cfg))
        _same_fields(r, general, (name, r.path, cfg))
    default = serve(wl, server, cfg)
    if taken == {"general"}:
        assert default.path == "general"  # no fast path accepts: the general loop runs
    _same_schedule(default, general, ("default", default.path, cfg))


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


def test_every_path_reports_the_same_fields():
    # issue 24 review, 1: the general loop counted no K/V reserved or written (None) where
    # fast_reservations did (581.2 tokens on the review's run, 581.3 under the measured of 2026-12-03, 571.0
    # under 2026-12-04's: its passes are faster, fewer requests in flight); now every path reports every field
    server = Replica.from_specs(load_model("llama-3-8b"), load_accelerator("h100-sxm"), PRESETS["measured"])
    wl = poisson_workload(300, 2.0, seed=0)
    fast, general = serve(wl, server, ServeConfig()), serve(wl, server, ServeConfig(), fast=False)
    assert (fast.path, general.path) == ("fast_reservations", "general")
    assert general.kv_reserved_mean_tokens == pytest.approx(fast.kv_reserved_mean_tokens, rel=REL)
    assert round(fast.kv_reserved_mean_tokens, 1) == 571.0
    _same_fields(fast, general, "review")
    wl = poisson_workload(150, 12.0, seed=1)
    for cfg, path in ((ServeConfig(spec=SpecConfig(gamma=3, alpha=0.7)), "fast_engine"),
                      (ServeConfig(reservation="max_len", spec=SpecConfig(gamma=2, alpha=0.5)), "fast_engine"),
                      (ServeConfig(reservation="none", max_batch=64), "fast_reservations"),
                      (ServeConfig(reservation="paged"), "fast_engine")):
        r, loop = serve(wl, SERVER, cfg), serve(wl, SERVER, cfg, fast=False)
        assert r.path == path
        _same_schedule(r, loop, cfg)
        _same_fields(r, loop, cfg)
        paged = cfg.reservation == "paged"
        assert (r.kv_reserved_mean_tokens is None) == paged and (r.kv_written_peak_tokens is None) == paged
        assert r.positions_needed == sum(p + o - 1 for p, o in zip(wl.prompt, wl.output))
