"""Issue 24.2: one pass time. `PassCost.inline_coefficients` is where the serving engine's fast paths
get T's coefficients; evaluated as its docstring writes T, they give `PassCost.time` bit for bit, and
they are None wherever T is more than that formula."""

from __future__ import annotations

import dataclasses

import pytest

from llm_cost.catalog import load_accelerator, load_model
from llm_cost.parallel import deployed_cost
from llm_cost.roofline.pass_cost import PassCost
from llm_cost.serving.replica import IterationCost
from llm_cost.specs import BF16, PRESETS
from llm_cost.specs.deployment import Deployment

GPU = load_accelerator("h100-sxm")
CASES = [(1, 1, 1), (2, 0, 17), (512, 300_000, 1e6), (64, 12_345, 55_555.5)]  # rows, K/V tokens, pairs


def _inline(terms, rows, kv, pairs):
    w, kvb, bps, rf, pf, fps, fixed, stages, cf, cr, hf, hr = terms
    mem, comp = (w + kv * kvb) / bps, (rows * rf + pairs * pf if pf else rows * rf) / fps
    body = max(mem, comp) * stages if stages != 1 else max(mem, comp)
    body = body + (cf + rows * cr if (cf or cr) else 0.0)
    body = body + (hf + rows * hr if (hf or hr) else 0.0)
    return body + fixed if fixed else body


def _costs():
    model = load_model("llama-3.1-8b")
    one = IterationCost.from_roofline(model, GPU, PRESETS["lecture"])
    yield "one GPU", one
    for dep in (Deployment(tp=2), Deployment(tp=2, pp=2)):
        yield f"tp{dep.tp} pp{dep.pp}", deployed_cost(one, model, GPU, BF16, dep)


@pytest.mark.parametrize("name, cost", list(_costs()))
def test_the_inline_formula_is_time_bit_for_bit(name, cost):
    terms = cost.inline_coefficients()
    assert terms is not None, name
    for rows, kv, pairs in CASES:
        assert _inline(terms, rows, kv, pairs) == cost.time(rows, kv, pairs), (name, rows)
        # the one inline evaluation the library has (Orca's mixed iterations call it): the same bits
        assert terms.time(rows, kv, pairs).hex() == cost.time(rows, kv, pairs).hex(), (name, rows)


def test_inline_time_is_time_bit_for_bit_over_random_passes():
    import random

    rng = random.Random(7)
    costs = dict(_costs())
    costs["prefill-heavy, no fixed time"] = dataclasses.replace(costs["one GPU"], fixed_s=0.0)
    for name, cost in costs.items():
        terms = cost.inline_coefficients()
        for _ in range(2000):
            rows = rng.choice([1, 2, 31, 512, 8192, rng.randrange(1, 20000)])
            kv = rng.randrange(0, 3_000_000)
            pairs = rng.choice([0, kv + rows, rng.randrange(0, 10**9)])
            assert terms.time(rows, kv, pairs).hex() == float(cost.time(rows, kv, pairs)).hex(), (name, rows, kv)
            # the communication part (the pipelined fast path's `comm_s`): `comm_time_s`'s bits
            assert terms.comm_s(rows).hex() == float(cost.comm_time_s(rows)).hex(), (name, rows)


def test_no_inline_coefficients_where_time_is_more():
    moe = PassCost.from_specs(load_model("mixtral-8x7b"), GPU, PRESETS["lecture"])
    assert moe.inline_coefficients() is None  # routed experts
    dense = PassCost.from_specs(load_model("llama-3.1-8b"), GPU, PRESETS["lecture"])
    assert dataclasses.replace(dense, small_gemm_factor=0.5, gemm_half_rows=64).inline_coefficients() is None
    assert dataclasses.replace(dense, kv_time_factor=1.5).inline_coefficients() is None
    assert dataclasses.replace(dense, stages=2, overlap_comm=True).inline_coefficients() is None

    class OwnTime(PassCost):
        def time(self, rows, kv_tokens, pairs):
            return 1.0
    assert OwnTime(**{f.name: getattr(dense, f.name) for f in dataclasses.fields(dense)}).inline_coefficients() is None


def test_the_engine_asks_the_pass_cost_where_a_decode_pass_is_memory_bound():
    # `iteration.memory_bound_from` is `InlineTerms.memory_bound_from` of the target (g + 1 rows a
    # sequence) and of the draft (one row), not a formula of its own; and each threshold holds by
    # `PassCost.memory_s` / `compute_s` on a uniform pass of n sequences (`uniform_pass`).
    import math

    from llm_cost.roofline.pass_terms import uniform_pass
    from llm_cost.serving.iteration import memory_bound_from
    from llm_cost.serving.serve_config import SpecConfig

    target = PassCost.from_specs(load_model("llama-3.1-8b"), GPU, PRESETS["lecture"])
    small = PassCost.from_specs(load_model("llama-3.2-1b"), GPU, PRESETS["lecture"])
    slow = dataclasses.replace(small, flops_per_s=small.flops_per_s * 0.1)  # a compute-bound draft
    spec = SpecConfig(4, 0.8, draft_cost=slow)
    t_from, d_from = memory_bound_from(target, spec, 4, 128)
    assert t_from == target.inline_coefficients().memory_bound_from(5, 128)
    assert d_from == slow.inline_coefficients().memory_bound_from(1, 128)
    for cost, r, bound in ((target, 5, t_from), (slow, 1, d_from)):
        assert 0 < max(x for x in bound if x < math.inf)
        for n in (1, 17, 64, 128):
            S = bound[n]
            if S == math.inf:
                continue
            kv, pairs = uniform_pass(n * r, n, S / n)
            assert cost.compute_s(n * r, pairs) < cost.memory_s(n * r, kv), (r, n)
            if S >= 2 * n:
                kv, pairs = uniform_pass(n * r, n, (S - 2 * n) / n)
                assert cost.compute_s(n * r, pairs) > cost.memory_s(n * r, kv) * (1 - 1e-9), (r, n)


def test_a_field_inline_coefficients_does_not_declare_gives_none():
    """Review 24, defect 2: an allow-list, not a list of the features it knows: a field added to the pass
    cost (here a subclass's, nonzero) and not declared in `pass_cost.INLINE` leaves T to `time`."""
    from llm_cost.roofline.inline_terms import INLINE

    dense = PassCost.from_specs(load_model("llama-3.1-8b"), GPU, PRESETS["lecture"])
    assert dense.inline_coefficients() is not None

    @dataclasses.dataclass(frozen=True)
    class Newer(PassCost):
        new_term_s: float = 0.0

    newer = Newer(**{f.name: getattr(dense, f.name) for f in dataclasses.fields(dense)}, new_term_s=1e-3)
    assert newer.inline_coefficients() is None
    assert set(INLINE) == {f.name for f in dataclasses.fields(PassCost)}  # no stale name, none missing


def test_a_step_record_gives_times_t_bit_for_bit():
    # issue 24.2: StepTime's step_time_s composes its terms with PassCost's own composition
    # (`pass_terms.deployed_sum`, under `PassCost.deployed_total`): the same bits as `time` on deployments
    # with and without overlap, numbers and arrays
    import random

    import numpy as np

    rng = random.Random(11)
    model = load_model("mixtral-8x7b")
    one = IterationCost.from_roofline(model, GPU, PRESETS["lecture"])
    costs = [deployed_cost(one, model, GPU, BF16, dep) for dep in
             (Deployment(), Deployment(tp=2), Deployment(tp=2, pp=2), Deployment(pp=4), Deployment(tp=4, ep=4))]
    costs += [dataclasses.replace(cost, overlap_comm=True) for cost in costs[1:]]
    for cost in costs:
        for _ in range(300):
            batch = rng.randrange(1, 257)
            rows, context = batch * rng.choice([1, 5, 17]), rng.randrange(0, 40_000)
            step = cost.step(float(rows), float(batch), float(context))
            kv, pairs = cost.uniform_terms(float(rows), float(batch), float(context))
            assert float(step.step_time_s).hex() == float(cost.time(float(rows), kv, pairs)).hex(), (cost.stages, rows)
        grid = cost.step(np.array([1.0, 64.0, 4096.0]), np.array([1.0, 64.0, 8.0]), 1000.0)
        kv, pairs = cost.uniform_terms(np.array([1.0, 64.0, 4096.0]), np.array([1.0, 64.0, 8.0]), 1000.0)
        assert np.array_equal(grid.step_time_s, cost.time(np.array([1.0, 64.0, 4096.0]), kv, pairs))
