"""Attention data parallelism (`Deployment.dp_attention`, issue 23.4): DeepSeek-V3 on 8 H200s with and
without, by hand from its config, and against the same split written as 8 replicas of tp 1 with ep 8."""

from __future__ import annotations

import math

import pytest
from typer.testing import CliRunner

from llm_cost.catalog import load_accelerator, load_model
from llm_cost.counts import kv_bytes_per_token, weight_bytes
from llm_cost.errors import InvalidValueError
from llm_cost.parallel import (deployed_pass_cost, deployed_step_time, largest_batch, replicated_params_per_layer,
                               step_fit, weight_bytes_per_gpu)
from llm_cost.parallel.breakdown import pass_breakdown
from llm_cost.serving.capacity import kv_capacity
from llm_cost.specs.deployment import Deployment
from llm_cost.specs.weights import CHECKPOINT

H200 = load_accelerator("h200")
V3 = load_model("deepseek-v3")
TP8 = Deployment(tp=8, ep=8, memory_basis="marketed")  # the hand counts below: 141e9 bytes
DP8 = Deployment(tp=8, ep=8, dp_attention=True, memory_basis="marketed")

# DeepSeek-V3, https://huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json: hidden 7168,
# moe_intermediate_size 2048, 256 routed experts, top-8, 61 layers of which first_k_dense_replace = 3
# dense, kv_lora_rank 512, qk_rope_head_dim 64, FP8 weights in 128 x 128 blocks (one FP32 scale each).
# One routed expert of one layer: 3 x 7168 x 2048 = 44,040,192 FP8 bytes + 3 x 56 x 16 scales x 4 bytes.
EXPERT_LAYER_BYTES = 3 * 7168 * 2048 + 3 * (7168 // 128) * (2048 // 128) * 4
MOE_LAYERS, LAYERS, EXPERTS = 58, 61, 256
ROUTED = MOE_LAYERS * EXPERTS * EXPERT_LAYER_BYTES  # 654,068,416,512 bytes
# MLA caches the latent and the rope key: (512 + 64) x 61 layers x 2 bytes (BF16) a token
KV_PER_TOKEN = (512 + 64) * LAYERS * 2
# H200 SXM datasheet: 4.8e12 B/s; NVLink 450e9 B/s per direction; NCCL's ring step 0.47 us (hardware/h200.json)
ALPHA, BETA = 0.47e-6, 450e9


def test_config_figures():
    wb = weight_bytes(V3, CHECKPOINT)
    assert wb.expert == EXPERT_LAYER_BYTES == 44_050_944
    assert wb.num_moe_layers * wb.num_experts * wb.expert == ROUTED == 654_068_416_512
    assert kv_bytes_per_token(V3, 2.0) == KV_PER_TOKEN == 70_272


def test_weight_bytes_per_gpu_replicate_everything_but_the_routed_experts():
    """tp 8: 1/8 of the non-expert weights plus MLA's replicated down-projections; dp-attention: all of
    them on every GPU. The routed experts are 1/8 on both."""
    shared = weight_bytes(V3, CHECKPOINT).total - ROUTED
    dp = weight_bytes_per_gpu(V3, CHECKPOINT, DP8)
    assert dp == pytest.approx(shared + ROUTED / 8, rel=1e-12)
    tp = weight_bytes_per_gpu(V3, CHECKPOINT, TP8)
    bits = weight_bytes(V3, CHECKPOINT).effective_bits
    down = LAYERS * replicated_params_per_layer(V3, 8) * bits / 8
    assert tp == pytest.approx(shared / 8 + down + ROUTED / 8, rel=1e-12)
    assert round(dp / 1e9, 2) == 100.84 and round(tp / 1e9, 2) == 84.95


def test_kv_per_gpu_and_capacity():
    """Under tp the MLA latent is replicated: every GPU holds every sequence's K/V. Data parallel, each
    GPU holds its own 1/8 of the sequences: 8x the sequences fit beside the larger weights."""
    fit_tp = step_fit(V3, H200, TP8, batch=64, context=4096, weights=CHECKPOINT)
    fit_dp = step_fit(V3, H200, DP8, batch=64, context=4096, weights=CHECKPOINT)
    per_sequence = 4097 * KV_PER_TOKEN
    assert fit_tp.kv_bytes == pytest.approx(64 * per_sequence, rel=1e-12)
    assert fit_dp.kv_bytes == pytest.approx(8 * per_sequence, rel=1e-12)
    # batch 1: one rank holds the whole sequence (the busiest rank, not the average 1/8)
    one = step_fit(V3, H200, DP8, batch=1, context=4096, weights=CHECKPOINT)
    assert one.kv_bytes == pytest.approx(per_sequence, rel=1e-12)
    # largest batch at 4,096 tokens: 141e9 x 0.9 = 126.9e9 B (marketed, 10% reserve) less weights,
    # over 4096 x 70,272 B a sequence; dp: that per rank, x 8 (the workspace is 0.01 GB either way)
    room = 126.9e9
    assert largest_batch(V3, H200, TP8, weights=CHECKPOINT, tokens=4096) == math.floor(
        (room - weight_bytes_per_gpu(V3, CHECKPOINT, TP8) - 7.2e6) / (4096 * KV_PER_TOKEN)) == 145
    per_rank = math.floor((room - weight_bytes_per_gpu(V3, CHECKPOINT, DP8) - 5.6e6) / (4096 * KV_PER_TOKEN))
    assert largest_batch(V3, H200, DP8, weights=CHECKPOINT, tokens=4096) == 8 * per_rank == 720
    cap_tp = kv_capacity(V3, H200, weights=CHECKPOINT, deployment=TP8)
    cap_dp = kv_capacity(V3, H200, weights=CHECKPOINT, deployment=DP8)
    assert cap_dp.kv_bytes_per_token_per_gpu == KV_PER_TOKEN / 8 and cap_tp.kv_bytes_per_token_per_gpu == KV_PER_TOKEN
    assert cap_dp.kv_tokens == pytest.approx(8 * cap_dp.kv_bytes_available / KV_PER_TOKEN, abs=1)


def test_collectives_are_the_all_to_alls_only():
    """tp 8: 64 all-reduces (61 after attention, 3 after the dense MLPs) and 2 x 58 all-to-alls; dp:
    the 2 x 58 all-to-alls of each rank's rows / 8 x top-8 x 7168 x 2 bytes, (ep - 1) steps each."""
    row = 7168 * 2
    for batch in (1, 64):
        a2a = 7 * ALPHA + 7 / 8 * (batch / 8 * 8 * row) / BETA
        all_reduce = 14 * ALPHA + 2 * 7 / 8 * batch * row / BETA
        dp = deployed_step_time(V3, H200, "lecture", DP8, batch=batch, context=4096, weights=CHECKPOINT)
        tp = deployed_step_time(V3, H200, "lecture", TP8, batch=batch, context=4096, weights=CHECKPOINT)
        assert dp.comm_time_s == pytest.approx(2 * MOE_LAYERS * a2a, rel=1e-12)
        assert tp.comm_time_s == pytest.approx(2 * MOE_LAYERS * a2a + 64 * all_reduce, rel=1e-12)
    assert round(dp.comm_time_s * 1e3, 3) == 0.589 and round(tp.comm_time_s * 1e3, 3) == 1.238


def test_step_time_by_hand_both_ways():
    """Decode at context 4096, lecture preset (80% of 4.8e12 B/s, 1 ms fixed): memory-bound, so
    T = (weights read + K/V) / (0.8 BW) + comm + 1 ms. Batch 1: dp reads every non-expert weight and is
    slower (7.64 ms against 4.35); batch 64: the K/V of 8 sequences instead of 64 wins (26.83 against 27.97)."""
    bw = 0.8 * 4.8e12
    times = {}
    for name, dep in (("tp", TP8), ("dp", DP8)):
        for batch in (1, 64):
            t = deployed_step_time(V3, H200, "lecture", dep, batch=batch, context=4096, weights=CHECKPOINT)
            held = 4097 * (batch if name == "tp" else math.ceil(batch / 8))
            assert t.kv_bytes == pytest.approx(held * KV_PER_TOKEN, rel=1e-12)
            assert t.memory_time_s == pytest.approx((t.weight_bytes_read + t.kv_bytes) / bw, rel=1e-12)
            assert t.bound == "memory"
            assert t.step_time_s == pytest.approx(t.memory_time_s + t.comm_time_s + 1e-3, rel=1e-12)
            times[name, batch] = round(t.step_time_s * 1e3, 2)
    assert times == {("tp", 1): 4.35, ("tp", 64): 27.97, ("dp", 1): 7.64, ("dp", 64): 26.83}
    # the busiest GPU's weights at batch 64: every non-expert weight but the input embedding (the lecture
    # does not read it), and at most its 32 experts a layer
    t = deployed_step_time(V3, H200, "lecture", DP8, batch=64, context=4096, weights=CHECKPOINT)
    wb = weight_bytes(V3, CHECKPOINT)
    assert t.weight_bytes_read <= wb.total - wb.embedding - ROUTED + ROUTED / 8


def test_the_same_split_as_eight_replicas_of_tp_1():
    """dp-attention over tp 8 at batch 8B is, per GPU, 8 replicas of tp 1 with ep 8 at batch B each (the
    older spelling of the same deployment): two paths through the code, one time."""
    replicas = Deployment(tp=1, ep=8, gpus=8)
    for batch, context in ((8, 4096), (64, 1024), (512, 100)):
        dp = deployed_step_time(V3, H200, "lecture", DP8, batch=batch, context=context, weights=CHECKPOINT)
        rep = deployed_step_time(V3, H200, "lecture", replicas, batch=batch // 8, context=context, weights=CHECKPOINT)
        assert dp.step_time_s == pytest.approx(rep.step_time_s, rel=1e-12)
        assert dp.kv_bytes == pytest.approx(rep.kv_bytes, rel=1e-12)
        assert dp.weight_bytes_read == pytest.approx(rep.weight_bytes_read, rel=1e-12)


def test_prefill_of_one_prompt_runs_on_one_rank():
    """A batch of 1 prompt has one attention rank: its dense GEMMs and attention are that GPU's alone,
    so the pass's compute is not the average rank's 1/8."""
    one = deployed_step_time(V3, H200, "lecture", DP8, rows=4096, batch=1, context=0, weights=CHECKPOINT)
    eight = deployed_step_time(V3, H200, "lecture", DP8, rows=8 * 4096, batch=8, context=0, weights=CHECKPOINT)
    assert one.compute_time_s > 0.5 * eight.compute_time_s  # the same rank work, fewer routed rows


def test_breakdown_composes_under_dp_attention():
    cost = deployed_pass_cost(V3, H200, "lecture", CHECKPOINT, DP8)
    from llm_cost.catalog import as_profile

    for rows, batch, context in ((1, 1, 4096), (64, 64, 4096), (4096, 1, 0)):
        ops = pass_breakdown(cost, V3, H200, as_profile("lecture"), CHECKPOINT, DP8, rows=rows, batch=batch,
                             context=context)
        total = cost.step(rows, batch, context).step_time_s
        assert sum(o.time_s for o in ops) == pytest.approx(total, rel=1e-12)
        assert not any(o.operator.startswith("all-reduce") for o in ops)


def test_refused_without_experts_or_with_ep_below_tp():
    with pytest.raises(InvalidValueError, match="dp_attention .* needs a MoE"):
        deployed_step_time("llama-3-70b", H200, "lecture", Deployment(tp=8, dp_attention=True))
    with pytest.raises(InvalidValueError, match="ep a multiple of tp, got ep = 1"):
        deployed_step_time(V3, H200, "lecture", Deployment(tp=8, dp_attention=True), weights=CHECKPOINT)
    with pytest.raises(InvalidValueError, match="dp_attention must be True or False"):
        Deployment(tp=8, ep=8, dp_attention="yes")
    assert Deployment(tp=8, ep=8, dp_attention=True).label == ", tp 8 ep 8 dp-attention"


def test_cli_roofline_and_request():
    import json

    from llm_cost.cli import app

    runner = CliRunner()
    base = ["--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--ep", "8", "--weights", "checkpoint",
            "--batch", "64", "--format", "json"]
    out = {}
    for flag in ([], ["--dp-attention"]):
        r = runner.invoke(app, ["roofline", *base, "--context", "4096", "--preset", "lecture", *flag])
        assert r.exit_code == 0, r.output
        out[bool(flag)] = json.loads(r.stdout)[0]
    assert round(out[True]["step_time_s"] * 1e3, 2) == 26.83 and round(out[False]["step_time_s"] * 1e3, 2) == 27.97
    r = runner.invoke(app, ["request", *base, "--dp-attention"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["roofline", "--model", "llama-3-8b", "--tp", "8", "--dp-attention"])
    assert r.exit_code != 0 and "needs a MoE" in r.output and "Traceback" not in r.output


def test_plan_searches_dp_attention_and_its_rows_replay_in_request():
    """`plan --dp-attention` adds the dp-attention split of each eligible split (MoE, tp > 1, ep a
    multiple of tp); each row's request_args give `request` the same TTFT, TPOT and memory needed, at
    batches below and above the 8 ranks (the busiest rank's ceil(B / 8) sequences)."""
    import json
    import shlex

    from llm_cost.catalog import as_profile
    from llm_cost.cli import app
    from llm_cost.planner import evaluate, plan_space
    from llm_cost.planner.rows import config_fields

    space = plan_space(V3, [H200], 8, tps=[8], pps=[1], eps=[8], weights=["checkpoint"], kv_dtypes=["bf16"],
                       batches=[1, 4, 64], dp_attention=True)
    assert [g.deployment.dp_attention for g in space.groups] == [False, True]
    grid = evaluate(space, as_profile("lecture"), isl=1024, osl=64)
    runner = CliRunner()
    checked = 0
    for i in range(len(grid.batch)):
        if not space.groups[grid.group[i]].deployment.dp_attention:
            continue
        fields = config_fields(grid, i, {"deepseek-v3": "deepseek-v3", H200.name: "h200", "profile_args": ["--preset", "lecture"]})
        assert "--dp-attention" in fields["request_args"] and fields["split"] == "8x1 ep 8 dp-attn"
        r = runner.invoke(app, ["request", *shlex.split(fields["request_args"]), "--format", "json"])
        assert r.exit_code == 0, r.output
        row = json.loads(r.stdout)[0]
        for key in ("ttft_s", "tpot_s", "memory_needed_bytes"):
            assert row[key] == pytest.approx(fields[key], rel=1e-9), (fields["batch"], key)
        checked += 1
    assert checked == 3


def test_one_rounding_of_the_batch_over_attention_ranks():
    """Issue 24.2: ceil(B / dp) x dp is `attention_batch_for` (the busiest rank's ceil(B / dp),
    `busiest_rank_sequences`), on numbers and numpy arrays alike; `Deployment.attention_batch`,
    `PassCost.rank_scale` and the planner read it."""
    import numpy as np

    from llm_cost.specs.deployment import attention_batch_for, busiest_rank_sequences

    batches = [1, 7, 8, 9, 63, 64, 65, 1000]
    by_hand = [math.ceil(b / 8) * 8 for b in batches]
    assert [attention_batch_for(b, 8) for b in batches] == by_hand
    assert [DP8.attention_batch(b) for b in batches] == by_hand and TP8.attention_batch(9) == 9
    assert attention_batch_for(np.array(batches, dtype=float), 8).tolist() == by_hand
    assert attention_batch_for(np.array(batches)[None, :], np.array([[1.0], [8.0]])).tolist() == [batches, by_hand]
    assert busiest_rank_sequences(65, 8) == 9 and busiest_rank_sequences(np.array([65]), 8).tolist() == [9.0]
    for one in (np.int64(9), np.float64(9.0), 9.0, np.array(9)):  # a single number: an int, as math.ceil gave
        assert type(DP8.attention_batch(one)) is int and DP8.attention_batch(one) == 16
        assert type(busiest_rank_sequences(one, np.int64(8))) is int
    cost = deployed_pass_cost(V3, H200, "lecture", CHECKPOINT, DP8)
    assert [cost.rank_scale(b) for b in batches] == [h / b for h, b in zip(by_hand, batches)]
    assert cost.rank_scale(np.array(batches)).tolist() == [h / b for h, b in zip(by_hand, batches)]
