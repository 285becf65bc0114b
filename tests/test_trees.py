"""Token trees: node counts, tau from top-k hit rates, verification cost against batch."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_cost import speculative as sp
from llm_cost.catalog import load_accelerator, load_model
from llm_cost.errors import InvalidValueError
from llm_cost.speculative import roofline_speedup
from llm_cost.specs import PRESETS
from llm_cost.speculative.trees import STRONG_DRAFT, WEAK_DRAFT, TopKHits, tree_nodes, tree_speedup, tree_tau

H100 = load_accelerator("h100-sxm")
LECTURE = PRESETS["lecture"]
TARGET = load_model("llama-3.1-8b")

widths_lists = st.lists(st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=6)
chain_depths = st.integers(1, 12)


def test_node_counts():
    assert tree_nodes((4, 2, 2, 1)) == 44  # the lecture exercise 9
    assert tree_nodes((8, 4, 2, 1)) == 168  # the lecture §14 pitfall 10
    assert tree_nodes((1, 1, 1, 1)) == 4
    assert tree_nodes((3,)) == 3


@given(widths_lists)
def test_nodes_are_the_sum_of_level_sizes(widths):
    level_sizes = [math.prod(widths[:d + 1]) for d in range(len(widths))]
    assert tree_nodes(widths) == sum(level_sizes)
    assert tree_nodes(widths) >= len(widths)


@given(widths_lists)
def test_tau_bounds_and_monotonicity(widths):
    tau = tree_tau(widths, WEAK_DRAFT)
    assert 1.0 <= tau <= len(widths) + 1
    # a wider tree accepts at least as much (top-k rates do not fall with k)
    wider = [8 for _ in widths]
    assert tree_tau(wider, WEAK_DRAFT) >= tau
    assert tree_tau(widths, STRONG_DRAFT) >= tau  # a better draft accepts more


@given(chain_depths, st.floats(0.0, 1.0))
def test_a_chain_is_eq1(depth, h1):
    hits = TopKHits.of({1: h1})
    assert tree_tau((1,) * depth, hits) == pytest.approx(sp.expected_tokens(h1, depth), rel=1e-9)


def test_chain_tree_equals_roofline_speedup():
    # widths 1x1x1x1 with top-1 rate 0.44 is the chain gamma = 4, alpha = 0.44, c per level = c
    batch = np.array([1, 8, 32, 128])
    tree = tree_speedup(TARGET, H100, LECTURE, widths=(1, 1, 1, 1), hits=WEAK_DRAFT, batch=batch,
                        c=0.05, context=1024)
    chain = roofline_speedup(TARGET, H100, LECTURE, alpha=0.44, gamma=4, c=0.05, batch=batch, context=1024)
    assert np.allclose(tree.speedup, chain.speedup, rtol=1e-12)
    assert np.allclose(tree.round_s, chain.round_s, rtol=1e-12)


def test_tree_verification_rows_and_cost():
    t = tree_speedup(TARGET, H100, LECTURE, widths=(4, 2, 2, 1), hits=WEAK_DRAFT,
                     batch=np.array([1, 32]), c=0.05, context=1024)
    assert t.verify_rows.tolist() == [45, 32 * 45]
    assert t.depth == 4
    assert np.allclose(t.draft_round_s, 4 * 0.05 * t.base_s)
    assert t.verify_over_base[0] == pytest.approx(1.0, abs=0.01)  # batch 1: free
    assert t.verify_over_base[1] > 4  # batch 32: 1440 rows, compute-bound
    assert t.speedup[0] > 2 > 1 > t.speedup[1]


def test_speedup_falls_with_batch():
    t = tree_speedup(TARGET, H100, LECTURE, widths=(8, 4, 2, 1), hits=WEAK_DRAFT,
                     batch=np.array([1, 2, 4, 8, 16, 32, 64]), context=1024)
    assert np.all(np.diff(t.speedup) < 0)


@pytest.mark.parametrize("mapping,message", [
    ({1: 1.2}, "top-1 hit rate must be in [0, 1], got 1.2"),
    ({1: 0.5, 2: 0.4}, "must be at least the top-1 rate"),
    ({0: 0.5}, "top-k hit rate k must be in [1, inf)"),
    ({}, "must not be empty"),
    ({1: float("nan")}, "top-1 hit rate must be a finite number"),
])
def test_bad_hit_rates(mapping, message):
    with pytest.raises(InvalidValueError) as err:
        TopKHits.of(mapping)
    assert message in str(err.value)


def test_width_without_a_rate_is_an_error():
    with pytest.raises(InvalidValueError, match=r"no top-3 hit rate .* \(rates given for k = 1, 2, 4, 8\)"):
        tree_tau((4, 3), WEAK_DRAFT)
    with pytest.raises(InvalidValueError, match=r"tree width must be in \[1, inf\)"):
        tree_nodes((4, 0))
    with pytest.raises(InvalidValueError, match="at least one depth"):
        tree_nodes(())
