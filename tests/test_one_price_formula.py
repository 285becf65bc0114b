"""Issue 24.4, deliverable 3: dollars from GPU-seconds and a GPU-hour's price are one formula
(`requests.request.gpu_usd`, `usd_per_million_tokens`), which `request`, `table`, `plan` and `batching`
call; no other module divides by the 3600 seconds of an hour."""

from __future__ import annotations

import ast
import pathlib

import pytest

import llm_cost
from llm_cost.requests.request import SECONDS_PER_HOUR, gpu_usd, usd_per_million_tokens


def test_the_formula_by_hand():
    assert gpu_usd(7200.0, 2.5) == 7200.0 * 2.5 / 3600 == 5.0
    assert usd_per_million_tokens(90.0, 4e5, 3.0) == pytest.approx(90.0 * 3.0 / 3600 / 4e5 * 1e6)
    assert SECONDS_PER_HOUR == 3600


def test_no_other_module_divides_by_an_hour():
    root = pathlib.Path(llm_cost.__file__).parent
    found = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)
                    and isinstance(node.right, ast.Constant) and node.right.value in (3600, 3600.0)):
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    assert found == [], found


def test_batching_prices_its_gpu_hours_with_the_formula():
    from helpers import rows_of

    (row,) = rows_of("batching", "--rate", "5", "-n", "100", "--usd-per-gpu-hour", "2")
    assert row["usd_per_million_tokens_gpu"] == usd_per_million_tokens(1, row["tokens_per_s_per_gpu"], 2.0)
