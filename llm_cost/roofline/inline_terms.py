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


def _any(value, cost) -> bool:
    return True


def _off(value, cost) -> bool:
    return not value


# Every `PassCost` field with the state in which `inline_coefficients` gives T (`(value, cost) -> bool`):
# an allow-list, so that a field added to `PassCost` and not here leaves a hot loop calling `time`.
INLINE = {
    **dict.fromkeys(("weight_bytes", "kv_token_bytes", "row_flops", "pair_flops", "bytes_per_s", "flops_per_s",
                     "fixed_s", "stages", "comm_fixed_s", "comm_row_s", "handoff_fixed_s", "handoff_row_s"),
                    _any),  # `InlineTerms`' own coefficients
    "num_experts": _off,  # routed experts: the weights read depend on the rows
    **dict.fromkeys(("expert_bytes", "experts_per_token", "expert_rows_scale", "expert_flops_share",
                     "expert_parallel"), lambda value, cost: not cost.num_experts),  # read with routed experts only
    "expert_curve": _off,  # a measured MoE curve ramps the GEMMs
    **dict.fromkeys(("small_gemm_factor", "gemm_half_rows"), lambda value, cost: not cost.gemm_ramped),
    "kv_time_factor": lambda value, cost: value == 1.0,
    "pair_time_factor": lambda value, cost: value == 1.0,
    "row_pairs": _off,  # measured prefill attention (`timed_pairs`)
    "attention_dp": lambda value, cost: value == 1,
    "overlap_comm": _off,
    # read by `uniform_terms` (the caller's kv_tokens and pairs), at build time (kv_curve -> kv_time_factor)
    # or by the operator breakdown (the tables' names), never by `time`
    **dict.fromkeys(("kv_windows", "num_layers", "state_tokens", "kv_curve", "kernel_source", "expert_source",
                     "kv_source"), _any),
}


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

    def time(self, rows, kv_tokens, pairs):
        """`PassCost.time` of these coefficients for numbers, operation for operation (the module doc's
        T), in one call: a hot loop that prices an iteration of any shape (prompts and decoders mixed)
        calls this rather than `PassCost.time`'s chain of methods (tests/test_inline_terms.py holds
        them equal bit for bit)."""
        weight, kv_bytes, bandwidth, row_flops, pair_flops, flops_per_s, fixed, stages, comm_fixed, comm_row, \
            handoff_fixed, handoff_row = self
        memory = (weight + kv_tokens * kv_bytes) / bandwidth
        flops = rows * row_flops
        compute = (flops + pairs * pair_flops if pair_flops else flops) / flops_per_s
        longer = memory if memory > compute else compute
        if stages == 1 and not (comm_fixed or comm_row or handoff_fixed or handoff_row):
            return longer + fixed
        body = longer * stages if stages != 1 else longer
        body = body + (comm_fixed + rows * comm_row if comm_fixed or comm_row else 0.0)
        body = body + (handoff_fixed + rows * handoff_row if handoff_fixed or handoff_row else 0.0)
        return body + fixed if fixed else body

    def comm_s(self, rows):
        """`PassCost.comm_time_s` of these coefficients (collectives + hand-offs), operation for operation."""
        comm_fixed, comm_row, handoff_fixed, handoff_row = self[8:12]
        return ((comm_fixed + rows * comm_row if comm_fixed or comm_row else 0.0)
                + (handoff_fixed + rows * handoff_row if handoff_fixed or handoff_row else 0.0))

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
