"""Issue 24, deliverable 5: no one-letter names outside formulas.

A one-letter local or argument of a function in a checked file is allowed only as a formula symbol:
its function's docstring or its module's docstring names it in backticks (`m`, ``c``), the way a
docstring defines `m` token rows or `c` the context. `_` is always allowed. Every module of the
library is checked, one folder (or top-level module) per case.
"""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

import llm_cost

ROOT = pathlib.Path(llm_cost.__file__).parent

# The library's folders and top-level modules, each checked whole.
CHECKED: tuple[str, ...] = tuple(sorted(path.name for path in ROOT.iterdir()
                                        if path.suffix == ".py" or (path / "__init__.py").exists()))


def _files(entry: str) -> list[pathlib.Path]:
    path = ROOT / entry
    return sorted(path.rglob("*.py")) if path.is_dir() else [path]


def _named(symbol: str, doc: str | None) -> bool:
    return bool(doc) and re.search(r"`{1,2}" + re.escape(symbol) + r"`{1,2}", doc) is not None


def _locals(function: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return names


def short_names(path: pathlib.Path, root: pathlib.Path = ROOT) -> list[str]:
    """`file:line function name` for every one-letter name of `path` that no docstring names."""
    tree = ast.parse(path.read_text())
    module_doc = ast.get_docstring(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            doc = None if isinstance(node, ast.Lambda) else ast.get_docstring(node)
            for name in sorted(_locals(node)):
                if len(name) == 1 and name != "_" and not (_named(name, doc) or _named(name, module_doc)):
                    found.append(f"{path.relative_to(root)}:{node.lineno} {getattr(node, 'name', 'lambda')} {name}")
    return found


def test_the_finder_finds_an_unnamed_letter_and_spares_a_formula_symbol(tmp_path):
    source = tmp_path / "sample.py"
    source.write_text('def f(m, k):\n    """Time of `m` rows."""\n    return m * k\n')
    assert [entry.split()[-1] for entry in short_names(source, tmp_path)] == ["k"]


@pytest.mark.parametrize("entry", CHECKED)
def test_no_one_letter_name_outside_formulas(entry):
    assert len(CHECKED) > 10  # the folders were found
    found = [hit for path in _files(entry) for hit in short_names(path)]
    assert not found, found
