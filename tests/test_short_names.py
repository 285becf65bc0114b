"""Issue 24, deliverable 5: no one-letter names outside formulas.

A one-letter local or argument of a function in a checked file is allowed only as a formula symbol
that its own function's docstring, or an enclosing function's, names: in backticks (`m`, ``c``) or as a
numpydoc parameter or attribute (a line ``c : float`` or ``c``, its description indented below), the way a docstring defines `m` token rows or `c` the context. The
module docstring documents only what the module itself binds (a module global), a class docstring what
its class body binds (a field) besides; neither speaks for a function's locals. A command's parameter
named as its flag (`c`, the user's --c) is documented by that flag's help. `_` is always allowed. Every
module of the library is checked, one folder (or top-level module) per case.
"""

from __future__ import annotations

import ast
import inspect
import pathlib
import re

import pytest

import llm_cost

ROOT = pathlib.Path(llm_cost.__file__).parent
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
SCOPES = (*FUNCTIONS, ast.ClassDef)

# The library's folders and top-level modules, each checked whole.
CHECKED: tuple[str, ...] = tuple(sorted(path.name for path in ROOT.iterdir()
                                        if path.suffix == ".py" or (path / "__init__.py").exists()))


def _files(entry: str) -> list[pathlib.Path]:
    path = ROOT / entry
    return sorted(path.rglob("*.py")) if path.is_dir() else [path]


def _named(symbol: str, doc: str | None) -> bool:
    """`doc` names `symbol` in backticks, or as a numpydoc parameter or attribute: a line of names holding it
    (``c``, ``c : float``, ``alpha, c``), its description indented below it."""
    if not doc:
        return False
    name = re.escape(symbol)
    entry = rf"^([ \t]*)(?:\w+\s*,\s*)*{name}(?:\s*,\s*\w+)*(?:[ \t]+:[ \t].*)?\n\1[ \t]+\S"
    return re.search(r"`{1,2}" + name + r"`{1,2}", doc) is not None or re.search(entry, doc, re.M) is not None


def _inside(scope: ast.AST):
    """The nodes of `scope`'s own body: a nested function or class is given, not entered."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, SCOPES):
            stack.extend(ast.iter_child_nodes(node))


def _bound(scope: ast.AST) -> dict[str, int]:
    """The names `scope` itself binds (arguments, assignments, loop and comprehension targets, `as`, the
    functions and classes it defines, its imports), each with the line it is first bound on."""
    names: dict[str, int] = {}
    if isinstance(scope, FUNCTIONS):
        arguments = scope.args
        for arg in (*arguments.posonlyargs, *arguments.args, arguments.vararg, *arguments.kwonlyargs, arguments.kwarg):
            if arg is not None:
                names.setdefault(arg.arg, arg.lineno)
    for node in _inside(scope):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.setdefault(node.id, node.lineno)
        elif isinstance(node, (ast.ExceptHandler, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name:
            names.setdefault(node.name, node.lineno)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names.setdefault((alias.asname or alias.name).split(".")[0], node.lineno)
    return names


def command_flags() -> set[tuple[str, str, str]]:
    """(file, function, parameter) of each command parameter whose flag is its own name (`c` is --c)."""
    from typer.models import OptionInfo

    from llm_cost.cli import app

    found = set()
    for command in app.registered_commands:
        function = inspect.unwrap(command.callback)
        for name, param in inspect.signature(function, eval_str=True).parameters.items():
            for info in (m for m in getattr(param.annotation, "__metadata__", ()) if isinstance(m, OptionInfo)):
                if f"--{name}" in (info.default, *(info.param_decls or ())):
                    found.add((pathlib.Path(inspect.getfile(function)).resolve().as_posix(), function.__name__, name))
    return found


def short_names(path: pathlib.Path, root: pathlib.Path = ROOT, flags: frozenset = frozenset()) -> list[str]:
    """`file:line scope name` for every one-letter name of `path` that no docstring in reach names: a
    function's own or an enclosing function's; at module level the module's; in a class body the class's or
    the module's. `flags`: `command_flags()`, the parameters a flag's help documents."""
    tree = ast.parse(path.read_text())
    found: list[str] = []
    where = path.resolve().as_posix()

    def visit(scope: ast.AST, docs: list, label: str) -> None:
        for name, line in sorted(_bound(scope).items()):
            if len(name) == 1 and name != "_" and not any(_named(name, doc) for doc in docs) \
                    and (where, label, name) not in flags:
                found.append(f"{path.relative_to(root)}:{line} {label} {name}")
        for node in _inside(scope):
            if isinstance(node, SCOPES):
                own = None if isinstance(node, ast.Lambda) else ast.get_docstring(node)
                # a function reads its enclosing functions' docstrings; a class body also its module's
                outer = docs if isinstance(scope, FUNCTIONS) or isinstance(node, ast.ClassDef) else []
                visit(node, [own, *outer], getattr(node, "name", "lambda"))

    visit(tree, [ast.get_docstring(tree)], "<module>")
    return found


def test_the_finder_finds_an_unnamed_letter_and_spares_a_formula_symbol(tmp_path):
    source = tmp_path / "sample.py"
    source.write_text('def time_of(m, k):\n    """Time of `m` rows."""\n    return m * k\n')
    assert [entry.split()[-1] for entry in short_names(source, tmp_path)] == ["k"]


def test_a_symbol_is_documented_by_its_own_function_not_by_the_module(tmp_path):
    source = tmp_path / "sample.py"
    source.write_text('"""`k` is a count; `n` the module\'s."""\n'
                      'n = [i for i in range(3)]\n'  # a module global named, a comprehension's `i` not
                      'def outer(c):\n'
                      '    """Rows at cost `c`, over `j` ways.\n\n    Parameters\n    ----------\n'
                      '    w, h : int\n        Sizes.\n    """\n'
                      '    def inner(k):\n        j = k\n        def g():\n            return j\n'
                      '        return lambda x: x + j + c + w + h + g()\n'
                      '    return inner\n'
                      'class Spec:\n    """Fields: `b`."""\n    b: int = 0\n    k: int = 0\n    z: int = 0\n'
                      '    def method(self, q):\n        """Not `b`."""\n        return q\n')
    found = {(entry.split()[-2], entry.split()[-1]) for entry in short_names(source, tmp_path)}
    assert found == {("<module>", "i"), ("inner", "k"), ("inner", "g"), ("lambda", "x"), ("Spec", "z"), ("method", "q")}
    (flag,) = {(source.resolve().as_posix(), "method", "q")}
    assert ("method", "q") not in {tuple(e.split()[-2:]) for e in short_names(source, tmp_path, frozenset({flag}))}


def test_a_numpydoc_entry_names_a_symbol_and_prose_does_not():
    assert _named("c", "Parameters\n----------\nalpha, c : float\n    Rates.") and _named("c", "c\n    Cost.")
    assert not _named("c", "The cost c of a draft.\nc\nnot indented below") and not _named("c", "cs : list\n    x")


def test_a_command_parameter_named_as_its_flag_is_found():
    assert any(function == "spec_cmd" and name == "c" for _, function, name in command_flags())


@pytest.mark.parametrize("entry", CHECKED)
def test_no_one_letter_name_outside_formulas(entry):
    assert len(CHECKED) > 10  # the folders were found
    flags = frozenset(command_flags())
    found = [hit for path in _files(entry) for hit in short_names(path, flags=flags)]
    assert not found, found
