"""Invariants: the properties the formulas promise, as hypothesis checks runnable at run time.

`llm-cost check` runs them against catalog entries or a user's own config.json and datasheet;
tests/test_properties.py runs the same checks in the test suite. Each invariant builds a
hypothesis test for one (model, gpu) pair; a failure comes back with hypothesis's shrunk
counterexample. Strategies are named and defined once below.

Imports hypothesis: only the `check` command and the tests import this module.
"""

from __future__ import annotations

import math
from fractions import Fraction
from dataclasses import dataclass
from typing import Callable

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from llm_cost.counts import kv_bytes_per_token, param_counts, weight_bytes
from llm_cost.roofline import step_time
from llm_cost.specs import Accelerator, ModelSpec, Profile, WeightFormat

# ---- named strategies -----------------------------------------------------------------------

efficiencies = st.floats(min_value=0.05, max_value=1.0)
fixed_times_s = st.floats(min_value=0.0, max_value=5e-3)
profiles = st.builds(Profile, name=st.just("random"), bw_efficiency=efficiencies,
                     compute_efficiency=efficiencies, fixed_time_s=fixed_times_s,
                     read_input_embedding=st.booleans(), count_kv=st.booleans())
batches = st.integers(min_value=1, max_value=4096)
rows_per_sequence = st.integers(min_value=1, max_value=512)
contexts = st.integers(min_value=0, max_value=131_072)
bits = st.floats(min_value=1.0, max_value=16.0)
group_sizes = st.sampled_from([32, 64, 128, 256])
kv_widths = st.sampled_from([0.5, 1.0, 2.0, 4.0])

REL = 1e-9  # float tolerance for identities that hold exactly in real arithmetic


@dataclass(frozen=True)
class Invariant:
    """One promised property: a name, the statement, and a builder of its hypothesis test."""

    name: str
    statement: str
    build: Callable[[ModelSpec, Accelerator], Callable[[], None]]
    scope: str = "model"  # "model": run per (model, gpu); "formula": independent of both, run once


@dataclass(frozen=True)
class CheckResult:
    name: str
    statement: str
    passed: bool
    counterexample: str = ""
    model: str = "-"
    gpu: str = "-"


def _close_or_less(a: float, b: float) -> bool:
    return a <= b * (1 + REL) + 1e-18


# ---- time model -----------------------------------------------------------------------------

def _t_rows(model, gpu):
    @given(profile=profiles, batch=batches, r=rows_per_sequence, extra=rows_per_sequence, ctx=contexts)
    @example(profile=Profile("lecture-like", 0.8, 0.6, 1e-3, False, True), batch=1, r=128, extra=1, ctx=1024)
    def prop(profile, batch, r, extra, ctx):
        a = step_time(model, gpu, profile, rows=batch * r, batch=batch, context=ctx).total_s
        b = step_time(model, gpu, profile, rows=batch * (r + extra), batch=batch, context=ctx).total_s
        assert _close_or_less(a, b), f"T fell from {a} to {b} s with more rows"
    return prop


def _t_batch(model, gpu):
    @given(profile=profiles, batch=batches, more=batches, r=rows_per_sequence, ctx=contexts)
    @example(profile=Profile("kv", count_kv=True), batch=1, more=1, r=1, ctx=0)
    def prop(profile, batch, more, r, ctx):
        a = step_time(model, gpu, profile, rows=batch * r, batch=batch, context=ctx).total_s
        b = step_time(model, gpu, profile, rows=(batch + more) * r, batch=batch + more, context=ctx).total_s
        assert _close_or_less(a, b), f"T fell from {a} to {b} s with a larger batch"
    return prop


def _t_context(model, gpu):
    @given(profile=profiles, batch=batches, r=rows_per_sequence, ctx=contexts, more=contexts)
    @example(profile=Profile("kv", count_kv=True), batch=4096, r=512, ctx=0, more=131_072)
    def prop(profile, batch, r, ctx, more):
        a = step_time(model, gpu, profile, rows=batch * r, batch=batch, context=ctx).total_s
        b = step_time(model, gpu, profile, rows=batch * r, batch=batch, context=ctx + more).total_s
        assert _close_or_less(a, b), f"T fell from {a} to {b} s with a longer context"
    return prop


def _t_between(model, gpu):
    @given(profile=profiles, batch=batches, r=rows_per_sequence, ctx=contexts)
    def prop(profile, batch, r, ctx):
        t = step_time(model, gpu, profile, rows=batch * r, batch=batch, context=ctx)
        body = t.total_s - t.fixed_s
        assert max(t.memory_s, t.compute_s) <= body * (1 + REL)
        assert body <= (t.memory_s + t.compute_s) * (1 + REL)
        assert t.memory_s > 0 and t.compute_s > 0 and math.isfinite(t.total_s)
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
        assert math.isclose(t2.kv_bytes - t1.kv_bytes, batch * more * per, rel_tol=REL, abs_tol=1e-6)
        assert math.isclose(t1.kv_bytes, (batch * ctx + batch) * per, rel_tol=REL)
    return prop


def _bytes_grow_with_bits(model, gpu):
    @given(low=bits, step=st.floats(min_value=0.01, max_value=8.0), group=group_sizes, keep=st.booleans())
    def prop(low, step, group, keep):
        a = weight_bytes(model, WeightFormat("a", low, group, 16, 16, keep)).total
        b = weight_bytes(model, WeightFormat("b", low + step, group, 16, 16, keep)).total
        assert a < b, f"{low}-bit weights ({a} B) not smaller than {low + step}-bit ({b} B)"
    return prop


def _active_le_total(model, gpu):
    def prop():
        p = param_counts(model)
        assert 0 < p.gemm_active <= p.active <= p.total
        assert p.total == p.active or model.moe is not None
    return prop


def _capacity_tight(model, gpu):
    from llm_cost.serving.capacity import kv_capacity, requests_that_fit

    @given(reserve=st.floats(min_value=0.0, max_value=0.9), width=kv_widths,
           per_request=st.floats(min_value=1.0, max_value=1e6))
    def prop(reserve, width, per_request):
        cap = kv_capacity(model, gpu, reserve=reserve, kv_bytes_per_element=width)
        per = cap.kv_bytes_per_token
        assert cap.kv_tokens * per <= cap.kv_bytes_available
        assert (cap.kv_tokens + 1) * per > cap.kv_bytes_available
        n = requests_that_fit(cap.kv_tokens, per_request)
        size = Fraction(per_request)  # exact: float products round at the boundary
        assert n * size <= cap.kv_tokens < (n + 1) * size, "n fit and n + 1 must not"
    return prop


FOUNDATION = [
    Invariant("t_rows_monotone", "T(m) is non-decreasing in rows", _t_rows),
    Invariant("t_batch_monotone", "T(m) is non-decreasing in batch", _t_batch),
    Invariant("t_context_monotone", "T(m) is non-decreasing in context", _t_context),
    Invariant("t_between_max_and_sum", "max(memory, compute) <= T - fixed <= memory + compute", _t_between),
    Invariant("kv_linear", "KV bytes are linear in tokens and batch", _kv_linear),
    Invariant("bytes_grow_with_bits", "quantized weight bytes grow with bits", _bytes_grow_with_bits),
    Invariant("active_le_total", "active parameters never exceed total", _active_le_total),
    Invariant("capacity_tight", "KV tokens and requests that fit are tight: n fit, n + 1 do not",
              _capacity_tight),
]


def all_invariants() -> list[Invariant]:
    """Every registered invariant: per-model ones first, then the formulas'."""
    from llm_cost.checks.formulas import FORMULAS

    return list(FOUNDATION) + list(FORMULAS)


def run(invariant: Invariant, model: ModelSpec, gpu: Accelerator, *, examples: int = 50) -> CheckResult:
    """Run one invariant with `examples` hypothesis examples; a failure carries its counterexample."""
    test = invariant.build(model, gpu)
    names = dict(model=model.name, gpu=gpu.name) if invariant.scope == "model" else {}
    if hasattr(test, "hypothesis"):
        test = settings(max_examples=examples, deadline=None, database=None, derandomize=True,
                        suppress_health_check=list(HealthCheck), print_blob=False,
                        report_multiple_bugs=False)(test)
    try:
        test()
    except Exception as err:  # an assertion, or a crash inside the property: both are a FAIL row
        notes = [n for n in getattr(err, "__notes__", []) if n.strip()]
        first = str(err).splitlines()[0] if str(err) else ""
        if not isinstance(err, AssertionError):
            first = f"{type(err).__name__}: {first}"
        detail = "; ".join([first or "assertion failed", *notes])
        return CheckResult(invariant.name, invariant.statement, False, " ".join(detail.split()), **names)
    return CheckResult(invariant.name, invariant.statement, True, **names)


def run_all(models: list[ModelSpec], gpus: list[Accelerator], *, examples: int = 50,
            invariants: list[Invariant] | None = None) -> list[CheckResult]:
    """Model invariants for every (model, gpu) pair, then formula invariants once."""
    invariants = all_invariants() if invariants is None else invariants
    results = [run(inv, m, g, examples=examples)
               for inv in invariants if inv.scope == "model" for m in models for g in gpus]
    if models and gpus:
        results += [run(inv, models[0], gpus[0], examples=examples)
                    for inv in invariants if inv.scope == "formula"]
    return results
