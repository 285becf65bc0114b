"""The speculative inputs, validated: alpha in [0, 1], gamma a whole number >= 0, cost ratios >= 0.

Each takes a number or a numpy grid and returns a float array (`grids.checked`), or raises a
one-line InvalidValueError naming the parameter and the first bad element.
"""

from __future__ import annotations

import numpy as np

from llm_cost.grids import checked
from llm_cost.errors import InvalidValueError
from llm_cost.catalog.arguments import Number, Text, check_arguments


MAX_GAMMA = 10**9  # draft tokens a round: past any tree or draft; 2**63 overflowed int64 to a negative gamma
GAMMA_MAX = 64  # the closed-form search's range: E / (gamma c + 1) is cheap to evaluate
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


@check_arguments(low=Number(0, 1e9, integer=True), arrays=("gamma",))
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
    gammas = checked("gamma", gamma, low=low, integer=True)
    if gammas.size and gammas.max() > MAX_GAMMA:
        raise InvalidValueError(f"gamma must be at most {MAX_GAMMA:.0e}, got {gammas.max():.0f}", params=("gamma",))
    return gammas


@check_arguments(name=Text(identifier=True), c=None)
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
