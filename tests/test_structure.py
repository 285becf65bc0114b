"""Issue 24, deliverable 5: no function of the library over 100 lines, no module over 400.

No exemption: `fast_engine._Fast.run`, the fast path's hot loop, keeps its loop turn inline (a call
per iteration made `serve` 15-30% slower) and takes its locals from `loop_locals` and gives them back
through `stored`, once per run.
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


def _import_graph() -> dict[str, set[str]]:
    """Module -> the llm_cost modules it imports, at the top or inside a function (a lazy import
    hides a cycle; it does not remove it). Package `__init__` facades are left out: they re-export."""
    modules = {".".join(p.relative_to(ROOT.parent).with_suffix("").parts): p
               for p in _sources() if p.name != "__init__.py"}
    packages = {".".join(p.relative_to(ROOT.parent).parent.parts) for p in ROOT.rglob("__init__.py")}
    graph = {}
    for name, path in modules.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("llm_cost"):
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    targets.add(full if full in modules else node.module)
        graph[name] = {t for t in targets if t in modules and t != name and t not in packages}
    return graph


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
