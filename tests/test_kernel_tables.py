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
    assert t.total_s == cost.time(64.0, *cost.uniform_terms(64.0, 64.0, 512.0))  # one formula
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
