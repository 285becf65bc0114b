"""The public functions' arguments, checked at their entry by one decorator (issue 29).

A public function called with a string for a number, None for a spec, a list, nan, inf or a negative
size used to fail deep inside with a TypeError or AttributeError, or to return nan. `@check_arguments()` reads
the function's parameters once and, on each call, checks the arguments given against a rule: the
rule of `RULES` for a parameter of that name, or one the decorator is given. A spec parameter takes
its spec or (where the function resolves names) a catalog name, resolved here so that an unknown name
is refused naming the parameter (`target: unknown model 'x'; ...`). Defaults are not checked (the
library wrote them), and the rules only catch what no function means: tighter ranges stay where the
formula is. The cost is a dictionary look-up and an isinstance per argument.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers

from llm_cost.errors import InvalidValueError, LlmCostError, check_number, short_repr
from llm_cost.grids import checked as checked_grid

MAX_COUNT = 1e18  # tokens, rows, requests: beyond any run, and far from float overflow in a product
MAX_TOKENS = 10**7  # one request's prompt or output tokens: far past any context window (requests, plans, workloads)


class Rule:
    """How one parameter is checked: `check(name, value)` returns the value to pass on."""

    def check(self, name: str, value):  # pragma: no cover - overridden
        return value


class Number(Rule):
    """A finite real number in [low, high] (open ends as marked); `grid`: an array of them as well;
    `vector`: an array only (empty allowed); `infinite`: +inf as well (a rate of inf: all at once); `optional`: None."""

    def __init__(self, low=0, high=None, *, low_open=False, high_open=False, integer=False, grid=False,
                 optional=False, vector=False, infinite=False):
        self.limits = dict(low=low, high=high, low_open=low_open, high_open=high_open, integer=integer)
        self.grid, self.optional, self.vector, self.infinite = grid or vector, optional, vector, infinite

    def check(self, name, value):
        kind, lim = type(value), self.limits
        if (kind is float or kind is int) and not lim["integer"] and not lim["low_open"] and not lim["high_open"] \
                and (lim["low"] is None or value >= lim["low"]) and (value <= (math.inf if lim["high"] is None
                                                                                 else lim["high"])) and value < math.inf:
            return value  # the common case, at attribute speed
        if (value is None and self.optional) or (self.infinite and isinstance(value, float) and value == float("inf")):
            return value
        if self.vector and (isinstance(value, (numbers.Real, str)) or value is None or not hasattr(value, "__len__")):
            raise InvalidValueError(f"{name} must be an array of numbers, got {short_repr(value)}", params=(name,))
        if self.vector and len(value) == 0:
            return value  # nothing to check: an empty grid is the function's to answer
        if self.grid and not isinstance(value, (numbers.Real, str)) and value is not None:
            try:
                arr = checked_grid(name, value, **self.limits)
            except (TypeError, ValueError) as err:
                if isinstance(err, LlmCostError):
                    raise
                raise InvalidValueError(f"{name} must be a number or an array of numbers, got {short_repr(value)}",
                                        params=(name,)) from None
            return value if hasattr(value, "dtype") else arr  # a list comes back as the array it means
        check_number(name, value, **self.limits)
        return value


class Either(Rule):
    """`single` for a number (or a string), `many` for a list or tuple."""

    def __init__(self, single: Rule, many: Rule):
        self.single, self.many = single, many

    def check(self, name, value):
        many = isinstance(value, (list, tuple))
        return (self.many if many else self.single).check(name, value)


class Text(Rule):
    """A non-empty string (an identifier when `identifier`)."""

    def __init__(self, *, identifier=False):
        self.identifier = identifier

    def check(self, name, value):
        if not isinstance(value, str) or not value or (self.identifier and not value.isidentifier()):
            what = "an identifier" if self.identifier else "a non-empty string"
            raise InvalidValueError(f"{name} must be {what}, got {short_repr(value)}", params=(name,))
        return value


class Path(Rule):
    """A file's path: a string or an os.PathLike."""

    def check(self, name, value):
        import os

        if not isinstance(value, (str, os.PathLike)) or not str(value):
            raise InvalidValueError(f"{name} must be a file's path, got {short_repr(value)}", params=(name,))
        return value


class Table(Rule):
    """A dict of non-empty string keys, each value passing `item`."""

    def __init__(self, item: Rule):
        self.item = item

    def check(self, name, value):
        if not isinstance(value, dict) or not all(isinstance(key, str) and key for key in value):
            raise InvalidValueError(f"{name} must be a dict of names to values, got {short_repr(value)}",
                                    params=(name,))
        for entry in value.values():
            self.item.check(name, entry)
        return value


class Spec(Rule):
    """An instance of the class named `kind` (matched by name along its MRO, so that this floor imports
    no spec), or a name that `resolve` turns into one; `optional`: None passes."""

    def __init__(self, kind: str, resolve=None, *, optional=False, what: str = "a catalog name"):
        self.kind, self.resolve, self.optional, self.what = kind, resolve, optional, what
        self.matches: dict = {}  # type -> whether it is (a subclass of) `kind`

    def check(self, name, value):
        kind = type(value)
        known = self.matches.get(kind)
        if known is None:
            known = self.matches[kind] = any(cls.__name__ == self.kind for cls in kind.__mro__)
        if known or (value is None and self.optional):
            return value
        if isinstance(value, str) and self.resolve is not None:
            try:
                return self.resolve(value)
            except LlmCostError as err:
                message = str(err) if _names(str(err), name) else f"{name}: {err}"
                raise type(err)(message, params=(name, *err.params)) from None
        also = f" or {self.what}" if self.resolve is not None else ""
        raise InvalidValueError(f"{name} must be a {self.kind}{also}, got {type(value).__name__}", params=(name,))


class Choice(Rule):
    """One of `allowed` (case ignored, returned as `allowed` spells it)."""

    def __init__(self, *allowed: str, optional=False):
        self.allowed, self.optional = allowed, optional

    def check(self, name, value):
        from llm_cost.errors import check_choice

        if value is None and self.optional:
            return value
        return check_choice(name, value, self.allowed)


class Flag(Rule):
    """True or False."""

    def check(self, name, value):
        if not isinstance(value, bool):
            raise InvalidValueError(f"{name} must be True or False, got {short_repr(value)}", params=(name,))
        return value


class Many(Rule):
    """A list or tuple (not a string) of `least` (1; 0 when `empty`) to `most` items, each passing `item`."""

    def __init__(self, item: Rule | None = None, *, least=1, most=None, optional=False, empty=False):
        self.item, self.least, self.most, self.optional = item, 0 if empty else least, most, optional

    def check(self, name, value):
        if value is None and self.optional:
            return value
        if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or not hasattr(value, "__iter__"):
            raise InvalidValueError(f"{name} must be a list of values, got {short_repr(value)}", params=(name,))
        if len(value) < self.least or (self.most is not None and len(value) > self.most):
            limit = (f"{self.least:,}" if self.least == self.most else f"{self.least:,} to {self.most:,}") \
                if self.most is not None else f"at least {self.least:,}"
            raise InvalidValueError(f"{name} must hold {limit} values, got {len(value):,}", params=(name,))
        if self.item is not None:
            checked = [self.item.check(name, item) for item in value]
            if any(resolved is not item for resolved, item in zip(checked, value)):  # a name resolved to its spec
                return type(value)(checked) if isinstance(value, (list, tuple)) else checked
        return value


def _names(message: str, name: str) -> bool:
    import re

    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", message) is not None


def _resolvers():
    """The loaders of specs by name (imported when a rule table is first built)."""
    from llm_cost.catalog.loader import as_accelerator, as_model, as_profile
    from llm_cost.specs.weights import as_weights

    return as_model, as_accelerator, as_profile, as_weights


@functools.lru_cache(maxsize=1)
def default_rules() -> dict[str, Rule]:
    """The rule of each parameter name that means the same in every public function."""
    as_model, as_accelerator, as_profile, as_weights = _resolvers()
    model, size = Spec("ModelSpec", as_model), Number(0, MAX_COUNT)
    profile = Spec("Profile", as_profile, what="a preset name")
    weights = Spec("WeightFormat", as_weights, what="a format's name")
    return {
        "model": model, "target": model, "draft": model, "gpu": Spec("Accelerator", as_accelerator),
        "profile": profile, "draft_profile": profile, "weights": weights, "draft_weights": weights,
        "deployment": Spec("Deployment"), "draft_deployment": Spec("Deployment"), "workload": Spec("Workload"),
        "replica": Spec("Replica"), "config": Spec("ServeConfig"), "hits": Spec("TopKHits"),
        "space": Spec("PlanSpace"), "grid": Spec("Grid"), "speculation": Spec("Speculation"),
        "context": Number(None), "rows": size, "batch": Number(0, 1e12), "isl": size, "osl": size,
        "nbytes": size, "alpha": Number(0, 1), "gamma": Number(0, integer=True), "c": Number(0),
        "c_hat": Number(0), "reserve": Number(0, 1, high_open=True),
        "kv_bytes_per_element": Number(0, 64, low_open=True), "bytes_per_element": Number(0, 64, low_open=True),
        "tp": Number(1, 1e6, integer=True), "seed": Number(0, 2**63, integer=True),
        "max_len": Number(1, MAX_COUNT, integer=True),
        "kv_tokens": Number(0, MAX_COUNT), "skip_unfit": Flag(), "measured": Flag(), "across": Flag(),
        "fast": Flag(), "lower_is_better": Flag(), "gamma_max": Number(1, 4096, integer=True),
        "path": Path(), "cost": Spec("PassCost"),
    }


def check_arguments(*, arrays=(), **rules: Rule):
    """Decorate a public function: each argument given is checked by its rule before the call.

    The rule of a parameter is the one given here, else `default_rules()`'s for its name; parameters
    with neither are the function's own to check, and None passes where it is the default. `arrays`:
    the numeric parameters that also take an array (a grid the function broadcasts over).

    Examples
    --------
    >>> @check_arguments(n=Number(1, integer=True))
    ... def tokens(model, n=1):
    ...     return model.num_layers * n
    >>> tokens("gpt-3-13b", 2)
    80
    >>> tokens(None)
    Traceback (most recent call last):
    ...
    llm_cost.errors.InvalidValueError: model must be a ModelSpec or a catalog name, got NoneType
    >>> tokens("gpt-3-13b", n=0.5)
    Traceback (most recent call last):
    ...
    llm_cost.errors.InvalidValueError: n must be a whole number, got 0.5
    """

    def decorate(fn):
        table = positional = none_ok = None  # read on the first call: importing a module decorates many

        @functools.wraps(fn)
        def call(*args, **kwargs):
            nonlocal table, positional, none_ok
            if table is None:
                signature = inspect.signature(fn).parameters
                names = list(signature)
                none_ok = {name for name, param in signature.items() if param.default is None}
                table = _table(names, rules, arrays)
                positional = [(index, name, table[name]) for index, name in enumerate(names)
                              if table[name] is not None]
            if args:
                args = list(args)
                count = len(args)
                for index, name, rule in positional:
                    if index < count and (args[index] is not None or name not in none_ok):
                        args[index] = rule.check(name, args[index])
            for name, value in kwargs.items():
                rule = table.get(name)
                if rule is not None and (value is not None or name not in none_ok):
                    kwargs[name] = rule.check(name, value)
            return fn(*args, **kwargs)

        return call

    return decorate


def _table(names, rules, arrays) -> dict:
    """Each parameter's rule: given, else the default of its name; `arrays` widened to grids."""
    import copy

    defaults = default_rules()
    table = {name: rules[name] if name in rules else defaults.get(name) for name in names}
    for name in arrays:
        table[name] = copy.copy(table[name])
        table[name].grid = True
    return table


