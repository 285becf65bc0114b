"""Measured kernel tables (issue 23.3): the shipped fit reproduces its table, and PassCost uses it."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from llm_cost.catalog import load_accelerator, load_model
from llm_cost.errors import LlmCostError
from llm_cost.roofline.kernels import measured_all_reduce, measured_gemm
from llm_cost.roofline.pass_cost import PassCost
from llm_cost.specs import Profile

EXCERPT = Path(__file__).parent / "data" / "kernels" / "h100_sxm_gemm_bf16_excerpt.csv"


def _excerpt():
    """(m, n, k, seconds) of the 36 H100 BF16 rows (source in the file's header)."""
    lines = [line for line in EXCERPT.read_text().splitlines() if not line.startswith("#")]
    rows = list(csv.DictReader(lines))
    m, n, k, t = (np.array([float(r[c]) for r in rows]) for c in ("m", "n", "k", "latency_ms"))
    return m, n, k, t / 1e3


def test_h100_bf16_curve_reproduces_its_table_excerpt_within_its_stated_error():
    # aiconfigurator_core 0.12.0, h100_sxm/gemm/trtllm/1.3.0rc20/gemm_perf.parquet (excerpt's header)
    gpu = load_accelerator("h100-sxm")
    curve = measured_gemm(gpu.name, "bf16")
    assert curve is not None and "aiconfigurator_core 0.12.0" in curve.source
    m, n, k, t = _excerpt()
    eta = curve.compute_efficiency * (curve.small_gemm_factor + (1 - curve.small_gemm_factor) * m / (m + curve.gemm_half_rows))
    predicted = np.maximum((m * k + k * n + m * n) * 2 / (gpu.bandwidth_bytes_per_s * curve.bw_efficiency),
                           2 * m * n * k / (gpu.peak_flops_per_s("bf16") * eta))
    ape = np.abs(predicted / t - 1)
    # the stated errors are over 7308 rows; a 36-row sample lands within 1.5x of them
    assert np.median(ape) <= 1.5 * curve.median_ape
    assert np.quantile(ape, 0.9) <= 1.5 * curve.p90_ape
    assert curve.median_ape <= 0.06  # the fit's own figure, as shipped: 5.2%


def test_all_reduce_fit_is_latency_plus_bus_bandwidth_below_the_link():
    gpu = load_accelerator("h100-sxm")
    latency_s, bus = measured_all_reduce(gpu.name, 8)
    assert 1e-6 < latency_s < 1e-4
    assert bus < gpu.interconnect_bytes_per_s  # achieved bus bandwidth is below the line rate
    assert measured_all_reduce(gpu.name, 3) is None


def test_measured_kernels_set_the_pass_coefficients_and_name_their_source():
    model, gpu = load_model("llama-3-8b"), load_accelerator("h100-sxm")
    base = Profile(name="p", bw_efficiency=0.8, compute_efficiency=0.6, count_kv=True)
    measured = dataclasses.replace(base, kernels="measured")
    curve = measured_gemm(gpu.name, "bf16")
    cost = PassCost.from_specs(model, gpu, measured)
    assert cost.kernel_source == curve.source
    assert cost.flops_per_s == pytest.approx(gpu.peak_flops_per_s("bf16") * curve.compute_efficiency, rel=1e-12)
    assert cost.bytes_per_s == pytest.approx(gpu.bandwidth_bytes_per_s * curve.bw_efficiency, rel=1e-12)
    assert (cost.small_gemm_factor, cost.gemm_half_rows) == (curve.small_gemm_factor, curve.gemm_half_rows)
    t = cost.step(64.0, 64.0, 512.0)
    assert t.step_time_s == cost.time(64.0, *cost.uniform_terms(64.0, 64.0, 512.0))  # one formula
    assert PassCost.from_specs(model, gpu, base).kernel_source == "datasheet"


def test_gpu_without_a_table_falls_back_to_the_profile_and_says_datasheet():
    model, gpu = load_model("llama-3-8b"), load_accelerator("mi300x")
    base = Profile(name="p", bw_efficiency=0.8, compute_efficiency=0.6)
    cost = PassCost.from_specs(model, gpu, dataclasses.replace(base, kernels="measured"))
    assert cost == PassCost.from_specs(model, gpu, base)
    assert cost.kernel_source == "datasheet"


def test_unknown_kernel_source_is_refused():
    with pytest.raises(LlmCostError, match="profile.kernels"):
        Profile(name="p", kernels="guessed")


@pytest.mark.parametrize("name,deployment,rows,batch,context", [
    ("llama-3-70b", {"tp": 4, "pp": 2}, 32, 32, 500),  # dense, tp all-reduces from the NCCL table
    ("mixtral-8x7b", {"tp": 8, "ep": 8}, 64, 64, 2000),  # MoE under ep, the busiest GPU
    ("llama-3-8b", {}, 2048, 1, 0),  # one GPU, a prefill on the ramp
])
def test_breakdown_composes_to_the_pass_time_under_measured_kernels(name, deployment, rows, batch, context):
    from llm_cost.catalog import as_profile
    from llm_cost.parallel import deployed_pass_cost
    from llm_cost.parallel.breakdown import pass_breakdown
    from llm_cost.specs import BF16
    from llm_cost.specs.deployment import Deployment

    model, gpu, dep = load_model(name), load_accelerator("h100-sxm"), Deployment(**deployment)
    profile = dataclasses.replace(as_profile("measured"), kernels="measured")
    cost = deployed_pass_cost(model, gpu, profile, BF16, dep)
    step = cost.step(rows, batch, context, count_kv=profile.count_kv)
    ops = pass_breakdown(cost, model, gpu, profile, BF16, dep, rows=rows, batch=batch, context=context)
    assert sum(o.time_s for o in ops) == pytest.approx(step.step_time_s, rel=1e-12)
    table = measured_gemm(gpu.name, "bf16").source
    # every roofline operator from the GPU's tables: the GEMM's, or an operator table of the same file
    assert all(o.source.startswith(table) for o in ops if o.bound in ("memory", "compute"))
    reduces = [o for o in ops if o.operator.startswith("all-reduce")]
    assert all(o.source == table for o in reduces) and bool(reduces) == (dep.tp > 1)
    if dep.tp > 1:  # the measured latency (~10 us at tp 4) is far above the datasheet's per-hop 0.47 us
        base = deployed_pass_cost(model, gpu, as_profile("measured"), BF16, dep)
        assert cost.comm_fixed_s > base.comm_fixed_s


def test_breakdown_on_a_gpu_without_tables_says_datasheet_or_fitted():
    from llm_cost.catalog import as_profile
    from llm_cost.parallel import deployed_pass_cost
    from llm_cost.parallel.breakdown import pass_breakdown
    from llm_cost.specs import BF16
    from llm_cost.specs.deployment import Deployment

    model, gpu, dep = load_model("llama-3-70b"), load_accelerator("mi300x"), Deployment(tp=2)
    profile = dataclasses.replace(as_profile("measured"), kernels="measured")
    cost = deployed_pass_cost(model, gpu, profile, BF16, dep)
    ops = pass_breakdown(cost, model, gpu, profile, BF16, dep, rows=8, batch=8, context=100)
    assert {o.source for o in ops} <= {"fitted", "datasheet"}


def test_the_shipped_measured_kernels_profile_file_reads_with_the_option():
    from llm_cost.calibrate.profile_file import read_profile
    from llm_cost.specs.profiles import PRESETS

    profile = read_profile(Path(__file__).parents[1] / "analysis" / "measured_kernels.json")
    assert profile == dataclasses.replace(PRESETS["measured"], name="measured-kernels", kernels="measured")


def test_the_refit_over_measured_kernels_is_a_kernels_profile_with_its_stated_error():
    """analysis/measured_kernels_refit.json: `measured`'s knobs refitted to both training files with the
    measured kernel tables on (README "Measured kernels"; `analysis/refit_measured.py --start
    analysis/measured_kernels.json --quick`): on train.csv 9.4% median, 15.7% MAPE in sample."""
    from llm_cost.calibrate.metrics import summaries
    from llm_cost.calibrate.points import read_points
    from llm_cost.calibrate.prediction import predict
    from llm_cost.calibrate.profile_file import read_profile

    refit = read_profile(Path(__file__).parents[1] / "analysis" / "measured_kernels_refit.json")
    assert refit.name == "measured-kernels-refit" and refit.kernels == "measured"
    assert refit.engines == ("gpt-fast", "trtllm-0", "lmdeploy", "vllm", "sglang", "trtllm")
    preds = [predict(p, refit) for p in read_points(Path(__file__).parent / "data" / "measured" / "train.csv")]
    every = {s.name: s for s in summaries(preds, "metric")}["all"]
    assert every.covered == 88
    assert round(every.median_ape, 3) == 0.094 and round(every.mape, 3) == 0.157
