"""T's coefficients for a loop that evaluates it inline (`PassCost.inline_coefficients`), and where a
uniform decode pass of them is memory-bound.

Where `PassCost.inline_coefficients` gives these terms (no routed experts, GEMM ramp, measured
kernels, data-parallel attention or overlapped collectives), `PassCost.time` is

    T = ((max((w + kv kvb) / bps, (rows rf + pairs pf) / fps) [x stages]
         + (cf + rows cr)) + (hf + rows hr)) + fixed

with w `weight_bytes`, kvb `kv_token_bytes`, bps `bytes_per_s`, rf `row_flops`, pf `pair_flops`, fps
`flops_per_s`, cf, cr the collectives' fixed and per-row seconds and hf, hr the hand-offs'.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from llm_cost.roofline.pass_terms import causal_pairs

# memory_bound_from's margin: compute under (1 - KEEP_MARGIN) x memory, so rounding cannot flip the max
KEEP_MARGIN = 1e-9


class InlineTerms(NamedTuple):
    """`PassCost.inline_coefficients`: T's coefficients for a loop that evaluates it inline (module doc)."""

    weight_bytes: float
    kv_token_bytes: float
    bytes_per_s: float
    row_flops: float
    pair_flops: float
    flops_per_s: float
    fixed_s: float
    stages: int
    comm_fixed_s: float
    comm_row_s: float
    handoff_fixed_s: float
    handoff_row_s: float

    def memory_bound_from(self, rows_each: int, max_sequences: int) -> list:
        """For uniform decode passes of n sequences, `rows_each` (r) rows each after S cached tokens in
        all (rows = n r, K/V tokens S + n r, pairs r S + n `causal_pairs`(r)): per n in 0 ..
        `max_sequences`, the S from which the pass is memory-bound (math.inf: not known to be), so a
        loop may leave the compute term out from there on, exactly: max(memory, compute) is memory.

        Both terms are linear in S: compute - (1 - margin) memory = a S + b(n) <= 0 from S = -b / a on
        when a < 0 (K/V read outweighs attention arithmetic), everywhere when a, b <= 0; the margin
        (`KEEP_MARGIN`) and one token more keep rounding from flipping the max. Symbols: `n`
        sequences, `r` rows each, `w` weight bytes, `a` the slope and `b` the intercept in S."""
        w, kvb, bps, rf, pf, fps = self[:6]
        r, keep = rows_each, 1 - KEEP_MARGIN
        half = causal_pairs(r)
        a = r * pf / fps - keep * kvb / bps
        out = []
        for n in range(max_sequences + 1):
            b = n * r * rf / fps + n * half * pf / fps - keep * (w + n * r * kvb) / bps
            out.append(0 if a <= 0 and b <= 0 else math.ceil(-b / a) + 1 if a < 0 else math.inf)
        return out
