"""Validating numpy inputs with the same one-line messages as `errors.check_number`.

The speculative-decoding formulas broadcast over alpha, gamma, c and batch grids; a grid is
checked in one pass and the first bad element is named in the message.
"""

from __future__ import annotations

import numpy as np

from llm_cost.errors import InvalidValueError, check_number, range_text


def checked(name: str, value, *, low=None, high=None, low_open=False, high_open=False,
            integer=False) -> np.ndarray:
    """`value` as a float array, or InvalidValueError naming `name` and the allowed range.

    Scalars go through `check_number` (same message); arrays must be real, finite and in range.
    """
    if np.ndim(value) == 0:
        scalar = value.item() if isinstance(value, (np.generic, np.ndarray)) else value
        check_number(name, scalar, low=low, high=high, low_open=low_open, high_open=high_open,
                     integer=integer)
        return np.asarray(scalar, dtype=float)
    arr = np.asarray(value)
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer)
                                 or np.issubdtype(arr.dtype, np.floating)):
        raise InvalidValueError(f"{name} must be numbers, got an array of {arr.dtype}")
    arr = arr.astype(float, copy=False)
    if arr.size == 0:
        raise InvalidValueError(f"{name} must not be empty")
    bad = ~np.isfinite(arr)
    if bad.any():
        raise InvalidValueError(f"{name} must be finite numbers, got {float(arr[bad][0])!r}")
    if integer:
        bad = arr != np.round(arr)
        if bad.any():
            raise InvalidValueError(f"{name} must be whole numbers, got {float(arr[bad][0])!r}")
    bad = np.zeros(arr.shape, dtype=bool)
    if low is not None:
        bad |= (arr <= low) if low_open else (arr < low)
    if high is not None:
        bad |= (arr >= high) if high_open else (arr > high)
    if bad.any():
        raise InvalidValueError(f"{name} must be in {range_text(low, high, low_open, high_open)}, "
                                f"got {float(arr[bad][0])!r}")
    return arr


def scalar_or_array(x: np.ndarray):
    """A 0-d result as a Python float (what a scalar caller expects), else the array."""
    return float(x) if np.ndim(x) == 0 else x
