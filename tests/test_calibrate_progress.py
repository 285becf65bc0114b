"""Issue 28, deliverable 5, on `calibrate`: progress on stderr past a second (a terminal only, never with
--quiet), one step for the fit to every point and one per cross-validation fold; Ctrl-C during the
cross-validation keeps the fit, writes it and says its errors are in-sample only.

The points are tests/data/calibrate/two_sources.csv (ten rows, two sources: two folds)."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from llm_cost.calibrate import read_points
from llm_cost.calibrate.fit import cross_validate
from llm_cost.cli import app
from llm_cost.commands.progress import SweepProgress
from llm_cost.specs.profiles import PRESETS

TWO = Path(__file__).resolve().parent / "data" / "calibrate" / "two_sources.csv"
runner = CliRunner()


def _slow(progress: SweepProgress) -> SweepProgress:
    """`progress` with a clock that says every step took 2 s (past the one-second threshold)."""
    ticks = iter(range(2, 100, 2))
    progress._clock = lambda: float(next(ticks))
    progress._start = 0.0
    return progress


def test_quiet_never_shows_even_when_slow_on_a_terminal():
    terminal = Console(file=io.StringIO(), force_terminal=True)
    shown = _slow(SweepProgress("x", console=terminal))
    shown(1, 3)
    assert shown.shown
    shown.__exit__(None, None, None)
    quiet = _slow(SweepProgress("x", console=terminal, quiet=True))
    quiet(1, 3)
    assert not quiet.shown


def test_cross_validation_reports_each_fold():
    calls = []
    pts = read_points(str(TWO))
    cross_validate(pts, PRESETS["measured"], ("bw_efficiency",), by="source", on_fold=lambda d, n: calls.append((d, n)))
    assert calls == [(1, 2), (2, 2)]


def test_calibrate_progress_is_silent_when_piped(tmp_path):
    out = runner.invoke(app, ["calibrate", str(TWO), "-o", str(tmp_path / "p.json"), "--free", "bw_efficiency",
                              "--format", "json"])
    assert out.exit_code == 0 and out.stderr == "", out.stderr  # CliRunner's stderr is no terminal
    assert "No progress display" in runner.invoke(app, ["calibrate", "--help"]).output  # --quiet


def test_ctrl_c_in_the_cross_validation_keeps_the_fit(tmp_path, monkeypatch):
    import llm_cost.calibrate.fit as fit

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(fit, "cross_validate", interrupted)
    target = tmp_path / "p.json"
    out = runner.invoke(app, ["calibrate", str(TWO), "-o", str(target), "--free", "bw_efficiency", "--format", "json"],
                        env={"COLUMNS": "250"})
    assert out.exit_code == 0, out.output
    assert "interrupted: the cross-validation did not finish" in out.stderr
    table = runner.invoke(app, ["calibrate", str(TWO), "-o", str(target), "--force", "--free", "bw_efficiency"],
                          env={"COLUMNS": "250"})
    assert table.exit_code == 0, table.output
    # the footnote says what was done: no cross-validation
    words = " ".join(table.stdout.split())  # the table wraps its caption
    assert "cross-validated: k-fold" not in words and "cross-validation by source was interrupted" in words
    written = json.loads(target.read_text())
    assert "cross_validated" not in written["calibration"] and written["calibration"]["fitted"] == ["bw_efficiency"]
