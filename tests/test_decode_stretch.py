"""The general loop's decode stretches (serving/decode_stretch, issues 23.7 and 26.5) give the run that
iterating gives: random configs and workloads served with stretches on and off (`decode_stretch.ENABLED`),
through the general loop alone and through `serve`'s default paths (which hand runs to it), a fleet's
replicas run to its router's `until`, a closed loop's schedule in iteration counts term for term;
speculating at a fixed gamma (or one the batch fixes), each sequence's own acceptances drawn ahead.

Tolerance: first-token and finish times to 1e-9 relative and every float statistic to 1e-9 relative
(the stretch sums in the loop's order, so they come out bit for bit in the cases tried; the tolerance
leaves numpy's reductions room), integer statistics and the progress calls exactly; with speculation
every field of the result exactly (`_identical`: ==).
"""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llm_cost.catalog import load_accelerator, load_model
from llm_cost.serving import decode_stretch
from llm_cost.serving.engine import serve
from llm_cost.serving.fleet import serve_fleet
from llm_cost.serving.iteration import held_tokens_fn
from llm_cost.serving.replica import Replica
from llm_cost.serving.retime import closed_loop_schedule
from llm_cost.serving.serve_config import ServeConfig, SpecConfig
from llm_cost.serving.workload import fixed_workload, poisson_workload
from llm_cost.specs import PRESETS
from llm_cost.specs.deployment import Deployment

REL = 1e-9
DENSE = Replica.from_specs(load_model("gpt-3-13b"), load_accelerator("a100-40gb"), PRESETS["lecture"])
DRAFT = Replica.from_specs(load_model("llama-3.2-1b"), load_accelerator("a100-40gb"), PRESETS["lecture"]).cost
WINDOWED = Replica.from_specs("gemma-2-9b", "a100-80gb", PRESETS["measured"])
TP2 = Replica.from_specs("llama-3.1-8b", "h100-sxm", PRESETS["measured"], deployment=Deployment(tp=2, gpus=2))
MOE_EP = Replica.from_specs("mixtral-8x7b", "h100-sxm", PRESETS["measured"],  # the busiest GPU, all-to-alls
                           deployment=Deployment(tp=8, gpus=8, ep=8, dp_attention=True))
REPLICAS = {"dense": DENSE, "windowed": WINDOWED, "tp2": TP2, "small": Replica(DENSE.cost, 6000, DENSE.max_len),
            "small_windowed": Replica(WINDOWED.cost, 9000, WINDOWED.max_len)}
FLOATS = ("busy_s", "mean_batch", "kv_used_mean_tokens", "kv_used_peak_tokens", "mean_in_system", "comm_total_s",
          "draft_s", "swap_bytes")
INTEGERS = ("iterations", "preemptions", "positions_computed")


@pytest.fixture
def counted(monkeypatch):
    """The iterations the stretches took (a list: one entry a stretch)."""
    taken = []
    commit = decode_stretch.DecodeStretch.commit

    def counting(self, order, k, *args):
        taken.append(k)
        return commit(self, order, k, *args)
    monkeypatch.setattr(decode_stretch.DecodeStretch, "commit", counting)
    return taken


def _served(wl, replica, cfg, on: bool, **kw):
    calls = []
    saved, decode_stretch.ENABLED = decode_stretch.ENABLED, on
    try:
        r = serve(wl, replica, cfg, on_progress=lambda done, n: calls.append((done, n)), **kw)
    finally:
        decode_stretch.ENABLED = saved
    return r, calls


def _same(a, b, what) -> None:
    for x, y in zip(a.finish_s + a.first_token_s, b.finish_s + b.first_token_s):
        assert (math.isnan(x) and math.isnan(y)) or x == pytest.approx(y, rel=REL), what
    for name in INTEGERS:
        assert getattr(a, name) == getattr(b, name), (name, what)
    for name in FLOATS:
        assert getattr(a, name) == pytest.approx(getattr(b, name), rel=REL), (name, what)
    assert (a.deadlock is None) == (b.deadlock is None), what
    assert a.path == b.path, what


def _identical(a, b, what) -> None:
    """Every field of two `ServeResult`s equal (nan where the other is nan)."""
    for field in dataclasses.fields(a):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if isinstance(x, tuple):
            assert len(x) == len(y) and all(u == v or (u != u and v != v) for u, v in zip(x, y)), (field.name, what)
        else:
            assert x == y or (x != x and y != y), (field.name, x, y, what)


@st.composite
def specs(draw):
    """A `SpecConfig` a stretch takes: gamma fixed, or off above a batch (the batch fixes it); its draft
    a fraction c of the target's step or a draft model's own."""
    policy = draw(st.sampled_from(["fixed", "fixed", "off-above-batch"]))
    return SpecConfig(gamma=draw(st.sampled_from([1, 2, 3, 5, 8])), alpha=draw(st.sampled_from([0.0, 0.5, 0.7, 0.9, 1.0])),
                      c=0.05, draft_cost=draw(st.sampled_from([None, None, DRAFT])), policy=policy,
                      off_above=draw(st.integers(1, 16)) if policy == "off-above-batch" else 0,
                      seed=draw(st.integers(0, 3)))


@st.composite
def configs(draw):
    """A `ServeConfig` over the fields the stretches read: each reservation, blocks, watermark, both
    preemptions, K/V offload, chunked or whole prefills, speculation (`specs`; adaptive takes none)."""
    reservation = draw(st.sampled_from(["paged", "paged", "declared", "max_len", "none"]))
    preemption = draw(st.sampled_from(["recompute", "swap"])) if reservation == "paged" else "recompute"
    offload = draw(st.sampled_from([0.0, 0.0, 2e9])) if (reservation, preemption) == ("paged", "recompute") else 0.0
    spec = None
    if reservation != "none" and draw(st.booleans()):
        spec = draw(specs()) if draw(st.booleans()) else SpecConfig(gamma=3, alpha=0.7, c=0.05, policy="adaptive")
    return ServeConfig(max_batch=draw(st.integers(1, 64)), reservation=reservation,
                       block_size=draw(st.sampled_from([1, 16, 32])), watermark=draw(st.sampled_from([0.0, 0.01])),
                       preemption=preemption, prefill_chunk=draw(st.sampled_from([None, 64, 256, 2048])),
                       kv_offload_bytes=offload, spec=spec)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(cfg=configs(), replica=st.sampled_from(sorted(REPLICAS)), rate=st.floats(1.0, 40.0), seed=st.integers(0, 5),
       clients=st.sampled_from([None, None, 4, 24]))
def test_stretches_give_the_schedule_of_iterating(cfg, replica, rate, seed, clients, counted):
    wl = poisson_workload(80, rate, seed=seed, prompt=(16, 600), output=(1, 400))
    if clients:
        wl = dataclasses.replace(wl, concurrency=clients)
    server = REPLICAS[replica]
    for fast in (False, True):  # the general loop alone; `serve`'s paths, which hand runs to it
        on, on_calls = _served(wl, server, cfg, True, fast=fast)
        off, off_calls = _served(wl, server, cfg, False, fast=fast)
        _same(on, off, (fast, cfg, replica, clients))
        if cfg.spec is not None:
            _identical(on, off, (fast, cfg, replica, clients))
        assert on_calls == off_calls


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(spec=specs(), reservation=st.sampled_from(["paged", "paged", "declared", "max_len"]),
       replica=st.sampled_from(sorted(REPLICAS)), chunk=st.sampled_from([None, 256, 2048]),
       block=st.sampled_from([1, 16]), rate=st.floats(1.0, 40.0), seed=st.integers(0, 5),
       clients=st.sampled_from([None, 4, 16, 32]))
def test_speculating_stretches_give_the_run_of_iterating_exactly(spec, reservation, replica, chunk, block, rate,
                                                                 seed, clients, counted):
    # long outputs so that stretches are taken; paged on the small replicas preempts
    wl = poisson_workload(48, rate, seed=seed, prompt=(16, 600), output=(1, 900))
    if clients:
        wl = dataclasses.replace(wl, concurrency=clients)
    cfg = ServeConfig(max_batch=64, reservation=reservation, block_size=block, prefill_chunk=chunk, spec=spec)
    for fast in (False, True):
        on, on_calls = _served(wl, REPLICAS[replica], cfg, True, fast=fast)
        off, off_calls = _served(wl, REPLICAS[replica], cfg, False, fast=fast)
        _identical(on, off, (fast, cfg, replica, clients))
        assert on_calls == off_calls


def test_speculating_stretches_are_taken_and_change_nothing(counted):
    # a closed loop of long outputs speculating at fixed gammas: most iterations are in stretches, the
    # result is iterating's field for field (paged with preemptions on the small replicas)
    wl = dataclasses.replace(fixed_workload([(300 + 37 * (i % 9), 700 + 53 * (i % 13)) for i in range(64)]),
                             concurrency=16)
    for replica, gamma, alpha, reservation in (("small", 3, 0.7, "paged"), ("small_windowed", 2, 0.9, "paged"),
                                               ("tp2", 5, 0.5, "paged"), ("windowed", 3, 0.7, "declared"),
                                               ("dense", 1, 0.7, "max_len")):
        cfg = ServeConfig(max_batch=32, reservation=reservation, prefill_chunk=512, block_size=16,
                          spec=SpecConfig(gamma=gamma, alpha=alpha, c=0.05))
        counted.clear()
        on, on_calls = _served(wl, REPLICAS[replica], cfg, True, fast=False)
        assert sum(counted) > 0.4 * on.iterations, replica  # the small K/V preempts often
        off, off_calls = _served(wl, REPLICAS[replica], cfg, False, fast=False)
        assert on_calls == off_calls
        _identical(on, off, replica)
        assert on.tokens_per_round > 1.0 and on.draft_s > 0, replica
        assert replica not in ("small", "small_windowed") or on.preemptions > 0, replica


def test_stretches_are_taken_and_change_nothing(counted):
    # a closed loop of long outputs, paged with chunked prefill and a short K/V (preemptions): most
    # iterations are in stretches, the results are iterating's bit for bit
    wl = dataclasses.replace(fixed_workload([(300 + 37 * (i % 9), 700 + 53 * (i % 13)) for i in range(96)]),
                             concurrency=24)
    for replica in ("small", "small_windowed", "tp2", "windowed", "moe_ep"):
        cfg = ServeConfig(max_batch=32, reservation="paged", prefill_chunk=512, block_size=16)
        counted.clear()
        on, on_calls = _served(wl, {**REPLICAS, "moe_ep": MOE_EP}[replica], cfg, True, fast=False)
        assert sum(counted) > 0.6 * on.iterations, replica
        off, off_calls = _served(wl, {**REPLICAS, "moe_ep": MOE_EP}[replica], cfg, False, fast=False)
        assert on_calls == off_calls
        assert on.finish_s == off.finish_s and on.first_token_s == off.first_token_s, replica
        _same(on, off, replica)
        assert replica not in ("small", "small_windowed") or on.preemptions > 0


def test_a_fleets_replicas_stop_at_the_routers_until(counted):
    wl = poisson_workload(120, 12.0, seed=2, prompt=(32, 512), output=(64, 600))
    cfg = ServeConfig(reservation="paged", prefill_chunk=256)
    runs = []
    for on in (True, False):
        saved, decode_stretch.ENABLED = decode_stretch.ENABLED, on
        try:
            runs.append(serve_fleet(wl, DENSE, cfg, 3, "least-loaded"))
        finally:
            decode_stretch.ENABLED = saved
    assert sum(counted) > 0
    a, b = runs
    assert a.assignment == b.assignment
    _same(a.fleet, b.fleet, "fleet")


def test_a_closed_loops_schedule_is_the_same_term_for_term(counted):
    wl = dataclasses.replace(fixed_workload([(800 + 11 * (i % 7), 900 + 29 * (i % 11)) for i in range(64)]),
                             concurrency=16)
    cfg = ServeConfig(max_batch=64, reservation="paged", prefill_chunk=8192)
    for replica in (WINDOWED, TP2):
        schedules = []
        for on in (True, False):
            saved, decode_stretch.ENABLED = decode_stretch.ENABLED, on
            try:
                schedules.append(closed_loop_schedule(wl, replica, cfg))
            finally:
                decode_stretch.ENABLED = saved
        assert schedules[0] == schedules[1]
    assert sum(counted) > 0


def test_held_tokens_over_arrays_is_the_scalar_formula():
    import numpy as np

    held = held_tokens_fn(WINDOWED.cost)
    c = np.array([0, 1, 5, 4095, 4096, 4097, 10_000, 123_457])
    assert held.many(c).tolist() == [held(x) for x in c.tolist()]


def test_stretches_apply_by_an_allow_list_of_the_config_fields():
    # issue 24.3: a ServeConfig field the stretch does not declare (a feature added since) keeps the
    # loop iterating; every field there is today is declared
    import dataclasses

    from llm_cost.serving import decode_stretch
    from llm_cost.serving.serve_config import ServeConfig

    assert {field.name for field in dataclasses.fields(ServeConfig)} == set(decode_stretch.FEATURES)
    assert decode_stretch.supports(ServeConfig(reservation="paged"))
    assert not decode_stretch.supports(ServeConfig(reservation="none"))
    assert not decode_stretch.supports(ServeConfig(reservation="paged", kv_offload_bytes=1e9))

    @dataclasses.dataclass(frozen=True)
    class Newer(ServeConfig):
        new_feature: int = 1

    assert not decode_stretch.supports(Newer(reservation="paged"))
