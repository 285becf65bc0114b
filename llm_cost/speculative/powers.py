r"""Expected tokens per round without a logarithm: alpha^(gamma+1) by squaring for whole gamma.

    E = (1 - a^n) / (1 - a),   n = gamma + 1

n is a whole number, so a^n takes about 2 log2(n) multiplications (left-to-right binary
exponentiation), where `np.log` and `np.expm1` cost 20 to 40 multiplications each (float64
logarithms and exponentials are scalar libm calls on an AVX2 machine). The bits of n select a or 1
without a branch: max(a, 1 - bit) is a where the bit is set and 1 where it is not (0 <= a <= 1),
so every element runs the same operations and the leading zero bits of a small n leave P at 1
exactly. Elements where this form loses accuracy take the logarithmic one (`log_form`):

- 1 - a^n below `CANCELLATION_LIMIT` (alpha = 1, or alpha^n near 1): 1 - P cancels, and the
  relative error of E grows as P / (1 - P). Above the limit it stays under about 2 log2(n) x 64
  ulps (1e-13 at n = 255, 4e-14 at n = 16), and E lies in [1, n] without clipping: P <= a gives E >= 1, and
  E is at least 1 / (128 n) below n there, far more than the rounding.
- n not a whole number in [1, `SQUARING_MAX_N`] (a caller's fractional gamma, or gamma >= 255).

alpha = 0 gives P = 0 and E = 1, gamma = 0 gives E = (1 - a) / (1 - a) = 1, both exactly; alpha = 1
gives n through the logarithmic form. The choice is made per element from its own a and n, so a
number, a broadcast grid and a flat array give the same bits.

In the code `a` is alpha, `n` gamma + 1 and `e` E.
"""

from __future__ import annotations

import numpy as np

SQUARING_MAX_N = 255  # n = gamma + 1 whose bits fit one byte
BLOCK = 1 << 16  # elements per block of work arrays: 512 KB of float64
CANCELLATION_LIMIT = 2.0 ** -6  # 1 - a^n below this: the logarithmic form
_SHIFTS = np.arange(8, dtype=np.uint8)[:, None]
_NONE = np.empty(0, dtype=np.intp)


def log_form(a: np.ndarray, n: np.ndarray) -> np.ndarray:
    """E (`e`) as expm1(n ln a) / (a - 1) for alpha `a` and `n` = gamma + 1: no cancellation near a = 1,
    exactly n at a = 1, clipped to [1, n]."""
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.asarray(np.log(a) * n)
        np.expm1(e, out=e)  # a^n - 1
        e /= a - 1.0  # 0 / 0 at a = 1, set below
    one = a == 1.0
    if one.any():
        np.copyto(e, n, where=one)
    np.maximum(e, 1.0, out=e)
    np.minimum(e, n, out=e)  # np.clip(e, 1, n) in two passes (no NaN here)
    return e


def squared_power(a, n_u8, out, planes_u8, factor, levels: int):
    """a^n into `out` for 1-D float64 `a` and uint8 `n_u8` (1 <= n < 2^levels), by squaring;
    `n_u8` is overwritten.

    f_j = max(a, 1 - bit `j` of n) is a where bit j is set and 1 where it is not; P = f_top, then
    P <- P^2 f_j for the lower bits. `planes_u8` is a (>= levels, len(a)) uint8 scratch array and
    `factor` a float64 one of len(a).
    """
    size = a.size
    bits = planes_u8[:levels, :size]
    np.invert(n_u8, out=n_u8)
    np.right_shift(n_u8[None, :], _SHIFTS[:levels], out=bits)
    np.bitwise_and(bits, 1, out=bits)  # 1 where the bit of n is clear
    np.maximum(a, bits[-1], out=out, casting="unsafe")
    for j in range(levels - 2, -1, -1):
        np.multiply(out, out, out=out)
        np.multiply(out, np.maximum(a, bits[j], out=factor, casting="unsafe"), out=out)
    return out


class Scratch:
    """Work arrays of `squared_form` for blocks of up to `size` elements."""

    def __init__(self, size: int):
        self.n_u8 = np.empty(size, dtype=np.uint8)
        self.planes_u8 = np.empty((8, size), dtype=np.uint8)
        self.factor = np.empty(size)
        self.power = np.empty(size)
        self.one_minus_a = np.empty(size)
        self.low = np.empty(size, dtype=bool)
        self.whole = np.empty(size)


def squared_form(a, n, out, scratch: Scratch, levels: int | None = None) -> np.ndarray:
    """E into `out` for 1-D float64 `a` and `n` of one length; returns the positions that need
    `log_form` (whose `out` is then undefined). Call it under np.errstate(divide="ignore",
    invalid="ignore"): alpha = 1 divides 0 by 0 here.

    `levels`: every n is known to be a whole number in [1, 2^levels) with 2^levels <= 256 (a
    checked gamma + 1); None checks each n.
    """
    size = a.size
    n_u8, power, low = scratch.n_u8[:size], scratch.power[:size], scratch.low[:size]
    squarable = None
    if levels is None:  # some n may not be squarable: they take n = 1 here, then `log_form`
        rounded = np.rint(n, out=scratch.whole[:size])
        squarable = (rounded == n) & (n >= 1.0) & (n <= SQUARING_MAX_N)
        np.copyto(n_u8, np.where(squarable, n, 1.0), casting="unsafe")
        levels = max(int(n_u8.max()).bit_length(), 1)
    else:
        np.copyto(n_u8, n, casting="unsafe")
    squared_power(a, n_u8, power, scratch.planes_u8, scratch.factor[:size], levels)
    one_minus_p = np.subtract(1.0, power, out=power)
    np.divide(one_minus_p, np.subtract(1.0, a, out=scratch.one_minus_a[:size]), out=out)
    np.less(one_minus_p, CANCELLATION_LIMIT, out=low)
    if squarable is not None:
        low |= ~squarable
    return np.flatnonzero(low) if low.any() else _NONE


def levels_for(top_n: float) -> int | None:
    """Bits of the largest n = gamma + 1 when every whole n up to it can be squared, else None."""
    return max(int(top_n).bit_length(), 1) if top_n <= SQUARING_MAX_N else None


def expected_tokens(a, n):
    """E (`e`) for float arrays `a` and `n` = gamma + 1 of any broadcast shape (a numpy scalar for 0-d),
    in blocks of `BLOCK` elements (the work arrays stay that size however large the grid)."""
    a, n = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(n, dtype=float))
    shape = a.shape
    a, n = a.ravel(), n.ravel()  # copies only where broadcast
    e = np.empty(a.size)
    scratch = Scratch(min(a.size, BLOCK))
    redo = []
    with np.errstate(divide="ignore", invalid="ignore"):
        for start in range(0, a.size, BLOCK):
            low = squared_form(a[start:start + BLOCK], n[start:start + BLOCK], e[start:start + BLOCK], scratch)
            if low.size:
                redo.append(low + start)
    if redo:
        at = np.concatenate(redo)
        e[at] = log_form(a[at], n[at])
    e = e.reshape(shape)
    return e if e.ndim else e[()]
