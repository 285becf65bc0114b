"""Issue 24, deliverable 5: no function of the library over 100 lines, no module over 400.

No exemption: `fast_engine._Fast.run`, the fast path's hot loop, keeps its loop turn in one function
(its pass times are one call each of the pass cost's evaluators, `iteration.pass_timers`) and takes its
locals from `loop_locals` and gives them back through `stored`, once per run.
"""

from __future__ import annotations

import ast
import pathlib

import llm_cost

ROOT = pathlib.Path(llm_cost.__file__).parent
MAX_FUNCTION_LINES = 99  # "under 100", counted from `def` to the last line, docstring included
MAX_MODULE_LINES = 399  # "under 400"


def _sources():
    return sorted(ROOT.rglob("*.py"))


def test_no_function_over_100_lines():
    long = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                where = (path.relative_to(ROOT).as_posix(), node.name)
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{where[0]}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, long


def test_no_module_over_400_lines():
    long = [f"{p.relative_to(ROOT)} ({n} lines)" for p in _sources()
            if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES]
    assert not long, long


PACKAGES = {".".join(p.relative_to(ROOT.parent).parent.parts): p for p in ROOT.rglob("__init__.py")}
MODULES = {".".join(p.relative_to(ROOT.parent).with_suffix("").parts): p
           for p in ROOT.rglob("*.py") if p.name != "__init__.py"}


def _facade(package: str) -> dict[str, str]:
    """Name -> the module a package's `__init__` takes it from: its lazy `names_from(module, *names)`
    tables (relative modules resolved) and its eager `from llm_cost.x import name` lines (`_exports`,
    the tables' builder, left out)."""
    table = {}
    for node in ast.walk(ast.parse(PACKAGES[package].read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "names_from":
            module = node.args[0].value
            module = package + module if module.startswith(".") else module
            table.update(dict.fromkeys((a.value for a in node.args[1:]), module))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("llm_cost.") \
                and node.module != "llm_cost._exports":  # the tables' builders, not exports
            table.update({a.asname or a.name: node.module for a in node.names})
    return table


FACADES = {package: _facade(package) for package in PACKAGES}


def _defining_module(module: str, name: str) -> str | None:
    """The module `from module import name` reaches: a submodule of that name, or, through the package
    facades (`from llm_cost.roofline import PassCost` -> `llm_cost.roofline.pass_cost`), the module
    defining `name`; a package (`from llm_cost import speculative`) or a name a facade defines itself
    (`__version__`) reaches no module (None)."""
    seen = set()
    while module in PACKAGES and (module, name) not in seen:
        if f"{module}.{name}" in MODULES:
            return f"{module}.{name}"
        if f"{module}.{name}" in PACKAGES or name not in FACADES[module]:
            return None
        seen.add((module, name))
        module = FACADES[module][name]
    return module if module in MODULES else None


def _imports(tree: ast.AST) -> set[str]:
    """The llm_cost modules a module's code imports, at the top or inside a function (a lazy import
    hides a cycle; it does not remove it): `from a.b import x` (x resolved through the facades),
    `import a.b`, and `pkg.x` where `pkg` is a package bound by `from llm_cost import pkg`."""
    found, bound = set(), {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("llm_cost"):
            for alias in node.names:
                found.add(_defining_module(node.module, alias.name))
                if f"{node.module}.{alias.name}" in PACKAGES:
                    bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    for node in ast.walk(tree):  # the package's names used as attributes: `speculative.speedup(...)`
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound:
            found.add(_defining_module(bound[node.value.id], node.attr))
    return {m for m in found if m in MODULES}


def _import_graph() -> dict[str, set[str]]:
    """Module -> the llm_cost modules it imports (`_imports`). The package `__init__` facades are no
    nodes: an import through one is an edge to the module defining the name."""
    return {name: _imports(ast.parse(path.read_text())) - {name} for name, path in MODULES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle():
    # issue 24.5: counts/checkpoint <-> counts/weights was one, hidden by a lazy import
    assert _cycles(_import_graph()) == []


def test_the_import_finder_sees_through_facades_and_functions():
    # roofline.step -> parallel.fit -> parallel.shard -> roofline.pass_cost -> roofline.step was a cycle the
    # finder missed: it dropped `from llm_cost.roofline import StepTime` (a facade) and so never saw it
    assert _defining_module("llm_cost.roofline", "PassCost") == "llm_cost.roofline.pass_cost"
    assert _defining_module("llm_cost", "StepTime") == "llm_cost.roofline.timing"  # two facades deep
    assert _defining_module("llm_cost.counts", "param_counts") == "llm_cost.counts.params"  # an eager facade
    assert _defining_module("llm_cost.serving", "engine") == "llm_cost.serving.engine"  # a submodule
    assert _defining_module("llm_cost", "speculative") is None and _defining_module("llm_cost", "__version__") is None
    lazy = "def f():\n    from llm_cost.parallel import deployment_fit\n    import llm_cost.errors\n"
    assert _imports(ast.parse(lazy)) == {"llm_cost.parallel.fit", "llm_cost.errors"}
    through = "from llm_cost import speculative as spec\nspec.speedup(0.8, 4, 0.1)\n"
    assert _imports(ast.parse(through)) == {"llm_cost.speculative.closed_forms"}


# SPEC.md, "The package follows the flow": specs -> catalog -> counts -> roofline -> parallel ->
# speculative -> serving, requests -> plan, checks -> report -> calibrate -> commands -> cli.py. Below
# them the package's own utilities (errors, files, grids, budget, executor, the facades' _exports);
# `public` (lc.step_time) sits above parallel, whose one-GPU and deployed passes it joins.
FLOORS = (("_exports", "errors", "files", "grids", "budget", "executor"), ("specs",), ("catalog",), ("counts",),
          ("roofline",), ("parallel",), ("public",), ("speculative",), ("serving", "requests"),
          ("planner", "checks"), ("report",), ("calibrate",), ("commands",))
FLOOR = {part: level for level, parts in enumerate(FLOORS) for part in parts}


def test_no_floor_imports_a_higher_one():
    """A lower floor never imports a higher one, lazily or not, through a facade or not (the one-GPU fit
    made roofline.step import parallel.fit); a facade exports only its own package's names."""
    up = []
    for name, targets in _import_graph().items():
        floor = FLOOR[name.split(".")[1]]  # a KeyError: a new package or module wants its floor here
        up += [f"{name} -> {t}" for t in sorted(targets) if FLOOR[t.split(".")[1]] > floor]
    for package, table in FACADES.items():
        if package != "llm_cost":
            up += [f"{package} facade: {n} from {m}" for n, m in table.items() if not m.startswith(package + ".")]
    assert not up, "\n".join(up)


def _flags(name: str, info) -> tuple[str, ...]:
    """The long flags an option declares (`--kv/--no-kv` both), or the one its parameter name gives."""
    decls = [d for d in (info.default, *(info.param_decls or ())) if isinstance(d, str)]
    flags = tuple(f for d in decls for f in d.split("/") if f.startswith("--"))
    return flags or ("--" + name.replace("_", "-"),)


def option_declarations() -> dict[str, dict[int, tuple]]:
    """--flag -> {id of its typer.OptionInfo: (the info, its Annotated type, the commands using it)}
    over every registered command (the deployment options included, as Typer sees them)."""
    import inspect
    import typing

    from typer.models import OptionInfo

    from llm_cost.cli import app

    found: dict[str, dict[int, tuple]] = {}
    for command in app.registered_commands:
        for name, param in inspect.signature(command.callback, eval_str=True).parameters.items():
            infos = [m for m in getattr(param.annotation, "__metadata__", ()) if isinstance(m, OptionInfo)]
            for info in infos:
                base = typing.get_args(param.annotation)[0]
                for flag in _flags(name, info):
                    _, _, users = found.setdefault(flag, {}).setdefault(id(info), (info, base, set()))
                    users.add(command.name)
    return found


def options_module_infos() -> set[int]:
    """The OptionInfo objects commands/options.py declares (as constants or inside Annotated aliases)."""
    from typer.models import OptionInfo

    from llm_cost.commands import options

    ids = set()
    for value in vars(options).values():
        if isinstance(value, OptionInfo):
            ids.add(id(value))
        ids.update(id(m) for m in getattr(value, "__metadata__", ()) if isinstance(m, OptionInfo))
    return ids


def test_shared_options_are_declared_once():
    """Issue 24.4: an option two commands take is declared once, in commands/options.py (its one help
    text and one type: tests/test_one_help_text.py); a flag has a second declaration only where its type
    truly differs (a repeatable list beside a single value, a search's list beside a deployment's
    number), and that one sits in options.py too."""
    in_options = options_module_infos()
    twice = []
    for flag, infos in option_declarations().items():
        users = set().union(*(u for _, _, u in infos.values()))
        if len(users) > 1 and not set(infos) <= in_options:
            twice.append(f"{flag}: declared outside options.py for {sorted(users)}")
        bases = [_plain(base) for _, base, _ in infos.values()]
        if len(bases) != len(set(bases)):
            twice.append(f"{flag}: {len(infos)} declarations, types {bases}")
    assert not twice, "\n".join(sorted(twice))


def test_the_declaration_finder_sees_every_command():
    # the finder reads what Typer reads: --model comes single (request) and repeatable (roofline), both
    # from options.py; a name-derived option (--context) and a deployment option (--tp) are found too
    found = option_declarations()
    assert len(found["--model"]) == 2 and set(found["--model"]) <= options_module_infos()
    assert {"roofline", "tree"} <= set().union(*(u for _, _, u in found["--context"].values()))
    assert "capacity" in set().union(*(u for _, _, u in found["--tp"].values()))


def _plain(annotation) -> str:
    """A type with Optional taken off (`Optional[List[int]]` and `List[int]` are the same option)."""
    import typing

    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) is typing.Union and len(args) == 1:
        return _plain(args[0])
    return str(annotation)


def test_no_private_name_is_imported_across_modules():
    # issue 24.5: a name another module needs is that module's API, so public (no leading underscore)
    found = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("llm_cost")):
                found += [f"{path.relative_to(ROOT)}: {node.module}.{a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    assert not found, found


def test_calibrate_imports_no_report_module():
    """Issue 24: a library layer does not import a rendering one. The flow puts calibrate above report,
    but calibrate's figure is rendering: it lives in report/figures.py (`validation`) and commands/
    draws it; calibrate gives the predictions."""
    graph = _import_graph()
    found = [f"{name} -> {t}" for name in graph if name.startswith("llm_cost.calibrate.")
             for t in sorted(graph[name]) if t.startswith("llm_cost.report.")]
    assert not found, found


# Library text that must name CLI flags, and why. Nothing else outside commands/ may.
FLAG_TEXT_ALLOWED = {
    "planner/rows.py": "a plan row's `request_args` is the `llm-cost request` command line that gives the "
                           "same TTFT and TPOT: its words are the CLI's flags",
}


def _docstrings(tree: ast.AST) -> set[int]:
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body
            and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}


def _flag_texts(tree: ast.AST, flags: set[str]) -> list[tuple[int, list[str]]]:
    """(line, the CLI flags it names) of each string literal of `tree` that names one, docstrings left
    out (they may say which option a parameter becomes); an f-string's literal parts included."""
    import re

    docs, found = _docstrings(tree), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            named = [f for f in re.findall(r"--[a-z][a-z0-9_-]*", node.value) if f in flags]
            if named:
                found.append((node.lineno, named))
    return found


def test_the_flag_finder_finds_a_flag():
    flags = {"--tp", "--batch"}
    tree = ast.parse('"""Give --tp."""\ndef f(tp):\n    raise ValueError(f"give --tp or --tp_size, {tp}")\n')
    assert _flag_texts(tree, flags) == [(3, ["--tp"])]  # not the docstring, not another program's --tp_size


def test_library_text_names_no_cli_flag():
    """Issue 24: library messages name parameters (`params=(...)`) and the CLI writes its flags
    (`commands.parse.flags_in`); titles, notes and reasons the library renders stay flag-free, or
    commands/ adds the flag. Outside commands/ no string literal names a flag of the CLI
    (`option_declarations`), but for `FLAG_TEXT_ALLOWED`."""
    flags = set(option_declarations())
    assert {"--tp", "--batch", "--row-budget-s"} <= flags
    found = []
    for path in _sources():
        where = path.relative_to(ROOT).as_posix()
        if where.startswith("commands/") or where in FLAG_TEXT_ALLOWED:
            continue
        found += [f"{where}:{line} {named}" for line, named in _flag_texts(ast.parse(path.read_text()), flags)]
    assert not found, "\n".join(found)
