"""The roofline speedup over flat arrays in cache-sized blocks: what `batched._round` computes, element
for element the same operations, for inputs that are all one shape (a sweep's points listed one by one).

On flat 10^6-element arrays every intermediate is 8 MB, and some 25 element-wise passes over them
are bound by memory bandwidth. Here each pass runs over `BLOCK` elements (512 KB per array), so
what one pass writes is still in cache when the next reads it, and writes into the result arrays
or into work arrays allocated once per call. The time formula is `PassCost.step_total` on each block; E is
`powers.squared_form`, whose few elements that need the logarithmic form are collected over all
blocks and done at the end (with the speedup at those elements).
"""

from __future__ import annotations

import numpy as np

from llm_cost.roofline import PassCost
from llm_cost.speculative import powers

BLOCK = powers.BLOCK  # elements per block: 512 KB of float64


def blockable(*arrays) -> bool:
    """Every array that is not 0-d is C-contiguous float64 of one shape, and there are enough elements."""
    shaped = [array for array in arrays if array.ndim]
    if len(shaped) < 3 or shaped[0].size < BLOCK:
        return False
    shape = shaped[0].shape
    return all(array.shape == shape and array.dtype == np.float64 and array.flags.c_contiguous for array in shaped)


def _into(result, out):
    """`result` (a block's total) stored in `out`: nothing to do when it was computed there."""
    if result is not out:
        np.copyto(out, result)


def flat_round(cost: PassCost, count_kv: bool, draft_cost, a, g, b, ctx, c):
    """`batched._round` blockwise for `blockable` inputs: alpha `a`, gamma `g` and batch `b` of
    one shape, `ctx` and `c` of that shape or 0-d (c is unused with `draft_cost`); `e` is E.

    Returns (c, E, T(B), T(B (gamma + 1)), draft step, round, speedup, verification compute-bound),
    arrays of the inputs' shape (c as given when it is 0-d).
    """
    shape = a.shape
    a, g, b = a.reshape(-1), g.reshape(-1), b.reshape(-1)
    ctx = ctx.reshape(-1) if ctx.ndim else ctx
    c = c.reshape(-1) if draft_cost is None and c.ndim else c
    size = a.size
    e, base, verify, draft, round_s, speedup = (np.empty(size) for _ in range(6))
    bound = np.empty(size, dtype=bool)
    ratio = np.empty(size) if draft_cost is not None else c
    g1 = np.empty(min(size, BLOCK))
    scratch = powers.Scratch(g1.size)
    levels = powers.levels_for(float(g.max()) + 1.0)
    redo = []
    with np.errstate(divide="ignore", invalid="ignore"):  # alpha = 1: 0 / 0 in E, redone below
        for start in range(0, size, BLOCK):
            block = slice(start, start + BLOCK)
            bb, gg, g1_block = b[block], g[block], g1[:min(BLOCK, size - start)]
            e_s, base_s, verify_s = e[block], base[block], verify[block]
            draft_s, round_ss, speedup_s = draft[block], round_s[block], speedup[block]
            cx = ctx[block] if ctx.ndim else ctx
            np.add(gg, 1.0, out=g1_block)
            low = powers.squared_form(a[block], g1_block, e_s, scratch, levels)
            if low.size:
                redo.append(low + start)
            np.copyto(base_s, bb)  # rows = b, in the array the total is written to
            _into(cost.step_total(base_s, bb, cx, count_kv=count_kv, rows_scratch=True), base_s)
            np.multiply(g1_block, bb, out=verify_s)  # rows b (g + 1)
            total, bound[block] = cost.step_total(verify_s, bb, cx, count_kv=count_kv, with_bound=True,
                                                  rows_scratch=True)
            _into(total, verify_s)
            if draft_cost is None:
                np.multiply(c[block] if c.ndim else c, base_s, out=draft_s)
            else:
                np.copyto(draft_s, bb)
                _into(draft_cost[0].step_total(draft_s, bb, cx, count_kv=draft_cost[1], rows_scratch=True),
                      draft_s)
                np.divide(draft_s, base_s, out=ratio[block])
            np.multiply(gg, draft_s, out=round_ss)
            np.add(round_ss, verify_s, out=round_ss)  # g draft_s + verify_s
            np.multiply(e_s, base_s, out=speedup_s)
            np.divide(speedup_s, round_ss, out=speedup_s)
    if redo:
        at = np.concatenate(redo)
        e[at] = powers.log_form(a[at], g[at] + 1.0)
        speedup[at] = e[at] * base[at] / round_s[at]
    fields = (e, base, verify, draft, round_s, speedup, bound)
    ratio = ratio.reshape(shape) if ratio.ndim else ratio
    return (ratio, *(array.reshape(shape) for array in fields))
