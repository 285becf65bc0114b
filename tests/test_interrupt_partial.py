"""Issue 28 review, item 4: Ctrl-C keeps what finished and says so on a line of its own.

`validate` prints the rows predicted so far (or their summary), titled partial, one warning, exit 130;
`calibrate` interrupted during the fit writes nothing and says so; `batching` interrupted before any
rate finishes stops its progress bar before the warning (not the bar redrawn after it). Ctrl-C is a
KeyboardInterrupt raised by a monkeypatched inner call, as in test_quiet_interrupt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from llm_cost.cli import app
from tests.helpers import stop_after

TWO = Path(__file__).resolve().parent / "data" / "calibrate" / "two_sources.csv"
runner = CliRunner()  # validate and calibrate run --jobs 1 here: the interrupt is patched into this process


def _rows_in(path: Path) -> int:
    return len(path.read_text().strip().splitlines()) - 1  # less the header


def test_ctrl_c_in_validate_prints_the_rows_predicted(monkeypatch):
    import llm_cost.calibrate.prediction as prediction

    stop_after(monkeypatch, prediction, "predict", 3)
    out = runner.invoke(app, ["validate", str(TWO), "--jobs", "1", "--format", "json"])
    assert out.exit_code == 130, out.output
    rows = json.loads(out.stdout)
    assert len(rows) == 3 and all(r["preset"] == "measured" and r["model"] and r["gpu"] for r in rows)
    assert f"interrupted: 3 of {_rows_in(TWO)} rows predicted; the rows printed are those" in out.stderr


def test_ctrl_c_in_validate_summary_is_marked_partial(monkeypatch):
    import llm_cost.calibrate.prediction as prediction

    stop_after(monkeypatch, prediction, "predict", 2)
    out = runner.invoke(app, ["validate", str(TWO), "--jobs", "1", "--summary", "--format", "markdown"])
    assert out.exit_code == 130, out.output
    assert f"(partial: 2 of {_rows_in(TWO)} rows)" in " ".join(out.stdout.split())
    assert "the summary is of those" in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_ctrl_c_in_validate_before_any_row(monkeypatch):
    import llm_cost.calibrate.prediction as prediction

    stop_after(monkeypatch, prediction, "predict", 0)
    out = runner.invoke(app, ["validate", str(TWO), "--jobs", "1"])
    assert out.exit_code == 130 and out.stdout == ""
    assert out.stderr.strip() == f"Warning: interrupted: 0 of {_rows_in(TWO)} rows predicted"


def test_ctrl_c_during_the_fit_writes_nothing_and_says_so(monkeypatch, tmp_path):
    import llm_cost.calibrate.fit as fit

    stop_after(monkeypatch, fit, "fit_profile", 0)
    target = tmp_path / "p.json"
    out = runner.invoke(app, ["calibrate", str(TWO), "--jobs", "1", "--free", "bw_efficiency", "--no-cv", "-o", str(target)])
    assert out.exit_code == 130, out.output
    assert f"interrupted: the fit did not finish; nothing written to {target}" in out.stderr
    assert not target.exists() and out.stdout == ""


BEFORE_ANY_RATE = {  # batching over two rates, and the same with --compare-prefix-caching (two runs a rate)
    "rates": ["batching", "--rate", "2", "--rate", "4", "--requests", "40"],
    "compare": ["batching", "--compare-prefix-caching", "--shared-prefix", "256", "-n", "40", "--rate", "2",
                "--rate", "4"],
}


@pytest.mark.parametrize("case", sorted(BEFORE_ANY_RATE))
def test_batching_stops_its_bar_before_the_warning(monkeypatch, case):
    import llm_cost.commands.app as app_module
    import llm_cost.serving.engine as engine
    from llm_cost.commands import progress

    events = []
    real_exit, real_say = progress.SweepProgress.__exit__, app_module.say
    monkeypatch.setattr(progress.SweepProgress, "__exit__",
                        lambda self, *exc: (events.append("bar stopped"), real_exit(self, *exc))[1])
    monkeypatch.setattr(app_module, "say", lambda line: (events.append(line), real_say(line))[1])
    stop_after(monkeypatch, engine, "serve", 0)
    out = runner.invoke(app, BEFORE_ANY_RATE[case])
    assert out.exit_code == 130, out.output
    assert events[:2] == ["bar stopped", "Warning: interrupted: 0 of 2 rates finished"], events  # none printed
