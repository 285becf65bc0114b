"""Issue 24.4: `validate` is thin. Predicting every point through the executor, and keeping the rows that
finished after a Ctrl-C, is the library's `calibrate.validation.validate_points`; the command reads the
file, calls it once and renders. These tests fail if the loop moves back into the command."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from helpers import rows_of, stop_after

from llm_cost.calibrate import read_points
from llm_cost.calibrate.validation import validate_points
from llm_cost.errors import LlmCostError

TWO = Path(__file__).resolve().parent / "data" / "calibrate" / "two_sources.csv"
COMMAND = Path(__file__).resolve().parent.parent / "llm_cost" / "commands" / "calibrate.py"


def test_the_library_gives_the_rows_the_command_prints():
    shown = rows_of("validate", str(TWO), "--jobs", "1", "--quiet")
    done = validate_points(read_points(TWO), "measured", jobs=1)
    assert not done.interrupted and done.total == len(shown)
    assert [(row.point.id, row.predicted, row.covered) for row in done.predictions] == [
        (row["id"], row["predicted"], row["covered"]) for row in shown]


def test_ctrl_c_keeps_the_rows_predicted_in_order(monkeypatch):
    import llm_cost.calibrate.prediction as prediction

    points = read_points(TWO)
    stop_after(monkeypatch, prediction, "predict", 3)
    done = validate_points(points, "measured", jobs=1)
    assert done.interrupted and done.total == len(points)
    assert [row.point.id for row in done.predictions] == [point.id for point in points[:3]]


@pytest.mark.parametrize("field, value", [("points", "train.csv"), ("points", [1]), ("profile", "nope"),
                                          ("engine", "vlm"), ("engine", 3), ("steps_budget", -1.0)])
def test_bad_input_names_the_parameter(field, value):
    given = dict(points=read_points(TWO)[:1], profile="measured")
    with pytest.raises(LlmCostError) as caught:
        validate_points(**{**given, field: value})
    assert field in caught.value.params or field in str(caught.value)


def test_the_command_does_not_run_the_loop_itself():
    imported = {alias.name for node in ast.walk(ast.parse(COMMAND.read_text())) if isinstance(node, ast.ImportFrom)
                for alias in node.names}
    assert "validate_points" in imported
    assert not imported & {"run_tasks", "Interrupted", "predict"}
