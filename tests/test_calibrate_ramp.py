"""The GEMM efficiency ramp of issue 13's `measured` profile (`Profile.small_gemm_factor`,
`gemm_half_rows`): a GEMM of m rows runs at compute_efficiency x (r + (1 - r) m / (m + h)), a routed
expert's at its own rows; neutral in the seeds' presets, the same in every path that evaluates T."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from llm_cost.calibrate import predict, read_points
from llm_cost.catalog import load_accelerator, load_model
from llm_cost.roofline import PassCost, expected_experts_touched, step_time
from llm_cost.specs import BF16
from llm_cost.specs.profiles import PRESETS

DATA = Path(__file__).resolve().parent / "data"
REL = 1e-12  # one formula written two ways
R, H = 0.25, 400.0  # a ramp: a GEMM of few rows at 25% of compute_efficiency, halfway up at 400 rows
RAMP = PRESETS["lecture"].with_(small_gemm_factor=R, gemm_half_rows=H)


def _ramp(m: float) -> float:
    return R + (1 - R) * m / (m + H)


@pytest.fixture(scope="module")
def llama():
    return load_model("llama-3-8b"), load_accelerator("h100-sxm")


@pytest.mark.parametrize("rows", [1.0, 64.0, 400.0, 4096.0])
def test_compute_time_is_the_gemm_at_its_ramp(llama, rows):
    m, g = llama
    plain = PassCost.from_specs(m, g, PRESETS["lecture"], BF16)
    cost = PassCost.from_specs(m, g, RAMP, BF16)
    gemm = rows * plain.row_flops / plain.flops_per_s
    assert cost.compute_s(rows, 0.0) == pytest.approx(gemm / _ramp(rows), rel=REL)
    pairs = 1e6  # attention pairs stay at compute_efficiency
    assert cost.compute_s(rows, pairs) - cost.compute_s(rows, 0.0) == pytest.approx(
        pairs * plain.pair_flops / plain.flops_per_s, rel=1e-9)
    assert cost.flops(rows, pairs) == plain.flops(rows, pairs)  # the FLOPs done are the FLOPs done


def test_ramp_limits(llama):
    """Few rows: r x compute_efficiency; many: compute_efficiency; h rows: halfway."""
    m, g = llama
    cost = PassCost.from_specs(m, g, RAMP, BF16)
    assert cost.gemm_rows(1e-6) / 1e-6 == pytest.approx(1 / R, rel=1e-6)
    assert cost.gemm_rows(1e9) / 1e9 == pytest.approx(1.0, rel=1e-6)
    assert H / cost.gemm_rows(H) == pytest.approx((1 + R) / 2, rel=REL)


def test_every_path_agrees_on_a_ramped_pass(llama):
    m, g = llama
    cost = PassCost.from_specs(m, g, RAMP, BF16)
    rows, ctx = np.array([1.0, 8.0, 512.0, 8192.0]), np.array([0.0, 100.0, 1000.0, 0.0])
    t = cost.step(rows, 1.0, ctx)
    assert np.allclose(cost.step_total(rows, 1.0, ctx), t.step_time_s, rtol=REL, atol=0)
    kv, pairs = cost.uniform_terms(rows, 1.0, ctx)
    assert np.allclose(cost.time(rows, kv, pairs), t.step_time_s, rtol=REL, atol=0)
    assert np.allclose(step_time(m, g, RAMP, rows=rows, context=ctx).step_time_s, t.step_time_s, rtol=REL, atol=0)


def test_neutral_ramp_is_skipped(llama):
    m, g = llama
    cost = PassCost.from_specs(m, g, PRESETS["lecture"], BF16)
    assert not cost.ramped and cost.gemm_rows(37.0) == 37.0
    half = PassCost.from_specs(m, g, PRESETS["lecture"].with_(gemm_half_rows=500.0), BF16)  # r = 1: no ramp
    assert not half.ramped and half.step(512.0, 1.0, 0.0) == cost.step(512.0, 1.0, 0.0)


def test_a_routed_expert_ramps_at_its_own_rows():
    """Mixtral (top-2 of 8): of a pass over m rows, each touched expert sees m x 2 / E(m) of them."""
    from llm_cost.counts import param_counts

    m, g = load_model("mixtral-8x7b"), load_accelerator("h100-sxm")
    plain = PassCost.from_specs(m, g, PRESETS["lecture"], BF16)
    cost = PassCost.from_specs(m, g, RAMP, BF16)
    pc = param_counts(m)
    share = pc.num_moe_layers * 2 * pc.expert_params / pc.gemm_active
    assert cost.expert_flops_share == pytest.approx(share, rel=REL) and 0.5 < share < 1
    for rows in (1.0, 2048.0):
        per_expert = rows * 2 / expected_experts_touched(8, 2, rows)
        want = rows * plain.row_flops / plain.flops_per_s * ((1 - share) / _ramp(rows) + share / _ramp(per_expert))
        assert cost.compute_s(rows, 0.0) == pytest.approx(want, rel=1e-12)
    assert cost.compute_s(1.0, 0.0) == pytest.approx(plain.compute_s(1.0, 0.0) / _ramp(1.0), rel=1e-12)


def test_llama_bench_pp_runs_in_ubatches_of_512():
    """pp2048: four passes of 512 prompt tokens, each after the ones before (llama-bench's n_ubatch)."""
    from llm_cost.calibrate.prediction import LLAMA_BENCH_UBATCH

    pp512 = next(p for p in read_points(DATA / "calibrate" / "hand.csv") if p.id == "pp512")
    lec = PRESETS["lecture"]
    cost = PassCost.from_specs(load_model("llama-3-8b"), load_accelerator("h100-sxm"), lec, BF16)
    seconds = sum(cost.step(512.0, 1.0, float(done)).step_time_s for done in range(0, 2048, LLAMA_BENCH_UBATCH))
    assert predict(replace(pp512, isl=2048), lec).predicted == pytest.approx(2048 / seconds, rel=1e-12)


def test_calibrate_writes_the_usable_memory_basis():
    from llm_cost.calibrate import fit_profile

    pts = [p for p in read_points(DATA / "measured" / "train.csv") if p.source == "gpt-fast"][:3]
    result = fit_profile(pts, PRESETS["lecture"], ["bw_efficiency"])
    assert PRESETS["lecture"].memory_basis == "marketed" and result.profile.memory_basis == "usable"


def test_measured_preset_simulator_matches_one_request():
    """A ramped profile through the continuous-batching simulator: one request alone is `request_cost`'s."""
    from llm_cost.requests import request_cost

    kinds = read_points(DATA / "calibrate" / "kinds.csv")
    prof = PRESETS["measured"]
    slow = replace(next(p for p in kinds if p.id == "m6"), batch=0.01)
    r = request_cost("llama-3.1-8b", "h100-sxm", prof, batch=1, isl=512, osl=64)
    assert predict(slow, prof).predicted == pytest.approx(r.tpot_s * 1e3, rel=0.02)
    assert predict(replace(slow, metric="ttft_ms"), prof).predicted == pytest.approx(r.ttft_s * 1e3, rel=0.02)
