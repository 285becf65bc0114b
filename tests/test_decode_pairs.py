"""A decode batch's attention pairs, `roofline.pass_terms.decode_pairs` (issue 24.2: one helper): r S +
n causal_pairs(r) is the sum of every sequence's `causal_pairs(r, c_i)`, and the fast paths' hot loops,
which write it inline (a call per iteration would cost speed), write exactly it."""

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


# (module, the inline expression, the definitions it reads, its namespace from (r, n, S)), each
# expression as the module writes it (a change to it fails here until this table follows it)
INLINE = [
    ("llm_cost.serving.fast_engine", "rows_each * cached + decoders * dec_pairs",
     "dec_pairs = causal_pairs(rows_each)",
     lambda r, n, s: {"rows_each": r, "decoders": n, "cached": s, "dec_pairs": causal_pairs(r)}),
    ("llm_cost.serving.fast_pipeline", "(kv_dec + nd * one if nd else 0.0)", "one, co = causal_pairs(1), ",
     lambda r, n, s: {"kv_dec": s, "nd": n, "one": causal_pairs(1)}),
    ("llm_cost.serving.fast_prefix", "1 * kv_dec + decoders * cp1", "causal_pairs(1))",
     lambda r, n, s: {"kv_dec": s, "decoders": n, "cp1": causal_pairs(1)}),
]


@pytest.mark.parametrize("module, expression, definition, namespace", INLINE, ids=[row[0] for row in INLINE])
def test_hot_loops_inline_decode_pairs_bit_for_bit(module, expression, definition, namespace):
    source = inspect.getsource(importlib.import_module(module))
    line = next((text for text in source.splitlines() if expression in text), None)
    assert line is not None and "decode_pairs" in line, f"{module} no longer writes {expression!r} beside its name"
    # in the code itself, not only in a comment or a string: the expression is a node of the module's tree
    wanted = ast.dump(ast.parse(expression.strip(), mode="eval").body)
    assert any(ast.dump(node) == wanted for node in ast.walk(ast.parse(source)) if isinstance(node, ast.expr)), \
        f"{module}: {expression!r} is not an expression of its code"
    assert definition in source
    every_r = (1, 2, 4) if "rows_each" in expression else (1,)
    for r in every_r:
        for n in (1, 2, 31, 256):
            for s in (0, 1, 999, 123_456_789, 2**40 + 3):
                got, want = eval(expression, {}, namespace(r, n, s)), decode_pairs(r, n, s)
                assert got == want and float(got).hex() == float(want).hex(), (module, r, n, s)
