"""Issue 24.4 (review defect 5): `calibrate` is thin. The fit, the cross-validation, the errors, what
deserves a warning and the written profile are the library's `calibrate.calibration.calibrate_profile`; the
command parses, calls it once and words the warnings. These tests fail if the workflow moves back."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from helpers import run

from llm_cost.calibrate.calibration import calibrate_profile
from llm_cost.calibrate.profile_file import read_profile
from llm_cost.specs.profiles import PRESETS

TRAIN = Path(__file__).parent / "data" / "measured" / "train.csv"
COMMAND = Path(__file__).resolve().parent.parent / "llm_cost" / "commands" / "calibrate.py"


def test_the_library_writes_the_profile_the_command_writes(tmp_path):
    by_cli, by_lib = tmp_path / "cli.json", tmp_path / "lib.json"
    args = ("--free", "bw_efficiency,compute_efficiency", "--cv-by", "gpu", "--jobs", "1")
    shown = run("calibrate", str(TRAIN), "-o", str(by_cli), *args)
    assert shown.exit_code == 0, shown.output
    done = calibrate_profile([str(TRAIN)], PRESETS["measured"], ["bw_efficiency", "compute_efficiency"], cv_by="gpu",
                     output=by_lib, jobs=1)
    assert json.loads(by_lib.read_text()) == json.loads(by_cli.read_text())
    assert read_profile(by_lib) == done.result.profile and done.folds == len(done.groups) > 1
    # the warning the command prints is the library's fact, worded
    assert done.held_per_engine == ("compute_efficiency",) and "compute_efficiency: the base measured" in shown.stderr


def test_one_group_and_few_points_are_the_librarys_facts():
    pts = [str(TRAIN)]
    from llm_cost.calibrate.points import read_point_files

    gpt_fast = [point for point in read_point_files(pts) if point.source == "gpt-fast"]
    done = calibrate_profile(gpt_fast, PRESETS["measured"], ["bw_efficiency", "weight_only_bw_factor"], jobs=1)
    assert done.one_group == "gpt-fast" and done.folds == 0 and done.held is None
    assert done.few_points == (done.result.points < 10 * len(done.result.fitted))


def test_the_command_does_not_run_the_workflow_itself():
    imported = {alias.name for node in ast.walk(ast.parse(COMMAND.read_text())) if isinstance(node, ast.ImportFrom)
                for alias in node.names}
    assert "calibrate_profile" in imported
    assert not imported & {"fit_profile", "cross_validate", "cv_groups", "summarize", "write_profile", "TaskPool",
                           "check_free"}
