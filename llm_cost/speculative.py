"""Speculative decoding: Leviathan et al.'s closed forms, numpy-broadcasting over every input.

One round: the draft proposes gamma tokens, the target verifies them in one pass and keeps
the accepted prefix plus one token of its own (a resample after a rejection, or a bonus token
after gamma acceptances). With a per-position acceptance rate alpha, independent across
positions (seed 000 §8.3: independence is the real assumption, not equal rates):

    E[tokens per round] = (1 - alpha^(gamma+1)) / (1 - alpha)       -> gamma + 1 at alpha = 1
    speedup             = E / (gamma c + 1)                          (Theorem 3.8)
    operations factor   = (gamma c_hat + gamma + 1) / E              (Theorem 3.11)

c is the draft's time per step over the target's; c_hat the same ratio of arithmetic. Sources:
seed 002 chapter 2.3 (E = 3.36 at alpha 0.8, gamma 4; 2.4x at c 0.1), seed 000 §8, exercises 5-7.
The roofline version at batch B (verification is not free there) is in `speculative_roofline`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llm_cost.arrays import checked, scalar_or_array
from llm_cost.errors import check_number

TIE_RTOL = 1e-12  # speedups closer than this are a tie (float rounding, not a real gain)


def _alpha(alpha) -> np.ndarray:
    return checked("alpha", alpha, low=0, high=1)


def _gamma(gamma, low=0) -> np.ndarray:
    return checked("gamma", gamma, low=low, integer=True)


def _cost(name: str, c) -> np.ndarray:
    return checked(name, c, low=0)


def _expected(a: np.ndarray, g: np.ndarray) -> np.ndarray:
    """E[tokens] without validation; exact at alpha = 1, no overflow for huge gamma."""
    with np.errstate(divide="ignore", invalid="ignore"):
        # 1 - a^(g+1) as -expm1((g+1) ln a): no cancellation near a = 1, and a = 0 gives 1
        head = -np.expm1((g + 1.0) * np.log(a))
        e = np.where(a == 1.0, g + 1.0, head / np.where(a == 1.0, 1.0, 1.0 - a))
    return np.clip(e, 1.0, g + 1.0)  # the exact bounds; rounding must not cross them (E(a, 0) = 1)


def expected_tokens(alpha, gamma):
    """Expected tokens one round produces: (1 - alpha^(gamma+1)) / (1 - alpha), gamma + 1 at alpha = 1.

    gamma -> inf tends to 1 / (1 - alpha): 5 at alpha 0.8, 10 at 0.9 (seed 000 §8.1).
    """
    return scalar_or_array(_expected(_alpha(alpha), _gamma(gamma)))


def speedup(alpha, gamma, c):
    """Leviathan's wall-time speedup E / (gamma c + 1), verification assumed free (Theorem 3.8).

    Seed 002 §2.3: alpha 0.8, gamma 4, c 0.1 -> 3.36 / 1.4 = 2.4; c 0.02 -> 3.36 / 1.08 ~ 3.1.
    """
    a, g, c = _alpha(alpha), _gamma(gamma), _cost("c", c)
    return scalar_or_array(_expected(a, g) / (g * c + 1.0))


def gamma_one_speedup(alpha, c):
    """Speedup with one draft, (1 + alpha) / (1 + c): Corollary 3.9's lower bound on the optimum.

    Above 1 exactly when alpha > c (then speculation pays); 1 at alpha = c.
    """
    return scalar_or_array((1.0 + _alpha(alpha)) / (1.0 + _cost("c", c)))


def ops_factor(alpha, gamma, c_hat=0.0):
    """Total arithmetic over plain decoding: (1 - alpha)(gamma c_hat + gamma + 1) / (1 - alpha^(gamma+1)).

    Theorem 3.11, written as (gamma c_hat + gamma + 1) / E so alpha = 1 is exact.
    Seed 000 exercise 7: alpha 0.7, gamma 3 -> 1.58 (c_hat 0), 1.70 (c_hat 0.1).
    """
    a, g, ch = _alpha(alpha), _gamma(gamma), _cost("c_hat", c_hat)
    return scalar_or_array((g * ch + g + 1.0) / _expected(a, g))


def weight_reads_per_token(alpha, gamma):
    """Target weight reads per generated token, as a fraction of plain decoding's one: 1 / E.

    One verification pass reads the weights once and yields E tokens (seed 000 §8.4, exercise 11).
    """
    return scalar_or_array(1.0 / _expected(_alpha(alpha), _gamma(gamma)))


def compute_bound_speedup(alpha, gamma, c):
    """The speedup once verification is fully compute-bound: E / (gamma + 1 + gamma c).

    Verification then costs (gamma + 1) plain steps (seed 002 §2.4: 3.36 / 5.4 = 0.62, the
    article table's B = 256 at 60% MFU). It equals 1 / ops_factor with c_hat = c.
    """
    a, g, c = _alpha(alpha), _gamma(gamma), _cost("c", c)
    return scalar_or_array(_expected(a, g) / (g + 1.0 + g * c))


def implied_c(alpha, gamma, measured_speedup):
    """The cost coefficient a measured speedup implies: c = (E / speedup - 1) / gamma.

    Seed 000 exercise 5: alpha 0.75, gamma 7, 3.4x measured -> c ~ 0.008.
    """
    a, g = _alpha(alpha), _gamma(gamma, low=1)
    s = checked("speedup", measured_speedup, low=0, low_open=True)
    return scalar_or_array((_expected(a, g) / s - 1.0) / g)


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
    Ties (within TIE_RTOL) go to the smaller gamma. Seed 000 exercise 6: alpha 0.8, c 0.05 ->
    gamma 8, 3.09.
    """
    check_number("gamma_max", gamma_max, low=1, integer=True)
    a, c = np.broadcast_arrays(_alpha(alpha), _cost("c", c))

    def f(g):
        return _expected(a, g) / (g * c + 1.0)

    lo = np.zeros(a.shape)
    hi = np.full(a.shape, float(gamma_max))
    while np.any(lo < hi):
        mid = np.floor((lo + hi) / 2)
        rising = (f(mid + 1) > f(mid) * (1 + TIE_RTOL)) & (lo < hi)
        lo = np.where(rising, mid + 1, lo)
        hi = np.where(rising, hi, mid)
    capped = (lo == gamma_max) & (f(lo + 1) > f(lo) * (1 + TIE_RTOL))
    return OptimalGamma(alpha=a, c=c, gamma=lo.astype(int), speedup=f(lo),
                        expected_tokens=_expected(a, lo), capped=capped)


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

    c = c_hat = 0 is the paper's Table 1 (seed 000 §8.2: demo 04 reproduces it cell by cell).
    """
    a, g, c, ch = np.broadcast_arrays(_alpha(alpha), _gamma(gamma), _cost("c", c),
                                      _cost("c_hat", c_hat))
    e = _expected(a, g)
    return LeviathanForms(alpha=a, gamma=g.astype(int), c=c, c_hat=ch, expected_tokens=e,
                          speedup=e / (g * c + 1.0), ops_factor=(g * ch + g + 1.0) / e,
                          weight_reads_per_token=1.0 / e)
