"""Choosing gamma: the optimal integer gamma of Theorem 3.8, and every closed form of a cell at once.

E(gamma) is concave and gamma c + 1 affine, so E / (gamma c + 1) is unimodal in gamma: a binary
search finds the optimum. `leviathan` gives expected tokens, speedup, operations factor and
weight reads per token together, to check Leviathan et al.'s Table 1 cell by cell.

In the code `a` is alpha, `g` gamma, `c` c and `e` E.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llm_cost.errors import check_number
from llm_cost.speculative.closed_forms import ops_factor_from_tokens, speedup_from_tokens, expected_tokens_unchecked
from llm_cost.speculative.inputs import GAMMA_MAX, TIE_RTOL, check_alpha, check_cost, check_gamma

@dataclass(frozen=True)
class OptimalGamma:
    r"""The integer gamma in [0, gamma_max] with the highest speedup (0: do not speculate).

    .. math:: \gamma^* = \arg\max_{0 \le \gamma \le \gamma_{max}} \frac{E(\alpha, \gamma)}{\gamma c + 1}

    `capped` marks cells whose speedup still rises at gamma_max (c = 0, or alpha = 1 with c < 1).

    Attributes
    ----------
    alpha, c : numpy.ndarray
        The inputs, broadcast to a common shape.
    gamma : numpy.ndarray of int
        The optimal gamma per cell, in [0, gamma_max].
    speedup, expected_tokens : numpy.ndarray
        Leviathan's speedup and E at that gamma.
    capped : numpy.ndarray of bool
        True where the speedup still rises past gamma_max.

    Examples
    --------
    See `optimal_gamma`.
    """

    alpha: np.ndarray
    c: np.ndarray
    gamma: np.ndarray
    speedup: np.ndarray
    expected_tokens: np.ndarray
    capped: np.ndarray


def optimal_gamma(alpha, c, *, gamma_max: int = GAMMA_MAX) -> OptimalGamma:
    r"""argmax over integer gamma of E(gamma) / (gamma c + 1), broadcast over alpha and c.

    .. math:: \gamma^* = \arg\max_{\gamma \in \{0, \dots, \gamma_{max}\}} \frac{E(\alpha, \gamma)}{\gamma c + 1}

    E is concave in gamma and gamma c + 1 affine, so the ratio is unimodal: a binary search on
    the sign of ratio(gamma + 1) - ratio(gamma) finds the optimum in log2(gamma_max) array passes.
    Ties (within TIE_RTOL) go to the smaller gamma. The lecture exercise 6: alpha 0.8, c 0.05 ->
    gamma 8, 3.09. Source: Leviathan et al. 2023, Theorem 3.8 maximised over gamma.

    Parameters
    ----------
    alpha : float or array_like
        Per-position acceptance rate in [0, 1].
    c : float or array_like
        One draft step's time over one target step's, in [0, inf); broadcasts against `alpha`.
    gamma_max : int, optional
        Largest gamma searched, a whole number >= 1 (default 64).

    Returns
    -------
    OptimalGamma
        Arrays of the broadcast shape (0-d for number inputs).

    Examples
    --------
    The lecture exercise 6:

    >>> best = optimal_gamma(0.8, 0.05)
    >>> int(best.gamma), round(float(best.speedup), 2), bool(best.capped)
    (8, 3.09, False)

    With a free draft (c = 0) more drafts always help, so the search stops at the cap:

    >>> best = optimal_gamma(0.8, 0.0, gamma_max=16)
    >>> int(best.gamma), bool(best.capped)
    (16, True)
    """
    check_number("gamma_max", gamma_max, low=1, integer=True)
    alpha, c = np.broadcast_arrays(check_alpha(alpha), check_cost("c", c))

    def ratio(gamma):
        return speedup_from_tokens(expected_tokens_unchecked(alpha, gamma), gamma, c)

    lo = np.zeros(alpha.shape)
    hi = np.full(alpha.shape, float(gamma_max))
    while np.any(lo < hi):
        mid = np.floor((lo + hi) / 2)
        rising = (ratio(mid + 1) > ratio(mid) * (1 + TIE_RTOL)) & (lo < hi)
        lo = np.where(rising, mid + 1, lo)
        hi = np.where(rising, hi, mid)
    capped = (lo == gamma_max) & (ratio(lo + 1) > ratio(lo) * (1 + TIE_RTOL))
    return OptimalGamma(alpha=alpha, c=c, gamma=lo.astype(int), speedup=ratio(lo),
                        expected_tokens=expected_tokens_unchecked(alpha, lo), capped=capped)


@dataclass(frozen=True)
class LeviathanForms:
    r"""Every closed form of one (alpha, gamma, c, c_hat) cell, broadcast to a common shape.

    .. math:: E = \frac{1 - \alpha^{\gamma+1}}{1 - \alpha},\quad S = \frac{E}{\gamma c + 1},\quad
              \mathit{ops} = \frac{\gamma \hat c + \gamma + 1}{E},\quad R = \frac{1}{E}

    Attributes
    ----------
    alpha, gamma, c, c_hat : numpy.ndarray
        The inputs, broadcast (gamma as int).
    expected_tokens : numpy.ndarray
        E, tokens per round.
    speedup : numpy.ndarray
        Theorem 3.8's wall-time speedup.
    ops_factor : numpy.ndarray
        Theorem 3.11's arithmetic over plain decoding.
    weight_reads_per_token : numpy.ndarray
        1 / E, target weight reads per token over plain decoding's.

    Examples
    --------
    See `leviathan`.
    """

    alpha: np.ndarray
    gamma: np.ndarray
    c: np.ndarray
    c_hat: np.ndarray
    expected_tokens: np.ndarray
    speedup: np.ndarray
    ops_factor: np.ndarray
    weight_reads_per_token: np.ndarray


def leviathan(alpha, gamma, c=0.0, c_hat=0.0) -> LeviathanForms:
    r"""Expected tokens, speedup, operations factor and weight reads per token, for checking the paper.

    .. math:: E = \frac{1 - \alpha^{\gamma+1}}{1 - \alpha},\quad S = \frac{E}{\gamma c + 1},\quad
              \mathit{ops} = \frac{\gamma \hat c + \gamma + 1}{E},\quad R = \frac{1}{E}

    c = c_hat = 0 is the paper's Table 1 (the lecture §8.2: demo 04 reproduces it cell by cell).
    Source: Leviathan et al. 2023, Theorems 3.8 and 3.11.

    Parameters
    ----------
    alpha : float or array_like
        Per-position acceptance rate in [0, 1].
    gamma : int or array_like
        Draft tokens per round, whole numbers >= 0.
    c : float or array_like, optional
        Draft step time over target step time, in [0, inf) (default 0).
    c_hat : float or array_like, optional
        Draft step arithmetic over target step arithmetic, in [0, inf) (default 0).

    Returns
    -------
    LeviathanForms
        Arrays of the broadcast shape (0-d for number inputs).

    Examples
    --------
    Table 1's cell alpha 0.7, gamma 3 (the lecture exercise 7): E = 2.533, operations 1.58.

    >>> f = leviathan(0.7, 3)
    >>> round(float(f.expected_tokens), 3), round(float(f.speedup), 3), round(float(f.ops_factor), 2)
    (2.533, 2.533, 1.58)

    The article §2.3's cell (alpha 0.8, gamma 4, c 0.1):

    >>> f = leviathan(0.8, 4, c=0.1)
    >>> round(float(f.speedup), 2), round(float(f.weight_reads_per_token), 3)
    (2.4, 0.297)
    """
    alpha, gamma, c, c_hat = np.broadcast_arrays(check_alpha(alpha), check_gamma(gamma),
                                                 check_cost("c", c), check_cost("c_hat", c_hat))
    expected = expected_tokens_unchecked(alpha, gamma)
    return LeviathanForms(alpha=alpha, gamma=gamma.astype(int), c=c, c_hat=c_hat, expected_tokens=expected,
                          speedup=speedup_from_tokens(expected, gamma, c),
                          ops_factor=ops_factor_from_tokens(expected, gamma, c_hat),
                          weight_reads_per_token=1.0 / expected)
