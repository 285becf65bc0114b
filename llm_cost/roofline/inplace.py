"""Arithmetic written into a temporary array the caller gave up (`PassCost.step_total`'s million-point
sweeps): the same ufunc on the same operands as the plain expression, so the same bits, without a
second temporary."""

from __future__ import annotations

import operator
import sys

OPERATORS = {"add": operator.add, "multiply": operator.mul, "true_divide": operator.truediv,
              "maximum": lambda left, right: sys.modules["numpy"].maximum(left, right)}


def into(x, op: str, y):
    """`x op y` (op: add, multiply, true_divide, maximum; `x` and `y` its operands), written into `x`
    when `x` is a float64 array that already has the result's shape and dtype; `x` must be a
    temporary its caller made.

    The same ufunc on the same operands as the plain expression, so the same bits; numbers and
    other arrays get the plain expression (its result type included).
    """
    np = sys.modules.get("numpy")  # an array argument has loaded it; `llm-cost model` never does
    if np is not None and type(x) is np.ndarray and x.ndim and x.dtype.char == "d" and fits_result(np, x, y):
        return getattr(np, op)(x, y, out=x)
    return OPERATORS[op](x, y)


def fits_result(np, x, y) -> bool:
    """`x op y` has the float64 `x`'s shape and dtype (`y` the other operand)."""
    if type(y) is float or type(y) is int:  # Python numbers take the array's dtype (NEP 50)
        return True
    shape, dtype = getattr(y, "shape", None), getattr(y, "dtype", None)
    if shape is None or dtype is None or dtype.kind not in "biuf" or dtype.itemsize > 8:
        return False
    return shape == () or shape == x.shape or np.broadcast_shapes(x.shape, shape) == x.shape
