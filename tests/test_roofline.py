"""The time model's structure: MoE expert reads, profiles, critical counts."""

from __future__ import annotations

import pytest

from llm_cost.catalog import load_accelerator, load_model
from llm_cost.counts import param_counts, weight_bytes
from llm_cost.errors import InvalidValueError
from llm_cost.roofline import critical_batch, expected_experts_touched, step_time
from llm_cost.specs import INT4_G128, PRESETS, Profile

H100 = load_accelerator("h100-sxm")
ARTICLE = PRESETS["article"]


def test_expected_experts_touched():
    assert expected_experts_touched(8, 2, 1) == pytest.approx(2)
    assert expected_experts_touched(8, 2, 2) == pytest.approx(8 * (1 - 0.75 ** 2))  # 3.5
    assert expected_experts_touched(256, 8, 10_000) == pytest.approx(256)


def test_moe_step_grows_below_the_ridge():
    # A dense model's T(m) is flat below the ridge; a MoE's grows: more rows touch more experts.
    ds = load_model("deepseek-v3")
    times = [step_time(ds, H100, ARTICLE, rows=m).step_time_s for m in (1, 2, 4, 8, 32)]
    assert all(a < b for a, b in zip(times, times[1:]))
    assert all(step_time(ds, H100, ARTICLE, rows=m).bound == "memory" for m in (1, 2, 4, 8, 32))
    # one row reads exactly the active weights (the article preset reads the embedding too)
    assert step_time(ds, H100, ARTICLE, rows=1).weight_bytes_read == pytest.approx(param_counts(ds).active * 2)


def test_moe_saturates_at_all_weights():
    mx = load_model("mixtral-8x7b")
    assert step_time(mx, H100, ARTICLE, rows=10_000).weight_bytes_read == pytest.approx(weight_bytes(mx).total)


def test_lookup_not_read_unless_tied():
    lecture = PRESETS["lecture"]
    untied, tied = load_model("llama-3-8b"), load_model("llama-3.2-1b")
    assert step_time(untied, H100, lecture, rows=1).weight_bytes_read == weight_bytes(untied).total - weight_bytes(untied).embedding
    assert step_time(tied, H100, lecture, rows=1).weight_bytes_read == weight_bytes(tied).total


def test_kv_counts_only_when_asked():
    m = load_model("llama-3-8b")
    assert step_time(m, H100, ARTICLE, context=4096).kv_bytes == 0
    kv = step_time(m, H100, ARTICLE.with_(count_kv=True), context=4096, batch=2, rows=2)
    assert kv.kv_bytes == (2 * 4096 + 2) * 131_072


def test_critical_batch_turning_points():
    # the article, §2.4: verification stops being free at about ridge / (gamma + 1) (295/5 = 59;
    # the exact crossing is later, 63.2, because the weight bytes include the embedding); with W4A16
    # weights it falls by about 4x ("ridge/(4 x 5) ≈ 15"; exact 16.8).
    m = load_model("llama-3-8b")
    bf16 = critical_batch(m, H100, ARTICLE, rows_per_sequence=5)
    w4 = critical_batch(m, H100, ARTICLE, rows_per_sequence=5, weights=INT4_G128)
    assert 59 < bf16 < 64
    assert 14.7 < w4 < 17
    assert bf16 / w4 == pytest.approx(16.06 / 4.27, rel=0.01)


def test_fixed_time_adds():
    m = load_model("llama-3-8b")
    assert (step_time(m, H100, ARTICLE.with_(fixed_time_s=1e-3)).step_time_s
            == pytest.approx(step_time(m, H100, ARTICLE).step_time_s + 1e-3))


@pytest.mark.parametrize("kwargs,field", [
    (dict(rows=0), "rows"), (dict(batch=0), "batch"), (dict(rows=1, batch=2), "rows"),
    (dict(context=-1), "context"), (dict(rows=float("nan")), "rows"),
])
def test_step_time_rejects(kwargs, field):
    with pytest.raises(InvalidValueError, match=field):
        step_time(load_model("llama-3-8b"), H100, ARTICLE, **kwargs)


@pytest.mark.parametrize("field,value", [("bw_efficiency", 0), ("compute_efficiency", 1.5),
                                         ("fixed_time_s", -1), ("compute_efficiency", float("nan"))])
def test_profile_rejects(field, value):
    with pytest.raises(InvalidValueError, match=f"profile.{field}"):
        Profile("x", **{field: value})
