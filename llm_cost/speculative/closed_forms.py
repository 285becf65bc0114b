"""Speculative decoding: Leviathan et al.'s closed forms, numpy-broadcasting over every input.

One round: the draft proposes gamma tokens, the target verifies them in one pass and keeps
the accepted prefix plus one token of its own (a resample after a rejection, or a bonus token
after gamma acceptances). With a per-position acceptance rate alpha, independent across
positions (the lecture §8.3: independence is the real assumption, not equal rates):

    E[tokens per round] = (1 - alpha^(gamma+1)) / (1 - alpha)       -> gamma + 1 at alpha = 1
    speedup             = E / (gamma c + 1)                          (Theorem 3.8)
    operations factor   = (gamma c_hat + gamma + 1) / E              (Theorem 3.11)

c is the draft's time per step over the target's; c_hat the same ratio of arithmetic. Sources:
the article chapter 2.3 (E = 3.36 at alpha 0.8, gamma 4; 2.4x at c 0.1), the lecture §8, exercises 5-7.
The roofline version at batch B (verification is not free there) is in `speculative_roofline`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llm_cost.errors import checked, scalar_or_array
from llm_cost.errors import check_number

TIE_RTOL = 1e-12  # speedups closer than this are a tie (float rounding, not a real gain)


def check_alpha(alpha) -> np.ndarray:
    """`alpha` as a float array, or InvalidValueError unless every element is in [0, 1]."""
    return checked("alpha", alpha, low=0, high=1)


def check_gamma(gamma, low=0) -> np.ndarray:
    """`gamma` as a float array, or InvalidValueError unless every element is a whole number >= low."""
    return checked("gamma", gamma, low=low, integer=True)


def check_cost(name: str, c) -> np.ndarray:
    """A cost ratio (c, c_hat) as a float array, or InvalidValueError naming `name` if any is < 0."""
    return checked(name, c, low=0)


def expected_tokens_unchecked(a, g):
    """E[tokens per round] for alpha `a` and gamma `g` already checked (`check_alpha`,
    `check_gamma`); broadcast over both.

    (a^(g+1) - 1) / (a - 1) with a^(g+1) - 1 as expm1((g+1) ln a): no cancellation near a = 1,
    no overflow for huge gamma, a = 0 gives 1; exactly g + 1 at a = 1. Clipped to the exact
    bounds [1, g + 1] so rounding cannot cross them (E(a, 0) = 1). In-place array arithmetic:
    a million-point sweep spends most of its time here.
    """
    return _expected_tokens_g1(a, np.asarray(g, dtype=float) + 1.0)


def _expected_tokens_g1(a, g1):
    """`expected_tokens_unchecked(a, g)` from g1 = g + 1, which a caller may share."""
    return _expected_tokens(np.asarray(a, dtype=float), np.asarray(g1, dtype=float))


def _expected_tokens(a: np.ndarray, g1: np.ndarray):
    """The formula of `expected_tokens_unchecked`, from float arrays a and g + 1."""
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.log(a)
        if np.ndim(e) and e.shape == np.broadcast_shapes(e.shape, g1.shape):
            e *= g1
        else:
            e = np.asarray(e * g1)
        np.expm1(e, out=e)  # a^(g+1) - 1
        e /= a - 1.0  # 0 / 0 at a = 1, set below
    one = a == 1.0
    if one.any():
        np.copyto(e, g1, where=one)
    # np.clip(e, 1.0, g1, out=e) in two passes (clip is minimum(maximum(e, 1), g1); no NaN here)
    np.maximum(e, 1.0, out=e)
    np.minimum(e, g1, out=e)
    return e if e.ndim else e[()]


def _speedup(e, g, c):
    """E / (gamma c + 1): Theorem 3.8 from E, unchecked."""
    return e / (g * c + 1.0)


def _ops_factor(e, g, c_hat):
    """(gamma c_hat + gamma + 1) / E: Theorem 3.11 from E, unchecked."""
    return (g * c_hat + g + 1.0) / e


def expected_tokens(alpha, gamma):
    """Expected tokens one round produces: (1 - alpha^(gamma+1)) / (1 - alpha), gamma + 1 at alpha = 1.

    gamma -> inf tends to 1 / (1 - alpha): 5 at alpha 0.8, 10 at 0.9 (the lecture §8.1).
    """
    return scalar_or_array(expected_tokens_unchecked(check_alpha(alpha), check_gamma(gamma)))


def speedup(alpha, gamma, c):
    """Leviathan's wall-time speedup E / (gamma c + 1), verification assumed free (Theorem 3.8).

    The article §2.3: alpha 0.8, gamma 4, c 0.1 -> 3.36 / 1.4 = 2.4; c 0.02 -> 3.36 / 1.08 ~ 3.1.
    """
    a, g, c = check_alpha(alpha), check_gamma(gamma), check_cost("c", c)
    return scalar_or_array(_speedup(expected_tokens_unchecked(a, g), g, c))


def gamma_one_speedup(alpha, c):
    """Speedup with one draft, (1 + alpha) / (1 + c): Corollary 3.9's lower bound on the optimum.

    Above 1 exactly when alpha > c (then speculation pays); 1 at alpha = c.
    """
    return scalar_or_array((1.0 + check_alpha(alpha)) / (1.0 + check_cost("c", c)))


def ops_factor(alpha, gamma, c_hat=0.0):
    """Total arithmetic over plain decoding: (1 - alpha)(gamma c_hat + gamma + 1) / (1 - alpha^(gamma+1)).

    Theorem 3.11, written as (gamma c_hat + gamma + 1) / E so alpha = 1 is exact.
    The lecture exercise 7: alpha 0.7, gamma 3 -> 1.58 (c_hat 0), 1.70 (c_hat 0.1).
    """
    a, g, ch = check_alpha(alpha), check_gamma(gamma), check_cost("c_hat", c_hat)
    return scalar_or_array(_ops_factor(expected_tokens_unchecked(a, g), g, ch))


def weight_reads_per_token(alpha, gamma):
    """Target weight reads per generated token, as a fraction of plain decoding's one: 1 / E.

    One verification pass reads the weights once and yields E tokens (the lecture §8.4, exercise 11).
    """
    return scalar_or_array(1.0 / expected_tokens_unchecked(check_alpha(alpha), check_gamma(gamma)))


def compute_bound_speedup(alpha, gamma, c):
    """The speedup once verification is fully compute-bound: E / (gamma + 1 + gamma c).

    Verification then costs (gamma + 1) plain steps (the article §2.4: 3.36 / 5.4 = 0.62, the
    article table's B = 256 at 60% MFU). It equals 1 / ops_factor with c_hat = c.
    """
    a, g, c = check_alpha(alpha), check_gamma(gamma), check_cost("c", c)
    return scalar_or_array(expected_tokens_unchecked(a, g) / (g + 1.0 + g * c))


def implied_c(alpha, gamma, measured_speedup):
    """The cost coefficient a measured speedup implies: c = (E / speedup - 1) / gamma.

    The lecture exercise 5: alpha 0.75, gamma 7, 3.4x measured -> c ~ 0.008.
    """
    a, g = check_alpha(alpha), check_gamma(gamma, low=1)
    s = checked("speedup", measured_speedup, low=0, low_open=True)
    return scalar_or_array((expected_tokens_unchecked(a, g) / s - 1.0) / g)


@dataclass(frozen=True)
class OptimalGamma:
    """The integer gamma in [0, gamma_max] with the highest speedup (0: do not speculate).

    `capped` marks cells whose speedup still rises at gamma_max (c = 0, or alpha = 1 with c < 1).
    """

    alpha: np.ndarray
    c: np.ndarray
    gamma: np.ndarray
    speedup: np.ndarray
    expected_tokens: np.ndarray
    capped: np.ndarray


def optimal_gamma(alpha, c, *, gamma_max: int = 64) -> OptimalGamma:
    """argmax over integer gamma of E(gamma) / (gamma c + 1), broadcast over alpha and c.

    E is concave in gamma and gamma c + 1 affine, so the ratio is unimodal: a binary search on
    the sign of f(gamma + 1) - f(gamma) finds the optimum in log2(gamma_max) array passes.
    Ties (within TIE_RTOL) go to the smaller gamma. The lecture exercise 6: alpha 0.8, c 0.05 ->
    gamma 8, 3.09.
    """
    check_number("gamma_max", gamma_max, low=1, integer=True)
    a, c = np.broadcast_arrays(check_alpha(alpha), check_cost("c", c))

    def f(g):
        return _speedup(expected_tokens_unchecked(a, g), g, c)

    lo = np.zeros(a.shape)
    hi = np.full(a.shape, float(gamma_max))
    while np.any(lo < hi):
        mid = np.floor((lo + hi) / 2)
        rising = (f(mid + 1) > f(mid) * (1 + TIE_RTOL)) & (lo < hi)
        lo = np.where(rising, mid + 1, lo)
        hi = np.where(rising, hi, mid)
    capped = (lo == gamma_max) & (f(lo + 1) > f(lo) * (1 + TIE_RTOL))
    return OptimalGamma(alpha=a, c=c, gamma=lo.astype(int), speedup=f(lo),
                        expected_tokens=expected_tokens_unchecked(a, lo), capped=capped)


@dataclass(frozen=True)
class LeviathanForms:
    """Every closed form of one (alpha, gamma, c, c_hat) cell, broadcast to a common shape."""

    alpha: np.ndarray
    gamma: np.ndarray
    c: np.ndarray
    c_hat: np.ndarray
    expected_tokens: np.ndarray
    speedup: np.ndarray
    ops_factor: np.ndarray
    weight_reads_per_token: np.ndarray


def leviathan(alpha, gamma, c=0.0, c_hat=0.0) -> LeviathanForms:
    """Expected tokens, speedup, operations factor and weight reads per token, for checking the paper.

    c = c_hat = 0 is the paper's Table 1 (the lecture §8.2: demo 04 reproduces it cell by cell).
    """
    a, g, c, ch = np.broadcast_arrays(check_alpha(alpha), check_gamma(gamma), check_cost("c", c),
                                      check_cost("c_hat", c_hat))
    e = expected_tokens_unchecked(a, g)
    return LeviathanForms(alpha=a, gamma=g.astype(int), c=c, c_hat=ch, expected_tokens=e,
                          speedup=_speedup(e, g, c), ops_factor=_ops_factor(e, g, ch),
                          weight_reads_per_token=1.0 / e)
