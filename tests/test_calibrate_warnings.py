"""Issue 28, deliverable 7: `calibrate` warns when the points are too few for the knobs (fewer than ten
per fitted knob) or come from one source (no cross-validation possible, and then no "cross-validated"
error is printed), marks the knobs it left at the base's value, and its title says what it did.

The point files are small and static (no served row simulates): hand.csv (three rows, one source) and
two_sources.csv (ten Llama-3-8B decode rows, five from each of two invented sources a tenth apart: a
fit's input, not a published figure)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from llm_cost.calibrate import fit_profile, read_points
from llm_cost.cli import app
from llm_cost.specs.profiles import PRESETS

DATA = Path(__file__).resolve().parent / "data" / "calibrate"
HAND = DATA / "hand.csv"
TWO = DATA / "two_sources.csv"
runner = CliRunner()


def _calibrate(tmp_path, points, *args, fmt="json"):
    """(stdout, stderr lines, the written profile JSON) of `llm-cost calibrate POINTS -o ... ARGS`."""
    out_file = tmp_path / "p.json"
    out = runner.invoke(app, ["calibrate", str(points), "-o", str(out_file), *args, "--format", fmt],
                        env={"COLUMNS": "250"})
    assert out.exit_code == 0, out.output
    return out.stdout, [ln for ln in out.stderr.splitlines() if ln.strip()], json.loads(out_file.read_text())


def test_few_points_warn_and_an_unmoved_knob_is_not_fitted(tmp_path):
    # hand.csv has no FP8 row: fp8_compute_factor moves no prediction, so only bw_efficiency is fitted
    stdout, err, written = _calibrate(tmp_path, HAND, "--free", "bw_efficiency,fp8_compute_factor", "--no-cv")
    assert err == ["Warning: 3 points for 1 fitted knob, fewer than 10 per knob (10): the fit may follow "
                   "the points' noise; fit fewer knobs with --free or add points"]
    rows = {r["knob"]: r for r in json.loads(stdout)}
    assert rows["bw_efficiency"]["fitted"] is True
    assert rows["fp8_compute_factor"]["fitted"] is False
    assert rows["fp8_compute_factor"]["value"] == PRESETS["measured"].fp8_compute_factor
    assert rows["compute_efficiency"]["fitted"] is False  # not free
    assert written["calibration"]["free"] == ["bw_efficiency", "fp8_compute_factor"]
    assert written["calibration"]["fitted"] == ["bw_efficiency"]


def test_title_says_what_was_fitted(tmp_path):
    # lecture: no per-engine costs, so fixed_time_s is the shared knob (measured's engines hold theirs fixed)
    stdout, _, _ = _calibrate(tmp_path, HAND, "--free", "bw_efficiency,fixed_time_s", "--no-cv", "--name", "mine",
                              "--base", "lecture", fmt="table")
    assert f"Profile mine: 2 knobs fitted to 3 points of {HAND}" in " ".join(stdout.split())
    assert "no (base)" in stdout and "calibrated fitted" not in stdout


def test_one_source_cannot_cross_validate(tmp_path):
    stdout, err, written = _calibrate(tmp_path, HAND, "--free", "bw_efficiency")
    assert "Warning: one source (hand) in the points: no cross-validation possible (it needs two), " \
           "the errors shown are in-sample only" in err
    assert not any("cross-validated" in r["knob"] for r in json.loads(stdout))
    assert "cross_validated" not in written["calibration"]
    table, _, _ = _calibrate(tmp_path, HAND, "--free", "bw_efficiency", "--force", fmt="table")
    assert "in-sample only: one source, no cross-validation possible" in " ".join(table.split())
    assert "cross-validated by" not in table


def test_one_gpu_cannot_leave_a_gpu_out(tmp_path):
    _, err, _ = _calibrate(tmp_path, TWO, "--free", "bw_efficiency", "--cv-by", "gpu")
    assert err == ["Warning: one gpu (h100-sxm) in the points: no cross-validation possible (it needs two), "
                   "the errors shown are in-sample only"]


def test_enough_points_and_two_sources_say_nothing(tmp_path):
    stdout, err, written = _calibrate(tmp_path, TWO, "--free", "bw_efficiency")
    assert err == []  # 10 points for 1 knob, two sources
    rows = {r["knob"]: r["value"] for r in json.loads(stdout)}
    # each source predicted by the other's fit: worse than in-sample (the two sources are a tenth apart)
    assert rows["cross-validated by source: MAPE"] > 1.5 * rows["fit: MAPE"]
    assert written["calibration"]["cross_validated"]["n"] == 10


def test_two_knobs_on_ten_points_warn(tmp_path):
    _, err, _ = _calibrate(tmp_path, TWO, "--free", "bw_efficiency,fixed_time_s", "--no-cv", "--base", "lecture")
    assert err == ["Warning: 10 points for 2 fitted knobs, fewer than 10 per knob (20): the fit may follow "
                   "the points' noise; fit fewer knobs with --free or add points"]


def test_fit_result_names_the_knobs_it_moved():
    result = fit_profile(read_points(HAND), PRESETS["measured"], ["bw_efficiency", "fp8_compute_factor"])
    assert result.fitted == ("bw_efficiency",)
