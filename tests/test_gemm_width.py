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
from llm_cost.counts import param_counts
from llm_cost.roofline.gemm_rows import dense_gemm_width
from llm_cost.roofline.pass_cost import PassCost
from llm_cost.specs import BF16, PRESETS, Profile
from llm_cost.specs.deployment import Deployment

H100 = load_accelerator("h100-sxm")
HALF = 300.0  # columns per GPU
LECTURE = PRESETS["lecture"]
NARROW = LECTURE.with_(name="narrow", gemm_half_width=HALF)


def test_the_dense_width_by_hand():
    """w_dense: the FLOP-weighted harmonic mean of the widths of the GEMMs outside the routed experts.
    Llama-3.1-8B: 32 layers of attention projections (4,096 x 10,240 params, 4,096 wide) and MLPs
    (3 x 4,096 x 14,336, 14,336 wide), the LM head (4,096 x 128,256, 128,256 wide); gpt-oss-120b: no dense
    MLP, its attention (64 heads x 64) and head; DeepSeek-V3 its 3 dense MLPs, MLA projections and shared
    experts (2,048 wide): each differs from its routed experts' width."""
    attention, mlp, head = 32 * 4096 * 10240, 32 * 3 * 4096 * 14336, 4096 * 128256
    llama = (attention + mlp + head) / (attention / 4096 + mlp / 14336 + head / 128256)
    assert dense_gemm_width(load_model("llama-3.1-8b")) == pytest.approx(llama, rel=1e-12)
    oss = load_model("gpt-oss-120b")
    counts = param_counts(oss)
    att, lm = counts.num_layers * counts.attention_block_per_layer, counts.lm_head
    assert dense_gemm_width(oss) == pytest.approx((att + lm) / (att / 4096 + lm / 201088), rel=1e-12)
    ds = load_model("deepseek-v3")
    cost = PassCost.from_specs(ds, H100, NARROW)
    assert (cost.expert_width, round(cost.dense_width)) == (2048, round(dense_gemm_width(ds)))
    assert 2048 < cost.dense_width < 18432


def test_a_dense_prefill_by_hand():
    """Llama-3.1-8B on one H100, 4,096 rows: the GEMMs' FLOPs take 1 + 300 / w_dense times as long,
    attention's pairs as before, the bytes unchanged."""
    model = load_model("llama-3.1-8b")
    plain, narrow = (PassCost.from_specs(model, H100, p) for p in (LECTURE, NARROW))
    rows, pairs = 4096.0, 4096 * 4097 / 2
    gemm = rows * plain.row_flops / plain.flops_per_s
    attention = pairs * plain.pair_flops / plain.flops_per_s
    assert plain.compute_s(rows, pairs) == pytest.approx(gemm + attention, rel=1e-12)
    factor = 1 + HALF / dense_gemm_width(model)
    assert narrow.compute_s(rows, pairs) == pytest.approx(gemm * factor + attention, rel=1e-12)
    assert narrow.memory_s(rows, 0.0) == plain.memory_s(rows, 0.0)


@pytest.mark.parametrize("name, deployment, dense_shard, expert_shard", [
    ("gpt-oss-120b", Deployment(tp=1), 1, 1), ("gpt-oss-120b", Deployment(tp=2), 2, 2),
    ("gpt-oss-120b", Deployment(tp=8), 8, 8),
    ("gpt-oss-120b", Deployment(tp=8, ep=8), 8, 1),  # whole experts, one per GPU group of 1
    ("mixtral-8x7b", Deployment(tp=2, ep=8, gpus=8), 2, 1),  # ep > tp: whole experts
    ("deepseek-v3", Deployment(tp=8, ep=8, dp_attention=True), 1, 1),  # dense layers whole on each rank
])
def test_tensor_parallelism_narrows_the_gemms(name, deployment, dense_shard, expert_shard):
    """On a deployment the dense width is over attention_tp (1 under dp_attention), a routed expert's over
    the GPUs that share one (expert_group / ep)."""
    model = load_model(name)
    one = PassCost.from_specs(model, H100, NARROW)
    cost = deployed_pass_cost(model, H100, NARROW, BF16, deployment)
    assert cost.dense_width == pytest.approx(one.dense_width / dense_shard, rel=1e-15)
    assert cost.expert_width == pytest.approx(one.expert_width / expert_shard, rel=1e-15)
    assert cost.dense_width_factor == pytest.approx(1 + HALF / cost.dense_width, rel=1e-15)
    assert cost.expert_width_factor == pytest.approx(1 + HALF / cost.expert_width, rel=1e-15)


def test_a_prefill_at_tp8_slows_by_the_width_not_at_tp1():
    """Prefill compute of 8,192 rows of gpt-oss-120b under `lecture` (no GEMM ramp) with the width: the
    dense share s' of the GEMMs x (1 + 300 tp / w_dense), the routed experts' x (1 + 300 tp / 2,880)."""
    model = load_model("gpt-oss-120b")
    for tp in (1, 8):
        plain, narrow = (deployed_pass_cost(model, H100, p, BF16, Deployment(tp=tp)) for p in (LECTURE, NARROW))
        rows, s = 8192.0, plain.expert_flops_share
        factor = (1 - s) * (1 + HALF * tp / dense_gemm_width(model)) + s * (1 + HALF * tp / 2880)
        assert narrow.compute_s(rows, 0.0) == pytest.approx(plain.compute_s(rows, 0.0) * factor, rel=1e-12)


@pytest.mark.parametrize("name, deployment", [("llama-3-70b", Deployment(tp=4, pp=2)),
                                              ("mixtral-8x7b", Deployment(tp=8, ep=8)),
                                              ("gpt-oss-120b", Deployment(tp=8)),
                                              ("deepseek-v3", Deployment(tp=8, ep=8, dp_attention=True))])
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


def test_calibrate_takes_the_knob_by_name_only(tmp_path):
    """`calibrate --free gemm_half_width` is a knob the command knows (an unknown one is refused); not
    fitted by default (at one tp it trades one for one with the MFU)."""
    from llm_cost.calibrate.fit import DEFAULT_FREE, KNOBS, check_free

    assert check_free(["gemm_half_width"]) == ("gemm_half_width",) and "gemm_half_width" in KNOBS
    assert "gemm_half_width" not in DEFAULT_FREE and set(DEFAULT_FREE) | {"gemm_half_width"} == set(KNOBS)
    assert "gemm_half_width" in error_line("calibrate", "x.csv", "-o", str(tmp_path / "p.json"), "--free", "width")
