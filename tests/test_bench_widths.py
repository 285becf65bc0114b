"""Issue 28.4 (review item 6): the bench scripts print no line past 100 characters.

Every `print` of the bench scripts is read from their source: a line of text that does not go through
`print_notes` (which wraps at 100 when piped) must fit in 100 with each formatted field at its stated
width (`{t:7.1f}`: 7) or, unstated, FIELD characters. The cheapest script, bench/simulator.py, also
runs on a few requests (about 2 s) and every line it prints is measured."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = sorted((ROOT / "bench").glob("*.py"))
WIDTH = 100
FIELD = 10  # characters of a formatted number or name with no stated width


def _pieces(node) -> list[str]:
    """The text of a print's argument, each formatted field as that many 'x's."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        out = []
        for part in node.values:
            if isinstance(part, ast.Constant):
                out.append(part.value)
            else:
                spec = ast.unparse(part.format_spec) if part.format_spec else ""
                stated = re.match(r"f?['\"]?[<>^]?(\d+)", spec)
                out.append("x" * max(int(stated.group(1)) if stated else 0, FIELD if not stated else 0))
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _pieces(node.left) + _pieces(node.right)
    return ["x" * FIELD]  # a name or a call: one field


def _printed(path: Path):
    """(line number, the longest line a `print` there writes, estimated), for each plain print."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print" and node.args:
            text = " ".join("".join(_pieces(arg)) for arg in node.args)  # print's sep
            yield node.lineno, max(len(line) for line in text.split("\n"))


@pytest.mark.parametrize("path", BENCH, ids=lambda p: p.name)
def test_no_bench_print_past_100(path):
    long = [(n, width) for n, width in _printed(path) if width > WIDTH]
    assert not long, f"{path.name}: print at line, estimated width: {long}"


def test_simulator_on_a_few_requests_prints_lines_of_100_at_most():
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "simulator.py"), "50", "1", "50", "50"],
                         capture_output=True, text=True, check=True, env=env, cwd=ROOT, timeout=300)
    lines = out.stdout.splitlines()
    assert len(lines) >= 8 and max(map(len, lines)) <= WIDTH, max(lines, key=len)
