"""Closed forms and the roofline speedup: properties, limits, broadcasting, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from llm_cost import speculative as sp
from llm_cost.catalog import load_accelerator, load_model
from llm_cost.counts import param_counts
from llm_cost.errors import InvalidValueError
from llm_cost.roofline import step_time
from llm_cost.speculative import (best_gamma, costly_verification_batch, dense_twin, moe_vs_dense,
                                           roofline_speedup, turning_batch)
from llm_cost.specs import BF16, INT4_G128, PRESETS

H100 = load_accelerator("h100-sxm")
ARTICLE, LECTURE = PRESETS["article"], PRESETS["lecture"]
LLAMA3_8B = load_model("llama-3-8b")
REL = 1e-12  # float agreement between two evaluations of one formula

alphas = st.floats(0.0, 1.0)
open_alphas = st.floats(0.0, 1.0, exclude_max=True)
gammas = st.integers(0, 64)
costs = st.floats(0.0, 2.0)
batches = st.integers(1, 4096)


def eq1(alpha: float, gamma: int) -> float:
    """Eq. 1 as a finite sum: sum_{i=0..gamma} alpha^i (no division, exact at alpha = 1)."""
    return math.fsum(alpha ** i for i in range(gamma + 1))


# ---- closed forms -----------------------------------------------------------------------------

@given(alphas, gammas)
@example(1.0, 4)
@example(0.0, 0)
@example(1 - 1e-12, 7)
def test_expected_tokens_is_the_geometric_sum(alpha, gamma):
    e = sp.expected_tokens(alpha, gamma)
    assert e == pytest.approx(eq1(alpha, gamma), rel=1e-9)
    assert 1.0 <= e <= gamma + 1 + 1e-9


@given(open_alphas, st.integers(0, 63))
def test_expected_tokens_grows_with_gamma_and_alpha(alpha, gamma):
    assert sp.expected_tokens(alpha, gamma + 1) >= sp.expected_tokens(alpha, gamma)
    assert sp.expected_tokens(min(1.0, alpha + 0.01), gamma) >= sp.expected_tokens(alpha, gamma)


def test_alpha_one_limit_is_exact_and_continuous():
    assert sp.expected_tokens(1.0, 4) == 5.0
    assert sp.expected_tokens(1 - 1e-12, 4) == pytest.approx(5.0, rel=1e-9)
    assert sp.expected_tokens(np.nextafter(1.0, 0), 4) == pytest.approx(5.0, rel=1e-12)


def test_huge_gamma_no_overflow_no_nan():
    with np.errstate(all="raise"):
        e = sp.expected_tokens(np.array([0.0, 0.5, 0.9, 1 - 1e-9, 1.0]), 10**6)
    assert np.all(np.isfinite(e))
    assert e[:3] == pytest.approx([1.0, 2.0, 10.0])
    assert e[-1] == 10**6 + 1


@given(alphas, gammas, costs)
def test_speedup_and_ops_factor(alpha, gamma, c):
    e = sp.expected_tokens(alpha, gamma)
    assert sp.speedup(alpha, gamma, c) == pytest.approx(e / (gamma * c + 1), rel=REL)
    assert sp.ops_factor(alpha, gamma, c) >= 1 - 1e-12  # never fewer operations than plain decoding
    assert sp.ops_factor(alpha, gamma, c) == pytest.approx(1 / sp.compute_bound_speedup(alpha, gamma, c), rel=REL)
    assert sp.weight_reads_per_token(alpha, gamma) == pytest.approx(1 / e, rel=REL)


@given(open_alphas, st.integers(1, 64))
def test_ops_factor_matches_theorem_3_11_form(alpha, gamma):
    # (1 - a)(g c_hat + g + 1) / (1 - a^(g+1)), as printed, where it is well conditioned
    c_hat = 0.1
    if 1 - alpha ** (gamma + 1) > 1e-6:
        printed = (1 - alpha) * (gamma * c_hat + gamma + 1) / (1 - alpha ** (gamma + 1))
        assert sp.ops_factor(alpha, gamma, c_hat) == pytest.approx(printed, rel=1e-9)


@given(st.floats(0.05, 0.99), st.floats(0.001, 1.0))
def test_optimal_gamma_is_the_brute_force_argmax(alpha, c):
    best = sp.optimal_gamma(alpha, c, gamma_max=200)
    grid = [sp.speedup(alpha, g, c) for g in range(201)]
    assert float(best.speedup) == pytest.approx(max(grid), rel=1e-12)
    assert grid[int(best.gamma)] == pytest.approx(max(grid), rel=1e-12)
    if alpha > c:  # Corollary 3.9: the optimum is at least the gamma = 1 bound, above 1
        bound = sp.gamma_one_speedup(alpha, c)  # (1 + alpha) / (1 + c) >= 1; exactly 1.0 within an ulp of c
        assert float(best.speedup) >= bound - 1e-12 and bound >= 1.0
    else:  # speculation never pays when alpha <= c
        assert int(best.gamma) == 0 and float(best.speedup) == 1.0


def test_optimal_gamma_broadcasts_and_flags_the_cap():
    best = sp.optimal_gamma(np.array([0.6, 0.8, 1.0])[:, None], np.array([0.0, 0.1])[None, :], gamma_max=32)
    assert best.gamma.shape == (3, 2)
    assert best.capped[:, 0].tolist() == [True, True, True]  # c = 0: more drafts always help
    assert best.capped[2, 1]  # alpha = 1, c < 1: (g + 1) / (g c + 1) keeps rising
    assert not best.capped[:2, 1].any()


@given(open_alphas, st.integers(1, 20), st.floats(1.01, 5.0))
def test_implied_c_round_trip(alpha, gamma, speedup):
    if speedup > sp.expected_tokens(alpha, gamma) * (1 + 1e-12):  # no c >= 0 explains it: refused (issue 29)
        with pytest.raises(InvalidValueError, match="measured_speedup must be at most E"):
            sp.implied_c(alpha, gamma, speedup)
        return
    c = sp.implied_c(alpha, gamma, speedup)
    assert c >= 0 and sp.speedup(alpha, gamma, c) == pytest.approx(speedup, rel=1e-9)


def test_leviathan_forms_broadcast():
    f = sp.leviathan(np.array([0.7, 0.8]), np.array([3, 4]), 0.1, 0.0)
    assert f.expected_tokens.shape == (2,)
    assert f.speedup[1] == pytest.approx(2.4, abs=0.005)
    assert f.ops_factor[0] == pytest.approx(4 / 2.533, abs=1e-3)


@pytest.mark.parametrize("call,message", [
    (lambda: sp.expected_tokens(1.5, 4), "alpha must be in [0, 1], got 1.5"),
    (lambda: sp.expected_tokens(-0.1, 4), "alpha must be in [0, 1]"),
    (lambda: sp.expected_tokens(0.8, -1), "gamma must be in [0, inf), got -1"),
    (lambda: sp.expected_tokens(0.8, 2.5), "gamma must be a whole number"),
    (lambda: sp.expected_tokens(float("nan"), 4), "alpha must be a finite number"),
    (lambda: sp.expected_tokens(np.array([0.5, np.nan]), 4), "alpha must be finite numbers, got nan"),
    (lambda: sp.expected_tokens(np.array([0.5, 1.2]), 4), "alpha must be in [0, 1], got 1.2"),
    (lambda: sp.speedup(0.8, 4, -0.1), "c must be in [0, inf)"),
    (lambda: sp.speedup(0.8, 4, float("inf")), "c must be a finite number"),
    (lambda: sp.optimal_gamma(0.8, 0.1, gamma_max=0), "gamma_max must be in [1, inf)"),
    (lambda: sp.implied_c(0.8, 0, 2.0), "gamma must be in [1, inf)"),
    (lambda: sp.expected_tokens("0.8", 4), "alpha must be a number"),
])
def test_bad_input_is_one_clear_line(call, message):
    with pytest.raises(InvalidValueError) as err:
        call()
    assert message in str(err.value) and "\n" not in str(err.value)
    assert isinstance(err.value, ValueError)


# ---- the time model over arrays ---------------------------------------------------------------

@pytest.mark.parametrize("name", ["llama-3-8b", "llama-3.1-8b", "mixtral-8x7b", "deepseek-v3", "gpt-3-13b"])
@pytest.mark.parametrize("preset", ["article", "lecture"])
@pytest.mark.parametrize("fmt", [BF16, INT4_G128])
def test_step_time_over_arrays_is_step_time_pointwise(name, preset, fmt):
    model, prof = load_model(name), PRESETS[preset]
    batch = np.array([1, 1, 3, 16, 64, 512])
    per_seq = np.array([1, 5, 2, 3, 9, 5])
    context = np.array([0, 1024, 7, 512, 4096, 512])
    arr = step_time(model, H100, prof, rows=batch * per_seq, batch=batch, context=context, weights=fmt)
    for i in range(batch.size):
        one = step_time(model, H100, prof, rows=int(batch[i] * per_seq[i]), batch=int(batch[i]),
                        context=int(context[i]), weights=fmt)
        assert arr.step_time_s[i] == pytest.approx(one.step_time_s, rel=REL)
        assert arr.bound[i] == one.bound


def test_step_time_rejects_fewer_rows_than_sequences():
    with pytest.raises(InvalidValueError, match="rows must be at least batch"):
        step_time(LLAMA3_8B, H100, ARTICLE, rows=4, batch=8)
    with pytest.raises(InvalidValueError, match="rows must be at least batch"):
        step_time(LLAMA3_8B, H100, ARTICLE, rows=np.array([4, 8]), batch=np.array([8, 8]))


# ---- roofline speedup -------------------------------------------------------------------------

@settings(max_examples=50, deadline=None)
@given(alphas, st.integers(0, 16), costs, batches, st.sampled_from([1.0, 0.6]))
def test_roofline_speedup_matches_the_article_formula(alpha, gamma, c, batch, mfu):
    # the article `speculative_speedup`: E T(B) / (gamma c T(B) + T(B (gamma + 1))), scalar step_time
    prof = ARTICLE.with_(compute_efficiency=mfu)
    base = step_time(LLAMA3_8B, H100, prof, rows=batch, batch=batch).step_time_s
    verify = step_time(LLAMA3_8B, H100, prof, rows=batch * (gamma + 1), batch=batch).step_time_s
    expected = eq1(alpha, gamma) * base / (gamma * c * base + verify)
    r = roofline_speedup(LLAMA3_8B, H100, prof, alpha=alpha, gamma=gamma, c=c, batch=batch)
    assert float(r.speedup) == pytest.approx(expected, rel=1e-9)


def test_roofline_speedup_limits():
    # below the turning batch it is Leviathan's speedup; gamma = 0 is plain decoding
    r = roofline_speedup(LLAMA3_8B, H100, ARTICLE, alpha=0.8, gamma=np.arange(0, 9), c=0.1, batch=1)
    assert np.allclose(r.speedup, sp.speedup(0.8, np.arange(0, 9), 0.1), rtol=REL)
    assert r.speedup[0] == 1.0
    assert np.all(r.verify_over_base == 1.0)


def test_roofline_speedup_broadcasts_four_axes():
    r = roofline_speedup(LLAMA3_8B, H100, ARTICLE, alpha=np.linspace(0, 1, 3)[:, None, None, None],
                         gamma=np.arange(1, 5)[None, :, None, None], c=np.array([0, 0.1])[None, None, :, None],
                         batch=np.array([1, 64, 256])[None, None, None, :])
    assert r.speedup.shape == (3, 4, 2, 3)
    assert np.all(np.isfinite(r.speedup))
    assert r.tokens_per_s.shape == (3, 4, 2, 3)


def test_roofline_speedup_falls_with_batch_past_the_turn():
    batch = np.array([1, 32, 64, 128, 256, 1024])
    r = roofline_speedup(LLAMA3_8B, H100, ARTICLE, alpha=0.8, gamma=4, c=0.1, batch=batch)
    assert np.all(np.diff(r.speedup) <= 1e-12)
    assert r.verify_compute_bound.tolist() == [False, False, True, True, True, True]


def test_draft_model_and_c_exclusive():
    with pytest.raises(InvalidValueError, match="exactly one of c"):
        roofline_speedup(LLAMA3_8B, H100, ARTICLE, alpha=0.8, gamma=4, c=0.1, draft=load_model("llama-3.2-1b"))
    with pytest.raises(InvalidValueError, match="exactly one of c"):
        roofline_speedup(LLAMA3_8B, H100, ARTICLE, alpha=0.8, gamma=4)


def test_batch_below_one_rejected():
    with pytest.raises(InvalidValueError, match=r"^batch must be in \[1, 1e\+12\], got 0$"):
        roofline_speedup(LLAMA3_8B, H100, ARTICLE, alpha=0.8, gamma=4, c=0.1, batch=0)


def test_best_gamma_is_exhaustive():
    b = np.array([1, 64, 128, 512])
    best = best_gamma(LLAMA3_8B, H100, ARTICLE, alpha=0.8, batch=b, c=0.1, gamma_max=12)
    for i, batch in enumerate(b):
        every = [float(roofline_speedup(LLAMA3_8B, H100, ARTICLE, alpha=0.8, gamma=g, c=0.1, batch=batch).speedup)
                 for g in range(13)]
        assert float(best.speedup[i]) == pytest.approx(max(every), rel=REL)
        assert int(best.gamma[i]) == every.index(max(every))


def test_w4a16_turns_earlier():
    # the article §2.4: quantized weights lower the memory plateau, so verification turns
    # compute-bound about 4x sooner; the speedup at B = 32 already suffers
    bf16 = turning_batch(LLAMA3_8B, H100, ARTICLE, gamma=4)
    w4 = turning_batch(LLAMA3_8B, H100, ARTICLE, gamma=4, weights=INT4_G128)
    assert 3.5 < bf16.batch / w4.batch < 4.0
    r_bf16 = roofline_speedup(LLAMA3_8B, H100, ARTICLE, alpha=0.8, gamma=4, c=0.1, batch=32)
    r_w4 = roofline_speedup(LLAMA3_8B, H100, ARTICLE, alpha=0.8, gamma=4, c=0.1, batch=32, weights=INT4_G128)
    assert float(r_w4.speedup) < float(r_bf16.speedup)
    assert float(r_w4.round_s) < float(r_bf16.round_s)  # still faster in absolute time


@pytest.mark.parametrize("name", ["mixtral-8x7b", "deepseek-v3"])
def test_dense_twin_has_the_active_size(name):
    moe = load_model(name)
    twin = dense_twin(moe)
    assert twin.moe is None
    assert param_counts(twin).active == pytest.approx(param_counts(moe).active, rel=1e-4)
    assert dense_twin(LLAMA3_8B) is LLAMA3_8B


@pytest.mark.parametrize("name", ["mixtral-8x7b", "deepseek-v3"])
def test_moe_verification_costs_more_than_dense(name):
    # the lecture §9.3 "MoE 的陷阱": verifying gamma + 1 tokens touches more experts. At small batch
    # the MoE's speedup falls below its dense twin's; at batch 1 verification is not free.
    cmp = moe_vs_dense(load_model(name), H100, ARTICLE, alpha=0.8, gamma=4, c=0.1, batch=np.array([1, 4, 8]))
    assert np.all(cmp.moe.speedup < cmp.dense.speedup)
    assert cmp.moe.verify_over_base[0] > 2.5
    assert cmp.dense.verify_over_base[0] == pytest.approx(1.0)


def test_moe_caption_does_not_call_verification_free():
    # Mixtral turns compute-bound only at batch ~216 (gamma 4, peak), yet verification already
    # costs 2.8 decode steps at batch 1: the caption must not say "free up to batch 216".
    from llm_cost.report.speculative_rows import spec_rows

    mixtral = load_model("mixtral-8x7b")
    rows, caption = spec_rows(mixtral, H100, ARTICLE, alphas=[0.8], gammas=[4], batches=[1], mfus=[1.0], weights=BF16)
    assert "free up to" not in caption
    turn = turning_batch(mixtral, H100, ARTICLE, gamma=4)
    assert f"compute-bound from batch {turn.batch:.1f}" in caption and turn.batch > 200
    assert "still reads more experts: 2.80x a decode step at batch 1, over 1.05x from batch 1" in caption
    assert rows[0]["verify_over_base"] == pytest.approx(2.80, abs=0.005)
    assert costly_verification_batch(mixtral, H100, ARTICLE, gamma=4) == 1.0
    # A dense target is free up to its turning batch and costs 5% more just past it.
    rows, caption = spec_rows(LLAMA3_8B, H100, ARTICLE, alphas=[0.8], gammas=[4], batches=[1], mfus=[1.0], weights=BF16)
    turn = turning_batch(LLAMA3_8B, H100, ARTICLE, gamma=4)
    assert f"verification free up to batch {turn.batch:.1f}" in caption and "experts" not in caption
    costly = costly_verification_batch(LLAMA3_8B, H100, ARTICLE, gamma=4)
    assert turn.batch < costly < 1.1 * turn.batch
    assert math.isinf(costly_verification_batch(LLAMA3_8B, H100, ARTICLE, gamma=0))
