"""The fields of an input spec checked against their annotations, in one place.

A frozen dataclass built by hand (`Deployment(tp="x")`, `PassCost(bytes_per_s=0)`) used to keep a
string, a nan or a negative number and fail later with a TypeError, or return nan. `check_fields`
reads each field's annotation (written as text: the modules use `from __future__ import annotations`)
and refuses, naming the field, what cannot be meant:

    bool -> a bool;  str -> a str;  int -> a whole number >= 0;  float -> a finite number >= 0;
    X | None -> None or X;  tuple[...] -> a tuple (of numbers >= 0 when it says int or float);
    a class name -> an instance of a class of that name.

Ranges tighter than ">= 0" stay in each class's own `__post_init__`, which runs after this.
"""

from __future__ import annotations

import dataclasses
import math
import numbers

from llm_cost.errors import InvalidValueError, check_number, short_repr

NUMBERS = {"int": True, "float": False}  # annotation -> whole numbers only
OPAQUE = {"object", "Any", "Callable", "dict", "np.ndarray"}  # checked by the class itself, or not at all


def check_fields(instance, prefix: str = "", *, signed=(), infinite=(), skip=()) -> None:
    """Raise InvalidValueError naming a field of `instance` whose value does not fit its annotation.

    Parameters
    ----------
    instance : dataclass instance
        The spec being built (call from its `__post_init__`).
    prefix : str, optional
        Written before the field's name in messages (`model.` gives `model.hidden_size`).
    signed : iterable of str, optional
        Numeric fields that may be negative.
    infinite : iterable of str, optional
        Numeric fields that may be +inf (a rate of inf: everything at once).
    skip : iterable of str, optional
        Fields the class checks itself (a million-entry tuple checked at C speed).

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Link:
    ...     bytes_per_s: float
    ...     duplex: bool = False
    ...     def __post_init__(self):
    ...         check_fields(self, "link.")
    >>> Link(4e11).bytes_per_s
    400000000000.0
    >>> Link(float("nan"))
    Traceback (most recent call last):
    ...
    llm_cost.errors.InvalidValueError: link.bytes_per_s must be a finite number, got nan
    >>> Link(1.0, duplex="yes")
    Traceback (most recent call last):
    ...
    llm_cost.errors.InvalidValueError: link.duplex must be True or False, got 'yes'
    """
    plan = _plans.get((type(instance), prefix, tuple(signed), tuple(infinite), tuple(skip)))
    if plan is None:
        plan = _plans[(type(instance), prefix, tuple(signed), tuple(infinite), tuple(skip))] = [
            (field.name, str(field.type), field.name in signed, field.name in infinite)
            for field in dataclasses.fields(instance) if field.init and field.name not in skip]
    for name, annotation, sign_ok, inf_ok in plan:
        value = getattr(instance, name)
        kind = type(value)
        if (kind is bool and annotation == "bool") or (kind is str and annotation == "str") or (
                kind in _PLAIN and annotation in _PLAIN_OK[kind] and (sign_ok or value >= 0)
                and (value < math.inf or (inf_ok and value == math.inf))) or (
                kind is tuple and annotation in _NESTED) or (value is None and annotation.endswith("| None")):
            continue  # the common case, at attribute speed (specs are built in the planner's loops)
        check_value(prefix + name, value, annotation, signed=sign_ok, infinite=inf_ok, field=name)


_plans: dict = {}  # (class, prefix, signed, infinite, skip) -> [(field, annotation, signed, infinite)]
_PLAIN = (int, float)
_PLAIN_OK = {int: ("int", "float", "int | None", "float | None"), float: ("float", "float | None")}
_NESTED = ("tuple", "tuple | None", "tuple[tuple[int, int], ...]", "tuple[tuple[str, object], ...]",
           "tuple[str, ...]", "tuple[tuple[int, float], ...]")  # tuples whose items are not numbers to check


def check_value(name: str, value, annotation: str, *, signed=False, infinite=False, field=None) -> None:
    """Raise InvalidValueError naming `name` unless `value` fits `annotation` (see the module doc)."""
    kinds = [part.strip() for part in annotation.split("|")]
    if "None" in kinds:
        if value is None:
            return
        kinds.remove("None")
    params = (field,) if field else ()
    if len(kinds) > 1:  # a union: any of its kinds will do
        for kind in kinds:
            try:
                return check_value(name, value, kind, signed=signed, infinite=infinite, field=field)
            except InvalidValueError:
                pass
        raise InvalidValueError(f"{name} must be one of {', '.join(kinds)}, got {type(value).__name__}", params=params)
    kind = kinds[0]
    if kind in OPAQUE:
        return
    if kind == "bool":
        if not isinstance(value, bool):
            raise InvalidValueError(f"{name} must be True or False, got {short_repr(value)}", params=params)
    elif kind == "str":
        if not isinstance(value, str):
            raise InvalidValueError(f"{name} must be a string, got {short_repr(value)}", params=params)
    elif kind in NUMBERS:
        _number(name, value, NUMBERS[kind], signed, infinite, params)
    elif kind == "tuple" or kind.startswith("tuple["):
        if not isinstance(value, tuple):
            raise InvalidValueError(f"{name} must be a tuple, got {short_repr(value)}", params=params)
        inner = kind[len("tuple["):-1].split(",")[0].strip() if kind.startswith("tuple[") else ""
        if inner in NUMBERS:
            for item in value:
                _number(name, item, NUMBERS[inner], signed, infinite, params)
    elif kind.isidentifier() and kind[:1].isupper():
        if not any(cls.__name__ == kind for cls in type(value).__mro__):
            raise InvalidValueError(f"{name} must be a {kind}, got {type(value).__name__}", params=params)


def _number(name, value, integer, signed, infinite, params) -> None:
    """A number of a numeric field: real, finite (or +inf where allowed), >= 0 unless signed."""
    if infinite and isinstance(value, numbers.Real) and not isinstance(value, bool) and value == math.inf:
        return
    try:
        check_number(name, value, low=None if signed else 0, integer=integer)
    except InvalidValueError as err:
        raise InvalidValueError(str(err), params=params or err.params) from None


def positive_int(owner: str, name: str, value) -> None:
    """A whole number >= 1 of field `name` of `owner` (refused naming owner.name)."""
    check_number(f"{owner}.{name}", value, low=1, integer=True)


def layer_indices(field: str, indices, *, low: int = 0, high: int | None = None) -> None:
    """Layer indices: a tuple of distinct whole numbers in [low, high), ascending."""
    if not isinstance(indices, tuple):
        raise InvalidValueError(f"{field} must be a tuple of layer indices")
    for index in indices:
        check_number(field, index, low=low, high=None if high is None else high - 1, integer=True)
    if list(indices) != sorted(set(indices)):
        raise InvalidValueError(f"{field} must be distinct and ascending, got {indices}")
