"""Disaggregated prefill and decode, simulated (issue 25.3, 25.6): a hand-checked two-request run,
TTFT unaffected by decode load where the aggregated engine's rises, the hand-off time against
`plan --disaggregate`'s (`parallel.send_s` of `counts.kv_bytes`), no request lost, bad input."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llm_cost.catalog import load_accelerator, load_model
from llm_cost.errors import InvalidValueError
from llm_cost.serving.disaggregated import serve_disaggregated
from llm_cost.serving.engine import serve
from llm_cost.serving.fleet import serve_fleet
from llm_cost.serving.replica import IterationCost, Replica
from llm_cost.serving.serve_config import ServeConfig
from llm_cost.serving.workload import fixed_workload, poisson_workload

A100 = load_accelerator("a100-40gb")
SERVER = Replica.from_specs(load_model("gpt-3-13b"), A100)
PAGED = ServeConfig(reservation="paged")
UNIT = Replica(IterationCost.unit(), 100, 2048)


def test_two_requests_by_hand():
    # unit iterations (1 s each), 4 prompt + 5 output tokens, both at t = 0, 1 B of K/V per token over
    # a 4 B/s link: the prefill pool prefills both in one iteration (first tokens at 1 s), each K/V
    # (4 B) moves in 1 s (decode arrivals at 2 s); the decode pool's first iteration feeds the first
    # tokens (token 2 at 3 s), tokens 3, 4, 5 at 4, 5, 6 s. TTFT 1 s, TPOT (6 - 1) / 4 = 1.25 s.
    wl = fixed_workload([(4, 5), (4, 5)])
    d = serve_disaggregated(wl, UNIT, ServeConfig(reservation="paged", block_size=1, watermark=0), prefill=1,
                            decode=1, link_bytes_per_s=4.0, kv_bytes_per_token=1.0)
    assert d.served.first_token_s == (1.0, 1.0) and d.served.finish_s == (6.0, 6.0)
    assert d.transfer_s == (1.0, 1.0) and d.transfer_mean_s == d.transfer_max_s == 1.0
    assert d.served.percentile_s("ttft", "p50") == 1.0 and d.served.percentile_s("tpot", "p50") == 1.25
    assert d.prefill.fleet.iterations == 1 and d.decode.fleet.iterations == 4
    assert d.served.iterations == 5 and d.served.busy_s == 5.0
    # the decode pool holds each prompt's K/V from admission: 4 + 1 tokens, then one more a token
    assert d.decode.fleet.output == (4, 4) and d.decode.fleet.kv_used_peak_tokens == 2 * 8
    # a request of one output token never reaches the decode pool; the other's tokens 2, 3 at 3, 4 s
    one = serve_disaggregated(fixed_workload([(4, 1), (4, 3)]), UNIT, PAGED, prefill=1, decode=1,
                              link_bytes_per_s=4.0, kv_bytes_per_token=1.0)
    assert one.decode_of == (1,) and one.served.finish_s == (1.0, 4.0) and math.isnan(one.transfer_s[0])


def test_ttft_unaffected_by_decode_load():
    # the same arrivals and prompts, outputs of 16 then 128 tokens: the prefill pool sees the same stream
    # (its TTFT p50 is unchanged, exactly); the aggregated fleet on as many GPUs mixes the longer decodes
    # into the prefills' iterations and its TTFT p50 rises (measured: 36.3 ms -> 47.0 ms)
    link = A100.interconnect_bytes_per_s
    ttft, agg = [], []
    for out in (16, 128):
        wl = poisson_workload(300, 4.0, seed=1, prompt=256, output=out)
        d = serve_disaggregated(wl, SERVER, PAGED, prefill=1, decode=3, link_bytes_per_s=link)
        assert d.served.finished == len(wl)
        ttft.append(d.served.percentile_s("ttft", "p50"))
        agg.append(serve_fleet(wl, SERVER, PAGED, 4, "least-loaded").fleet.percentile_s("ttft", "p50"))
    assert ttft[1] == ttft[0]
    assert agg[1] > 1.2 * agg[0]


def test_handoff_is_plan_disaggregates():
    # `planner.disaggregate`'s hand-off of one request on one GPU: parallel.send_s(counts.kv_bytes(ISL))
    # = alpha + ISL x kv bytes per token / beta (the A100's NVLink 3 datasheet figures)
    from llm_cost.counts import kv_bytes
    from llm_cost.parallel import send_s

    wl = fixed_workload([(512, 4), (100, 4)], arrivals_s=[0.0, 1.0])
    d = serve_disaggregated(wl, SERVER, PAGED, prefill=1, decode=1, link_bytes_per_s=A100.interconnect_bytes_per_s,
                            link_latency_s=A100.interconnect_latency_s)
    model = load_model("gpt-3-13b")
    for t, isl in zip(d.transfer_s, (512, 100)):
        assert t == pytest.approx(send_s(kv_bytes(model, isl, 2.0), A100), rel=1e-12)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), rate=st.floats(2.0, 200.0), p=st.integers(1, 3), dd=st.integers(1, 3),
       cached=st.booleans(), tight=st.booleans())
def test_no_request_lost(seed, rate, p, dd, cached, tight):
    # with prefix caching on the prefill pool or not, and a decode pool of 4,096 K/V tokens or the GPU's
    # (a small one queues hand-offs, and the prefill replicas hold their K/V meanwhile)
    from llm_cost.serving.prefixes import with_prefix_groups

    wl = poisson_workload(60, rate, seed=seed)
    if cached:
        wl = with_prefix_groups(wl, 3, 256, seed=seed)
    config = ServeConfig(reservation="paged", prefix_caching=cached)
    dec = Replica.from_specs(load_model("gpt-3-13b"), A100, kv_tokens=4096) if tight else None
    d = serve_disaggregated(wl, SERVER, config, prefill=p, decode=dd, link_bytes_per_s=A100.interconnect_bytes_per_s,
                            decode_replica=dec)
    assert d.served.finished == len(wl) and d.deadlock is None
    assert d.prefill.fleet.kv_used_peak_tokens <= SERVER.kv_capacity_tokens
    if d.decode is not None:
        assert d.decode.fleet.kv_used_peak_tokens <= (dec or SERVER).kv_capacity_tokens
    assert sum(d.prefill.requests_per_replica) == len(wl)
    moved = [i for i, o in enumerate(wl.output) if o > 1]
    assert sorted(d.decode_of) == moved and sum(d.decode.requests_per_replica) == len(moved)
    # every request's tokens: the first from the prefill pool, the rest from the decode pool
    assert sum(d.decode.fleet.output) + len(wl) == sum(wl.output)
    f1, fin, arr = d.served.first_token_s, d.served.finish_s, d.served.arrival_s
    assert all(a <= f <= e for a, f, e in zip(arr, f1, fin))
    for i in moved:  # the decode side starts no earlier than the hand-off
        assert fin[i] >= f1[i] + d.transfer_s[i]


@pytest.mark.parametrize("kwargs, words", [
    ({"prefill": 0, "decode": 1, "link_bytes_per_s": 1.0}, "prefill"),
    ({"prefill": 1, "decode": 0, "link_bytes_per_s": 1.0}, "decode"),
    ({"prefill": 1, "decode": 1, "link_bytes_per_s": 0.0}, "link_bytes_per_s"),
    ({"prefill": 1, "decode": 1, "link_bytes_per_s": 1.0, "link_latency_s": -1.0}, "link_latency_s"),
])
def test_bad_input(kwargs, words):
    with pytest.raises(InvalidValueError, match=words):
        serve_disaggregated(fixed_workload([(4, 5)]), UNIT, PAGED, **kwargs)


def test_prefix_caching_on_the_prefill_pool():
    # a 1024-token system prompt: the prefill pool's cache finds it (its blocks held through the hand-offs
    # count once), its TTFT falls against the uncached pools; the decode pool gets the whole K/V anyway
    from llm_cost.serving.prefixes import with_shared_prefix

    wl = with_shared_prefix(poisson_workload(200, 8.0, seed=4, prompt=128, output=16), 1024)
    kw = dict(prefill=1, decode=1, link_bytes_per_s=A100.interconnect_bytes_per_s)
    on = serve_disaggregated(wl, SERVER, ServeConfig(reservation="paged", prefix_caching=True), **kw)
    off = serve_disaggregated(wl, SERVER, PAGED, **kw)
    assert on.served.finished == off.served.finished == len(wl)
    assert on.prefill.fleet.prefix_token_hit_rate > 0.8 and off.prefill.fleet.prefix_token_hit_rate == 0
    assert on.prefill.fleet.positions_computed < off.prefill.fleet.positions_computed
    assert on.served.percentile_s("ttft", "p50") < off.served.percentile_s("ttft", "p50")
    assert on.transfer_s == off.transfer_s  # the whole prompt's K/V moves either way
    assert on.prefill.fleet.kv_used_peak_tokens < off.prefill.fleet.kv_used_peak_tokens


def test_one_output_token_matches_the_engine_ttft():
    # with one output token the run is the prefill pool alone: one replica is the engine
    wl = poisson_workload(100, 5.0, seed=2, output=1)
    d = serve_disaggregated(wl, SERVER, PAGED, prefill=1, decode=1, link_bytes_per_s=1.0)
    assert d.decode is None and d.served.first_token_s == serve(wl, SERVER, PAGED, fast=False).first_token_s


def test_steady_workload_agrees_with_plan_disaggregate():
    # `plan --disaggregate` prices Llama-3-8B on two H100 SXM (ISL 512, OSL 64, TTFT <= 500 ms, TPOT <=
    # 20 ms) as one prefill GPU (B = 64: 152.8 requests/s) and one decode GPU (B = 512, TPOT 17.6 ms).
    # The simulation of the same pools (FP8 weights, the lecture preset, max_batch = the decode batch)
    # under 1000 requests/s offered (saturated): the prefill pool's rate and the decode pool's TPOT p50
    # agree within 1% (measured 0.2% and 0.01%: prefill is compute-bound, so its continuous batches
    # run at the static batch's rate); the fleet's throughput, its ramp-up and tail included, within 5%
    # (measured 3.8% below).
    from helpers import rows_of

    from llm_cost.specs import PRESETS
    from llm_cost.specs.weights import FP8

    row = rows_of("plan", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpus", "2", "--isl", "512", "--osl",
                  "64", "--tpot-ms", "20", "--ttft-ms", "500", "--disaggregate", "--preset", "lecture")[0]
    assert (row["prefill_gpus"], row["decode_gpus"], row["prefill_tp"], row["decode_tp"], row["weights"]) == \
        (1, 1, 1, 1, "fp8")
    gpu = load_accelerator("h100-sxm")
    server = Replica.from_specs(load_model("llama-3-8b"), gpu, PRESETS["lecture"], weights=FP8)
    wl = poisson_workload(3000, 1000.0, seed=0, prompt=512, output=64)
    d = serve_disaggregated(wl, server, ServeConfig(reservation="paged", max_batch=row["decode_batch"]), prefill=1,
                            decode=1, link_bytes_per_s=gpu.interconnect_bytes_per_s,
                            link_latency_s=gpu.interconnect_latency_s)
    prefill_rate = row["prefill_batch"] / row["ttft_s"]
    assert d.prefill.fleet.throughput_req_per_s == pytest.approx(prefill_rate, rel=0.01)
    assert d.served.percentile_s("tpot", "p50") == pytest.approx(row["tpot_s"], rel=0.01)
    assert d.served.throughput_req_per_s == pytest.approx(row["requests_per_s"], rel=0.05)
    assert d.served.finished == len(wl)


def test_batching_disaggregate_rows():
    # `batching --disaggregate 1:3`: the fleet's row, every request finished, the hand-off over the
    # A100's NVLink 3 (300 GB/s per direction: hardware/a100-40gb.json) of each prompt's K/V
    from helpers import rows_of

    row = rows_of("batching", "--reservation", "paged", "--rate", "4", "--requests", "200", "--disaggregate", "1:3")[0]
    assert (row["prefill_replicas"], row["decode_replicas"], row["finished"]) == (1, 3, 200)
    assert 0 < row["transfer_mean_s"] < 512 * SERVER.cost.kv_token_bytes / 300e9 + A100.interconnect_latency_s
    assert row["tokens_per_s_per_gpu"] == pytest.approx(row["tokens_per_s"] / 4)


@pytest.mark.parametrize("args, words", [
    (["--disaggregate", "1x3"], "--disaggregate takes P:D"),
    (["--disaggregate", "0:1"], "--disaggregate takes P:D"),
    (["--disaggregate", "1:1", "--router", "least-loaded"], "not --slo-ms, --router or --concurrency"),
])
def test_batching_disaggregate_bad_input(args, words):
    from helpers import error_line

    assert words in error_line("batching", "--reservation", "paged", "--rate", "4", "--requests", "20", *args)


def test_handoff_link_inside_and_past_the_domain():
    # the H100 SXM's datasheet entry (hardware/h100-sxm.json): 8 GPUs on one NVSwitch board, NVLink 4
    # inside it, a 400 Gb/s NIC per GPU (50e9 B/s, 2.7 us) past it
    from llm_cost.serving.disaggregated import handoff_link

    h100 = load_accelerator("h100-sxm")
    assert handoff_link(h100, 8) == (h100.interconnect_bytes_per_s, h100.interconnect_latency_s)
    assert handoff_link(h100, 16) == (50e9, 2.7e-6)
    with pytest.raises(InvalidValueError, match="no GPU-to-GPU link bandwidth"):
        handoff_link(replace(h100, interconnect_bytes_per_s=0.0), 2)


def test_tensor_parallel_replica_sends_its_share():
    # on tp = 2 each GPU holds (and sends) half of each token's K/V (GPT-3 13B's 40 heads split in two):
    # the hand-off takes half the one-GPU time over the same per-GPU link
    from llm_cost.specs.deployment import Deployment

    wl = fixed_workload([(512, 4)])
    tp2 = Replica.from_specs(load_model("gpt-3-13b"), A100, deployment=Deployment(tp=2))
    one = serve_disaggregated(wl, SERVER, PAGED, prefill=1, decode=1, link_bytes_per_s=300e9)
    two = serve_disaggregated(wl, tp2, PAGED, prefill=1, decode=1, link_bytes_per_s=300e9)
    assert two.transfer_s[0] == pytest.approx(one.transfer_s[0] / 2, rel=1e-12)


def test_windowed_layers_move_what_they_hold():
    # Gemma 2 9B (models/gemma-2-9b/config.json, from huggingface.co/google/gemma-2-9b-it: 42 layers,
    # sliding_window 4096, local and global layers alternating): a 6000-token prompt's K/V is
    # (6000 + 4096) / 2 all-layer tokens, so the hand-off moves 10096 / 12000 of the full-context bytes
    h100 = load_accelerator("h100-sxm")
    server = Replica.from_specs(load_model("gemma-2-9b"), h100)
    d = serve_disaggregated(fixed_workload([(6000, 8)]), server, PAGED, prefill=1, decode=1,
                            link_bytes_per_s=h100.interconnect_bytes_per_s)
    full = 6000 * server.cost.kv_token_bytes / h100.interconnect_bytes_per_s
    assert d.transfer_s[0] == pytest.approx(full * 10096 / 12000, rel=1e-9)
    assert d.served.finished == 1


# --- each pool its own replica and config (issue 25.3: DistServe's per-pool parallelism and batch) ---------

def test_larger_decode_batch_admits_more_by_hand():
    # unit iterations (1 s), four requests of 4 prompt + 3 output tokens at t = 0, 1 B of K/V per token over
    # a 4 B/s link (1 s each hand-off), prefill max_batch 2: first tokens at 1, 1, 2, 2 s. The decode pool
    # pulls a request's K/V when it admits it (its blocks the receive buffer), the transfer then takes 1 s,
    # and the prefill replica holds the K/V until the transfer ends. A decode pool of max_batch 2 (the
    # prefill pool's, the default) admits 0, 1 at 1 s (K/V in at 2 s), runs them 2-3 and 3-4 s, and only
    # then admits 2, 3 (at 4 s: K/V in at 5 s, iterations 5-6, 6-7 s): finishes 4, 4, 7, 7 s in 4
    # iterations; the prefill replica holds 2 and 3's 8 blocks from 1 s to 5 s. Of max_batch 4 it admits 2
    # and 3 at 2 s (K/V in at 3 s) beside 0, 1 and runs them in the 3-4 s iteration (batch 4): finishes
    # 4, 4, 5, 5 s, 3 iterations; 2 and 3 are held (running, receiving) from 2 s: sequences held 4, 4, 2
    # over the three iterations; at 3-4 s it holds 0 and 1 at 6 tokens and 2 and 3 at 5: 22. The prefill
    # side: 0, 1 (8 blocks) held 0-2 s, 2, 3 from 1 s: 16 at its peak either way.
    wl = fixed_workload([(4, 3)] * 4)
    small = ServeConfig(reservation="paged", block_size=1, watermark=0, max_batch=2)
    kw = dict(prefill=1, decode=1, link_bytes_per_s=4.0, kv_bytes_per_token=1.0)
    same = serve_disaggregated(wl, UNIT, small, **kw)
    wide = serve_disaggregated(wl, UNIT, small, decode_config=replace(small, max_batch=4), **kw)
    assert same.served.first_token_s == wide.served.first_token_s == (1.0, 1.0, 2.0, 2.0)
    assert same.served.finish_s == (4.0, 4.0, 7.0, 7.0) and same.decode.fleet.iterations == 4
    assert wide.served.finish_s == (4.0, 4.0, 5.0, 5.0) and wide.decode.fleet.iterations == 3
    assert wide.decode.fleet.mean_batch == pytest.approx(10 / 3) and wide.decode.fleet.kv_used_peak_tokens == 22
    assert wide.prefill.fleet.max_batch == 2 and wide.decode.fleet.max_batch == 4
    assert same.prefill.fleet.kv_used_peak_tokens == wide.prefill.fleet.kv_used_peak_tokens == 16
    # prefill busy 0-2 s: 8 blocks over 0-1 s, 16 over 1-2 s (0 and 1 sending, 2 and 3 prefilling): mean 12
    assert same.prefill.fleet.kv_used_mean_tokens == wide.prefill.fleet.kv_used_mean_tokens == 12


def test_the_prefill_side_holds_the_kv_until_the_decode_pool_takes_it():
    # One request of 4 + 3 tokens, then a second at 1.5 s; unit iterations, a room of 8 K/V tokens on the
    # prefill replica (blocks of 1), the hand-off 1 B/token over 1 B/s (4 s). Request 0's first token is at
    # 1 s; its 4 blocks stay on the prefill replica until its transfer ends at 5 s, so request 1 (prompt 6)
    # cannot be admitted there until 5 s: its first token at 6 s (without the hold: 2.5 s).
    wl = fixed_workload([(4, 3), (6, 3)], arrivals_s=[0.0, 1.5])
    cfg = ServeConfig(reservation="paged", block_size=1, watermark=0)
    d = serve_disaggregated(wl, Replica(IterationCost.unit(), 8, 2048), cfg, prefill=1, decode=1,
                            link_bytes_per_s=1.0, kv_bytes_per_token=1.0, decode_replica=UNIT)
    assert d.transfer_s == (4.0, 6.0)
    assert d.served.first_token_s == (1.0, 6.0)
    assert d.served.finish_s == (7.0, 14.0)  # 0: K/V in at 5 s, tokens 2, 3 at 6, 7 s; 1: in at 12 s
    assert d.prefill.fleet.kv_used_peak_tokens == 6 and d.served.finished == 2


def test_handoff_between_splits_by_hand():
    # GPT-3 13B (Brown et al. 2020, Table 2.1: 40 layers, 40 heads of 128): 2 x 40 x 40 x 128 x 2 B =
    # 819,200 B of BF16 K/V per token; a 512-token prompt is 419,430,400 B. Over 300 GB/s per GPU per
    # direction (the A100's NVLink 3, hardware/a100-40gb.json): a tp-1 prefill GPU sends it all to a tp-2
    # decode pool whose GPUs receive half each, and the larger share sets the time, 1.398 ms; the same
    # from tp 2 to tp 1 (one decode GPU receives it all); tp 2 to tp 2: half each way, 0.699 ms.
    from llm_cost.specs.deployment import Deployment

    wl = fixed_workload([(512, 4)])
    tp2 = Replica.from_specs(load_model("gpt-3-13b"), A100, deployment=Deployment(tp=2))
    assert (SERVER.cost.kv_token_bytes, tp2.cost.kv_token_bytes) == (819_200, 409_600)
    kw = dict(prefill=1, decode=1, link_bytes_per_s=300e9)
    up = serve_disaggregated(wl, SERVER, PAGED, decode_replica=tp2, **kw)
    down = serve_disaggregated(wl, tp2, PAGED, decode_replica=SERVER, **kw)
    both = serve_disaggregated(wl, tp2, PAGED, decode_replica=tp2, **kw)
    assert up.transfer_s[0] == pytest.approx(419_430_400 / 300e9, rel=1e-12)
    assert down.transfer_s[0] == up.transfer_s[0] and both.transfer_s[0] == pytest.approx(up.transfer_s[0] / 2)
    # the decode pool runs on its own split: its K/V capacity, its step time (tp 2 decodes faster)
    assert up.decode.fleet.kv_capacity_tokens == tp2.kv_capacity_tokens != SERVER.kv_capacity_tokens
    assert up.prefill.fleet.kv_capacity_tokens == SERVER.kv_capacity_tokens
    one = serve_disaggregated(wl, SERVER, PAGED, **kw)
    assert up.served.first_token_s == one.served.first_token_s
    assert up.decode.fleet.busy_s < one.decode.fleet.busy_s


@pytest.mark.parametrize("config", [PAGED, ServeConfig(reservation="declared", max_batch=8),
                                    ServeConfig(reservation="paged", prefill_chunk=256)])
def test_default_pools_are_todays_run(config):
    # None gives the prefill pool's replica and config: the same run as naming them (bit for bit), and as
    # the code before the pools had their own (checked against that commit's serve_disaggregated on these
    # and a speculative config: first tokens, finishes, hand-offs, iterations, busy time identical)
    import numpy as np

    from llm_cost.specs.deployment import Deployment

    tp2 = Replica.from_specs(load_model("gpt-3-13b"), A100, deployment=Deployment(tp=2))
    wl = poisson_workload(200, 20.0, seed=3)
    kw = dict(prefill=2, decode=1, link_bytes_per_s=A100.interconnect_bytes_per_s,
              link_latency_s=A100.interconnect_latency_s)
    for server in (SERVER, tp2):
        a = serve_disaggregated(wl, server, config, **kw)
        b = serve_disaggregated(wl, server, config, decode_replica=server, decode_config=config, **kw)
        for x, y in ((a.served.first_token_s, b.served.first_token_s), (a.served.finish_s, b.served.finish_s),
                     (a.transfer_s, b.transfer_s)):
            assert np.array_equal(x, y, equal_nan=True)
        assert (a.served.iterations, a.served.busy_s, a.decode.fleet.kv_used_mean_tokens) == \
            (b.served.iterations, b.served.busy_s, b.decode.fleet.kv_used_mean_tokens)


def test_decode_pool_refuses_prefix_caching():
    with pytest.raises(InvalidValueError, match="without prefix caching"):
        serve_disaggregated(fixed_workload([(4, 5)]), UNIT, PAGED, prefill=1, decode=1, link_bytes_per_s=1.0,
                            decode_config=ServeConfig(reservation="paged", prefix_caching=True))


def test_planners_own_pools_agree_with_plan_disaggregate():
    # `plan --disaggregate` on four H100 SXM for Llama-3-8B (ISL 2048, OSL 128, TTFT <= 300 ms, TPOT <= 10
    # ms, lecture preset) picks different pools: two tp-1 prefill replicas of batch 8 (37.1 requests/s
    # each) and one tp-2 decode replica of batch 128 (TPOT 9.32 ms: 108 requests/s). Simulated with those
    # splits and batches under 1000 requests/s offered, the prefill pool's rate agrees within 1% (measured
    # 0.02%) and the fleet's throughput within 5% (measured 3.9% below). The planner prices the decode pool
    # at its full batch: behind the slower prefill pool it runs a mean batch of 46, so its TPOT is lower
    # (measured 5.1 ms). Fed past its rate (three prefill replicas: 111 requests/s), it runs near its full
    # batch and its own TPOT p50 agrees within 1% (measured 0.001%).
    from helpers import rows_of

    from llm_cost.specs import PRESETS
    from llm_cost.specs.deployment import Deployment
    from llm_cost.specs.weights import FP8

    row = rows_of("plan", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpus", "4", "--isl", "2048", "--osl",
                  "128", "--tpot-ms", "10", "--ttft-ms", "300", "--disaggregate", "--preset", "lecture")[0]
    assert (row["prefill_gpus"], row["prefill_tp"], row["prefill_pp"], row["prefill_batch"], row["decode_gpus"],
            row["decode_tp"], row["decode_pp"], row["decode_batch"], row["weights"]) == \
        (2, 1, 1, 8, 2, 2, 1, 128, "fp8")
    gpu, model = load_accelerator("h100-sxm"), load_model("llama-3-8b")
    pre = Replica.from_specs(model, gpu, PRESETS["lecture"], weights=FP8)
    dec = Replica.from_specs(model, gpu, PRESETS["lecture"], weights=FP8, deployment=Deployment(tp=2))
    kw = dict(decode=1, link_bytes_per_s=gpu.interconnect_bytes_per_s, link_latency_s=gpu.interconnect_latency_s,
              decode_replica=dec, decode_config=ServeConfig(reservation="paged", max_batch=row["decode_batch"]))
    pre_config = ServeConfig(reservation="paged", max_batch=row["prefill_batch"])
    wl = poisson_workload(1000, 1000.0, seed=0, prompt=2048, output=128)
    d = serve_disaggregated(wl, pre, pre_config, prefill=2, **kw)
    assert d.served.finished == len(wl)
    assert d.prefill.fleet.throughput_req_per_s == pytest.approx(2 * row["prefill_batch"] / row["ttft_s"], rel=0.01)
    assert d.served.throughput_req_per_s == pytest.approx(row["requests_per_s"], rel=0.05)
    assert d.decode.fleet.mean_batch < 0.5 * row["decode_batch"]
    assert d.decode.fleet.percentile_s("tpot", "p50") < row["tpot_s"]
    fed = serve_disaggregated(poisson_workload(2000, 1000.0, seed=0, prompt=2048, output=128), pre, pre_config,
                              prefill=3, **kw)
    assert fed.decode.fleet.mean_batch > 0.9 * row["decode_batch"]
    assert fed.decode.fleet.percentile_s("tpot", "p50") == pytest.approx(row["tpot_s"], rel=0.01)


BATCHING_POOLS = ("batching", "--model", "gpt-3-13b", "--gpu", "a100-40gb", "--preset", "lecture",  # Orca's setting
                  "--reservation", "paged", "--rate", "4", "--requests", "200", "--disaggregate", "1:2",
                  "--decode-tp", "2", "--decode-max-batch", "64")


def test_batching_decode_pool_options():
    # `--decode-tp 2 --decode-max-batch 64`: the decode pool's two replicas of two A100s each (five GPUs in
    # all), its own batch; the row's per-pool fields are the library's run of the same pools
    from helpers import rows_of

    from llm_cost.specs.deployment import Deployment
    from llm_cost.serving.workload_spec import synthetic_workload

    row = rows_of(*BATCHING_POOLS)[0]
    assert (row["prefill_gpus"], row["decode_gpus"], row["prefill_tp"], row["decode_tp"]) == (1, 4, 1, 2)
    assert (row["prefill_max_batch"], row["decode_max_batch"], row["finished"]) == (32, 64, 200)
    assert row["tokens_per_s_per_gpu"] == pytest.approx(row["tokens_per_s"] / 5)
    tp2 = Replica.from_specs(load_model("gpt-3-13b"), A100, deployment=Deployment(tp=2))
    wl = synthetic_workload(200, 4.0, seed=0, prompt="uniform:32:512", output="uniform:1:128")
    d = serve_disaggregated(wl, SERVER, PAGED, prefill=1, decode=2, link_bytes_per_s=A100.interconnect_bytes_per_s,
                            link_latency_s=A100.interconnect_latency_s, decode_replica=tp2,
                            decode_config=replace(PAGED, max_batch=64))
    assert row["decode_tpot_p50_s"] == d.decode.fleet.percentile_s("tpot", "p50")
    assert row["prefill_ttft_p50_s"] == d.served.percentile_s("ttft", "p50")
    assert row["decode_kv_utilisation"] == d.decode.fleet.kv_utilisation
    assert row["transfer_mean_s"] == d.transfer_mean_s


def test_batching_pool_rows_whole_at_80_columns():
    # the pools' table under the fleet's, fitted to 80 columns: no line wider, every figure of the
    # full-width text whole (tests/test_cli_screen.py's check)
    from test_cli_screen import _numbers, _out

    full, fitted = _out(BATCHING_POOLS), _out(BATCHING_POOLS, 80)
    assert max(len(ln) for ln in fitted.splitlines()) <= 80
    assert not _numbers(full) - _numbers(fitted)
    lines = fitted.splitlines()
    pools = next(i for i, ln in enumerate(lines) if ln.strip().startswith("pools; decode:"))
    assert "tp 2" in lines[pools]
    assert [ln.split()[1] for ln in lines[pools:] if ln.startswith("│")] == ["prefill", "decode"]


@pytest.mark.parametrize("args, words", [
    (["--decode-tp", "2"], "give --disaggregate"),
    (["--disaggregate", "1:1", "--decode-tp", "0"], "--decode-tp must be in [1, inf)"),
    (["--disaggregate", "1:1", "--decode-max-batch", "0"], "--decode-max-batch must be in [1, inf)"),
])
def test_batching_decode_pool_bad_input(args, words):
    from helpers import error_line

    assert words in error_line("batching", "--reservation", "paged", "--rate", "4", "--requests", "20", *args)


def test_batching_disaggregate_prefix_caching_notes_the_implied_paged_kv():
    """`--disaggregate` with `--prefix-caching` and no `--reservation`: served paged, and one note says so,
    the same words as the aggregated path's (none with --quiet, none with an explicit --reservation)."""
    from helpers import run

    args = ["batching", "--rate", "4", "-n", "60", "--shared-prefix", "256", "--prefix-caching", "--disaggregate", "1:1"]
    words = "Note: prefix caching keeps K/V blocks: served with --reservation paged"
    for fmt in ("json", "table"):
        out = run(*args, "--format", fmt)
        assert out.exit_code == 0, out.output
        assert out.stderr.count(words) == 1
    aggregated = run(*args[:-2], "--format", "json")
    assert [ln for ln in aggregated.stderr.splitlines() if ln.startswith("Note")] == \
        [ln for ln in run(*args, "--format", "json").stderr.splitlines() if ln.startswith("Note")]
    assert "Note" not in run(*args, "--reservation", "paged", "--format", "json").stderr
    assert "Note" not in run(*args, "--quiet", "--format", "json").stderr


def test_plan_disaggregate_split_row_energy_is_power_times_time_by_hand():
    """A `plan --disaggregate` split row's energy (issue 25.5) by hand from the H100 SXM datasheet (700 W
    max, 70 W idle) and each pool's `request` row (its request_args): tp 1 (no collectives), so a phase of
    g GPU-seconds per batch of B draws 70 + 630 x a above nothing, a = 1.0 compute-bound, 0.6 memory-bound;
    at the row's rate R each pool draws 70 W per GPU plus R / B x g x 630 x a. Energy = power x time: the
    J/token times the tokens of one second (R x OSL) is the watts, and --usd-per-kwh prices the J/token."""
    import shlex

    from helpers import rows_of

    args = ["plan", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpus", "4", "--isl", "512", "--osl", "64",
            "--tpot-ms", "20", "--ttft-ms", "500", "--disaggregate", "--tp", "1", "--usd-per-kwh", "0.2"]
    row = rows_of(*args)[0]
    assert (row["prefill_tp"], row["decode_tp"], row["prefill_pp"], row["decode_pp"]) == (1, 1, 1, 1)
    rate, activity = row["requests_per_s"], {"compute": 1.0, "memory": 0.6}

    def pool_watts(request_args, gpus, phase):
        (req,) = rows_of("request", *shlex.split(request_args))
        a = activity[req[f"{phase}_bound"]]
        return 70.0 * gpus + rate / req["batch"] * req[f"gpu_seconds_{phase}"] * 630.0 * a

    prefill = pool_watts(row["prefill_request_args"], row["prefill_gpus"], "prefill")
    decode = pool_watts(row["decode_request_args"], row["decode_gpus"], "decode")
    assert row["prefill_watts"] == pytest.approx(prefill, rel=1e-9)
    assert row["decode_watts"] == pytest.approx(decode, rel=1e-9)
    assert row["watts"] == pytest.approx(prefill + decode, rel=1e-12)
    assert 70.0 * row["gpus"] < row["watts"] < 700.0 * row["gpus"]  # between idle and flat out
    assert row["joules_per_token"] * rate * 64 == pytest.approx(row["watts"], rel=1e-12)  # energy = power x time
    assert row["joules_per_request"] == pytest.approx(row["joules_per_token"] * 64, rel=1e-12)
    assert row["usd_per_million_tokens_energy"] == pytest.approx(row["joules_per_token"] * 1e6 / 3.6e6 * 0.2)


def test_plan_disaggregate_table_prices_the_energy():
    """The split table shows the energy's $ per million tokens with --usd-per-kwh, as the frontier's does."""
    from helpers import run

    args = ["plan", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpus", "4", "--isl", "512", "--osl", "64",
            "--tpot-ms", "20", "--ttft-ms", "500", "--disaggregate"]
    assert "energy $/M" not in run(*args).stdout
    priced = run(*args, "--usd-per-kwh", "0.2")
    assert priced.exit_code == 0 and "energy $/M" in priced.stdout


@pytest.mark.parametrize("late", [(150, 5), (60, 50)])  # past the capacity: its prompt; its prompt + output
def test_pools_refuse_what_serve_refuses_on_a_late_request(late):
    """Review 24, defect 1: every request is checked on each pool as `serve` checks it (`engine.checked`),
    not the first one only; the decode pool holds a request's prompt + output (it ran to a deadlock)."""
    wl = fixed_workload([(4, 5), late])
    config = ServeConfig(reservation="paged", block_size=1, watermark=0)
    with pytest.raises(InvalidValueError) as serve_error:
        serve(wl, UNIT, config)
    with pytest.raises(InvalidValueError) as pools_error:
        serve_disaggregated(wl, UNIT, config, prefill=1, decode=1, link_bytes_per_s=1.0)
    for error in (serve_error, pools_error):  # the prefill pool's request holds its prompt + its first token
        assert "KV tokens but the replica holds 100" in str(error.value)


def test_pools_refuse_request_level_batching():
    """The pools are iteration-level loops: `scheduler="request"` is refused, not run as iterations."""
    config = ServeConfig(scheduler="request", reservation="max_len")
    with pytest.raises(InvalidValueError) as error:
        serve_disaggregated(fixed_workload([(4, 5)] * 2), Replica(IterationCost.unit(), 100, 20), config,
                            prefill=1, decode=1, link_bytes_per_s=1.0)
    assert "scheduler" in error.value.params


def test_prefill_pool_holds_only_the_prompt_and_its_first_token():
    """The prefill pool's check is of prompt + 1 on its own replica (`engine.checked` on the pool's
    workload), the decode pool's of the whole request on its: a request whose prompt + first token fits
    the prefill replica is served when the decode pool holds its whole length; each pool refuses what it
    cannot hold (review 24c, 1: the prefill side's refusal was untested)."""
    config = ServeConfig(reservation="paged", block_size=1, watermark=0)
    big = Replica(UNIT.cost, 200, 2048)
    pools = dict(prefill=1, decode=1, link_bytes_per_s=1e9, kv_bytes_per_token=1.0)
    wl = fixed_workload([(90, 30)])  # 91 tokens on the prefill side, 120 on the decode side
    with pytest.raises(InvalidValueError, match="needs 120 KV tokens but the replica holds 100"):
        serve(wl, UNIT, config)  # aggregated: one replica of 100 tokens does not hold it
    d = serve_disaggregated(wl, UNIT, config, decode_replica=big, **pools)
    assert d.served.first_token_s == (1.0,) and d.served.finish_s[0] > 1.0 and d.decode_of == (0,)
    with pytest.raises(InvalidValueError, match="needs 120 KV tokens but the replica holds 100"):
        serve_disaggregated(wl, UNIT, config, **pools)  # the decode pool's replica: 100 tokens
    with pytest.raises(InvalidValueError, match="needs 101 KV tokens but the replica holds 100"):
        serve_disaggregated(fixed_workload([(100, 30)]), UNIT, config, decode_replica=big, **pools)  # prefill's
