"""Issue 24.4 (review defect 5): `plan` is thin. The workflow (search, prices, frontier, users in flight,
splits, the served check, the launch and its checkpoint) is the library's `planner.plan_run.run_plan`;
the command parses into a `PlanRequest`, calls it once and renders. These tests fail if the logic moves
back into the command: the library alone gives the rows and the launch the command prints."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from helpers import rows_of, run

from llm_cost.planner.plan_request import PlanRequest
from llm_cost.planner.plan_run import run_plan

PLAN = Path(__file__).resolve().parent.parent / "llm_cost" / "commands" / "plan.py"


def _json(rows):
    return json.loads(json.dumps(rows))


def _request(**kw) -> PlanRequest:
    base = dict(model="llama-3-8b", gpu=("h100-sxm",), gpus=2, isl=1024, osl=256, profile="measured")
    return PlanRequest(**{**base, **kw})


def test_the_library_gives_the_rows_the_command_prints():
    shown = rows_of("plan", "--gpus", "2", "--tpot-ms", "30", "--usd-per-gpu-hour", "2.5", "--spec-alpha", "0.7",
                    "--preset", "measured")
    out = run_plan(_request(tpot_s=0.03, usd_per_gpu_hour=("2.5",), spec_alpha=0.7,
                            profile_args=("--preset", "measured")))
    assert out.prices == {"H100 SXM": 2.5} and _json(out.rows) == shown
    assert all(row["users_in_flight"] == row["batch"] * row["replicas"] for row in out.rows)


def test_the_library_serves_and_ranks_the_rows_the_command_prints():
    args = ("--gpus", "2", "--tpot-ms", "30", "--verify", "2", "--rate", "4", "--requests", "60")
    shown = rows_of("plan", *args, "--preset", "measured")
    out = run_plan(_request(tpot_s=0.03, verify=2, rate=(4.0,), requests=60, profile_args=("--preset", "measured")))
    assert out.served.recipe.requests == 60 and not out.interrupted
    assert [row["served_rank"] for row in out.rows] == [1, 2] and _json(out.rows) == shown


def test_the_library_gives_the_launch_the_command_prints():
    # DeepSeek-V3 ships FP8: an fp8 row loads the checkpoint as it is (no --quantization flag)
    args = ("--model", "deepseek-v3", "--gpu", "h200", "--gpus", "16", "--weights", "fp8", "--emit", "vllm")
    printed = run("plan", *args)
    assert printed.exit_code == 0, printed.output
    out = run_plan(PlanRequest(model="deepseek-v3", gpu=("h200",), gpus=16, weights=("fp8",), emit_engine="vllm"))
    assert printed.stdout.splitlines()[-1] == out.launch.text and "--quantization" not in out.launch.text


def test_a_launch_refused_after_the_rows_is_the_outcomes():
    out = run_plan(_request(gpus=1, tpot_s=0.001, emit_engine="vllm"))
    assert out.rows == [] and out.launch is None and out.launch_refusal.params == ("emit_engine",)


def test_the_unserved_note_comes_from_what_was_given():
    # explicit state: a served field is None when not given; a value equal to a default counts as given
    assert _request().served_options_given == ()
    assert _request(requests=2000, seed=0, rate=(2.0,)).served_options_given == ("rate", "requests", "seed")
    note = [line for line in run("plan", "--gpus", "1", "--requests", "2000").stderr.splitlines() if "--verify" in line]
    assert note == ["Note: --requests changes nothing without --verify N (the static plan serves no workload)"]
    assert not [line for line in run("plan", "--gpus", "1").stderr.splitlines() if "--verify" in line]
    source = PLAN.read_text()
    assert "inspect" not in source and "signature" not in source


@pytest.mark.parametrize("name", ["plan", "best_split", "verify", "verified", "plan_rows", "disaggregated_rows",
                                  "launch_command", "k8s_deployment", "candidates_of", "prices_of"])
def test_the_command_does_not_run_the_workflow_itself(name):
    imported = {alias.name for node in ast.walk(ast.parse(PLAN.read_text())) if isinstance(node, ast.ImportFrom)
                for alias in node.names}
    assert name not in imported and "run_plan" in imported


def test_a_warning_is_told_as_it_arises_and_kept():
    told = []
    out = run_plan(_request(gpus=1, verify=1, rate=(1.0,), requests=5, prompt_len="8200", output_len="8"),
                   on_warning=told.append)
    assert len(told) == 1 and told[0].startswith("does not fit: 5 of 5 requests") and out.warnings == tuple(told)
