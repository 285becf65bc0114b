"""E by squaring (`speculative.powers`) and the blockwise roofline speedup (`speculative.blocks`).

The squared form must agree with the exact rational value and with the logarithmic form, keep the
closed form's special cases exact (alpha 0 and 1, gamma 0), fall back where it would lose accuracy
or cannot square (fractional gamma, gamma >= 255), and give the same bits for a number, a broadcast
grid and a flat array. The blockwise path must equal the plain one element for element.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from llm_cost.specs.deployment import Deployment
from llm_cost.speculative import blocks, expected_tokens, powers, roofline_speedup
from llm_cost.speculative.closed_forms import expected_tokens_unchecked

RTOL = 1e-13  # the squared form's error bound above the cancellation limit is about 1e-14


def exact(alpha: float, n: int) -> float:
    """(1 - a^n) / (1 - a) in rational arithmetic, a = the float alpha exactly."""
    a = Fraction(alpha)
    return float(n if a == 1 else (1 - a ** n) / (1 - a))


def test_squared_form_matches_the_exact_value():
    rng = np.random.default_rng(7)
    alpha = np.concatenate([rng.random(300), 1 - np.geomspace(1e-15, 0.3, 100), [0.0, 0.5, 1.0]])
    gamma = rng.integers(0, 40, alpha.size).astype(float)
    got = expected_tokens_unchecked(alpha, gamma)
    want = np.array([exact(a, int(g) + 1) for a, g in zip(alpha, gamma)])
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=0)
    np.testing.assert_allclose(got, powers.log_form(alpha, gamma + 1), rtol=RTOL, atol=0)


def test_special_cases_are_exact():
    gamma = np.arange(0.0, 300.0)
    assert np.array_equal(expected_tokens_unchecked(np.zeros_like(gamma), gamma), np.ones_like(gamma))
    assert np.array_equal(expected_tokens_unchecked(np.ones_like(gamma), gamma), gamma + 1)
    alpha = np.linspace(0, 1, 101)
    assert np.array_equal(expected_tokens_unchecked(alpha, np.zeros_like(alpha)), np.ones_like(alpha))
    assert expected_tokens(1.0, 10**6) == 1_000_001 and expected_tokens(0.0, 7) == 1.0


def test_cancellation_falls_back_to_the_logarithmic_form():
    # 1 - a^n under the limit: the logarithmic form, bit for bit
    alpha = 1 - np.geomspace(1e-15, 1e-3, 50)
    gamma = np.full_like(alpha, 3.0)
    assert (1 - alpha ** 4 < powers.CANCELLATION_LIMIT).all()
    assert np.array_equal(expected_tokens_unchecked(alpha, gamma), powers.log_form(alpha, gamma + 1))


@pytest.mark.parametrize("gamma", [2.5, 0.25, 254.0, 255.0, 1e6])
def test_unsquarable_gamma_falls_back(gamma):
    # a caller's fractional gamma, and n = gamma + 1 beyond one byte, take the logarithmic form
    alpha = np.linspace(0, 0.95, 20)
    got = expected_tokens_unchecked(alpha, np.full_like(alpha, gamma))
    want = powers.log_form(alpha, np.full_like(alpha, gamma + 1))
    if gamma + 1 > powers.SQUARING_MAX_N or gamma != int(gamma):
        assert np.array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=RTOL)


def test_number_grid_and_flat_give_the_same_bits():
    alpha, gamma = np.linspace(0, 1, 41), np.arange(0.0, 17.0)
    grid = expected_tokens_unchecked(alpha[:, None], gamma[None, :])
    flat = expected_tokens_unchecked(*(x.ravel() for x in np.meshgrid(alpha, gamma, indexing="ij")))
    assert np.array_equal(grid.ravel(), flat)
    assert all(expected_tokens(float(a), int(g)) == grid[i, j]
               for i, a in enumerate(alpha) for j, g in enumerate(gamma) if (i + j) % 7 == 0)


def sweep(size: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    alpha = rng.choice(np.linspace(0, 1, 51), size)
    gamma = rng.integers(0, 12, size).astype(float)
    batch = np.round(rng.uniform(1, 2048, size))
    c = rng.uniform(0, 0.3, size)
    return alpha, gamma, batch, c


FIELDS = ("c", "expected_tokens", "base_s", "verify_s", "draft_s", "round_s", "speedup", "verify_compute_bound")


def test_blocks_equal_the_plain_path():
    m = 2 * blocks.BLOCK + 123  # a short last block
    alpha, gamma, batch, c = sweep(m)
    assert blocks.blockable(alpha, gamma, batch, np.asarray(0.0), c)
    flat = roofline_speedup("llama-3-8b", "h100-sxm", "article", alpha=alpha, gamma=gamma, batch=batch, c=c)
    # a (m, 1) column against a (1, 1) batch broadcasts, so it takes the plain path
    col = roofline_speedup("llama-3-8b", "h100-sxm", "article", alpha=alpha[:, None], gamma=gamma[:, None],
                           batch=batch[:, None], c=c[:, None] + np.zeros((1, 1)))
    for f in FIELDS:
        assert np.array_equal(np.ravel(getattr(flat, f)), np.ravel(getattr(col, f))), f
    order = np.random.default_rng(1).permutation(m)
    shuffled = roofline_speedup("llama-3-8b", "h100-sxm", "article", alpha=alpha[order], gamma=gamma[order],
                                batch=batch[order], c=c[order])
    for f in FIELDS:
        assert np.array_equal(getattr(flat, f)[order], getattr(shuffled, f)), f


@pytest.mark.parametrize("kw", [
    dict(profile="lecture", target="llama-3.1-8b", draft="llama-3.2-1b", draft_profile="lecture-draft"),
    dict(profile="lecture", target="mixtral-8x7b", c=0.1),
    dict(profile="article", target="llama-3-70b", c=0.05, deployment=Deployment(tp=4)),
])
def test_blocks_equal_numbers(kw):
    # a draft model, K/V with context, a MoE target, a deployment: each point as a number
    kw = dict(kw)
    target, profile = kw.pop("target"), kw.pop("profile")
    m = 2 * blocks.BLOCK + 5
    alpha, gamma, batch, c = sweep(m, seed=3)
    context = np.round(np.random.default_rng(4).uniform(0, 8192, m))
    if "c" in kw:
        kw["c"] = c * kw["c"] / 0.3
    flat = roofline_speedup(target, "h100-sxm", profile, alpha=alpha, gamma=gamma, batch=batch,
                            context=context, **kw)
    for i in np.linspace(0, m - 1, 25).astype(int):
        one_kw = dict(kw)
        if "c" in kw:
            one_kw["c"] = float(kw["c"][i])
        one = roofline_speedup(target, "h100-sxm", profile, alpha=float(alpha[i]), gamma=float(gamma[i]),
                               batch=float(batch[i]), context=float(context[i]), **one_kw)
        for f in FIELDS:
            assert np.ravel(getattr(flat, f))[i] == getattr(one, f), (f, i)
