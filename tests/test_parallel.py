"""Deployments (issue 11): per-GPU shares, collectives, fit; hand arithmetic and one-line errors.

The properties (tp = 1 exact, per-GPU bytes fall with GPUs, communication grows with tp) run per
catalog model in tests/test_properties.py (`llm_cost.checks.deployments`).
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from llm_cost.catalog import load_accelerator, load_model
from llm_cost.errors import InvalidValueError
from llm_cost.counts import weight_bytes
from llm_cost.parallel import (all_reduce_s, deployed_step_time, kv_share, step_fit, weight_bytes_per_gpu)
from llm_cost.roofline import step_time
from llm_cost.specs import BF16, FP8
from llm_cost.specs.deployment import Deployment
from helpers import error_line, run, rows_of

H100 = load_accelerator("h100-sxm")
L70 = load_model("llama-3-70b")


def test_tp_all_reduce_arithmetic_by_hand():
    """Llama-3-70B decode, batch 1, tp 4 on H100 SXM (NVLink 4: 450e9 B/s per direction, NCCL's ring
    hop 0.47 us). One all-reduce of one row: 8192 x 2 bytes = 16,384 B; ring: 2 (4 - 1) = 6 hops of
    0.47 us and 2 x 3 / 4 x 16,384 / 450e9 s of transfer; two per layer, 80 layers."""
    one = 6 * 0.47e-6 + 1.5 * 16384 / 450e9  # 2.82e-6 + 5.4613e-8 s
    assert all_reduce_s(16384, 4, H100) == pytest.approx(one, rel=1e-12)
    t = deployed_step_time(L70, H100, "article", Deployment(tp=4))
    assert t.comm_time_s == pytest.approx(160 * one, rel=1e-12)  # 0.4599 ms
    assert round(t.comm_time_s * 1e3, 3) == 0.460
    # at 64 rows the transfer term grows 64x, the hops stay
    t64 = deployed_step_time(L70, H100, "article", Deployment(tp=4), batch=64)
    assert t64.comm_time_s == pytest.approx(160 * (6 * 0.47e-6 + 1.5 * 64 * 16384 / 450e9), rel=1e-12)


def test_tp_splits_weights_flops_and_kv_heads():
    one = step_time(L70, H100, "lecture", batch=8, context=4096)
    four = deployed_step_time(L70, H100, "lecture", Deployment(tp=4), batch=8, context=4096)
    assert four.weight_bytes_read == pytest.approx(one.weight_bytes_read / 4, rel=1e-12)
    assert four.kv_bytes == pytest.approx(one.kv_bytes / 4, rel=1e-12)  # 8 K/V heads: 2 per GPU
    assert four.flops == pytest.approx(one.flops / 4, rel=1e-12)
    assert four.step_time_s == pytest.approx(max(four.memory_time_s, four.compute_time_s) + four.comm_time_s + 1e-3, rel=1e-12)


def test_kv_heads_fewer_than_tp_are_replicated_and_mla_latent_everywhere():
    assert kv_share(L70, 8) == 1 / 8 and kv_share(L70, 16) == 1 / 8  # 8 K/V heads: one per GPU at most
    assert kv_share(load_model("deepseek-v3"), 8) == 1.0  # the MLA latent is replicated
    # the replicated K/V projections: 80 layers x 2 x 8192 x 1024 params x (1/8 - 1/16) more per GPU
    extra = 80 * 2 * 8192 * 1024 * (1 / 8 - 1 / 16) * 2
    assert (weight_bytes_per_gpu(L70, BF16, Deployment(tp=16)) - weight_bytes_per_gpu(L70, BF16, Deployment(tp=8)) / 2
            == pytest.approx(extra, rel=1e-9))


def test_fp8_halves_a_compute_bound_prefill_on_h100():
    """H100 SXM dense peaks: BF16 989 TFLOP/s, FP8 1,979 TFLOP/s (datasheet, sparsity halved). A 4096-row
    prefill of Llama-3-8B is compute-bound in both; W8A8 FP8 runs the GEMMs at the FP8 peak."""
    bf16 = step_time("llama-3-8b", H100, "article", rows=4096, weights=BF16)
    fp8 = step_time("llama-3-8b", H100, "article", rows=4096, weights=FP8)
    assert bf16.bound == fp8.bound == "compute"
    assert bf16.step_time_s / fp8.step_time_s == pytest.approx(1979 / 989, rel=1e-12)
    # no FP8 tensor cores on an A100: FP8 weights run at the BF16 peak (weight-only), and the row says so
    (row,) = rows_of("roofline", "--gpu", "a100-80gb", "--weights", "fp8", "--rows", "4096")
    assert row["compute_dtype"] == "bf16"
    (row,) = rows_of("roofline", "--weights", "fp8", "--rows", "4096")
    assert row["compute_dtype"] == "fp8"


def test_pipeline_crosses_the_stages():
    """pp 2, article preset, batch 1: each stage reads half the weights; the step crosses both and one
    hand-off of 8192 x 2 bytes (0.47 us + 16,384 / 450e9 s)."""
    one = step_time(L70, H100, "article")
    two = deployed_step_time(L70, H100, "article", Deployment(pp=2))
    assert two.memory_time_s == pytest.approx(one.memory_time_s / 2, rel=1e-12) and two.stages == 2
    assert two.comm_time_s == pytest.approx(0.47e-6 + 16384 / 450e9, rel=1e-12)
    assert two.step_time_s == pytest.approx(one.step_time_s + two.comm_time_s, rel=1e-12)
    (row,) = rows_of("roofline", "--model", "llama-3-70b", "--pp", "2", "--gpus", "4")
    # a static batch cannot fill the 2 stages (issue 29): 2 replicas x 1 token / step
    assert row["replicas"] == 2 and row["tokens_per_s"] == pytest.approx(2 * 1 / row["step_time_s"])


def test_expert_parallel_replaces_the_moe_all_reduce_by_all_to_alls():
    """DeepSeek-V3 (61 layers, 58 MoE, top-8 of 256, hidden 7168) at batch 64 on H100 SXM. EP 8 over TP 8:
    each MoE layer's output all-reduce becomes a dispatch and a combine all-to-all of 64 / 8 rows x 8
    experts x 7168 x 2 bytes (7 hops, 7/8 of it sent); with top-8 over 8 GPUs the bytes equal the
    all-reduce's, so EP = TP costs the same (its gains are kernels and balance, not modelled)."""
    ds = load_model("deepseek-v3")
    tp8 = deployed_step_time(ds, H100, "article", Deployment(tp=8), batch=64)
    ep8 = deployed_step_time(ds, H100, "article", Deployment(tp=8, ep=8), batch=64)
    all_reduce = 14 * 0.47e-6 + 2 * 7 / 8 * 64 * 7168 * 2 / 450e9
    a2a = 7 * 0.47e-6 + 7 / 8 * (64 / 8 * 8 * 7168 * 2) / 450e9
    assert tp8.comm_time_s == pytest.approx(2 * 61 * all_reduce, rel=1e-12)
    assert ep8.comm_time_s == pytest.approx((2 * 61 - 58) * all_reduce + 2 * 58 * a2a, rel=1e-12)
    assert weight_bytes_per_gpu(ds, BF16, Deployment(tp=8, ep=8)) == pytest.approx(
        weight_bytes_per_gpu(ds, BF16, Deployment(tp=8)), rel=1e-12)  # same share, whole experts
    # DP attention: tp 1, ep 8 over 8 replicas; each GPU holds all attention and 32 of the 256 experts, and
    # its experts see the rows of all 8 replicas; no all-reduce, 2 all-to-alls of 64 x 8 rows per MoE layer
    dp = Deployment(tp=1, ep=8, gpus=8)
    t = deployed_step_time(ds, H100, "article", dp, batch=64)
    assert t.comm_time_s == pytest.approx(2 * 58 * (7 * 0.47e-6 + 7 / 8 * (64 * 8 * 7168 * 2) / 450e9), rel=1e-12)
    wb = weight_bytes(ds)
    experts = wb.num_moe_layers * wb.num_experts * wb.expert
    assert weight_bytes_per_gpu(ds, BF16, dp) == pytest.approx(wb.total - experts + experts / 8, rel=1e-12)
    assert "--ep must be 1 or a multiple of --tp = 8" in error_line("roofline", "--model", "deepseek-v3", "--tp", "8",
                                                                  "--ep", "2")


def test_seventy_b_on_one_h100_keeps_its_number_and_says_it_does_not_fit():
    """The article §1.2: 'Llama-3-70B decode bound 42.12 ms' (assuming it fits in one card)."""
    out = run("roofline", "--model", "llama-3-70b", "--format", "json")
    assert out.exit_code == 0
    (row,) = json.loads(out.stdout)
    assert round(row["step_time_s"] * 1e3, 2) == 42.12 and row["fits"] is False
    assert row["memory_needed_bytes"] > row["memory_available_bytes"]
    assert "does not fit" in out.stderr and "short by" in out.stderr and len(out.stderr.splitlines()) == 1
    strict = run("roofline", "--model", "llama-3-70b", "--strict", "--format", "json")
    assert strict.exit_code == 2
    fine = run("roofline", "--model", "llama-3-70b", "--tp", "4", "--strict")
    assert fine.exit_code == 0 and not fine.stderr


def test_a_context_past_the_models_limit_is_never_silent():
    fit = step_fit(L70, H100, Deployment(tp=8), batch=1, context=12 * 8192)
    assert not fit.fits and "exceeds the model's limit of 8192 tokens" in fit.reason
    out = run("roofline", "--model", "llama-3-70b", "--tp", "8", "--context", str(12 * 8192))
    assert out.exit_code == 0 and "exceeds the model's limit" in out.stderr


def test_usable_memory_is_what_the_driver_reports():
    assert H100.memory_bytes == 80e9  # the seeds' figure, unchanged
    assert H100.memory_available_bytes == 81559 * 2**20  # nvidia-smi's 81,559 MiB
    fit = step_fit(L70, H100, Deployment(tp=2, memory_basis="usable"), batch=1)
    assert fit.available_bytes == pytest.approx(81559 * 2**20 * 0.9) and fit.fits
    marketed = step_fit(L70, H100, Deployment(tp=2, memory_basis="marketed"), batch=1)  # the documents' 80e9
    assert step_fit(L70, H100, Deployment(tp=2), batch=1).memory_basis == "usable"  # the default, as the CLI's
    assert marketed.available_bytes == pytest.approx(80e9 * 0.9) and marketed.memory_basis == "marketed"


@pytest.mark.parametrize("args,needle", [
    (("--tp", "3"), "--tp must divide the model's 32 attention heads, got 3"),
    (("--ep", "2"), "--ep must be 1 for a dense model"),
    (("--kv-dtype", "fp7"), "--kv-dtype must be one of bf16, fp16, fp8, int8, int4, got 'fp7'"),
    (("--tp", "4", "--gpus", "2"), "--tp x --pp = 4 exceeds --gpus = 2"),
    (("--tp", "2", "--gpus", "3"), "--gpus must be a multiple of --tp x --pp = 2, got 3"),
    (("--tp", "0"), "--tp must be"),
    (("--model", "deepseek-v3", "--tp", "8", "--ep", "3"), "--ep must divide the model's 256 routed experts, got 3"),
])
def test_bad_deployments_are_one_line(args, needle):
    assert needle in error_line("roofline", *args)


def test_a_datasheet_without_an_interconnect_refuses_tp(tmp_path):
    sheet = {"name": "Lonely", "memory_bytes": 80e9, "bandwidth_bytes_per_s": 2e12, "bf16_flops_per_s": 3e14}
    path = tmp_path / "lonely.json"
    path.write_text(json.dumps(sheet))
    assert "--tp = 2 needs the interconnect" in error_line("roofline", "--gpu", str(path), "--tp", "2")
    assert run("roofline", "--gpu", str(path)).exit_code == 0


def test_overlap_hides_communication_behind_the_roofline():
    d = Deployment(tp=8, overlap_comm=True)
    t = deployed_step_time(L70, H100, "article", d)
    assert t.step_time_s == max(t.memory_time_s, t.compute_time_s, t.comm_time_s)
    plain = deployed_step_time(L70, H100, "article", dataclasses.replace(d, overlap_comm=False))
    assert plain.step_time_s > t.step_time_s


def test_fp8_kv_halves_the_kv_read():
    bf16 = deployed_step_time(L70, H100, "lecture", Deployment(tp=4), batch=32, context=4096)
    fp8 = deployed_step_time(L70, H100, "lecture", Deployment(tp=4, kv_dtype="fp8"), batch=32, context=4096)
    assert fp8.kv_bytes == pytest.approx(bf16.kv_bytes / 2, rel=1e-12)


def test_library_errors_name_the_parameter():
    with pytest.raises(InvalidValueError, match="tp must divide"):
        deployed_step_time(L70, H100, "article", Deployment(tp=5))


def test_readme_side_by_side_shows_todays_numbers():
    """README "Side by side": our Llama-3-70B TP4 decode at context 4096 (beside llm-analysis 9.53 / 22.25 ms
    and GenZ 11.53 / 18.05 ms, as the issue reports them) is what the commands print."""
    import re

    from helpers import README

    text = README.read_text(encoding="utf-8").split("**Side by side.**", 1)[1].split("\n\n", 2)[1]
    printed = {m[0]: (float(m[1]), float(m[2]))
               for m in re.findall(r"\| (llm-cost, [^|]+?) \| ([\d.]+) \| ([\d.]+) \|", text)}
    runs = {"llm-cost, peak (article preset + KV)": ("--kv",), "llm-cost, lecture preset (80% BW, 60% MFU, 1 ms fixed)": ("--preset", "lecture")}
    assert set(printed) == set(runs)
    for label, extra in runs.items():
        got = tuple(round(rows_of("roofline", "--model", "llama-3-70b", "--tp", "4", "--batch", b, "--context", "4096",
                                  *extra)[0]["step_time_s"] * 1e3, 2) for b in ("1", "64"))
        assert got == printed[label], label
    comm = [rows_of("roofline", "--model", "llama-3-70b", "--tp", "4", "--batch", b, "--context", "4096", "--kv")[0]["comm_time_s"]
            for b in ("1", "64")]
    prose = " ".join(README.read_text(encoding="utf-8").split("**Side by side.**", 1)[1].split())
    assert f"and {comm[0] * 1e3:.2f} ms of all-reduces at batch 1" in prose
    assert f"against our {comm[1] * 1e3:.2f} ms at batch 64" in prose


def test_turning_batch_rule_uses_the_formats_peak_and_bytes():
    """The article §2.4's rule ridge / ((16 / bits)(gamma + 1)): FP8 W8A8 doubles the ridge (the FP8 peak)
    and halves the bytes, so the turning batch stays ~59 on an H100; a checkpoint's own format (DeepSeek-V3's
    FP8 blocks) takes its BF16-to-checkpoint byte ratio for 16 / bits."""
    from llm_cost.roofline import ridge_point
    from llm_cost.specs import CHECKPOINT
    from llm_cost.speculative.turning import turning_batch

    fp8 = turning_batch("llama-3-8b", H100, "article", gamma=4, weights=FP8)
    assert fp8.ridge_estimate == pytest.approx(ridge_point(H100, "article", "fp8") / (2 * 5), rel=1e-12)
    assert ridge_point(H100, "article", "fp8") == pytest.approx(1979 / 3.35, rel=1e-12)
    ds = load_model("deepseek-v3")
    ckpt = turning_batch(ds, H100, "article", gamma=1, weights=CHECKPOINT)
    ratio = weight_bytes_per_gpu(ds, BF16, Deployment()) / weight_bytes_per_gpu(ds, CHECKPOINT, Deployment())
    assert ckpt.ridge_estimate == pytest.approx(ridge_point(H100, "article", "fp8") / (ratio * 2), rel=1e-12)


def test_pipeline_holds_one_static_batch_and_uneven_stages_fit_the_largest():
    """A static batch cannot fill pp stages (issue 29): one batch is in flight, so one GPU keeps its
    layers' K/V of that batch only: Llama-3-70B at pp 4, batch 64, context 4096 holds 64 x 4097 x
    327,680 B / 4 stages = 21.5 GB per GPU beside a quarter of the weights, and fits an H100.
    (Before the fix it counted 4 batches, 85.9 GB, and the throughput 4x.)"""
    fit = step_fit(L70, H100, Deployment(pp=4), batch=64, context=4096)
    assert fit.kv_bytes == pytest.approx(64 * 4097 * 327680 / 4, rel=1e-12) and fit.fits
    # 80 layers over pp 3: the largest stage holds 27 of them
    three = step_fit(L70, H100, Deployment(pp=3), batch=1)
    assert three.weight_bytes == pytest.approx(weight_bytes(L70).total * 27 / 80, rel=1e-12)
