"""The serving engine (issue 16): agreement with the plain simulator, exercise 10 under every policy,
paged allocation and preemption counted by hand, speculation in the batch against Eq. 1 and the
lecture §9.3's load dependence, chunked prefill's trade-off, pipeline stages in flight, windowed
K/V, the draft's memory, Little's law, workloads and one-line errors."""

from __future__ import annotations

import math

import pytest

from llm_cost.catalog import load_accelerator, load_model
from llm_cost.errors import InvalidValueError
from llm_cost.serving.engine import serve
from llm_cost.serving.replica import IterationCost, Replica
from llm_cost.serving.serve_config import ServeConfig, SpecConfig
from reference_scheduler import served
from llm_cost.serving.workload import fixed_workload, poisson_workload
from llm_cost.serving.workload_spec import read_trace, synthetic_workload
from llm_cost.specs.deployment import Deployment

SERVER = Replica.from_specs(load_model("gpt-3-13b"), load_accelerator("a100-40gb"))
FAST_ENGINE = ("fast_engine",)  # the running-totals path alone: bit-equal to the general loop
UNIT10 = Replica(IterationCost.unit(), 10, 2048)
EX10 = fixed_workload([(4, 5), (4, 5)])


@pytest.mark.parametrize("scheduler,reservation,rate,max_gen,batch", [
    ("iteration", "declared", 12.4, None, 32), ("iteration", "declared", 4.0, 512, 64),
    ("iteration", "max_len", 3.0, None, 32), ("none", "none", 4.0, 512, 64), ("none", "none", 12.0, 512, 64)])
def test_general_loop_schedules_exactly_as_the_reservations_fast_path(scheduler, reservation, rate, max_gen, batch):
    # Orca's reservations: the general loop's schedule is the fast path's: every finish time to 1e-9,
    # the same iterations, and the same deadlock (none at 12 req/s deadlocks).
    wl = poisson_workload(1500, rate, seed=0, max_gen=max_gen)
    a = served(wl, SERVER, scheduler=scheduler, max_batch=batch, reservation=reservation)
    b = serve(wl, SERVER, ServeConfig(max_batch=batch, reservation=reservation), fast=False)
    assert (a.path, b.path) == ("fast_reservations", "general")
    assert a.iterations == b.iterations and (a.deadlock is None) == (b.deadlock is None)
    for x, y in zip(a.finish_s, b.finish_s):
        assert (math.isnan(x) and math.isnan(y)) or x == pytest.approx(y, rel=1e-9)


# ---- exercise 10 under every policy -----------------------------------------------------------

def test_exercise_10_under_every_policy():
    # capacity 10 tokens, two requests of 4 prompt + 5 output, 1 s per iteration.
    stuck = serve(EX10, UNIT10, ServeConfig(reservation="none"))
    assert stuck.finished == 0 and stuck.deadlock.time_s == 2.0 and stuck.deadlock.kv_held_tokens == 10
    orca = serve(EX10, UNIT10, ServeConfig(reservation="declared"))  # reserves 9: one at a time
    assert orca.finish_s == (5.0, 10.0)
    longest = serve(EX10, Replica(IterationCost.unit(), 10, 9), ServeConfig(reservation="max_len"))
    assert longest.finish_s == (5.0, 10.0)
    # paged, blocks of 1: at iteration 3 #0 needs a 6th token, none is free: #1 (the latest) is
    # preempted and later prefills its 4 + 2 tokens again in one iteration (t 5 -> 6), then 2 more.
    recompute = serve(EX10, UNIT10, ServeConfig(reservation="paged", block_size=1, watermark=0))
    assert recompute.finish_s == (5.0, 8.0) and recompute.preemptions == 1
    swap = serve(EX10, UNIT10, ServeConfig(reservation="paged", block_size=1, watermark=0, preemption="swap",
                                           host_bytes_per_s=1.0))
    assert swap.finished == 2 and swap.preemptions == 1 and swap.swap_bytes == 0.0  # the unit cost has 0 bytes


def test_paged_allocation_and_preemption_counted_by_hand():
    # Three requests (prompt, output) = (3, 4), (2, 4), (4, 2) at t = 0, 0, 1.5; 8 KV tokens in
    # blocks of 2 = 4 blocks; 1 s per iteration; no watermark.
    # it1 [0,1): #0 and #1 prefill: ceil(3/2) + ceil(2/2) = 3 blocks, free 1. kv 3, 2.
    # it2 [1,2): #0 needs ceil(4/2) - 2 = 0 more, #1 ceil(3/2) - 1 = 1: free 0. kv 4, 3 (gen 2, 2).
    # it3 [2,3): #2 has arrived; #0 needs ceil(5/2) - 2 = 1, none free: #2 waits, #1 (latest
    #   running) preempted, frees 2 -> #0 takes 1 (free 1). #0 kv 5, gen 3. No admission (preempted).
    # it4 [3,4): #0 needs ceil(6/2) - 3 = 0: runs, gen 4 = done at t = 4, frees 3 -> free 4.
    #   Admission: #1 first (a recompute victim at the queue's head): prefill 2 + 2 = 4 tokens, 2 blocks;
    #   #2: 4 tokens, 2 blocks: free 0. Both join it4? No: it4 was formed before #0 finished, with
    #   free 1: #1's 4 tokens need 2 blocks > 1: admission stops.
    # it5 [4,5): #1 (4 tokens, 2 blocks) and #2 (4, 2 blocks) prefill: #1 gen 3, #2 gen 1.
    # it6 [5,6): #1 needs ceil(6/2) - 2 = 1 block, #2 ceil(5/2) - 2 = 1: none free -> #2 preempted
    #   (frees 2); #1 takes 1: gen 4, done at 6. it7 [6,7): #2 prefills 4 tokens again (gen 1 was
    #   its first token: need 4 + 1 = 5 tokens, 3 blocks), gen 2 = done at 7.
    wl = fixed_workload([(3, 4), (2, 4), (4, 2)], arrivals_s=[0.0, 0.0, 1.5])
    r = serve(wl, Replica(IterationCost.unit(), 8, 2048), ServeConfig(reservation="paged", block_size=2, watermark=0))
    assert r.finish_s == (4.0, 6.0, 7.0)
    assert r.preemptions == 2 and r.iterations == 7
    assert r.first_token_s == (1.0, 1.0, 5.0)  # #2's first token is its first prefill's, kept
    assert r.kv_used_peak_tokens == 8


def test_paged_beats_the_declared_reservation_at_the_same_target():
    # The lecture §3.5's workload: max_gen 512 declared, U(1, 128) generated, batch 64. At a 45 ms
    # median per-token target paged KV sustains a higher rate than Orca's declared reservation.
    from llm_cost.serving.rate_search import highest_rate

    wl = poisson_workload(600, 1.0, seed=0, max_gen=512)
    declared = highest_rate(wl, SERVER, scheduler="iteration", max_batch=64, slo_s=0.045,
                            config=ServeConfig(max_batch=64, reservation="declared"))
    paged = highest_rate(wl, SERVER, scheduler="iteration", max_batch=64, slo_s=0.045,
                         config=ServeConfig(max_batch=64, reservation="paged"))
    assert paged.rate_req_per_s > 1.3 * declared.rate_req_per_s > 0


# ---- speculation inside the batch ---------------------------------------------------------------

def test_speculation_at_batch_1_and_zero_load_is_the_closed_form():
    # One request alone, each pass 1 s, the draft c = 0.05 of it: a round costs 1 + 4 x 0.05 s and
    # yields E = (1 - 0.8^5) / 0.2 = 3.3616 tokens on average: TPOT -> 1.2 / 3.3616 s (Leviathan's
    # speedup 2.80 over 1 s per token), sampled over 60,000 tokens.
    from llm_cost.speculative import expected_tokens, speedup

    wl = fixed_workload([(10, 60_001)])
    cfg = ServeConfig(reservation="declared", spec=SpecConfig(gamma=4, alpha=0.8, c=0.05, seed=3))
    r = serve(wl, Replica(IterationCost.unit(), 100_000, 200_000), cfg)
    tpot = r.percentile_s("tpot", "mean")
    assert 1 / tpot == pytest.approx(float(speedup(0.8, 4, 0.05)), rel=0.01)
    assert r.tokens_per_round == pytest.approx(float(expected_tokens(0.8, 4)), rel=0.01)


L8 = Replica.from_specs(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"))


def _spec_runs(rate):
    wl = poisson_workload(1500, 1.0, seed=0).at_rate(rate)
    out = {}
    for name, spec in [("off", None), ("fixed", SpecConfig(4, 0.8, c=0.05)),
                       ("adaptive", SpecConfig(4, 0.8, c=0.05, policy="adaptive"))]:
        out[name] = serve(wl, L8, ServeConfig(max_batch=256, spec=spec))
    return out


def test_speculation_helps_at_low_load_not_at_high_and_adaptive_is_the_better_of_both():
    # The lecture §9.3: low load trades speculation for latency, high load turns it down.
    low = _spec_runs(0.5)
    lat = {k: v.percentile_s("latency_per_token", "p50") for k, v in low.items()}
    assert lat["fixed"] < 0.5 * lat["off"] and lat["adaptive"] <= min(lat["fixed"], lat["off"]) * 1.01
    high = _spec_runs(math.inf)  # all at once: batches of about 250, verification compute-bound
    thr = {k: v.throughput_req_per_s for k, v in high.items()}
    assert thr["fixed"] < thr["off"] and thr["adaptive"] >= max(thr["fixed"], thr["off"]) * 0.99
    assert high["adaptive"].mean_gamma < 2 < low["adaptive"].mean_gamma


def test_off_above_batch_switches_speculation_off():
    r = serve(poisson_workload(300, math.inf, seed=0), L8,
              ServeConfig(max_batch=64, spec=SpecConfig(4, 0.8, c=0.05, policy="off-above-batch", off_above=8)))
    assert r.mean_gamma < 0.5


# ---- chunked prefill, pipelines, windows, the draft --------------------------------------------

def test_chunked_prefill_trades_ttft_for_tpot():
    wl = poisson_workload(1500, 2.0, seed=0, prompt=(32, 2048))
    whole = serve(wl, SERVER, ServeConfig(max_batch=32))
    chunked = serve(wl, SERVER, ServeConfig(max_batch=32, prefill_chunk=128))
    assert chunked.percentile_s("tpot", "p99") < 0.5 * whole.percentile_s("tpot", "p99")
    assert chunked.percentile_s("ttft", "p50") > whole.percentile_s("ttft", "p50")


def test_pipeline_in_flight_beats_microbatches_and_one_batch_in_flight():
    r = Replica.from_specs(load_model("gpt-3-13b"), load_accelerator("a100-40gb"), deployment=Deployment(pp=2))
    wl = poisson_workload(1500, math.inf, seed=0)
    one = served(wl, r, max_batch=32).throughput_req_per_s
    orca = serve(wl, r, ServeConfig(max_batch=32, pipeline="orca")).throughput_req_per_s
    micro = serve(wl, r, ServeConfig(max_batch=32, pipeline="microbatch")).throughput_req_per_s
    assert orca > micro > one


@pytest.mark.parametrize("name,tp", [("gpt-oss-20b", 1), ("gemma-2-9b", 1), ("llama-4-scout", 4)])
def test_windowed_models_hold_their_windows(name, tp):
    # One request alone: its last iteration starts holding P + O - 2 tokens' K/V, which is
    # kv_bytes(model, P + O - 2) / kv_bytes_per_token all-layer tokens (the peak the engine records).
    from llm_cost.counts import kv_bytes, kv_bytes_per_token

    model = load_model(name)
    rep = Replica.from_specs(model, load_accelerator("h200"), deployment=Deployment(tp=tp))
    p, o = 9000, 50  # past gpt-oss's 128, Gemma 2's 4096 and Llama 4's 8192-token chunks
    r = serve(fixed_workload([(p, o)]), rep, ServeConfig(reservation="declared"))
    assert r.finished == 1
    expected = kv_bytes(model, p + o - 2) / kv_bytes_per_token(model)
    assert expected < p + o - 2
    assert r.kv_used_peak_tokens == pytest.approx(expected, rel=1e-9)
    paged = serve(poisson_workload(200, 4.0, seed=0), rep, ServeConfig(reservation="paged"))
    assert paged.finished == 200


def test_the_draft_memory_by_hand():
    from llm_cost.counts import kv_bytes_per_token, weight_bytes
    from llm_cost.serving.draft_memory import draft_memory

    t, d, gpu = load_model("llama-3.1-8b"), load_model("llama-3.2-1b"), load_accelerator("h100-sxm")
    m = draft_memory(t, d, gpu)
    spare = gpu.memory_available_bytes * 0.9 - weight_bytes(t).total - weight_bytes(d).total  # the default: usable
    assert m.kv_tokens == int(spare // (kv_bytes_per_token(t) + kv_bytes_per_token(d)))
    assert m.sequences_lost(1024) == m.kv_tokens_without_draft // 1024 - m.kv_tokens // 1024 > 0


# ---- Little's law, workloads ---------------------------------------------------------------------

@pytest.mark.parametrize("cfg", [ServeConfig(max_batch=32), ServeConfig(max_batch=32, reservation="paged",
                                                                         spec=SpecConfig(3, 0.7, c=0.1))])
def test_littles_law_in_steady_state(cfg):
    wl = poisson_workload(4000, 8.0, seed=1)
    r = serve(wl, SERVER, cfg)
    assert r.mean_in_system == pytest.approx(r.throughput_req_per_s * r.percentile_s("e2e", "mean"), rel=0.03)
    assert r.throughput_req_per_s == pytest.approx(8.0, rel=0.05)


def test_workloads():
    assert synthetic_workload(300, 2.0, seed=4) == poisson_workload(300, 2.0, seed=4)
    logn = synthetic_workload(20_000, 1.0, output="lognormal:200:0.8")
    assert sum(logn.output) / 20_000 == pytest.approx(200, rel=0.03)
    z = synthetic_workload(20_000, 1.0, output="zipf:1.2:2048")
    assert min(z.output) == 1 and max(z.output) <= 2048 and sorted(z.output)[10_000] < 20
    bursty = synthetic_workload(20_000, 1.0, arrivals="gamma:0.25")
    import numpy as np

    gaps = np.diff(bursty.arrival_s)
    assert gaps.std() / gaps.mean() == pytest.approx(2.0, rel=0.1)  # CV = 1 / sqrt(0.25)
    closed = synthetic_workload(200, 1.0, concurrency=4)
    r = serve(closed, SERVER, ServeConfig(max_batch=32))
    assert r.finished == 200 and r.mean_batch <= 4 + 1e-9


def test_trace(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("arrival_s,prompt_tokens,output_tokens,max_tokens\n0,4,5,5\n0,4,5,5\n")
    wl = read_trace(f)
    assert wl.declared_gen == (5, 5)
    assert serve(wl.at_rate(math.inf), UNIT10, ServeConfig()).finish_s == (5.0, 10.0)


# ---- bad input: one line naming the file or the option, exit 2 ------------------------------------

@pytest.mark.parametrize("args,says", [
    (["--trace", "{neg}"], "neg.csv"), (["--trace", "{missing}"], "missing column output_tokens"),
    (["--reservation", "paged", "--block-size", "0"], "--block-size"),
    (["--spec-gamma", "4"], "--spec-alpha"), (["--prompt-len", "lognormal:x:1"], "--prompt-len"),
    (["--spec-gamma", "4", "--spec-alpha", "0.8", "--spec-policy", "sometimes"], "--spec-policy"),
    (["--arrivals", "weibull"], "--arrivals")])
def test_bad_input_is_one_line(tmp_path, args, says):
    from typer.testing import CliRunner

    from llm_cost.cli import app

    neg = tmp_path / "neg.csv"
    neg.write_text("arrival_s,prompt_tokens,output_tokens\n-1,4,5\n")
    missing = tmp_path / "missing.csv"
    missing.write_text("arrival_s,prompt_tokens\n0,4\n")
    args = [a.format(neg=neg, missing=missing) for a in args]
    out = CliRunner().invoke(app, ["batching", "--rate", "1", "-n", "20"] + args)
    assert out.exit_code == 2, out.output
    assert "Traceback" not in out.output and says in out.output
    assert len(out.output.strip().splitlines()) == 1


def test_cli_paged_speculative_draft_rows():
    import json

    from typer.testing import CliRunner

    from llm_cost.cli import app

    out = CliRunner().invoke(app, ["batching", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", "2",
                                   "-n", "200", "--reservation", "paged", "--spec-gamma", "4", "--spec-alpha",
                                   "0.8", "--draft", "llama-3.2-1b", "--slo-ttft-ms", "200", "--slo-tpot-ms", "20",
                                   "--format", "json"])
    assert out.exit_code == 0, out.output
    row = json.loads(out.stdout)[0]
    assert row["finished"] == 200 and row["sequences_lost_to_draft"] > 0 and row["draft_weight_bytes"] > 2e9
    assert row["ttft_p99_s"] >= row["ttft_p50_s"] > 0 and 0 < row["goodput_req_per_s"] <= row["throughput_req_per_s"]


@pytest.mark.parametrize("scheduler", ["iteration", "request"])
def test_simulate_records_ttft(scheduler):
    # The plain simulator's time to first token: the engine's for iteration-level (same schedule);
    # request-level, a request alone waits for its prefill only.
    wl = poisson_workload(800, 6.0, seed=2)
    a = served(wl, SERVER, scheduler=scheduler, max_batch=8)
    if scheduler == "iteration":
        b = serve(wl, SERVER, ServeConfig(max_batch=8))
        assert a.ttft_s == pytest.approx(tuple(b.values("ttft")), rel=1e-9)
    alone = served(fixed_workload([(300, 20)]), SERVER, scheduler=scheduler, max_batch=8)
    assert alone.ttft_s == pytest.approx((SERVER.cost.prefill_s(300),), rel=1e-12)
    assert a.ttft_percentile_s(99) >= a.ttft_percentile_s(50) > 0


def test_swap_preemption_costs_the_transfer_by_hand():
    # Exercise 10 with paged blocks of 1 and swap preemption; each K/V token is 1e-9 bytes and the host
    # link moves 1e-9 B/s, so a token's swap takes 1 s (the passes stay 1 s, the bytes' own read time
    # is 1e-9 x tokens). it3 (from t = 2) swaps #1's 5 tokens out: 1 + 5 s -> t = 8; #0 runs alone to
    # its 5th token at t = 10; then #1's 5 tokens come back (5 s, an iteration of the transfer alone,
    # t = 15) and it decodes its last 3 tokens: done at 18.
    from dataclasses import replace

    cost = replace(IterationCost.unit(), kv_token_bytes=1e-9)
    r = serve(EX10, Replica(cost, 10, 2048),
              ServeConfig(reservation="paged", block_size=1, watermark=0, preemption="swap", host_bytes_per_s=1e-9))
    assert r.finish_s == pytest.approx((10.0, 18.0), abs=1e-6)
    assert r.preemptions == 1 and r.swap_bytes == pytest.approx(2 * 5 * 1e-9)


def test_bursty_acceptance_in_the_batch_yields_fewer_tokens_than_eq1():
    # The lecture §8.3: hard positions in bursts make Eq. 1 with the measured alpha overestimate the
    # tokens per round. Same stationary alpha 0.8: the bursty chain's rounds are shorter.
    import json

    from typer.testing import CliRunner

    from llm_cost.cli import app
    from llm_cost.speculative import expected_tokens

    base = ["batching", "--rate", "1", "-n", "300", "--spec-gamma", "4", "--c", "0.05", "--format", "json"]
    iid = json.loads(CliRunner().invoke(app, base + ["--spec-alpha", "0.8"]).stdout)[0]
    out = CliRunner().invoke(app, base + ["--spec-acceptance", "bursty:1.0:0.2:0.1:0.3"])
    assert out.exit_code == 0, out.output
    bursty = json.loads(out.stdout)[0]
    assert iid["tokens_per_round"] == pytest.approx(float(expected_tokens(0.8, 4)), rel=0.03)
    assert bursty["tokens_per_round"] < 0.97 * iid["tokens_per_round"]
    bad = CliRunner().invoke(app, base + ["--spec-acceptance", "bursty:1:0.2:0:0.3"])
    assert bad.exit_code == 2 and "--spec-acceptance" in bad.output and len(bad.output.strip().splitlines()) == 1


# ---- the fast path (running totals) against the general loop --------------------------------------

def _same_run(a, b):
    assert a.iterations == b.iterations and a.preemptions == b.preemptions and a.finished == b.finished
    assert a.finish_s == b.finish_s and a.first_token_s == b.first_token_s  # the same floating-point operations
    for name in ("busy_s", "mean_batch", "kv_used_mean_tokens", "kv_used_peak_tokens", "draft_s", "mean_in_system",
                 "tokens_per_round", "mean_gamma", "comm_total_s"):
        assert getattr(a, name) == pytest.approx(getattr(b, name), rel=1e-9, abs=1e-12), name


@pytest.mark.parametrize("cfg,rate,max_gen", [
    (ServeConfig(max_batch=32, reservation="paged", spec=SpecConfig(4, 0.8, c=0.05)), 12.4, None),
    (ServeConfig(max_batch=32, reservation="paged"), 12.4, None),
    (ServeConfig(max_batch=32, spec=SpecConfig(3, 0.7, c=0.1, seed=5)), 12.4, None),
    (ServeConfig(max_batch=64, reservation="max_len", spec=SpecConfig(2, 0.9, c=0.05, policy="off-above-batch",
                                                                        off_above=64)), 30.0, None),
    (ServeConfig(max_batch=64, reservation="paged", block_size=5, watermark=0.05,
                 spec=SpecConfig(6, 0.6, c=0.02, seed=2)), 4.0, 512),
    (ServeConfig(max_batch=64, reservation="paged", spec=SpecConfig(4, 0.8, c=0.05)), 30.0, None),  # preempts
])
def test_fast_path_equals_the_general_loop(cfg, rate, max_gen):
    # serve() takes running totals where nothing depends on one sequence's state (fast_engine); the
    # general loop visits every running sequence each iteration. Same requests, same acceptances drawn
    # from each sequence's own stream: the same schedule. The last case preempts: the fast path hands
    # the run to the general loop and takes it back.
    from llm_cost.serving.fast_engine import fast_eligible

    wl = poisson_workload(1500, rate, seed=1, max_gen=max_gen)
    assert fast_eligible(wl, SERVER, cfg, max(p + o for p, o in zip(wl.prompt, wl.output)))
    fast, general = serve(wl, SERVER, cfg, fast=FAST_ENGINE), serve(wl, SERVER, cfg, fast=False)
    _same_run(fast, general)
    assert (fast.preemptions > 0) == (rate == 30.0 and cfg.reservation == "paged")


def test_fast_path_with_a_draft_model_a_deployment_and_long_outputs():
    # A draft model's own step; a tensor-parallel deployment (its collectives inlined in the fast path's
    # time too, bit for bit); one request of 60,000 tokens (its rounds run past its first block of draws).
    from llm_cost.serving.iteration import pass_timers

    d8 = Replica.from_specs(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"), deployment=Deployment(tp=2))
    timers = pass_timers(d8.cost, SpecConfig(3, 0.75, c=0.05), 3, 64)
    assert timers.target != d8.cost.time and d8.cost.comm_row_s > 0  # the coefficients' evaluator, collectives in it
    assert timers.target(40, 5000, 7000) == d8.cost.time(40, 5000, 7000) and timers.draft_ratio == 0.05
    draft = Replica.from_specs(load_model("llama-3.2-1b"), load_accelerator("h100-sxm")).cost
    wl = poisson_workload(400, 6.0, seed=3)
    for rep, spec in [(L8, SpecConfig(4, 0.8, draft_cost=draft)), (d8, SpecConfig(3, 0.75, c=0.05))]:
        cfg = ServeConfig(max_batch=64, reservation="paged", spec=spec)
        _same_run(serve(wl, rep, cfg, fast=FAST_ENGINE), serve(wl, rep, cfg, fast=False))
    long = fixed_workload([(10, 60_001), (20, 3)], arrivals_s=[0.0, 1.0])
    cfg = ServeConfig(reservation="declared", spec=SpecConfig(gamma=4, alpha=0.8, c=0.05, seed=3))
    server = Replica(IterationCost.unit(), 100_000, 200_000)
    _same_run(serve(long, server, cfg, fast=FAST_ENGINE), serve(long, server, cfg, fast=False))


def test_acceptance_streams_are_eq1_and_do_not_depend_on_the_schedule():
    import numpy as np

    from llm_cost.serving.spec_streams import CHUNK, AcceptanceStreams, expected_and_variance

    spec = SpecConfig(gamma=4, alpha=0.8, seed=7)
    out = [128] * (CHUNK + 10)
    a, b = AcceptanceStreams(spec, out), AcceptanceStreams(spec, out)
    mean = np.mean([a.accepted(i, 4) + 1 for i in range(2000) for _ in range(40)])
    assert mean == pytest.approx(expected_and_variance(0.8, 4)[0], rel=0.01)
    assert expected_and_variance(0.8, 4)[0] == pytest.approx((1 - 0.8 ** 5) / 0.2, rel=1e-12)
    # another order of requests and rounds, a smaller gamma: each request's own draws, capped
    seq = [b.accepted(i, 2) for i in (CHUNK + 3, 5, CHUNK + 3, 5)]
    assert seq == [min(int(x), 2) for x in (b.stream(CHUNK + 3)[0], b.stream(5)[0], b.stream(CHUNK + 3)[1],
                                             b.stream(5)[1])]
    assert len(a.stream(CHUNK + 9)) == 127  # every round a request can take


def test_rounds_past_the_first_block_come_from_each_sequence_s_own_generator():
    # A sequence's later rounds are drawn only for it, from its own seed: asking for them in any order,
    # or not for the others at all, gives the same draws, and no other sequence's are drawn.
    from llm_cost.serving.spec_streams import CHUNK, AcceptanceStreams

    spec = SpecConfig(gamma=4, alpha=0.8, seed=3)
    out = [200] * (CHUNK + 100)
    a, b = AcceptanceStreams(spec, out), AcceptanceStreams(spec, out)
    first = a.stream(CHUNK + 7).tolist()
    assert len(first) == 199 and len(a._second) == 1  # one tail drawn: this sequence's
    for i in (5, CHUNK + 50):
        b.stream(i)
    assert b.stream(CHUNK + 7).tolist() == first and len(b._second) == 3
    assert a.stream(5).tolist() == b.stream(5).tolist()
    tails = [b.stream(i)[len(b.stream(i)) - 100:].tolist() for i in (5, CHUNK + 7, CHUNK + 50)]
    assert tails[0] != tails[1] != tails[2] != tails[0]  # each sequence its own seed, not the chunk's


def test_decode_iterations_skip_the_compute_term_only_where_it_cannot_win():
    # memory_bound_from: from S cached tokens on (per number of decoders) a decode-only iteration is
    # memory-bound, by the PassCost's own terms; two tokens earlier it is not (or the bound is 0).
    from llm_cost.serving.iteration import memory_bound_from

    cost = SERVER.cost
    for g, spec in [(0, None), (4, SpecConfig(4, 0.8, c=0.05))]:
        target, draft = memory_bound_from(cost, spec, g, 96)
        r = g + 1
        # one row a sequence: always memory-bound here; five rows: compute-bound at 32+ sequences and few tokens
        assert (max(target) > 0) == (g > 0) and not any(draft)
        for n in range(1, 97):
            for S in (target[n], target[n] + 1, target[n] + 10_000):
                if S < math.inf:
                    rows, pairs = n * r, r * S + n * (r * (r + 1) / 2)
                    assert cost.compute_s(rows, pairs) < cost.memory_s(rows, S + rows), (g, n, S)
            if 2 <= target[n] < math.inf:
                S = target[n] - 2
                rows, pairs = n * r, r * S + n * (r * (r + 1) / 2)
                assert cost.compute_s(rows, pairs) > cost.memory_s(rows, S + rows) * (1 - 1e-9), (g, n)
            if g and draft[n] < math.inf:  # the draft step: c x the target's plain decode step
                S = draft[n]
                assert cost.compute_s(n, S + n) < cost.memory_s(n, S + n)


def test_fast_path_with_a_compute_bound_draft_and_large_batches():
    # A draft model with a tenth of its FLOP/s: its steps are compute-bound up to some K/V per
    # decoder count, and batches of up to 128 make the target's decode compute-bound at few tokens;
    # both thresholds are crossed, and the fast path still times every iteration as the general loop.
    import dataclasses

    from llm_cost.serving.iteration import memory_bound_from

    target = Replica.from_specs(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"))
    small = Replica.from_specs(load_model("llama-3.2-1b"), load_accelerator("h100-sxm")).cost
    slow = dataclasses.replace(small, flops_per_s=small.flops_per_s * 0.1)
    spec = SpecConfig(4, 0.8, draft_cost=slow)
    t_from, d_from = memory_bound_from(target.cost, spec, 4, 128)
    assert 0 < max(d_from) < math.inf and 0 < max(x for x in t_from if x < math.inf)
    for n in (1, 17, 64, 128):
        S = d_from[n]
        assert slow.compute_s(n, S + n) < slow.memory_s(n, S + n)
        if S >= 2:
            assert slow.compute_s(n, S - 2 + n) > slow.memory_s(n, S - 2 + n) * (1 - 1e-9)
    wl = poisson_workload(600, 30.0, seed=1)
    for s in (spec, SpecConfig(9, 0.8, c=0.05)):
        cfg = ServeConfig(max_batch=128, reservation="paged", spec=s)
        _same_run(serve(wl, target, cfg, fast=FAST_ENGINE), serve(wl, target, cfg, fast=False))


def test_trajectories_by_brute_force_including_rounds_past_the_first_block():
    # Each request's rounds from its own stream, one by one, against the vectorized chunk. The first
    # block holds mean + 3 sd + 2 rounds at the stream's gamma 5: at gamma 5 nearly every request
    # fits it, at gamma 1 most run past it into their own later draws.
    import numpy as np

    from llm_cost.serving.spec_streams import AcceptanceStreams, trajectories

    rng = np.random.default_rng(0)
    out = rng.integers(1, 200, size=3000).tolist()
    prompt = rng.integers(1, 300, size=3000).tolist()
    streams = AcceptanceStreams(SpecConfig(gamma=5, alpha=0.7, seed=1), out)
    for gamma, past in [(5, False), (1, True)]:
        R, offsets, packed, extra = trajectories(prompt, [o - 1 for o in out], gamma, gamma + 1, 16, streams, 0)
        assert (len(extra) > 1000) == past
        for i in range(3000):
            kv, gen, rounds = prompt[i], 1, []
            for g in streams.stream(i).tolist():
                if gen >= out[i]:
                    break
                rounds.append(kv + (-(-(kv + gamma + 1) // 16) << 32))
                gained = min(min(g, gamma) + 1, out[i] - gen)
                gen, kv = gen + gained, kv + gained
            got = extra[i] if offsets[i] < 0 else packed[offsets[i]:offsets[i] + R[i]]
            assert R[i] == len(rounds) and list(got) == rounds, i


def test_fast_path_past_the_first_block(monkeypatch):
    # First blocks far too short (as if 50 tokens a round): every request's later rounds come from its
    # own later draws, in both paths alike.
    import llm_cost.serving.spec_streams as streams

    monkeypatch.setattr(streams, "expected_and_variance", lambda alpha, gamma: (50.0, 0.0))
    wl = poisson_workload(600, 12.4, seed=2)
    cfg = ServeConfig(max_batch=32, reservation="paged", spec=SpecConfig(4, 0.8, c=0.05))
    _same_run(serve(wl, SERVER, cfg, fast=FAST_ENGINE), serve(wl, SERVER, cfg, fast=False))


@pytest.mark.parametrize("preemption,spec", [("recompute", None), ("swap", SpecConfig(4, 0.8, c=0.05)),
                                             ("recompute", SpecConfig(2, 0.6, c=0.05))])
def test_fast_path_hands_over_at_preemptions_and_takes_the_run_back(monkeypatch, preemption, spec):
    # Batches of 48 at 14 req/s outgrow the KV: the general loop preempts, then hands back once every
    # running sequence decodes again; the finish times are the general loop's alone.
    import llm_cost.serving.handover as handover

    monkeypatch.setattr(handover, "BLOCK", 7)  # segment statistics summed over many blocks, admissions split
    back = []
    take = handover.from_general
    monkeypatch.setattr(handover, "from_general", lambda fast, state: back.append(1) or take(fast, state))
    wl = poisson_workload(3000, 14.0, seed=3)
    cfg = ServeConfig(max_batch=48, reservation="paged", preemption=preemption, watermark=0.0, spec=spec)
    fast, general = serve(wl, SERVER, cfg, fast=FAST_ENGINE), serve(wl, SERVER, cfg, fast=False)
    _same_run(fast, general)
    assert fast.preemptions > 0 and len(back) >= 1 and fast.finished == 3000


def test_the_fast_path_reports_progress():
    # The command's progress bar (commands/progress.py) is fed every 1% of finished requests.
    calls = []
    wl = poisson_workload(2000, 12.4, seed=0)
    serve(wl, SERVER, ServeConfig(max_batch=32, reservation="paged", spec=SpecConfig(4, 0.8, c=0.05)),
          on_progress=lambda done, total: calls.append((done, total)))
    assert len(calls) >= 50 and calls[-1] == (2000, 2000)
    assert all(a[0] <= b[0] and a[1] == 2000 for a, b in zip(calls, calls[1:]))


def test_result_statistics_come_from_the_tuples_once():
    # ServeResult caches its arrays and each metric's values: the statistics are the tuples' own, the
    # cached values cannot be changed by a caller, and a second read gives the same array.
    import numpy as np

    r = serve(poisson_workload(300, 12.4, seed=4), SERVER, ServeConfig(max_batch=16, reservation="paged"))
    done = [i for i, f in enumerate(r.finish_s) if f == f]
    assert r.finished == len(done) == 300
    assert r.span_s == max(r.finish_s) - min(r.arrival_s)
    assert r.tokens_per_s == sum(r.output) / r.span_s
    ttft = r.values("ttft")
    assert ttft is r.values("ttft") and list(ttft) == [r.first_token_s[i] - r.arrival_s[i] for i in done]
    with pytest.raises(ValueError):
        ttft[0] = 0.0
    assert r.percentile_s("e2e", "p90") == float(np.percentile([r.finish_s[i] - r.arrival_s[i] for i in done], 90))


# ---- the fast path by allow-list (issue 24, deliverable 3) ----------------------------------------

from hypothesis import HealthCheck, assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

specs = st.one_of(st.none(), st.builds(
    SpecConfig, gamma=st.integers(1, 6), alpha=st.floats(0.0, 0.95), c=st.floats(0.0, 0.2),
    policy=st.sampled_from(["fixed", "off-above-batch", "adaptive"]), off_above=st.integers(1, 80),
    seed=st.integers(0, 3)))
configs = st.builds(
    ServeConfig, max_batch=st.integers(1, 64), reservation=st.sampled_from(["paged", "declared", "max_len", "none"]),
    block_size=st.sampled_from([1, 4, 16, 32]), watermark=st.sampled_from([0.0, 0.01, 0.1]),
    preemption=st.sampled_from(["recompute", "swap"]), prefill_chunk=st.one_of(st.none(), st.integers(64, 1024)),
    spec=specs)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), rate=st.floats(1.0, 40.0), seed=st.integers(0, 5))
def test_random_configurations_fast_and_general_agree(data, rate, seed):
    # whatever the allow-list routes where, serve() and its general loop give the same finish times
    try:
        cfg = data.draw(configs)
    except InvalidValueError:  # speculation without a reservation: refused in one line
        assume(False)
    wl = poisson_workload(120, rate, seed=seed)
    _same_run(serve(wl, SERVER, cfg, fast=FAST_ENGINE), serve(wl, SERVER, cfg, fast=False))


def test_a_feature_the_fast_path_does_not_list_takes_the_general_loop():
    # a new ServeConfig (or SpecConfig) field is not in FAST_FEATURES until someone adds it
    from dataclasses import dataclass

    from llm_cost.serving.fast_engine import FAST_FEATURES, fast_eligible

    @dataclass(frozen=True)
    class WithPrefixCache(ServeConfig):
        prefix_cache: bool = False

    wl = poisson_workload(50, 4.0, seed=0)
    longest = max(p + o for p, o in zip(wl.prompt, wl.output))
    assert fast_eligible(wl, SERVER, ServeConfig(), longest)
    assert not fast_eligible(wl, SERVER, WithPrefixCache(), longest)
    assert set(FAST_FEATURES) == {f for f in ServeConfig.__dataclass_fields__}
    for cfg in (ServeConfig(prefill_chunk=256), ServeConfig(reservation="none"),
                ServeConfig(spec=SpecConfig(4, 0.8, policy="adaptive")),
                ServeConfig(max_batch=64, spec=SpecConfig(4, 0.8, policy="off-above-batch", off_above=8))):
        assert not fast_eligible(wl, SERVER, cfg, longest), cfg


def test_block_counts_have_one_helper():
    # issue 24, deliverable 2: ceil(tokens / block) is written once (kv_blocks.blocks_for), for numbers
    # and arrays alike; no serving module rounds blocks by hand
    import inspect
    import pathlib

    import numpy as np

    from llm_cost.serving.kv_blocks import blocks_for

    tokens = np.arange(0, 200)
    for block in (1, 3, 16, 17, 32):
        by_hand = [math.ceil(x / block) for x in tokens.tolist()]
        assert blocks_for(tokens, block).tolist() == by_hand == [blocks_for(x, block) for x in tokens.tolist()]
    root = pathlib.Path(inspect.unwrap(serve).__code__.co_filename).parent  # serve is checked at entry
    for path in root.glob("*.py"):
        if path.name != "kv_blocks.py":
            assert "-(-" not in path.read_text(), path.name


def test_the_library_not_the_options_picks_the_path():
    # issue 24, deliverable 1: serve is the one entry; its fast paths take a config where their
    # allow-lists cover it, else the general loop; a field a list does not name takes the loop
    from dataclasses import dataclass

    from llm_cost.serving import fast_engine, fast_pipeline, fast_reservations, request_level
    from llm_cost.serving.engine import runs_step_level, path_of

    wl = poisson_workload(200, 4.0, seed=0)
    assert serve(wl, SERVER, ServeConfig()).path == "fast_reservations"
    none = serve(wl, SERVER, ServeConfig(reservation="none", max_batch=64))
    assert (none.path, none.scheduler) == ("fast_reservations", "none")
    assert serve(wl, SERVER, ServeConfig(reservation="paged")).path == "fast_engine"
    assert serve(wl, SERVER, ServeConfig(prefill_chunk=512)).path == "general"
    request = serve(wl, SERVER, ServeConfig(scheduler="request", reservation="max_len", max_batch=8))
    assert (request.path, request.scheduler) == ("request_level", "request")
    for features in (fast_reservations.FEATURES, fast_engine.FAST_FEATURES, fast_pipeline.FEATURES,
                     request_level.FEATURES):
        assert set(features) == set(ServeConfig.__dataclass_fields__)

    @dataclass(frozen=True)
    class WithRouting(ServeConfig):
        replicas_routed: int = 1

    assert path_of(wl, SERVER, ServeConfig()) == "fast_reservations" and path_of(wl, SERVER, WithRouting()) == "general"
    assert runs_step_level(wl, SERVER, ServeConfig()) and not runs_step_level(wl, SERVER, WithRouting())
    with pytest.raises(InvalidValueError, match="scheduler request"):  # no general loop for whole batches
        serve(wl, SERVER, WithRouting(scheduler="request", reservation="max_len"))
    # a pipeline of two stages, one batch in flight: the general loop's `serial` pipeline is the fast path's
    pp2 = Replica.from_specs(load_model("llama-3-8b"), load_accelerator("h100-sxm"), deployment=Deployment(pp=2))
    engine = serve(wl, pp2, ServeConfig(pipeline="serial"), fast=False)
    sim = serve(wl, pp2, ServeConfig(pipeline="serial"))
    assert sim.path == "fast_reservations" and engine.finish_s == pytest.approx(sim.finish_s, rel=1e-12)
    assert path_of(wl, pp2, ServeConfig(pipeline="orca")) == "general"  # declared: Orca's reservations
    assert path_of(wl, pp2, ServeConfig(pipeline="orca", reservation="paged")) == "fast_pipeline"


def test_batching_rows_have_one_shape_whatever_the_path():
    # issue 24 review, 2: the row's keys, the table's title and columns were the internal path's
    # (fast_reservations: K/V reserved, no preemptions; --prefill-chunk or --concurrency: the general
    # loop's keys, no K/V reserved, a title "..., serving engine"); one row builder now
    from helpers import rows_of, run

    base = ("batching", "--rate", "2", "-n", "100")
    runs = {extra: rows_of(*base, *extra)[0] for extra in ((), ("--prefill-chunk", "512"), ("--concurrency", "8"),
                                                           ("--reservation", "paged"))}
    plain, chunked, closed, paged = runs.values()
    for row in runs.values():
        assert set(row) == set(plain), set(row) ^ set(plain)
        assert row["ttft_p99_s"] >= row["ttft_p50_s"] > 0 and row["tpot_p99_s"] > 0
        assert row["e2e_p99_s"] >= row["e2e_p50_s"] > 0 and row["e2e_p90_s"] > 0 and row["goodput_req_per_s"] > 0
        assert row["preemptions"] == 0 and row["busy_s"] > 0 and row["mean_in_system"] > 0
    assert plain["scheduler"] == "iteration" and plain["kv_reserved_mean_tokens"] > 0
    assert chunked["kv_reserved_mean_tokens"] > 0 and closed["kv_written_mean_tokens"] > 0  # the general loop's
    assert paged["reservation"] == "paged" and paged["kv_reserved_mean_tokens"] is None  # does not apply
    titles = set()
    for extra in ((), ("--prefill-chunk", "512"), ("--concurrency", "8")):
        out = run(*base, *extra).stdout
        titles.add(out.splitlines()[0].strip())
        assert "e2e" in out and "goodput" in out and "reserved" in out and "preempted" in out
    assert len(titles) == 1 and "serving engine" not in titles.pop()
