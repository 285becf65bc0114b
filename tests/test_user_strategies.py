"""What a user's own test suite writes with llm_cost.checks.strategies (README, "Property tests
for your own models"): properties over models x accelerators x batches and over alpha / gamma."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_cost.checks import strategies as lst
from llm_cost.roofline import step_time
from llm_cost.speculative import closed_forms
from llm_cost.specs import Accelerator, ModelSpec


@settings(max_examples=40, deadline=None)
@given(model=lst.models(), gpu=lst.accelerators(), batch=lst.batches, context=lst.contexts)
def test_step_time_at_least_memory_and_compute(model, gpu, batch, context):
    t = step_time(model, gpu, "lecture", batch=batch, context=context)
    assert t.step_time_s >= max(t.memory_time_s, t.compute_time_s) > 0


@settings(max_examples=100, deadline=None)
@given(alpha=lst.alphas, gamma=lst.gammas)
def test_leviathan_speedup_at_zero_cost_is_expected_tokens(alpha, gamma):
    assert closed_forms.speedup(alpha, gamma, 0.0) == closed_forms.expected_tokens(alpha, gamma)


@settings(max_examples=30, deadline=None)
@given(model=lst.built_models(moe=True), dense=lst.built_models(moe=False), gpu=lst.built_accelerators())
def test_built_models_are_valid_gqa_shapes(model, dense, gpu):
    assert isinstance(model, ModelSpec) and isinstance(gpu, Accelerator)
    assert model.moe is not None and dense.moe is None
    for m in (model, dense):
        assert m.num_heads % m.num_kv_heads == 0 and m.hidden_size == m.num_heads * m.head_dim


@settings(max_examples=30, deadline=None)
@given(p=lst.distributions(), pq=lst.distributions(pair=True))
def test_distributions_are_probability_vectors(p, pq):
    q, r = pq
    assert q.shape == r.shape
    for v in (p, q, r):
        assert v.size >= 2 and np.all(v >= 0) and math.isclose(v.sum(), 1.0, rel_tol=1e-12)


def test_every_public_name_is_a_strategy_or_returns_one():
    assert len(lst.__all__) == len(set(lst.__all__)) >= 20
    for name in lst.__all__:
        value = getattr(lst, name)
        if not isinstance(value, st.SearchStrategy):
            assert callable(value) and value.__doc__, name  # a documented function returning one
            value = value()
        assert isinstance(value, st.SearchStrategy), name
