"""Issue 24, deliverable 5: no one-letter names outside formulas.

A one-letter local or argument of a function in a checked file is allowed only as a formula symbol:
its function's docstring or its module's docstring names it in backticks (`m`, ``c``), the way a
docstring defines `m` token rows or `c` the context. `_` is always allowed. Files join `CHECKED` as
they are cleaned; every file of the library is checked when `CHECKED` covers them all.
"""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

import llm_cost

ROOT = pathlib.Path(llm_cost.__file__).parent

# Folders (or single modules) of the library, relative to the package, that hold no one-letter name
# outside formulas.
CHECKED: tuple[str, ...] = (
    "__init__.py",
    "_exports.py",
    "budget.py",
    "calibrate",
    "catalog",
    "checks",
    "commands/__init__.py",
    "commands/calibrate.py",
    "commands/catalog.py",
    "commands/check.py",
    "commands/engine_option.py",
    "commands/model.py",
    "commands/options.py",
    "commands/outputs.py",
    "commands/parse.py",
    "commands/plan.py",
    "commands/plan_build.py",
    "commands/plan_options.py",
    "commands/plan_verify.py",
    "commands/plot.py",
    "commands/progress.py",
    "commands/requests.py",
    "commands/roofline.py",
    "commands/serving.py",
    "commands/serving_common.py",
    "commands/serving_energy.py",
    "commands/serving_engine.py",
    "commands/serving_fleet.py",
    "commands/serving_pools.py",
    "commands/serving_prefix.py",
    "commands/speculative.py",
    "commands/table.py",
    "commands/trees.py",
    "counts",
    "errors.py",
    "executor.py",
    "files.py",
    "grids.py",
    "parallel",
    "planner",
    "public.py",
    "report/__init__.py",
    "report/breakdown_rows.py",
    "report/cost_table.py",
    "report/cost_table_view.py",
    "report/deployment_rows.py",
    "report/figures.py",
    "report/model_rows.py",
    "report/plan_rows.py",
    "report/render.py",
    "report/request_rows.py",
    "report/series.py",
    "report/serving_rows.py",
    "report/speculative_rows.py",
    "requests",
    "roofline",
    "serving/__init__.py",
    "serving/batch_waste.py",
    "serving/capacity.py",
    "serving/decode_stretch.py",
    "serving/disaggregated.py",
    "serving/draft_memory.py",
    "serving/eligibility.py",
    "serving/energy.py",
    "serving/engine_loop.py",
    "serving/engine_preemption.py",
    "serving/engine_routed.py",
    "serving/engine_state.py",
    "serving/fast_engine.py",
    "serving/fast_pipeline.py",
    "serving/fast_prefix.py",
    "serving/fast_reservations.py",
    "serving/fleet.py",
    "serving/handoff_pools.py",
    "serving/handover.py",
    "serving/host_tier.py",
    "serving/iteration.py",
    "serving/kv_blocks.py",
    "serving/kv_ledger.py",
    "serving/orca_iteration.py",
    "serving/policies.py",
    "serving/prefix_cache.py",
    "serving/replica.py",
    "serving/request_level.py",
    "serving/reservations.py",
    "serving/retime.py",
    "serving/run_stats.py",
    "serving/selective.py",
    "serving/serve_config.py",
    "serving/serve_result.py",
    "serving/setup.py",
    "serving/spec_batch.py",
    "serving/spec_streams.py",
    "serving/terms.py",
    "serving/workload.py",
    "serving/workload_spec.py",
    "specs",
    "speculative",
)


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
    found = [hit for path in _files(entry) for hit in short_names(path)]
    assert not found, found
