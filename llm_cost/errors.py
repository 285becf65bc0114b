"""Errors the library raises for bad input, and the validators that raise them.

Every error is a ValueError subclass with one clear line that names the *parameter* as the
library knows it (`batch must be in [1, 1e+12], got 0`) and lists the parameters it names in
`params`; the CLI rewrites those names into its flags (`--batch must be ...`) and exits 2.
No traceback reaches the user. Validators for numpy grids import numpy only when called.
"""

from __future__ import annotations

import math
import numbers


class LlmCostError(ValueError):
    """Base class: a one-line message naming the parameter and what is allowed.

    `params`: the parameter names the message uses, as whole words, so that a front end can
    put its own names for them (the CLI's flags) in their place.

    Parameters
    ----------
    message : str
        One line, naming the parameter and the allowed values.
    params : iterable of str, optional
        The parameter names `message` uses (default ()).

    Examples
    --------
    >>> err = LlmCostError("batch must be in [1, 1e+12], got 0", params=["batch"])
    >>> str(err), err.params, isinstance(err, ValueError)
    ('batch must be in [1, 1e+12], got 0', ('batch',), True)
    """

    def __init__(self, message: str, *, params=()):
        super().__init__(message)
        self.params = tuple(params)


class InvalidValueError(LlmCostError):
    """A number outside its allowed range (negative size, alpha > 1, NaN, ...).

    Parameters
    ----------
    message : str
        One line: the parameter, its range and the value given.
    params : iterable of str, optional
        The parameter names the message uses.

    Examples
    --------
    >>> try:
    ...     check_number("alpha", 1.5, low=0, high=1)
    ... except InvalidValueError as err:
    ...     print(err, err.params)
    alpha must be in [0, 1], got 1.5 ('alpha',)
    """


class UnknownNameError(LlmCostError):
    """A catalog name that does not exist; the message lists the known ones.

    Parameters
    ----------
    message : str
        One line: the parameter, the known names and the nearest ones.
    params : iterable of str, optional
        The parameter names the message uses.

    Examples
    --------
    >>> try:
    ...     check_choice("gpu", "h10", ("h100-sxm", "a100-40gb"))
    ... except UnknownNameError as err:
    ...     print(err)
    gpu must be one of h100-sxm, a100-40gb, got 'h10'; did you mean h100-sxm?
    """


class ConfigError(LlmCostError):
    """A config.json or datasheet file that is malformed or misses a key.

    Parameters
    ----------
    message : str
        One line: the file and what is wrong with it.
    params : iterable of str, optional
        The parameter names the message uses.

    Examples
    --------
    >>> isinstance(ConfigError("config.json: missing hidden_size"), LlmCostError)
    True
    """


def named_params(name: str) -> tuple[str, ...]:
    """The parameter a validator's `name` stands for: itself when it is an identifier."""
    return (name,) if name.isidentifier() else ()


def check_number(name: str, value, *, low=None, high=None, low_open=False,
                 high_open=False, integer=False) -> None:
    """Raise InvalidValueError unless `value` is a finite real number in the given range.

    `name` is the parameter (or spec field, `model.hidden_size`); the message states the range.

        low <= value <= high   (strict at an end marked open; no bound when it is None)

    Parameters
    ----------
    name : str
        The parameter as the library knows it; an identifier goes into the error's `params`.
    value : object
        The value to check; bool and non-real types are rejected.
    low, high : float, optional
        Bounds (None: unbounded).
    low_open, high_open : bool, optional
        Exclude the bound itself (default False: closed).
    integer : bool, optional
        Require a whole number (default False).

    Returns
    -------
    None

    Raises
    ------
    InvalidValueError
        One line naming `name`, the range and the value.

    Examples
    --------
    >>> check_number("alpha", 0.8, low=0, high=1)
    >>> check_number("batch", 0, low=1)
    Traceback (most recent call last):
    ...
    llm_cost.errors.InvalidValueError: batch must be in [1, inf), got 0
    """
    params = named_params(name)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidValueError(f"{name} must be a number, got {short_repr(value)}", params=params)
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an int beyond float range (a 400-digit rows)
        finite = False
    if not finite:
        raise InvalidValueError(f"{name} must be a finite number, got {short_repr(value)}", params=params)
    if integer and value != int(value):
        raise InvalidValueError(f"{name} must be a whole number, got {value!r}", params=params)
    too_low = low is not None and (value <= low if low_open else value < low)
    too_high = high is not None and (value >= high if high_open else value > high)
    if too_low or too_high:
        raise InvalidValueError(
            f"{name} must be in {range_text(low, high, low_open, high_open)}, got {short_repr(value)}",
            params=params)


def check_all(name: str, values, *, most: int | None = None, numbers: bool = True, **limits) -> list:
    """`values` as a list, or InvalidValueError unless it holds 1 to `most` values, each valid.

    The one validator of repeatable inputs (alphas, contexts, curves of a figure): each value
    passes `check_number` with `limits` unless `numbers` is False (widths, scheduler names).

        1 <= len(values) <= most,  and each value passes check_number(name, value, **limits)

    Parameters
    ----------
    name : str
        The parameter the messages name.
    values : iterable or None
        The values (None or empty is an error).
    most : int, optional
        Largest number of values allowed (default None: any).
    numbers : bool, optional
        Check each value with `check_number` (default True).
    **limits
        `check_number`'s keywords: low, high, low_open, high_open, integer.

    Returns
    -------
    list
        The values.

    Raises
    ------
    InvalidValueError
        No value, too many, or a value out of range.

    Examples
    --------
    >>> check_all("alphas", (0.6, 0.8), low=0, high=1)
    [0.6, 0.8]
    >>> check_all("alphas", [0.5, 1.5], low=0, high=1)
    Traceback (most recent call last):
    ...
    llm_cost.errors.InvalidValueError: alphas must be in [0, 1], got 1.5
    """
    values = list(values or ())
    if not values:
        raise InvalidValueError(f"{name} needs at least one value", params=named_params(name))
    if most is not None and len(values) > most:
        raise InvalidValueError(f"{name} takes at most {most} values, got {len(values)}", params=named_params(name))
    if numbers:
        for value in values:
            check_number(name, value, **limits)
    return values


def check_choice(name: str, value, allowed) -> str:
    """The one of `allowed` that `value` names, ignoring case; else an error naming `name`, the
    choices and the nearest ones ("did you mean").

    Parameters
    ----------
    name : str
        The parameter the message names.
    value : object
        The name given.
    allowed : sequence of str
        The known names.

    Returns
    -------
    str
        The element of `allowed` that `value` matches, as `allowed` spells it.

    Raises
    ------
    UnknownNameError
        When no element matches; the message lists `allowed` and the nearest names.

    Examples
    --------
    >>> check_choice("fmt", "JSON", ("table", "json"))
    'json'
    >>> check_choice("preset", "lectur", ("article", "lecture"))
    Traceback (most recent call last):
    ...
    llm_cost.errors.UnknownNameError: preset must be one of article, lecture, got 'lectur'; did you mean lecture?
    """
    if value in allowed:
        return value
    if isinstance(value, str):
        folded = {choice.casefold(): choice for choice in allowed if isinstance(choice, str)}
        if value.casefold() in folded:
            return folded[value.casefold()]
    hint = did_you_mean(value, [choice for choice in allowed if isinstance(choice, str)])
    raise UnknownNameError(f"{name} must be one of {', '.join(allowed)}, got {short_repr(value)}{hint}",
                           params=named_params(name))


def nearest(value, known, n: int = 3) -> list[str]:
    """The known names nearest `value` (case ignored): those it starts (a100 -> a100-40gb,
    a100-80gb), then difflib's closest; at most `n`.

    Parameters
    ----------
    value : object
        The name given; anything but a non-empty string has no neighbours.
    known : iterable of str
        The known names.
    n : int, optional
        Most names returned (default 3).

    Returns
    -------
    list of str
        Prefix matches first, then difflib's close matches (ratio >= 0.5), no repeats.

    Examples
    --------
    >>> nearest("A100", ["a100-40gb", "a100-80gb", "mi300x"])
    ['a100-40gb', 'a100-80gb']
    >>> nearest("h10", ["h100-sxm", "h200", "a100-40gb"])  # h100-sxm by prefix, h200 by difflib
    ['h100-sxm', 'h200']
    >>> nearest("", ["h100-sxm"])
    []
    """
    if not isinstance(value, str) or not value:
        return []
    import difflib

    folded = {name.casefold(): name for name in known}
    wanted = value.casefold()
    starts = [name for key, name in folded.items() if key.startswith(wanted)]
    close = [folded[key] for key in difflib.get_close_matches(wanted, list(folded), n=n, cutoff=0.5)]
    return list(dict.fromkeys(starts + close))[:n]


def did_you_mean(value, known) -> str:
    """"; did you mean x or y?" for the names nearest `value`, or "" when none is near.

    Parameters
    ----------
    value : object
        The name given.
    known : iterable of str
        The known names.

    Returns
    -------
    str
        The hint to append to a message (`nearest`'s names), or "".

    Examples
    --------
    >>> did_you_mean("lectur", ["article", "lecture", "lecture-draft"])
    '; did you mean lecture or lecture-draft?'
    >>> did_you_mean("zzz", ["h100-sxm"])
    ''
    """
    near = nearest(value, known)
    if not near:
        return ""
    return "; did you mean " + (near[0] if len(near) == 1 else ", ".join(near[:-1]) + " or " + near[-1]) + "?"


def short_repr(value) -> str:
    """repr(value), cut to a readable length: a 400-digit integer is not an error message.

    Parameters
    ----------
    value : object
        Anything.

    Returns
    -------
    str
        repr(value) when shorter than 40 characters, else its first 12 and the length.

    Examples
    --------
    >>> short_repr(0.8), short_repr(10**400)
    ('0.8', '100000000000... (401 characters)')
    """
    text = repr(value)
    return text if len(text) < 40 else f"{text[:12]}... ({len(text)} characters)"


def range_text(low=None, high=None, low_open=False, high_open=False) -> str:
    """Interval notation for messages: [0, 1], (0, inf), [1, inf).

    Parameters
    ----------
    low, high : float, optional
        Bounds (None: -inf / inf).
    low_open, high_open : bool, optional
        Open ends get a parenthesis (infinite ends always do).

    Returns
    -------
    str

    Examples
    --------
    >>> range_text(0, 1), range_text(0, None, low_open=True), range_text(1, 1e12)
    ('[0, 1]', '(0, inf)', '[1, 1e+12]')
    """
    left = "(-inf" if low is None else f"{'(' if low_open else '['}{_bound(low)}"
    right = "inf)" if high is None else f"{_bound(high)}{')' if high_open else ']'}"
    return f"{left}, {right}"


def _bound(value) -> str:
    """A range end as a reader writes it: 1, 0.5, 100000, 1e+12."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e6:
        return str(int(value))
    return f"{value:g}" if isinstance(value, float) else str(value)
