"""K/V offload to a host tier (issue 25.4, 25.6): a prefix block evicted to host memory and brought
back (counted by hand), preempted sequences swapped there instead of recomputed, B = 0 unchanged,
the host tier's own LRU, the CLI option, and a property (offload never raises the prefill tokens)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llm_cost.catalog import load_accelerator, load_model
from llm_cost.errors import InvalidValueError
from llm_cost.serving.engine import serve
from llm_cost.serving.fast_engine import fast_eligible
from llm_cost.serving.host_tier import HostTier
from llm_cost.serving.prefixes import with_prefix_groups
from llm_cost.serving.replica import IterationCost, Replica
from llm_cost.serving.run_stats import RunStats
from llm_cost.serving.serve_config import ServeConfig
from llm_cost.serving.workload import fixed_workload, poisson_workload
from tests.helpers import run, rows_of

# 1 s per iteration (the bytes' time negligible), 1000 K/V bytes a token: a block of 16 is 16,000 bytes
KV_COST = IterationCost(weight_bytes=0.0, kv_token_bytes=1000.0, row_flops=0.0, pair_flops=0.0,
                        bytes_per_s=1e30, flops_per_s=1.0, fixed_s=1.0)
HOST = 32_000.0  # bytes/s over the host link: one block back in 0.5 s


def _evicting_workload():
    """Three 40-token prompts (2 full prefix blocks each) with prefixes a, b, a, one after another."""
    base = fixed_workload([(40, 2), (40, 2), (40, 2)], arrivals_s=[0.0, 10.0, 20.0])
    segs = ((("a", 32),), (("b", 32),), (("a", 32),))
    return base.__class__(**{**base.__dict__, "prefix": segs})


def _cached(offload: float) -> ServeConfig:
    return ServeConfig(reservation="paged", watermark=0, prefix_caching=True, host_bytes_per_s=HOST,
                       kv_offload_bytes=offload)


def test_a_block_evicted_to_host_comes_back_counted_by_hand():
    # Room for 4 blocks of 16 (test_prefix_cache's eviction case). Request 0 ends: its 2 prefix blocks
    # cached (a2 released first). Request 1 (prefix b) takes 3 blocks: a2 is evicted, to the host tier
    # with offload on: 16,000 bytes out at 32,000 B/s, 0.5 s added to request 1's prefill iteration
    # (TTFT 1.5 s, 1.0 s without). Request 1 ends: b2, b1 cached. Request 2 (prefix a) finds a1 on the
    # GPU and, with offload, a2 on the host: 32 tokens hit (16 without); a2 back (16,000 bytes) and
    # its 2 new blocks evict b2 out (16,000 bytes): 1.0 s added to its prefill iteration, TTFT 2.0 s
    # (1.0 s recomputing). Bytes 3 x 16,000; rows 41 + 41 + (8 + 1) = 91 against 41 + 41 + 25 = 107.
    small = Replica(KV_COST, 64, 2048)
    wl = _evicting_workload()
    on, off = serve(wl, small, _cached(1e6)), serve(wl, small, _cached(0))
    assert on.finished == off.finished == 3
    assert (on.prefix_hit_requests, on.prefix_hit_tokens) == (1, 32)
    assert (off.prefix_hit_requests, off.prefix_hit_tokens) == (1, 16)
    assert on.swap_bytes == 48_000 and off.swap_bytes == 0
    assert on.first_token_s[1] - 10.0 == pytest.approx(1.5, abs=1e-9)
    assert on.first_token_s[2] - 20.0 == pytest.approx(2.0, abs=1e-9)
    assert off.first_token_s[1] - 10.0 == off.first_token_s[2] - 20.0 == pytest.approx(1.0, abs=1e-9)
    assert on.busy_s - off.busy_s == pytest.approx(1.5, abs=1e-9)  # three blocks over the link
    assert (on.positions_computed, off.positions_computed) == (91, 107)
    # a tier smaller than one block holds nothing: the run is the one without offload (which prefix
    # caching's fast path runs: the same schedule)
    assert (off.path, replace(serve(wl, small, _cached(15_999)), path=off.path)) == ("fast_prefix", off)


def test_the_host_tier_is_lru_and_pinned_sequences_come_first():
    tier = HostTier(capacity_bytes=2 * 100, block_bytes=100)
    for key in "xyz":
        tier.put(key)
    assert list(tier.blocks) == ["y", "z"] and tier.evictions == 1  # x, the oldest, dropped
    stats = RunStats()  # the three went out over the host link: charged once, at 100 B/s
    assert (tier.sent(stats, 100.0), stats.swap_bytes, tier.sent(stats, 100.0)) == (3.0, 300.0, 0.0)
    assert tier.pin(150) and list(tier.blocks) == [] and tier.used == 150  # a sequence evicts blocks
    assert not tier.pin(100)  # 50 bytes left: refused
    tier.put("w")
    assert list(tier.blocks) == [] and tier.evictions == 4  # no room for a block beside the pinned bytes
    tier.unpin(150)
    tier.put("w")
    assert list(tier.blocks) == ["w"] and tier.used == 100


SERVER_8K = Replica.from_specs(load_model("gpt-3-13b"), load_accelerator("a100-40gb"), kv_tokens=8192)


def test_offload_finishes_a_memory_bound_workload_sooner_than_recompute_at_equal_memory():
    # 32 requests of 1024 + 512 tokens at once into 8192 K/V tokens: about 5 fit, the rest preempt.
    # Recompute prefills each victim's prompt and generated tokens again; offload (50 GB of host
    # memory, PCIe Gen5 64 GB/s) swaps them out and back, so every position is computed once.
    wl = fixed_workload([(1024, 512)] * 32, arrivals_s=[0.0] * 32)
    cfg = dict(max_batch=32, reservation="paged")
    off = serve(wl, SERVER_8K, ServeConfig(**cfg))
    on = serve(wl, SERVER_8K, ServeConfig(**cfg, kv_offload_bytes=50e9))
    assert on.finished == off.finished == 32
    assert off.preemptions > 0 and on.preemptions > 0 and on.swap_bytes > 0
    once = 32 * (1024 + 512 - 1)
    assert on.positions_computed == once < off.positions_computed
    assert max(on.finish_s) < max(off.finish_s)
    assert on.throughput_req_per_s > off.throughput_req_per_s
    # more sequences served in the same time: when offload has served all 32 (85.1 s), recompute has
    # served 30 (its last two at 86.5 s); each later wave of offload's finishes sooner than recompute's
    by = max(on.finish_s)
    assert sum(f <= by for f in off.finish_s) == 30 < 32
    assert all(a < b for a, b in zip(sorted(on.finish_s)[5:], sorted(off.finish_s)[5:]))
    # a tier smaller than one token's K/V (819,200 bytes) takes no victim: recompute, the same run (the
    # general loop throughout, where `off` takes the fast path between preemptions: times to rounding)
    tiny = serve(wl, SERVER_8K, ServeConfig(**cfg, kv_offload_bytes=1000))
    assert (tiny.positions_computed, tiny.preemptions, tiny.swap_bytes) == (off.positions_computed, off.preemptions, 0)
    assert tiny.finish_s == pytest.approx(off.finish_s, rel=1e-9)


def test_offload_with_prefix_caching_keeps_more_hits_under_memory_pressure():
    wl = with_prefix_groups(poisson_workload(120, 10.0, seed=1), 8, 1024, "uniform", seed=1)
    small = Replica.from_specs(load_model("gpt-3-13b"), load_accelerator("a100-40gb"), kv_tokens=4096)
    cfg = dict(max_batch=32, reservation="paged", prefix_caching=True)
    off = serve(wl, small, ServeConfig(**cfg))
    on = serve(wl, small, ServeConfig(**cfg, kv_offload_bytes=50e9))
    assert on.finished == off.finished == 120
    assert on.prefix_hit_tokens > off.prefix_hit_tokens and on.swap_bytes > 0
    assert on.positions_computed < off.positions_computed
    assert on.percentile_s("ttft", "p50") < off.percentile_s("ttft", "p50")


def test_zero_offload_is_todays_engine():
    assert ServeConfig(reservation="paged", kv_offload_bytes=0) == ServeConfig(reservation="paged")
    wl = fixed_workload([(1024, 512)] * 16, arrivals_s=[0.0] * 16)
    longest = 1024 + 512
    assert fast_eligible(wl, SERVER_8K, ServeConfig(reservation="paged", kv_offload_bytes=0), longest)
    assert not fast_eligible(wl, SERVER_8K, ServeConfig(reservation="paged", kv_offload_bytes=1e9), longest)
    a = serve(wl, SERVER_8K, ServeConfig(reservation="paged", kv_offload_bytes=0.0))
    assert a == serve(wl, SERVER_8K, ServeConfig(reservation="paged")) and a.preemptions > 0
    # with room enough that nothing is evicted or preempted, a tier changes nothing either
    roomy = Replica(KV_COST, 1000, 2048)
    wl = _evicting_workload()
    tiered, plain = serve(wl, roomy, _cached(1e9)), serve(wl, roomy, _cached(0))
    assert (plain.path, replace(tiered, path=plain.path)) == ("fast_prefix", plain)


def test_offload_is_refused_where_it_cannot_run():
    with pytest.raises(InvalidValueError, match=r"kv_offload_bytes must be in \[0, inf\), got -1"):
        ServeConfig(reservation="paged", kv_offload_bytes=-1)
    with pytest.raises(InvalidValueError, match="kv_offload_bytes needs reservation paged with preemption recompute"):
        ServeConfig(kv_offload_bytes=1e9)
    with pytest.raises(InvalidValueError, match="kv_offload_bytes needs reservation paged with preemption recompute"):
        ServeConfig(reservation="paged", preemption="swap", kv_offload_bytes=1e9)


def test_cli_kv_offload_bytes_runs_and_refuses_a_negative_in_one_line():
    args = ["batching", "--rate", "4", "-n", "40", "--reservation", "paged", "--kv-tokens", "8192",
            "--prompt-len", "1024", "--output-len", "512"]
    on, off = rows_of(*args, "--kv-offload-bytes", "50e9")[0], rows_of(*args)[0]
    assert on["finished"] == off["finished"] == 40
    assert (on["kv_offload_bytes"], off["kv_offload_bytes"]) == (50e9, 0.0)
    assert on["preemptions"] > 0 and on["swap_bytes"] > 0 and off["swap_bytes"] == 0
    bad = run("batching", "--rate", "1", "-n", "20", "--reservation", "paged", "--kv-offload-bytes", "-1")
    assert bad.exit_code == 2 and "Traceback" not in bad.output
    lines = bad.output.strip().splitlines()
    assert len(lines) == 1 and "kv-offload-bytes" in lines[0] and "[0, inf)" in lines[0]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), groups=st.integers(1, 6), tokens=st.integers(16, 600),
       rate=st.floats(2.0, 40.0), offload=st.sampled_from([1e8, 1e9, 5e10]), cached=st.booleans())
def test_offload_serves_everything(seed, groups, tokens, rate, offload, cached):
    """Any tier, with or without the prefix cache, serves every request. (A tier too small to hold a
    preempted sequence is no promise of fewer positions: its transfers move the schedule, and seed 444
    at 40 req/s with a 0.1 GB tier preempts 8 times where recompute preempts 7, 20,452 positions
    against 20,334.)"""
    wl = with_prefix_groups(poisson_workload(60, rate, seed=seed), groups, tokens, "uniform", seed=seed)
    small = Replica.from_specs(load_model("gpt-3-13b"), load_accelerator("a100-40gb"), kv_tokens=4096)
    on = serve(wl, small, ServeConfig(reservation="paged", prefix_caching=cached, kv_offload_bytes=offload))
    assert on.finished == len(wl)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), groups=st.integers(1, 6), tokens=st.integers(16, 600),
       rate=st.floats(2.0, 40.0))
def test_a_tier_that_holds_every_preempted_sequence_recomputes_nothing(seed, groups, tokens, rate):
    """With a 50 GB host tier every preempted sequence is swapped out and back, never recomputed: the
    positions computed are exactly those of a replica that never runs short (the most K/V an A100
    40GB holds for GPT-3 13B), and at most those of recompute on the same small replica."""
    wl = with_prefix_groups(poisson_workload(60, rate, seed=seed), groups, tokens, "uniform", seed=seed)
    model, gpu = load_model("gpt-3-13b"), load_accelerator("a100-40gb")
    small = Replica.from_specs(model, gpu, kv_tokens=4096)
    roomy = Replica.from_specs(model, gpu, kv_tokens=48_828)
    on = serve(wl, small, ServeConfig(reservation="paged", kv_offload_bytes=5e10))
    off = serve(wl, small, ServeConfig(reservation="paged"))
    free = serve(wl, roomy, ServeConfig(reservation="paged"))
    assert on.finished == off.finished == free.finished == len(wl)
    assert on.positions_computed == free.positions_computed <= off.positions_computed
    assert off.preemptions == 0 or off.positions_computed > free.positions_computed
