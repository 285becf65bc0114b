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
The roofline version at batch B (verification is not free there) is in `speculative.batched`;
the optimal gamma and the paper's table are in `gamma_choice`.

The unchecked helpers name alpha `a`, gamma `g` and E `e`, each in its own docstring.
"""

from __future__ import annotations

import numpy as np

from llm_cost.errors import InvalidValueError
from llm_cost.grids import checked, scalar_or_array
from llm_cost.speculative import powers as _powers
from llm_cost.speculative.inputs import check_alpha, check_cost, check_gamma


def expected_tokens_unchecked(a, g):
    r"""E[tokens per round] for alpha `a` and gamma `g` already checked (`check_alpha`,
    `check_gamma`); broadcast over both.

    .. math:: E = \frac{1 - a^{g+1}}{1 - a}

    a^(g+1) by squaring for whole g (`powers`: a few multiplications, no logarithm); where
    1 - a^(g+1) would cancel (a near 1) or g is not a whole number below 255, expm1((g+1) ln a) / (a - 1),
    exactly g + 1 at a = 1. E lies in [1, g + 1] (E(a, 0) = 1, E(0, g) = 1).

    Parameters
    ----------
    a : numpy.ndarray
        Acceptance rates in [0, 1], already checked.
    g : numpy.ndarray
        Draft tokens per round, whole numbers >= 0, already checked.

    Returns
    -------
    numpy.float64 or numpy.ndarray
        Tokens per round in [1, g + 1], of the broadcast shape (numpy scalar for 0-d inputs).

    Examples
    --------
    The article §2.3's 3.36 (alpha 0.8, gamma 4), and gamma + 1 exactly at alpha = 1:

    >>> import numpy as np
    >>> round(float(expected_tokens_unchecked(np.array(0.8), np.array(4.0))), 4)
    3.3616
    >>> float(expected_tokens_unchecked(np.array(1.0), np.array(4.0)))
    5.0
    """
    return expected_tokens_g1(a, np.asarray(g, dtype=float) + 1.0)


def expected_tokens_g1(a, g1):
    """`expected_tokens_unchecked(a, g)` from g1 = g + 1, which a caller may share (`a` alpha)."""
    return _powers.expected_tokens(a, g1)


def speedup_from_tokens(e, g, c):
    """E / (gamma c + 1): Theorem 3.8 from `e` = E, `g` = gamma and `c`, unchecked."""
    return e / (g * c + 1.0)


def ops_factor_from_tokens(e, g, c_hat):
    """(gamma c_hat + gamma + 1) / E: Theorem 3.11 from `e` = E and `g` = gamma, unchecked."""
    return (g * c_hat + g + 1.0) / e


def expected_tokens(alpha, gamma):
    r"""Expected tokens one round produces: (1 - alpha^(gamma+1)) / (1 - alpha), gamma + 1 at alpha = 1.

    .. math:: E = \frac{1 - \alpha^{\gamma+1}}{1 - \alpha},\qquad E = \gamma + 1 \text{ at } \alpha = 1

    gamma -> inf tends to 1 / (1 - alpha): 5 at alpha 0.8, 10 at 0.9 (the lecture §8.1).
    Source: Leviathan et al. 2023 (the numerator of Theorem 3.8); the article §2.3.

    Parameters
    ----------
    alpha : float or array_like
        Per-position acceptance rate in [0, 1], independent across positions (the lecture §8.3).
    gamma : int or array_like
        Draft tokens per round, whole numbers >= 0; broadcasts against `alpha`.

    Returns
    -------
    float or numpy.ndarray
        Tokens per round (target tokens included), in [1, gamma + 1]; a Python float when both
        inputs are numbers.

    Examples
    --------
    The article §2.3: (1 - 0.8^5) / 0.2 = (1 - 0.328) / 0.2 = 3.36.

    >>> round(expected_tokens(0.8, 4), 2)
    3.36

    The lecture §8.1: at most 5 tokens at alpha 0.8, 10 at alpha 0.9, however long the draft.

    >>> round(expected_tokens(0.8, 10**6), 6), round(expected_tokens(0.9, 10**6), 6)
    (5.0, 10.0)
    """
    return scalar_or_array(expected_tokens_unchecked(check_alpha(alpha), check_gamma(gamma)))


def speedup(alpha, gamma, c):
    r"""Leviathan's wall-time speedup E / (gamma c + 1), verification assumed free (Theorem 3.8).

    .. math:: S = \frac{E}{\gamma c + 1},\qquad E = \frac{1 - \alpha^{\gamma+1}}{1 - \alpha}

    The article §2.3: alpha 0.8, gamma 4, c 0.1 -> 3.36 / 1.4 = 2.4; c 0.02 -> 3.36 / 1.08 ~ 3.1.
    Source: Leviathan et al. 2023, Theorem 3.8; the lecture §8.

    Parameters
    ----------
    alpha : float or array_like
        Per-position acceptance rate in [0, 1].
    gamma : int or array_like
        Draft tokens per round, whole numbers >= 0 (0: plain decoding, speedup 1).
    c : float or array_like
        One draft step's time over one target step's, in [0, inf).

    Returns
    -------
    float or numpy.ndarray
        Wall-time speedup over plain decoding (> 1: speculation pays); a Python float when every
        input is a number, else an array of the broadcast shape.

    Examples
    --------
    The article §2.3:

    >>> round(speedup(0.8, 4, 0.1), 2), round(speedup(0.8, 4, 0.02), 1)
    (2.4, 3.1)

    The lecture exercise 6 (alpha 0.8, c 0.05): a flat optimum, 3.09 at gamma 8.

    >>> [round(speedup(0.8, g, 0.05), 2) for g in (4, 8, 12)]
    [2.8, 3.09, 2.95]
    """
    alpha, gamma, c = check_alpha(alpha), check_gamma(gamma), check_cost("c", c)
    return scalar_or_array(speedup_from_tokens(expected_tokens_unchecked(alpha, gamma), gamma, c))


def gamma_one_speedup(alpha, c):
    r"""Speedup with one draft, (1 + alpha) / (1 + c): Corollary 3.9's lower bound on the optimum.

    .. math:: S_{\gamma=1} = \frac{1 + \alpha}{1 + c} \le \max_\gamma S(\gamma)

    Above 1 exactly when alpha > c (then speculation pays); 1 at alpha = c.
    Source: Leviathan et al. 2023, Corollary 3.9; the lecture §8.2.

    Parameters
    ----------
    alpha : float or array_like
        Per-position acceptance rate in [0, 1].
    c : float or array_like
        One draft step's time over one target step's, in [0, inf).

    Returns
    -------
    float or numpy.ndarray
        The gamma = 1 speedup; a Python float when both inputs are numbers.

    Examples
    --------
    The lecture §8.2: break-even at alpha = c; it equals `speedup` at gamma 1.

    >>> gamma_one_speedup(0.3, 0.3)
    1.0
    >>> round(gamma_one_speedup(0.5, 0.2), 4), round(speedup(0.5, 1, 0.2), 4)
    (1.25, 1.25)
    """
    return scalar_or_array((1.0 + check_alpha(alpha)) / (1.0 + check_cost("c", c)))


def ops_factor(alpha, gamma, c_hat=0.0):
    r"""Total arithmetic over plain decoding: (1 - alpha)(gamma c_hat + gamma + 1) / (1 - alpha^(gamma+1)).

    .. math:: \frac{(1 - \alpha)(\gamma \hat c + \gamma + 1)}{1 - \alpha^{\gamma+1}}
              = \frac{\gamma \hat c + \gamma + 1}{E}

    Theorem 3.11, written as (gamma c_hat + gamma + 1) / E so alpha = 1 is exact.
    The lecture exercise 7: alpha 0.7, gamma 3 -> 1.58 (c_hat 0), 1.70 (c_hat 0.1).

    Parameters
    ----------
    alpha : float or array_like
        Per-position acceptance rate in [0, 1].
    gamma : int or array_like
        Draft tokens per round, whole numbers >= 0.
    c_hat : float or array_like, optional
        One draft step's arithmetic over one target step's, in [0, inf) (default 0).

    Returns
    -------
    float or numpy.ndarray
        Arithmetic per generated token over plain decoding's, >= 1 (the price of speculation);
        a Python float when every input is a number.

    Examples
    --------
    The lecture exercise 7 (1.58 is Leviathan et al.'s Table 1 cell):

    >>> print(f"{ops_factor(0.7, 3):.2f} {ops_factor(0.7, 3, 0.1):.2f}")
    1.58 1.70
    """
    alpha, gamma, c_hat = check_alpha(alpha), check_gamma(gamma), check_cost("c_hat", c_hat)
    return scalar_or_array(ops_factor_from_tokens(expected_tokens_unchecked(alpha, gamma), gamma, c_hat))


def weight_reads_per_token(alpha, gamma):
    r"""Target weight reads per generated token, as a fraction of plain decoding's one: 1 / E.

    .. math:: R = \frac{1}{E} = \frac{1 - \alpha}{1 - \alpha^{\gamma+1}}

    One verification pass reads the weights once and yields E tokens (the lecture §8.4, exercise 11).

    Parameters
    ----------
    alpha : float or array_like
        Per-position acceptance rate in [0, 1].
    gamma : int or array_like
        Draft tokens per round, whole numbers >= 0.

    Returns
    -------
    float or numpy.ndarray
        Weight reads per token, in [1 / (gamma + 1), 1]; a Python float for number inputs.

    Examples
    --------
    The lecture exercise 11: demo 04's skip-layer draft (alpha 0.827, gamma 8) yields 4.73 tokens
    per pass by the closed form (4.74 measured), so about 0.21 of plain decoding's weight reads.

    >>> round(expected_tokens(0.827, 8), 2), round(weight_reads_per_token(0.827, 8), 2)
    (4.73, 0.21)
    """
    return scalar_or_array(1.0 / expected_tokens_unchecked(check_alpha(alpha), check_gamma(gamma)))


def compute_bound_speedup(alpha, gamma, c):
    r"""The speedup once verification is fully compute-bound: E / (gamma + 1 + gamma c).

    .. math:: S_{compute} = \frac{E}{\gamma + 1 + \gamma c}

    Verification then costs (gamma + 1) plain steps (the article §2.4: 3.36 / 5.4 = 0.62, the
    article table's B = 256 at 60% MFU). It equals 1 / ops_factor with c_hat = c.

    Parameters
    ----------
    alpha : float or array_like
        Per-position acceptance rate in [0, 1].
    gamma : int or array_like
        Draft tokens per round, whole numbers >= 0.
    c : float or array_like
        One draft step's cost over one target step's, in [0, inf).

    Returns
    -------
    float or numpy.ndarray
        The speedup (< 1 for gamma >= 1 and alpha < 1: speculation loses); a Python float for
        number inputs.

    Examples
    --------
    The article §2.4: 3.36 / 5.4 = 0.62, which is also 1 / ops_factor at c_hat = c.

    >>> round(compute_bound_speedup(0.8, 4, 0.1), 2), round(1 / ops_factor(0.8, 4, 0.1), 2)
    (0.62, 0.62)
    """
    alpha, gamma, c = check_alpha(alpha), check_gamma(gamma), check_cost("c", c)
    return scalar_or_array(expected_tokens_unchecked(alpha, gamma) / (gamma + 1.0 + gamma * c))


def implied_c(alpha, gamma, measured_speedup):
    r"""The cost coefficient a measured speedup implies: c = (E / speedup - 1) / gamma.

    .. math:: c = \frac{E / S_{measured} - 1}{\gamma}

    The lecture exercise 5: alpha 0.75, gamma 7, 3.4x measured -> c ~ 0.008 (Theorem 3.8 solved
    for c; Leviathan et al. 2023 report the 3.4x, their Table 2).

    Parameters
    ----------
    alpha : float or array_like
        Per-position acceptance rate in [0, 1].
    gamma : int or array_like
        Draft tokens per round, whole numbers >= 1.
    measured_speedup : float or array_like
        The measured wall-time speedup, in (0, inf).

    Returns
    -------
    float or numpy.ndarray
        The implied c, >= 0; a measured speedup above E (no draft cost explains it) is an
        InvalidValueError. A Python float for number inputs.

    Examples
    --------
    The lecture exercise 5: E = (1 - 0.75^8) / 0.25 = 3.60, measured 3.4x.

    >>> print(f"{expected_tokens(0.75, 7):.2f} {implied_c(0.75, 7, 3.4):.3f}")
    3.60 0.008
    """
    alpha, gamma = check_alpha(alpha), check_gamma(gamma, low=1)
    measured = checked("measured_speedup", measured_speedup, low=0, low_open=True)
    expected = expected_tokens_unchecked(alpha, gamma)
    over = np.broadcast_to(measured > expected * (1 + 1e-12), np.broadcast(expected, measured).shape)
    if over.any():  # faster than a free draft allows: no cost c >= 0 explains it
        first = np.unravel_index(np.argmax(over), over.shape)
        e_i, s_i = np.broadcast_to(expected, over.shape)[first], np.broadcast_to(measured, over.shape)[first]
        raise InvalidValueError(f"measured_speedup must be at most E = {e_i:.4g} (the speedup of a free draft at "
                                f"this alpha and gamma), got {s_i:g}", params=("measured_speedup",))
    return scalar_or_array(np.maximum((expected / measured - 1.0) / gamma, 0.0))
