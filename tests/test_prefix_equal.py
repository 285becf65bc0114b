"""Prefix caching's speed-ups change no schedule (issue 25.7): the fast path (`fast_prefix`) against
the general loop, the cache's interned block ids against the plain tuple keys of `block_keys`, and the
fleet's skipping of replicas that have nothing to do before an arrival against a driver that advances
every replica at every arrival. Finish times, first tokens, the hit statistics (every field of the
results) bit-equal on a shared prefix, prefix groups, sessions, evictions, preemptions and a host tier."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import fields

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llm_cost.catalog import load_accelerator, load_model
from llm_cost.serving import fast_prefix, fleet, prefix_cache
from llm_cost.serving.engine import serve
from llm_cost.serving.kv_blocks import blocks_for
from llm_cost.serving.prefixes import prefix_segments
from llm_cost.serving.replica import Replica
from llm_cost.serving.serve_config import ServeConfig
from llm_cost.serving.workload import poisson_workload

SERVER = Replica.from_specs(load_model("gpt-3-13b"), load_accelerator("a100-40gb"))
TIGHT = Replica(SERVER.cost, 6000, SERVER.max_len)  # 375 blocks of 16: the LRU evicts
CACHED = ServeConfig(reservation="paged", prefix_caching=True)
OFFLOAD = ServeConfig(reservation="paged", prefix_caching=True, kv_offload_bytes=2e8)

WORKLOADS = {
    "shared": dict(shared=300),
    "groups": dict(groups=12, group_tokens=400),
    "groups-uniform": dict(groups=40, group_tokens=200, distribution="uniform", shared=64),
    "sessions": dict(sessions=10, turns=4, shared=48),
}


class _Recorded(prefix_cache.PrefixCache):
    made: list = []

    def __init__(self, *a, **k) -> None:
        super().__init__(*a, **k)
        self.made.append(self)


class _PlainKeys(_Recorded):
    """The cache keyed by `block_keys`' nested tuples, computed at every call (the plain spelling)."""

    def keys_of(self, i: int) -> tuple:
        return prefix_cache.block_keys(self.prefix[i], self.prompt[i], self.B)

    def sequence_keys(self, i: int, tokens: int) -> tuple:
        return prefix_cache.block_keys(self.prefix[i], tokens + 1, self.B)  # every full block of `tokens`


def _plain_fleet(workload, replica, config, replicas, router):
    """`serve_fleet`'s driver as the module doc says it: every replica advanced to every arrival."""
    from llm_cost.serving.engine_loop import EngineLoop

    loops = [EngineLoop(workload, replica, config, [0] * len(workload)) for _ in range(replicas)]
    for loop in loops:
        loop.routed()
    assignment = [0] * len(workload)
    for k, t in enumerate(workload.arrival_s):
        for loop in loops:
            loop.run(until=t)
        r = fleet.route_one(router, loops, k, k)
        assignment[k] = r
        loops[r].enqueue(k, t)
    for loop in loops:
        loop.run()
    return fleet.fleet_result(workload, replica, config, router, loops, assignment)


def _facts(r) -> tuple:
    return (r.finish_s, r.first_token_s, r.prefix_hit_requests, r.prefix_hit_tokens, r.preemptions, r.busy_s)


def _with_cache(monkeypatch, cls, run):
    cls.made = []
    monkeypatch.setattr(prefix_cache, "PrefixCache", cls)
    out = run()
    return out, [(c.evictions, len(c.lru), len(c.ref)) for c in cls.made]


@pytest.mark.parametrize("name", sorted(WORKLOADS))
@pytest.mark.parametrize("replica, config", [(SERVER, CACHED), (TIGHT, CACHED), (TIGHT, OFFLOAD)],
                         ids=["roomy", "evicting", "host-tier"])
def test_interned_block_ids_serve_the_plain_keys_schedule(monkeypatch, name, replica, config):
    wl = prefix_segments(poisson_workload(300, 12.0, seed=5), seed=1, **WORKLOADS[name])
    fast, fast_caches = _with_cache(monkeypatch, _Recorded, lambda: serve(wl, replica, config, fast=False))
    plain, plain_caches = _with_cache(monkeypatch, _PlainKeys, lambda: serve(wl, replica, config, fast=False))
    assert _facts(fast) == _facts(plain) and fast_caches == plain_caches
    assert fast.prefix_hit_tokens > 0
    if replica is TIGHT and name.startswith("groups"):
        assert fast_caches[-1][0] > 0  # the LRU did evict


@pytest.mark.parametrize("router", ["round-robin", "least-loaded", "prefix-affinity"])
@pytest.mark.parametrize("name", ["groups", "sessions"])
def test_the_fleet_skipping_idle_replicas_serves_the_plain_drivers_schedule(monkeypatch, router, name):
    wl = prefix_segments(poisson_workload(400, 30.0, seed=2), seed=3, **WORKLOADS[name])
    fast, fast_caches = _with_cache(monkeypatch, _Recorded, lambda: fleet.serve_fleet(wl, TIGHT, CACHED, 4, router))
    plain, plain_caches = _with_cache(monkeypatch, _PlainKeys, lambda: _plain_fleet(wl, TIGHT, CACHED, 4, router))
    assert fast.assignment == plain.assignment and _facts(fast.fleet) == _facts(plain.fleet)
    assert fast_caches[-4:] == plain_caches  # serve_fleet's first cache is its one-request check's


def _every_field_equal(a, b) -> None:
    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        assert x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y)), f.name


@pytest.mark.parametrize("name", sorted(WORKLOADS))
@pytest.mark.parametrize("replica, replicas, router", [(SERVER, 3, "prefix-affinity"), (TIGHT, 4, "round-robin"),
                                                       (TIGHT, 2, "least-loaded"), (TIGHT, 3, "prefix-affinity")],
                         ids=["roomy", "tight-rr", "tight-ll", "tight-pa"])
def test_the_fast_path_serves_the_general_loops_fleet_bit_for_bit(monkeypatch, name, replica, replicas, router):
    wl = prefix_segments(poisson_workload(500, 12.0 * replicas, seed=7), seed=2, **WORKLOADS[name])
    calls = {"fast": 0, "handovers": 0}

    def counted(method, key):
        def wrapped(self, *a):
            calls[key] += 1
            return method(self, *a)
        return wrapped
    monkeypatch.setattr(fast_prefix.PrefixReplica, "_run_fast", counted(fast_prefix.PrefixReplica._run_fast, "fast"))
    monkeypatch.setattr(fast_prefix.PrefixReplica, "_to_general",
                        counted(fast_prefix.PrefixReplica._to_general, "handovers"))
    fast = fleet.serve_fleet(wl, replica, CACHED, replicas, router)
    general = fleet.serve_fleet(wl, replica, CACHED, replicas, router, fast=False)
    assert fast.assignment == general.assignment
    for a, b in zip((fast.fleet, *fast.replicas), (general.fleet, *general.replicas)):
        _every_field_equal(a, b)
    assert calls["fast"] > 0 and fast.prefix_token_hit_rate > 0
    if replica is TIGHT:  # preemptions: the general loop ran them and handed the run back
        assert fast.fleet.preemptions > 0 and calls["handovers"] > 0 and calls["fast"] > calls["handovers"]


def test_the_fast_path_is_an_allow_list():
    wl = prefix_segments(poisson_workload(10, 1.0, seed=0), shared=32)
    assert fast_prefix.covers(wl, SERVER, CACHED)
    assert not fast_prefix.covers(wl, SERVER, ServeConfig(reservation="paged"))  # no cache
    assert not fast_prefix.covers(wl, SERVER, OFFLOAD)  # the host tier: the general loop
    assert not fast_prefix.covers(wl, SERVER, ServeConfig(reservation="paged", prefix_caching=True, prefill_chunk=64))
    assert not fast_prefix.covers(poisson_workload(10, 1.0, seed=0), SERVER, CACHED)  # no prefixes
    assert set(fast_prefix.FEATURES) == {f.name for f in fields(ServeConfig)}


@pytest.mark.parametrize("name", sorted(WORKLOADS))
@pytest.mark.parametrize("replica", [SERVER, TIGHT], ids=["roomy", "tight"])
def test_serve_takes_the_fast_path_for_prefix_caching_and_keeps_the_loops_schedule(name, replica):
    wl = prefix_segments(poisson_workload(400, 14.0, seed=4), seed=6, **WORKLOADS[name])
    fast, general = serve(wl, replica, CACHED), serve(wl, replica, CACHED, fast=False)
    assert (fast.path, general.path) == ("fast_prefix", "general")
    for f in fields(fast):
        if f.name != "path":
            x, y = getattr(fast, f.name), getattr(general, f.name)
            assert x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y)), f.name
    assert fast.prefix_hit_tokens > 0 and (replica is SERVER or fast.preemptions > 0)


@pytest.mark.parametrize("replica", [SERVER, TIGHT], ids=["roomy", "tight"])
def test_the_sessions_compared_hit_their_previous_answers(replica):
    # the sessions runs above exercise the answers' blocks (a finished turn's, `PrefixCache.release`):
    # keyed by the prompts alone (the session's segment cut at its prompt), they hit fewer tokens
    wl = prefix_segments(poisson_workload(400, 14.0, seed=4), seed=6, **WORKLOADS["sessions"])
    cut = tuple(seg[:-1] + ((seg[-1][0], p - sum(t for _, t in seg[:-1])),) for seg, p in zip(wl.prefix, wl.prompt))
    assert all(seg[-1][1] > c[-1][1] for seg, c in zip(wl.prefix, cut))
    answers, prompts = serve(wl, replica, CACHED), serve(dataclasses.replace(wl, prefix=cut), replica, CACHED)
    assert answers.prefix_hit_tokens > prompts.prefix_hit_tokens > 0
    assert answers.positions_computed < prompts.positions_computed


@pytest.mark.parametrize("kind", ["tp2", "moe"])
def test_the_fast_path_keeps_the_loops_schedule_where_its_time_is_not_inlined(kind):
    # a deployment (collectives counted apart) or routed experts: `totals_time` each iteration
    from llm_cost.specs.deployment import Deployment

    if kind == "tp2":
        server = Replica.from_specs(load_model("gpt-3-13b"), load_accelerator("a100-40gb"), deployment=Deployment(tp=2))
    else:
        server = Replica.from_specs(load_model("qwen3-30b-a3b"), load_accelerator("h100-sxm"), kv_tokens=20000)
    wl = prefix_segments(poisson_workload(300, 20.0, seed=9), seed=1, groups=8, group_tokens=256)
    fast, general = serve(wl, server, CACHED), serve(wl, server, CACHED, fast=False)
    timer = fast_prefix.PrefixReplica(wl, server, CACHED, [0]).timer  # tp2: `totals_time`; moe: `cost.time`
    assert fast.path == "fast_prefix" and (timer is None if kind == "tp2" else timer == server.cost.time)
    _every_field_equal(dataclasses.replace(fast, path="general"), general)
    assert fast.prefix_hit_tokens > 0 and (kind == "moe" or fast.comm_total_s > 0)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), n=st.integers(5, 80), rate=st.sampled_from([2.0, 20.0, 1e6]),
       block=st.sampled_from([1, 4, 16, 32]), watermark=st.sampled_from([0.0, 0.01, 0.1]),
       batch=st.sampled_from([1, 2, 8, 32]), room=st.sampled_from([0, 64, 1000, 20000]),
       prefix=st.sampled_from(sorted(WORKLOADS)), replicas=st.integers(1, 3),
       router=st.sampled_from(["round-robin", "least-loaded", "prefix-affinity"]))
def test_random_prefix_runs_are_the_loops_bit_for_bit(seed, n, rate, block, watermark, batch, room, prefix,
                                                      replicas, router):
    wl = prefix_segments(poisson_workload(n, rate, seed=seed), seed=seed, **WORKLOADS[prefix])
    cfg = ServeConfig(reservation="paged", prefix_caching=True, block_size=block, watermark=watermark,
                      max_batch=batch)
    longest = max(p + o for p, o in zip(wl.prompt, wl.output))
    server = Replica(SERVER.cost, blocks_for(longest + 1, block) * block + room, 100_000)  # the longest fits alone
    fast, general = serve(wl, server, cfg), serve(wl, server, cfg, fast=False)
    assert fast.path == "fast_prefix"
    _every_field_equal(dataclasses.replace(fast, path="general"), general)
    a, b = fleet.serve_fleet(wl, server, cfg, replicas, router), fleet.serve_fleet(wl, server, cfg, replicas, router,
                                                                                  fast=False)
    assert a.assignment == b.assignment
    _every_field_equal(a.fleet, b.fleet)


def test_the_fast_path_reports_progress_as_requests_finish():
    wl = prefix_segments(poisson_workload(300, 12.0, seed=1), shared=64)
    seen = []
    serve(wl, SERVER, CACHED, on_progress=lambda done, total: seen.append((done, total)))
    assert len(seen) > 10 and seen == sorted(seen) and seen[-1] == (300, 300)
