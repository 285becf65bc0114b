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
