"""Issue 24.4 (review defect 5): `waste --rate` serves through the one per-rate loop, `run_batching` (a
`BatchingRequest` under request-level batching), not a loop of its own. Fails if the command builds its
own replica and workload again, or if its rows stop being `batching --scheduler request`'s runs."""

from __future__ import annotations

import ast
from pathlib import Path

from helpers import rows_of

from llm_cost.report.serving_rows import waste_sim_row
from llm_cost.serving import BatchingRequest, run_batching
from llm_cost.specs.deployment import Deployment

SERVING = Path(__file__).resolve().parent.parent / "llm_cost" / "commands" / "serving.py"


def test_waste_rows_are_run_batchings_request_level_runs():
    args = ("--rate", "0.5", "--rate", "2", "--requests", "300", "--seed", "3", "--max-batch", "8",
            "--model", "gpt-3-13b", "--gpu", "a100-40gb", "--preset", "lecture")
    shown = rows_of("waste", *args)
    out = run_batching(BatchingRequest(model="gpt-3-13b", gpu="a100-40gb", profile="lecture", scheduler="request",
                                       max_batch=8, rates=(0.5, 2.0), requests=300, seed=3,
                                       deployment=Deployment()))
    assert [{key: row[key] for key in waste_sim_row(result)} for row, result in zip(shown, out.results)] == \
        [waste_sim_row(result) for result in out.results]
    assert shown[0]["waste_fraction"] < shown[1]["waste_fraction"]


def test_waste_builds_no_replica_or_workload_of_its_own():
    tree = ast.parse(SERVING.read_text())
    waste = next(node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == "waste_cmd")
    imported = {alias.name for node in ast.walk(waste) if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert "run_batching" in imported and not imported & {"Replica", "poisson_workload", "batching_rows", "serve"}
