"""A GEMM's efficiency by its width per GPU (issue 23.3, `Profile.gemm_half_width`, `roofline.gemm_rows`):
a GEMM w columns wide on one GPU runs at w / (w + w_h) of the MFU, the MLP's intermediate size over its
shard standing for the layer's GEMMs, so tensor parallelism slows a prefill by more than its
collectives. Neutral at 0 (the documents' presets and every profile without the knob)."""

from __future__ import annotations

import pytest

from helpers import error_line
from llm_cost.catalog import load_accelerator, load_model
from llm_cost.errors import InvalidValueError
from llm_cost.parallel import deployed_pass_cost
from llm_cost.parallel.breakdown import pass_breakdown
from llm_cost.roofline.pass_cost import PassCost
from llm_cost.specs import BF16, PRESETS, Profile
from llm_cost.specs.deployment import Deployment

H100 = load_accelerator("h100-sxm")
HALF = 300.0  # columns per GPU
LECTURE = PRESETS["lecture"]
NARROW = LECTURE.with_(name="narrow", gemm_half_width=HALF)


def test_a_dense_prefill_by_hand():
    """Llama-3.1-8B (intermediate 14,336) on one H100, 4,096 rows: the GEMMs' FLOPs take
    1 + 300 / 14,336 times as long, attention's pairs as before."""
    model = load_model("llama-3.1-8b")
    plain, narrow = (PassCost.from_specs(model, H100, p) for p in (LECTURE, NARROW))
    rows, pairs = 4096.0, 4096 * 4097 / 2
    gemm = rows * plain.row_flops / plain.flops_per_s
    attention = pairs * plain.pair_flops / plain.flops_per_s
    assert plain.compute_s(rows, pairs) == pytest.approx(gemm + attention, rel=1e-12)
    assert narrow.compute_s(rows, pairs) == pytest.approx(gemm * (1 + HALF / 14336) + attention, rel=1e-12)
    assert narrow.memory_s(rows, 0.0) == plain.memory_s(rows, 0.0)  # the bytes do not move


def test_tensor_parallelism_narrows_the_gemms():
    """gpt-oss-120b (intermediate and expert intermediate 2,880): 2,880 / tp columns a GPU; under ep 8 a
    routed expert is whole on its GPU (2,880) while the dense GEMMs stay 360 wide."""
    model = load_model("gpt-oss-120b")
    for tp in (1, 2, 8):
        cost = deployed_pass_cost(model, H100, NARROW, BF16, Deployment(tp=tp))
        assert (cost.dense_width, cost.expert_width) == (2880 / tp, 2880 / tp)
        assert cost.dense_width_factor == pytest.approx(1 + HALF * tp / 2880, rel=1e-15)
    ep = deployed_pass_cost(model, H100, NARROW, BF16, Deployment(tp=8, ep=8))
    assert (ep.dense_width, ep.expert_width) == (360, 2880)


def test_a_prefill_at_tp8_slows_by_the_width_not_at_tp1():
    """Prefill compute of 8,192 rows, gpt-oss-120b under `lecture` (no GEMM ramp): at tp 1 the GEMMs x
    (1 + 300 / 2,880), at tp 8 x (1 + 300 / 360) of the plain profile's, attention's pairs unchanged."""
    model = load_model("gpt-oss-120b")
    for tp in (1, 8):
        plain, narrow = (deployed_pass_cost(model, H100, p, BF16, Deployment(tp=tp)) for p in (LECTURE, NARROW))
        rows = 8192.0
        factor = 1 + HALF * tp / 2880
        gemm = plain.compute_s(rows, 0.0)
        assert narrow.compute_s(rows, 0.0) == pytest.approx(gemm * factor, rel=1e-12)


@pytest.mark.parametrize("name, deployment", [("llama-3-70b", Deployment(tp=4, pp=2)),
                                              ("mixtral-8x7b", Deployment(tp=8, ep=8)),
                                              ("gpt-oss-120b", Deployment(tp=8))])
def test_the_breakdown_composes_with_narrow_gemms(name, deployment):
    """The operators' compute sides sum to the step's with the knob on (8,192-row prefill and a decode)."""
    model = load_model(name)
    profile = PRESETS["measured"].with_(gemm_half_width=HALF)
    cost = deployed_pass_cost(model, H100, profile, BF16, deployment)
    for rows, batch, context in ((8192, 1, 0), (64, 64, 2000)):
        step = cost.step(rows, batch, context, count_kv=True)
        ops = pass_breakdown(cost, model, H100, profile, BF16, deployment, rows=rows, batch=batch, context=context)
        own = [o for o in ops if o.bound not in ("communication", "fixed")]
        assert sum(o.compute_time_s for o in own) == pytest.approx(step.compute_time_s, rel=1e-12)
        assert sum(o.time_s for o in ops) == pytest.approx(step.step_time_s, rel=1e-12)


def test_neutral_by_default_and_inline_only_when_neutral():
    """0 changes nothing (the documents' presets keep their numbers); the fast paths' inline T is
    refused once a width slows the GEMMs."""
    model = load_model("llama-3.1-8b")
    assert LECTURE.gemm_half_width == 0.0 and PRESETS["article"].gemm_half_width == 0.0
    plain = PassCost.from_specs(model, H100, LECTURE)
    assert plain.dense_width_factor == 1.0 and plain.inline_coefficients() is not None
    assert PassCost.from_specs(model, H100, NARROW).inline_coefficients() is None


def test_a_bad_half_width_is_refused_by_name():
    with pytest.raises(InvalidValueError, match=r"profile\.gemm_half_width must be in \[0, "):
        Profile("p", gemm_half_width=-1.0)
    with pytest.raises(InvalidValueError, match=r"profile\.gemm_half_width must be in \[0, 65536\]"):
        Profile("p", gemm_half_width=1e6)


def test_calibrate_takes_the_knob_by_name(tmp_path):
    """`calibrate --free gemm_half_width` is a knob the command knows (an unknown one is refused)."""
    from llm_cost.calibrate.fit import KNOBS, check_free

    assert check_free(["gemm_half_width"]) == ("gemm_half_width",) and "gemm_half_width" in KNOBS
    assert "gemm_half_width" in error_line("calibrate", "x.csv", "-o", str(tmp_path / "p.json"), "--free", "width")
