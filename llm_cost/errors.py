"""Errors the library raises for bad input: ValueError subclasses with one clear line.

The CLI prints `str(error)` and exits non-zero; no traceback reaches the user.
"""

from __future__ import annotations

import math
import numbers


class LlmCostError(ValueError):
    """Base class: a one-line message naming the field or option and what is allowed."""


class InvalidValueError(LlmCostError):
    """A number outside its allowed range (negative size, alpha > 1, NaN, ...)."""


class UnknownNameError(LlmCostError):
    """A catalog name that does not exist; the message lists the known ones."""


class ConfigError(LlmCostError):
    """A config.json or datasheet file that is malformed or misses a key."""


def check_number(name: str, value, *, low=None, high=None, low_open=False,
                 high_open=False, integer=False) -> None:
    """Raise InvalidValueError unless `value` is a finite real number in the given range.

    `name` is the field or option as the user knows it; the message states the range.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidValueError(f"{name} must be a number, got {value!r}")
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an int beyond float range (a 400-digit --rows)
        finite = False
    if not finite:
        raise InvalidValueError(f"{name} must be a finite number, got {short_repr(value)}")
    if integer and value != int(value):
        raise InvalidValueError(f"{name} must be a whole number, got {value!r}")
    too_low = low is not None and (value <= low if low_open else value < low)
    too_high = high is not None and (value >= high if high_open else value > high)
    if too_low or too_high:
        raise InvalidValueError(
            f"{name} must be in {range_text(low, high, low_open, high_open)}, got {short_repr(value)}")


def short_repr(value) -> str:
    """repr(value), cut to a readable length: a 400-digit integer is not an error message."""
    text = repr(value)
    return text if len(text) < 40 else f"{text[:12]}... ({len(text)} characters)"


def range_text(low=None, high=None, low_open=False, high_open=False) -> str:
    """Interval notation for messages: [0, 1], (0, inf), [1, inf)."""
    left = "(-inf" if low is None else f"{'(' if low_open else '['}{_bound(low)}"
    right = "inf)" if high is None else f"{_bound(high)}{')' if high_open else ']'}"
    return f"{left}, {right}"


def _bound(x) -> str:
    """A range end as a reader writes it: 1, 0.5, 100000, 1e+12."""
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e6:
        return str(int(x))
    return f"{x:g}" if isinstance(x, float) else str(x)
