"""Measured prefill (context) attention and MLA tables (issue 23.3), fitted by analysis/fit_attention_ops.py
to aiconfigurator_core 0.12.0 (NVIDIA, Apache-2.0): each shipped curve reproduces its table excerpt
(tests/data/kernels/, source in each file's header) within its stated error, and `PassCost` and
`--breakdown` time attention with it under `Profile.kernels == "measured"`."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from llm_cost.catalog import as_profile, load_accelerator, load_model
from llm_cost.counts import attention_flops_per_context_token
from llm_cost.parallel import deployed_pass_cost
from llm_cost.parallel.breakdown import pass_breakdown
from llm_cost.roofline.kernels import measured_context_attention, measured_mla
from llm_cost.roofline.pass_cost import PassCost
from llm_cost.specs import BF16
from llm_cost.specs.deployment import Deployment
from llm_cost.specs.weights import CHECKPOINT
from test_kernel_tables_ops import MEASURED, SYSTEMS, _datasheet, _rows, _shipped, _within

MLA_PAIR_FLOPS = 2 * (192 + 128)  # a pair's FLOPs a head, DeepSeek-V3's qk and v dims (fit_attention_ops)


def _prefill(fit, x, per_pair_head, peak):
    """The module doc's t = latency + f (P + T row_pairs) / (F eta), f = per_pair_head x heads."""
    tokens = x["batch_size"] * x["isl"]
    pairs = tokens * (x["isl"] + 1) / 2
    return fit["latency_s"] + per_pair_head * x["num_heads"] * (pairs + tokens * fit["row_pairs"]) / (peak * fit["eta"])


@pytest.mark.parametrize("system,hw", SYSTEMS)
def test_context_attention_fit_reproduces_its_excerpt_per_head_dim_and_group(system, hw):
    fits, sheet = _shipped(hw)["context_attention"], _datasheet(hw)
    x = _rows(f"{system}_context_attention_excerpt.csv")
    group = x["num_heads"] / x["num_key_value_heads"]
    checked = 0
    for fit in (f for f in fits.values() if isinstance(f, dict) and f["head_dim"] in (64, 128)):
        on = (x["head_dim"] == fit["head_dim"]) & (group >= fit["gqa_group_min"]) & (group <= fit["gqa_group_max"])
        sub = {c: v[on] for c, v in x.items()}
        _within(_prefill(fit, sub, 4 * fit["head_dim"], sheet["bf16_flops_per_s"]), sub["latency"] / 1e3, fit)
        assert fit["median_ape"] <= 0.10  # as shipped: 5-8% median on H100 and H200
        checked += 1
    assert checked == 8
    # long prompts reach more of the peak with a larger head dim (H100: 0.49 at 64, 0.58 at 128)
    assert fits["64/5-8"]["eta"] < fits["128/5-8"]["eta"] < 1.0


@pytest.mark.parametrize("system,hw", SYSTEMS)
def test_mla_prefill_and_decode_fits_reproduce_their_excerpts(system, hw):
    mla, sheet = _shipped(hw)["mla"], _datasheet(hw)
    x = _rows(f"{system}_mla_prefill_excerpt.csv")
    _within(_prefill(mla["prefill"], x, MLA_PAIR_FLOPS, sheet["bf16_flops_per_s"]), x["latency"] / 1e3, mla["prefill"])
    fit, y = mla["decode"], _rows(f"{system}_mla_decode_excerpt.csv")
    tokens = y["batch_size"] * y["step"]
    predicted = fit["latency_s"] + y["batch_size"] * fit["per_sequence_s"] + np.maximum(
        tokens * 576 * 2 / (sheet["bandwidth_bytes_per_s"] * fit["bw_efficiency"]),
        tokens * MLA_PAIR_FLOPS * y["num_heads"] / (sheet["bf16_flops_per_s"] * fit["eta"]))
    _within(predicted, y["latency"] / 1e3, fit)


def test_prefill_attention_is_timed_by_the_context_table():
    """Llama-3-8B (head dim 128, group 4) on H100: attention's compute is f (P + T row_pairs) / (F_bf16 eta)
    in the pass's compute side (the GEMMs' unchanged), and the breakdown names the table and composes."""
    model, gpu = load_model("llama-3-8b"), load_accelerator("h100-sxm")
    cost = PassCost.from_specs(model, gpu, MEASURED)
    curve = measured_context_attention(gpu.name, 128, 4)
    assert (cost.pair_time_factor, cost.row_pairs) == (cost.flops_per_s / (gpu.peak_flops_per_s("bf16") * curve.eta),
                                                       curve.row_pairs)
    plain = dataclasses.replace(cost, pair_time_factor=1.0, row_pairs=0.0)
    rows, pairs = 4096.0, 4096.0 * 4097 / 2  # one 4,096-token prompt
    attention = attention_flops_per_context_token(model) * (pairs + rows * curve.row_pairs) / (
        gpu.peak_flops_per_s("bf16") * curve.eta)
    assert cost.compute_s(rows, pairs) - plain.compute_s(rows, 0.0) == pytest.approx(attention, rel=1e-9)
    assert cost.pair_s == pytest.approx(cost.compute_s(rows, pairs + 1) - cost.compute_s(rows, pairs), rel=1e-6)
    step = cost.step(rows, 1.0, 0.0)
    assert step.step_time_s == cost.time(rows, *cost.uniform_terms(rows, 1.0, 0.0))  # one formula
    assert step.step_time_s > plain.step(rows, 1.0, 0.0).step_time_s  # the table's attention is slower than the GEMMs' rate
    ops = pass_breakdown(cost, model, gpu, MEASURED, BF16, Deployment(), rows=rows, batch=1, context=0)
    att = {o.operator: o for o in ops}["attention"]
    assert att.source.startswith("measured table") and att.source.endswith("context attention")
    assert att.compute_time_s == pytest.approx(attention, rel=1e-9)
    assert sum(o.time_s for o in ops) == pytest.approx(step.step_time_s, rel=1e-12)


@pytest.mark.parametrize("gpu_name,deployment", [("h200", {"tp": 8, "ep": 8}), ("h100-sxm", {"tp": 8, "ep": 8, "dp_attention": True})])
def test_mla_is_timed_by_its_own_tables_and_the_breakdown_composes(gpu_name, deployment):
    """DeepSeek-V3 (FP8 checkpoint) on 8 GPUs: K/V at the MLA decode table's bandwidth, pairs at its prefill
    table's rate (BF16 attention beside FP8 GEMMs); prefill and decode passes compose exactly."""
    model, gpu, dep = load_model("deepseek-v3"), load_accelerator(gpu_name), Deployment(**deployment)
    one = PassCost.from_specs(model, gpu, MEASURED, CHECKPOINT)
    curve = measured_mla(gpu.name)
    assert one.pair_time_factor == pytest.approx(one.flops_per_s / (gpu.peak_flops_per_s("bf16") * curve.eta))
    cost = deployed_pass_cost(model, gpu, MEASURED, CHECKPOINT, dep)
    # a cached token: max(its latent bytes at the decode table's bandwidth, its pairs' FLOPs at the table's
    # eta), one GPU's share: under tp 8 the whole latent and 16 heads (bandwidth binds), under dp_attention
    # 1/8 of the sequences with all 128 heads (the FLOPs bind)
    assert cost.kv_token_bytes == 576 * 61 * 2 / (8 if dep.dp_attention else 1)
    assert cost.pair_flops == pytest.approx(MLA_PAIR_FLOPS * 128 * 61 / 8, rel=1e-12)
    memory = cost.kv_token_bytes / (gpu.bandwidth_bytes_per_s * curve.decode_bw_efficiency)
    compute = cost.pair_flops / (gpu.peak_flops_per_s("bf16") * curve.decode_eta)
    assert cost.kv_token_s == pytest.approx(max(memory, compute), rel=1e-9)
    assert (compute > memory) == dep.dp_attention
    for rows, batch, context in ((8192.0, 2.0, 0.0), (64.0, 64.0, 2000.0)):
        ops = pass_breakdown(cost, model, gpu, MEASURED, CHECKPOINT, dep, rows=rows, batch=batch, context=context)
        assert {o.operator: o.source for o in ops}["attention"].endswith(": MLA prefill and decode")
        assert sum(o.time_s for o in ops) == pytest.approx(cost.step(rows, batch, context).step_time_s, rel=1e-12)


def test_gpus_without_attention_tables_fall_back_and_say_so():
    """MI300X has no table: the profile's figures, attention at the GEMMs' rate, "fitted". A100's MLA decode
    fit (32% median error) is not used: its prefill is, and the source says only "MLA prefill"."""
    model, gpu = load_model("llama-3-8b"), load_accelerator("mi300x")
    cost = PassCost.from_specs(model, gpu, MEASURED)
    assert (cost.pair_time_factor, cost.row_pairs, cost.attention_timed) == (1.0, 0.0, False)
    ops = pass_breakdown(cost, model, gpu, MEASURED, BF16, Deployment(), rows=512, batch=1, context=0)
    assert {o.operator: o.source for o in ops}["attention"] == "fitted"
    a100 = measured_mla("A100 80GB")
    assert a100.decode_bw_efficiency is None and a100.source.endswith(": MLA prefill")
    v3 = PassCost.from_specs(load_model("deepseek-v3"), load_accelerator("a100-80gb"), MEASURED)
    assert v3.kv_time_factor == 1.0 and v3.attention_timed


@pytest.mark.parametrize("preset", ["article", "lecture", "measured"])
def test_presets_without_measured_kernels_time_attention_as_before(preset):
    """The seeds' presets (and `measured`, kernels "datasheet") keep attention at the GEMMs' rate: no factor,
    no extra pairs, the same seconds as the plain roofline."""
    model, gpu = load_model("llama-3-8b"), load_accelerator("h100-sxm")
    cost = PassCost.from_specs(model, gpu, as_profile(preset))
    assert (cost.pair_time_factor, cost.row_pairs, cost.attention_timed) == (1.0, 0.0, False)
    assert cost.pair_s == cost.pair_flops / cost.flops_per_s
