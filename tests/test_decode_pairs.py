"""A decode batch's attention pairs, `roofline.pass_terms.decode_pairs` (issue 24.2: one helper): r S +
n causal_pairs(r) is the sum of every sequence's `causal_pairs(r, c_i)`, and the fast paths' hot loops
call it rather than writing it out (the call costs fast_engine about 1%: README "Speed")."""

import ast
import importlib
import inspect

import pytest

from llm_cost.roofline.pass_terms import causal_pairs, decode_pairs


@pytest.mark.parametrize("rows_each", [1, 2, 5])
def test_decode_pairs_is_the_sum_over_sequences(rows_each):
    contexts = [0, 1, 7, 300, 4096]
    for n in range(len(contexts) + 1):
        each = sum(causal_pairs(rows_each, c) for c in contexts[:n])
        assert decode_pairs(rows_each, n, sum(contexts[:n])) == each


def test_decode_pairs_broadcasts_over_arrays():
    import numpy as np

    cached, sequences = np.array([0, 10, 2000]), np.array([0, 1, 3])
    assert decode_pairs(2, sequences, cached).tolist() == [0.0, 23.0, 4009.0]


# The fast paths' hot loops and the expressions of r S + n causal_pairs(r) they wrote inline until they
# called `decode_pairs` (issue 24.2, strictly: no pairs expression of serving's own)
HOT_LOOPS = [
    ("llm_cost.serving.fast_engine", "rows_each * cached + decoders * dec_pairs"),
    ("llm_cost.serving.fast_pipeline", "kv_dec + nd * one"),
    ("llm_cost.serving.fast_prefix", "1 * kv_dec + decoders * cp1"),
]


@pytest.mark.parametrize("module, expression", HOT_LOOPS, ids=[row[0] for row in HOT_LOOPS])
def test_hot_loops_call_decode_pairs(module, expression):
    tree = ast.parse(inspect.getsource(importlib.import_module(module)))
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
             and node.func.id == "decode_pairs"]
    assert calls, f"{module} does not call decode_pairs"
    wanted = ast.dump(ast.parse(expression, mode="eval").body)
    assert not any(ast.dump(node) == wanted for node in ast.walk(tree) if isinstance(node, ast.expr)), \
        f"{module} writes decode_pairs' expression {expression!r} itself"
