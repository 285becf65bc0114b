"""T's coefficients for a loop that prices many passes (`PassCost.inline_coefficients`), T evaluated from
them in one call (`InlineTerms.evaluator`, `memory_evaluator`) or summed over a stretch of uniform decode
passes (`InlineTerms.decode_stretch`), and where a uniform decode pass is memory-bound.

Where `PassCost.inline_coefficients` gives these terms (no routed experts, GEMM ramp, measured
kernels, data-parallel attention or overlapped collectives), `PassCost.time` is

    T = ((max((w + kv kvb) / bps, (rows rf + pairs pf) / fps) [x stages]
         + (cf + rows cr)) + (hf + rows hr)) + fixed

with w `weight_bytes`, kvb `kv_token_bytes`, bps `bytes_per_s`, rf `row_flops`, pf `pair_flops`, fps
`flops_per_s`, cf, cr the collectives' fixed and per-row seconds and hf, hr the hand-offs'. This module
is where the serving engine's fast paths get T for numbers: `evaluator`'s closures write it once (the
max + fixed of one stage, `_roofline`; a deployment's stages and communication around it, `_total`, by
`pass_terms.deployed_sum`), and `decode_stretch`'s two loops write the max + fixed again for speed (a
call per pass cost 25% there); serving/ writes no T expression of its own, and every evaluation is
`PassCost.time` bit for bit (tests/test_one_pass_time.py, tests/test_inline_terms.py).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from llm_cost.roofline.pass_terms import causal_pairs, deployed_sum

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
    "gemm_half_width": lambda value, cost: cost.dense_width_factor == cost.expert_width_factor == 1.0,
    "kv_time_factor": lambda value, cost: value == 1.0,
    "pair_time_factor": lambda value, cost: value == 1.0,
    "row_pairs": _off,  # measured prefill attention (`timed_pairs`)
    "attention_dp": lambda value, cost: value == 1,
    "overlap_comm": _off,
    # read by `uniform_terms` (the caller's kv_tokens and pairs), at build time (kv_curve -> kv_time_factor)
    # or by the operator breakdown (the tables' names), never by `time`
    **dict.fromkeys(("kv_windows", "num_layers", "state_tokens", "kv_curve", "kernel_source", "expert_source",
                     "kv_source", "dense_width", "expert_width"), _any),  # the widths: read by gemm_half_width
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

    @property
    def deployed(self) -> bool:
        """More than one stage, or collectives or hand-offs: T is more than max(memory, compute) + fixed
        (`PassCost.deployed`)."""
        stages, comm_fixed, comm_row, handoff_fixed, handoff_row = self[7:12]
        return stages != 1 or bool(comm_fixed or comm_row or handoff_fixed or handoff_row)

    def evaluator(self):
        """fn(rows, kv_tokens, pairs): `PassCost.time` of these coefficients for numbers, operation for
        operation (the module doc's T), the coefficients bound in a closure: a hot loop pays one call,
        no unpacking. Where T's scalar formula is written (`time` calls this; `memory_evaluator` is the
        same closures without the compute term; `decode_stretch` writes it in its loops;
        tests/test_one_pass_time.py holds them to `PassCost.time` bit for bit). On one stage without
        communication the closure is max(memory, compute) + fixed alone; a deployment's wraps that max
        (+ 0.0, the same bits: both terms are >= 0) in `deployed_total`'s stages, collectives, hand-offs
        and fixed (`_total`)."""
        if not self.deployed:
            return _roofline(*self[:6], self.fixed_s)
        return _deployed(_roofline(*self[:6], 0.0), _total(*self[6:12]))

    def memory_evaluator(self):
        """fn(rows, kv_tokens, pairs=0.0): T of a pass whose compute term is no longer than its memory term
        (`memory_bound_from` says where), the compute term left out: `evaluator`'s value there bit for bit
        (`pairs` is not read)."""
        if not self.deployed:
            return _memory(*self[:3], self.fixed_s)
        return _deployed(_memory(*self[:3], 0.0), _total(*self[6:12]))

    def time(self, rows, kv_tokens, pairs):
        """`PassCost.time` of these coefficients for numbers: `evaluator`'s T (a loop that prices many
        passes keeps the evaluator rather than calling this)."""
        return self.evaluator()(rows, kv_tokens, pairs)

    def decode_stretch(self, n: int, written: int, k_max: int, t: float = 0.0,
                       watch: float = math.inf) -> tuple[int, float, float, int]:
        """Up to `k_max` uniform decode passes of `n` sequences holding `written` K/V tokens in all, pass j
        (from 1) timed as `PassCost.time(n, kv, kv)`, kv = written + j n (each sequence's one row after its
        cached tokens: `decode_pairs(1, n, kv - n)` = kv pairs), stopping after the pass that ends at
        or past `watch` (the clock at the start `t`). Returns (passes, seconds, the integral of the K/V
        held over time (sum of each pass's seconds x its kv), K/V held at the end).

        The sum of T over a stretch, in one call (Orca's decode stretches, `serving.fast_reservations`): the
        evaluator's formula written in the loop, where a call per pass cost 25% (tests/test_one_pass_time.py
        holds each pass to `PassCost.time` bit for bit). Memory-bound from the first pass on with the K/V
        read growing faster than the pairs' compute (`memory_bound_from`'s margin), the compute term is
        left out; a deployment's passes are `_total` of the max (`PassCost.deployed_total`)."""
        weight, kv_bytes, bandwidth, row_flops, pair_flops, flops_per_s, fixed_s = self[:7]
        gemm = n * row_flops  # `PassCost.flops`: rows x row_flops first
        taken, span, area_w = 0, 0.0, 0.0
        kv, step = float(written), float(n)  # after pass j's += n: its K/V read and pairs (floats: faster)
        keep = 1 - KEEP_MARGIN
        deployed = self.deployed
        if not deployed and pair_flops / flops_per_s <= keep * kv_bytes / bandwidth and \
                (gemm + (written + n) * pair_flops if pair_flops else gemm) / flops_per_s \
                <= keep * (weight + (written + n) * kv_bytes) / bandwidth:
            for taken in range(1, k_max + 1):  # max(memory, compute) is memory in every pass
                kv += step
                dt = (weight + kv * kv_bytes) / bandwidth + fixed_s
                span += dt
                area_w += dt * kv
                if t + span >= watch:
                    break
            return taken, span, area_w, written + taken * n
        total = _total(*self[6:12]) if deployed else None
        for taken in range(1, k_max + 1):
            kv += step
            mem = (weight + kv * kv_bytes) / bandwidth
            comp = (gemm + kv * pair_flops if pair_flops else gemm) / flops_per_s
            dt = (mem if mem > comp else comp) + fixed_s if total is None else total(mem if mem > comp else comp, n)
            span += dt
            area_w += dt * kv
            if t + span >= watch:
                break
        return taken, span, area_w, written + taken * n

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


def _roofline(weight, kv_bytes, bandwidth, row_flops, pair_flops, flops_per_s, fixed):
    """`InlineTerms.evaluator` on one stage without communication: max(memory, compute) + `fixed`."""
    def timed(rows, kv_tokens, pairs):
        memory = (weight + kv_tokens * kv_bytes) / bandwidth
        compute = (rows * row_flops + pairs * pair_flops if pair_flops else rows * row_flops) / flops_per_s
        return (memory if memory > compute else compute) + fixed
    return timed


def _memory(weight, kv_bytes, bandwidth, fixed):
    """`InlineTerms.memory_evaluator` on one stage without communication: memory + `fixed`."""
    def timed(rows, kv_tokens, pairs=0.0):
        return (weight + kv_tokens * kv_bytes) / bandwidth + fixed
    return timed


def _total(fixed, stages, comm_fixed, comm_row, handoff_fixed, handoff_row):
    """fn(longer, rows): `PassCost.deployed_total` of one stage's max(memory, compute) (or its memory term)
    `longer` over `rows` rows: `pass_terms.deployed_sum` (stages x longer + collectives + hand-offs + fixed,
    the one composition `PassCost` and `StepTime` evaluate too), its collectives and hand-offs as
    `PassCost.collectives_s` and `handoff_s` compute them."""
    collectives, handoffs = bool(comm_fixed or comm_row), bool(handoff_fixed or handoff_row)

    def total(longer, rows):
        return deployed_sum(longer, stages, comm_fixed + rows * comm_row if collectives else 0.0,
                            handoff_fixed + rows * handoff_row if handoffs else 0.0, fixed, False)
    return total


def _deployed(longer, total):
    """fn(rows, kv_tokens, pairs=0.0): `total` (`_total`) of `longer` (fn(rows, kv_tokens, pairs), one stage's
    max(memory, compute) or its memory term)."""
    def timed(rows, kv_tokens, pairs=0.0):
        return total(longer(rows, kv_tokens, pairs), rows)
    return timed
