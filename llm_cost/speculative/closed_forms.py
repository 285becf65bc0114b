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
The roofline version at batch B (verification is not free there) is in `speculative.batched`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llm_cost.errors import checked, scalar_or_array
from llm_cost.errors import check_number

TIE_RTOL = 1e-12  # speedups closer than this are a tie (float rounding, not a real gain)


def check_alpha(alpha) -> np.ndarray:
    """`alpha` as a float array, or InvalidValueError unless every element is in [0, 1].

    Parameters
    ----------
    alpha : float or array_like
        Per-position acceptance rate, a fraction in [0, 1].

    Returns
    -------
    numpy.ndarray
        `alpha` as float64 (0-d for a number).

    Examples
    --------
    >>> check_alpha(0.8)
    array(0.8)
    >>> check_alpha(1.5)
    Traceback (most recent call last):
    ...
    llm_cost.errors.InvalidValueError: alpha must be in [0, 1], got 1.5
    """
    return checked("alpha", alpha, low=0, high=1)


def check_gamma(gamma, low=0) -> np.ndarray:
    """`gamma` as a float array, or InvalidValueError unless every element is a whole number >= low.

    Parameters
    ----------
    gamma : int or array_like
        Draft tokens per round, whole numbers.
    low : int, optional
        Smallest allowed gamma (default 0: plain decoding is gamma 0).

    Returns
    -------
    numpy.ndarray
        `gamma` as float64 (0-d for a number).

    Examples
    --------
    >>> check_gamma(4)
    array(4.)
    >>> check_gamma(2.5)
    Traceback (most recent call last):
    ...
    llm_cost.errors.InvalidValueError: gamma must be a whole number, got 2.5
    """
    return checked("gamma", gamma, low=low, integer=True)


def check_cost(name: str, c) -> np.ndarray:
    """A cost ratio (c, c_hat) as a float array, or InvalidValueError naming `name` if any is < 0.

    Parameters
    ----------
    name : str
        The parameter the message names ("c", "c_hat").
    c : float or array_like
        A time (c) or arithmetic (c_hat) ratio of draft over target, in [0, inf).

    Returns
    -------
    numpy.ndarray
        `c` as float64 (0-d for a number).

    Examples
    --------
    >>> check_cost("c", 0.1)
    array(0.1)
    >>> check_cost("c", -0.1)
    Traceback (most recent call last):
    ...
    llm_cost.errors.InvalidValueError: c must be in [0, inf), got -0.1
    """
    return checked(name, c, low=0)


def expected_tokens_unchecked(a, g):
    r"""E[tokens per round] for alpha `a` and gamma `g` already checked (`check_alpha`,
    `check_gamma`); broadcast over both.

    .. math:: E = \frac{a^{g+1} - 1}{a - 1} = \frac{\mathrm{expm1}((g + 1) \ln a)}{a - 1}

    (a^(g+1) - 1) / (a - 1) with a^(g+1) - 1 as expm1((g+1) ln a): no cancellation near a = 1,
    no overflow for huge gamma, a = 0 gives 1; exactly g + 1 at a = 1. Clipped to the exact
    bounds [1, g + 1] so rounding cannot cross them (E(a, 0) = 1). In-place array arithmetic:
    a million-point sweep spends most of its time here.

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
    a, g, c = check_alpha(alpha), check_gamma(gamma), check_cost("c", c)
    return scalar_or_array(_speedup(expected_tokens_unchecked(a, g), g, c))


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
    a, g, ch = check_alpha(alpha), check_gamma(gamma), check_cost("c_hat", c_hat)
    return scalar_or_array(_ops_factor(expected_tokens_unchecked(a, g), g, ch))


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
    a, g, c = check_alpha(alpha), check_gamma(gamma), check_cost("c", c)
    return scalar_or_array(expected_tokens_unchecked(a, g) / (g + 1.0 + g * c))


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
        The implied c; negative when the measured speedup exceeds E (no draft cost explains
        it). A Python float for number inputs.

    Examples
    --------
    The lecture exercise 5: E = (1 - 0.75^8) / 0.25 = 3.60, measured 3.4x.

    >>> print(f"{expected_tokens(0.75, 7):.2f} {implied_c(0.75, 7, 3.4):.3f}")
    3.60 0.008
    """
    a, g = check_alpha(alpha), check_gamma(gamma, low=1)
    s = checked("speedup", measured_speedup, low=0, low_open=True)
    return scalar_or_array((expected_tokens_unchecked(a, g) / s - 1.0) / g)


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


def optimal_gamma(alpha, c, *, gamma_max: int = 64) -> OptimalGamma:
    r"""argmax over integer gamma of E(gamma) / (gamma c + 1), broadcast over alpha and c.

    .. math:: \gamma^* = \arg\max_{\gamma \in \{0, \dots, \gamma_{max}\}} \frac{E(\alpha, \gamma)}{\gamma c + 1}

    E is concave in gamma and gamma c + 1 affine, so the ratio is unimodal: a binary search on
    the sign of f(gamma + 1) - f(gamma) finds the optimum in log2(gamma_max) array passes.
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
    a, g, c, ch = np.broadcast_arrays(check_alpha(alpha), check_gamma(gamma), check_cost("c", c),
                                      check_cost("c_hat", c_hat))
    e = expected_tokens_unchecked(a, g)
    return LeviathanForms(alpha=a, gamma=g.astype(int), c=c, c_hat=ch, expected_tokens=e,
                          speedup=_speedup(e, g, c), ops_factor=_ops_factor(e, g, ch),
                          weight_reads_per_token=1.0 / e)
