"""Validating numpy grids with the same one-line messages as `errors.check_number`.

The speculative formulas broadcast over alpha, gamma, c and batch grids; a grid is checked in
one read when it is valid, and the first bad element is named when it is not. numpy is
imported only when a grid is checked.
"""

from __future__ import annotations

import math

from llm_cost.errors import InvalidValueError, named_params, check_number, range_text


def checked(name: str, value, *, low=None, high=None, low_open=False, high_open=False,
            integer=False):
    """`value` as a float numpy array, or InvalidValueError naming `name` and the allowed range.

    Scalars go through `check_number` (same message); arrays must be real, finite and in range,
    and the first bad element is named. Broadcasting formulas validate their grids with this.

        low <= every element <= high   (strict at an end marked open)

    Parameters
    ----------
    name : str
        The parameter the message names.
    value : float or array_like
        A number or an array of real numbers (bool arrays are rejected), not empty.
    low, high : float, optional
        Bounds (None: unbounded).
    low_open, high_open : bool, optional
        Exclude the bound itself (default False).
    integer : bool, optional
        Require whole numbers (default False).

    Returns
    -------
    numpy.ndarray
        float64; 0-d for a number; a valid float64 array comes back as itself (no copy).

    Raises
    ------
    InvalidValueError
        Naming `name`, the range and the first bad element.

    Examples
    --------
    >>> checked("alpha", [0.6, 0.8], low=0, high=1)
    array([0.6, 0.8])
    >>> checked("alpha", [0.5, 1.2], low=0, high=1)
    Traceback (most recent call last):
    ...
    llm_cost.errors.InvalidValueError: alpha must be in [0, 1], got 1.2
    """
    import numpy as np

    if (type(value) is np.ndarray and value.dtype == np.float64 and value.size and not low_open
            and not high_open and _all_valid(value, low, high, integer)):
        return value  # the common case of a sweep, in one read of the array
    if np.ndim(value) == 0:
        scalar = value.item() if isinstance(value, (np.generic, np.ndarray)) else value
        check_number(name, scalar, low=low, high=high, low_open=low_open, high_open=high_open,
                     integer=integer)
        return np.asarray(scalar, dtype=float)
    params = named_params(name)
    arr = np.asarray(value)
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer)
                                 or np.issubdtype(arr.dtype, np.floating)):
        raise InvalidValueError(f"{name} must be numbers, got an array of {arr.dtype}", params=params)
    arr = arr.astype(float, copy=False)
    if arr.size == 0:
        raise InvalidValueError(f"{name} must not be empty", params=params)
    bad = ~np.isfinite(arr)
    if bad.any():
        raise InvalidValueError(f"{name} must be finite numbers, got {float(arr[bad][0])!r}", params=params)
    if integer:
        bad = arr != np.round(arr)
        if bad.any():
            raise InvalidValueError(f"{name} must be whole numbers, got {float(arr[bad][0])!r}", params=params)
    bad = np.zeros(arr.shape, dtype=bool)
    if low is not None:
        bad |= (arr <= low) if low_open else (arr < low)
    if high is not None:
        bad |= (arr >= high) if high_open else (arr > high)
    if bad.any():
        raise InvalidValueError(f"{name} must be in {range_text(low, high, low_open, high_open)}, "
                                f"got {float(arr[bad][0])!r}", params=params)
    return arr


_BLOCK = 1 << 15  # elements per block of `_all_valid` (256 KB: in cache while it is checked)


def _all_valid(arr, low, high, integer: bool) -> bool:
    """Every element of a non-empty float64 array is finite, in [low, high] and (`integer`) whole.

    min and max carry a NaN, so finite extremes in range mean every element is finite and in
    range; whole numbers take one rint. False sends `checked` down its slow path, which names the
    first bad element.
    """
    import numpy as np

    flat = arr.reshape(-1) if arr.flags.c_contiguous else None
    blocks = [arr] if flat is None else [flat[start:start + _BLOCK] for start in range(0, flat.size, _BLOCK)]
    size = min(arr.size, _BLOCK) if flat is not None else 0
    rounded, whole = (np.empty(size), np.empty(size, dtype=bool)) if integer and size else (None, None)
    for block in blocks:
        lo, hi = float(np.minimum.reduce(block, axis=None)), float(np.maximum.reduce(block, axis=None))
        if not (math.isfinite(lo) and math.isfinite(hi)) or (low is not None and lo < low) or (
                high is not None and hi > high):
            return False
        if integer:
            if rounded is None:
                same = np.rint(block) == block
            else:  # into work arrays: the block stays in cache and nothing is allocated per block
                same = np.equal(np.rint(block, out=rounded[:block.size]), block, out=whole[:block.size])
            if not same.all():
                return False
    return True


def scalar_or_array(result):
    """A 0-d result as a Python float (what a scalar caller expects), else the array.

    Parameters
    ----------
    result : float or numpy.ndarray
        A result of a broadcasting formula.

    Returns
    -------
    float or numpy.ndarray
        float(result) when `result` is 0-d, else `result` unchanged.

    Examples
    --------
    >>> import numpy as np
    >>> scalar_or_array(np.asarray(3.36)), scalar_or_array(np.array([2.4, 3.1]))
    (3.36, array([2.4, 3.1]))
    """
    import numpy as np

    return float(result) if np.ndim(result) == 0 else result
