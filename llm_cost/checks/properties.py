"""Model invariants: what the formulas promise for any (model, gpu) pair, as hypothesis tests.

`llm-cost check` runs FOUNDATION against catalog entries or a user's own config.json and
datasheet (through `runner`); tests/test_properties.py runs the same checks in the test suite.
Each invariant builds a hypothesis test for one (model, gpu) pair; a failure comes back with
hypothesis's shrunk counterexample. The strategies are `strategies`' public ones.
"""

from __future__ import annotations

import math
from fractions import Fraction

from hypothesis import example, given
from hypothesis import strategies as st

from llm_cost.checks.invariant import REL, Invariant
from llm_cost.checks.strategies import (
    batches,
    bits,
    contexts,
    group_sizes,
    kv_widths,
    profiles,
    rows_per_sequence,
)
from llm_cost.counts import kv_bytes, kv_bytes_per_token, layer_windows, param_counts, weight_bytes
from llm_cost.counts.recurrent import state_bytes_per_sequence
from llm_cost.roofline import step_time
from llm_cost.serving import kv_capacity, requests_that_fit
from llm_cost.specs import Profile, WeightFormat


def _close_or_less(value: float, bound: float) -> bool:
    return value <= bound * (1 + REL) + 1e-18


# ---- time model -----------------------------------------------------------------------------

def _t_rows(model, gpu):
    @given(profile=profiles, batch=batches, per_sequence=rows_per_sequence, extra=rows_per_sequence, ctx=contexts)
    @example(profile=Profile("lecture-like", bw_efficiency=0.8, compute_efficiency=0.6, fixed_time_s=1e-3,
                             read_input_embedding=False, count_kv=True), batch=1, per_sequence=128, extra=1, ctx=1024)
    def prop(profile, batch, per_sequence, extra, ctx):
        before = step_time(model, gpu, profile, rows=batch * per_sequence, batch=batch, context=ctx).step_time_s
        after = step_time(model, gpu, profile, rows=batch * (per_sequence + extra), batch=batch,
                          context=ctx).step_time_s
        assert _close_or_less(before, after), f"T fell from {before} to {after} s with more rows"
    return prop


def _t_batch(model, gpu):
    @given(profile=profiles, batch=batches, more=batches, per_sequence=rows_per_sequence, ctx=contexts)
    @example(profile=Profile("kv", count_kv=True), batch=1, more=1, per_sequence=1, ctx=0)
    def prop(profile, batch, more, per_sequence, ctx):
        before = step_time(model, gpu, profile, rows=batch * per_sequence, batch=batch, context=ctx).step_time_s
        after = step_time(model, gpu, profile, rows=(batch + more) * per_sequence, batch=batch + more,
                          context=ctx).step_time_s
        assert _close_or_less(before, after), f"T fell from {before} to {after} s with a larger batch"
    return prop


def _t_context(model, gpu):
    @given(profile=profiles, batch=batches, per_sequence=rows_per_sequence, ctx=contexts, more=contexts)
    @example(profile=Profile("kv", count_kv=True), batch=4096, per_sequence=512, ctx=0, more=131_072)
    def prop(profile, batch, per_sequence, ctx, more):
        before = step_time(model, gpu, profile, rows=batch * per_sequence, batch=batch, context=ctx).step_time_s
        after = step_time(model, gpu, profile, rows=batch * per_sequence, batch=batch, context=ctx + more).step_time_s
        assert _close_or_less(before, after), f"T fell from {before} to {after} s with a longer context"
    return prop


def _t_between(model, gpu):
    @given(profile=profiles, batch=batches, per_sequence=rows_per_sequence, ctx=contexts)
    def prop(profile, batch, per_sequence, ctx):
        timing = step_time(model, gpu, profile, rows=batch * per_sequence, batch=batch, context=ctx)
        body = timing.step_time_s - timing.fixed_time_s
        assert max(timing.memory_time_s, timing.compute_time_s) <= body * (1 + REL)
        assert body <= (timing.memory_time_s + timing.compute_time_s) * (1 + REL)
        assert timing.memory_time_s > 0 and timing.compute_time_s > 0 and math.isfinite(timing.step_time_s)
    return prop


# ---- counts ---------------------------------------------------------------------------------

def _kv_linear(model, gpu):
    @given(width=kv_widths, batch=batches, ctx=contexts, more=contexts)
    def prop(width, batch, ctx, more):
        per = kv_bytes_per_token(model, width)
        assert per > 0
        kv = Profile("kv", count_kv=True)
        t1 = step_time(model, gpu, kv, rows=batch, batch=batch, context=ctx, kv_bytes_per_element=width)
        t2 = step_time(model, gpu, kv, rows=batch, batch=batch, context=ctx + more, kv_bytes_per_element=width)
        # batch x the K/V one sequence holds (windowed layers at most their window) + the new rows',
        # and a hybrid's recurrent state (in `held`) written back once more
        held1, held2 = kv_bytes(model, ctx, width), kv_bytes(model, ctx + more, width)
        state = state_bytes_per_sequence(model, width)
        assert math.isclose(t1.kv_bytes, batch * held1 + batch * per + batch * state, rel_tol=REL)
        assert math.isclose(t2.kv_bytes - t1.kv_bytes, batch * (held2 - held1), rel_tol=REL,
                            abs_tol=1e-12 * t2.kv_bytes + 1e-6)
        assert held2 - held1 <= more * per * (1 + REL)  # windows only drop K/V
        if not layer_windows(model):
            assert held2 - held1 == more * per
    return prop


def _bytes_grow_with_bits(model, gpu):
    @given(low=bits, step=st.floats(min_value=0.01, max_value=8.0), group=group_sizes, keep=st.booleans())
    def prop(low, step, group, keep):
        fewer_bytes = weight_bytes(model, WeightFormat("a", low, group, 16, 16, keep)).total
        more_bytes = weight_bytes(model, WeightFormat("b", low + step, group, 16, 16, keep)).total
        assert fewer_bytes < more_bytes, (
            f"{low}-bit weights ({fewer_bytes} B) not smaller than {low + step}-bit ({more_bytes} B)")
    return prop


def _active_le_total(model, gpu):
    def prop():
        counts = param_counts(model)
        assert 0 < counts.gemm_active <= counts.active <= counts.total
        assert counts.total == counts.active or model.moe is not None
    return prop


def _capacity_tight(model, gpu):
    @given(reserve=st.floats(min_value=0.0, max_value=0.9), width=kv_widths,
           per_request=st.floats(min_value=1.0, max_value=1e6))
    def prop(reserve, width, per_request):
        cap = kv_capacity(model, gpu, reserve=reserve, kv_bytes_per_element=width)
        per = cap.kv_bytes_per_token
        assert cap.kv_tokens * per <= cap.kv_bytes_available
        assert (cap.kv_tokens + 1) * per > cap.kv_bytes_available
        fit = requests_that_fit(cap.kv_tokens, per_request)
        size = Fraction(per_request)  # exact: float products round at the boundary
        assert fit * size <= cap.kv_tokens < (fit + 1) * size, "n fit and n + 1 must not"
    return prop


FOUNDATION = [
    Invariant("t_rows_monotone", "T(m) is non-decreasing in rows", _t_rows),
    Invariant("t_batch_monotone", "T(m) is non-decreasing in batch", _t_batch),
    Invariant("t_context_monotone", "T(m) is non-decreasing in context", _t_context),
    Invariant("t_between_max_and_sum", "max(memory, compute) <= T - fixed <= memory + compute", _t_between),
    Invariant("kv_linear", "KV bytes are linear in tokens and batch (windowed layers: up to their window)",
              _kv_linear),
    Invariant("bytes_grow_with_bits", "quantized weight bytes grow with bits", _bytes_grow_with_bits),
    Invariant("active_le_total", "active parameters never exceed total", _active_le_total),
    Invariant("capacity_tight", "KV tokens and requests that fit are tight: n fit, n + 1 do not",
              _capacity_tight),
]
