"""Issue 28, deliverable 5: every command that can show progress takes --quiet (no progress, no notes;
warnings and errors stay), and Ctrl-C during `batching` over several rates or `check` prints the rows
that finished, says "interrupted: N of M" on stderr and exits 130.

Ctrl-C is a KeyboardInterrupt raised by a monkeypatched inner call after the first item; a terminal is
a Rich console forced to be one, with a clock that says every step took 2 s (past the one-second mark)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from llm_cost.cli import app
from llm_cost.commands import progress as progress_module
from tests.helpers import stop_after

TWO = Path(__file__).resolve().parent / "data" / "calibrate" / "two_sources.csv"
runner = CliRunner()
BATCHING = ["batching", "--rate", "2", "--rate", "4", "--rate", "8", "--requests", "40", "--format", "csv"]
QUICK = {  # one quick run of each command that can show progress
    "batching": BATCHING,
    "waste": ["waste", "--rate", "2", "--requests", "40"],
    "check": ["check", "--model", "llama-3.2-1b", "--examples", "1"],
    "validate": ["validate", str(TWO)],
    "calibrate": ["calibrate", str(TWO), "--free", "bw_efficiency", "--no-cv", "-o", "{tmp}/p.json"],
}


@pytest.mark.parametrize("name", sorted(QUICK))
def test_every_command_with_progress_takes_quiet(name, tmp_path):
    args = [a.replace("{tmp}", str(tmp_path)) for a in QUICK[name]]
    out = runner.invoke(app, [*args, "--quiet"])
    assert out.exit_code == 0, out.output
    assert "--quiet" in runner.invoke(app, [name, "--help"], env={"COLUMNS": "200"}).output


@pytest.fixture
def terminal(monkeypatch):
    """Every SweepProgress draws on a fake terminal (returned: its text so far) and looks slow."""
    screen = io.StringIO()
    original = progress_module.SweepProgress.__init__

    def on_terminal(self, label, console=None, *, quiet=False):
        original(self, label, Console(file=screen, force_terminal=True, width=100), quiet=quiet)
        ticks = iter(range(2, 10_000, 2))
        self._clock, self._start = (lambda: float(next(ticks))), 0.0

    monkeypatch.setattr(progress_module.SweepProgress, "__init__", on_terminal)
    return screen


def test_progress_on_a_terminal_unless_quiet(terminal):
    assert runner.invoke(app, BATCHING).exit_code == 0
    assert "simulating" in terminal.getvalue()
    terminal.seek(0), terminal.truncate()
    assert runner.invoke(app, [*BATCHING, "--quiet"]).exit_code == 0
    assert terminal.getvalue() == ""


def test_quiet_silences_notes_not_warnings(capsys):
    from llm_cost.commands.app import note, warn

    progress_module.QUIET["on"] = True
    try:
        note("a note")
        warn("a warning")
    finally:
        progress_module.QUIET["on"] = False
    note("another note")
    assert capsys.readouterr().err.splitlines() == ["Warning: a warning", "Note: another note"]


def test_ctrl_c_in_batching_prints_the_rates_that_finished(monkeypatch):
    import llm_cost.serving.engine as engine

    stop_after(monkeypatch, engine, "serve")
    out = runner.invoke(app, BATCHING)
    assert out.exit_code == 130, out.output
    lines = out.stdout.splitlines()
    assert len(lines) == 2 and lines[0].startswith("model,") and ",2.0," in lines[1]  # the header, rate 2
    assert "interrupted: 1 of 3 rates finished" in out.stderr


def test_ctrl_c_in_batching_before_any_rate(monkeypatch):
    import llm_cost.serving.engine as engine

    stop_after(monkeypatch, engine, "serve", 0)
    out = runner.invoke(app, BATCHING)
    assert out.exit_code == 130 and out.stdout == "" and "interrupted: 0 of 3 rates" in out.stderr


def test_ctrl_c_in_check_prints_the_checks_that_finished(monkeypatch):
    import llm_cost.checks.runner as checks

    stop_after(monkeypatch, checks, "run", 2)
    out = runner.invoke(app, ["check", "--model", "llama-3.2-1b", "--examples", "1", "--format", "json"])
    assert out.exit_code == 130, out.output
    import json

    assert len(json.loads(out.stdout)) == 2
    assert "interrupted: 2 of " in out.stderr and "checks finished" in out.stderr


def test_ctrl_c_in_a_fleet_over_several_rates(monkeypatch):
    import llm_cost.serving.fleet as fleet

    stop_after(monkeypatch, fleet, "serve_fleet")
    out = runner.invoke(app, ["batching", "--rate", "1", "--rate", "2", "-n", "20", "--gpus", "2",
                              "--router", "round-robin", "--format", "csv"])
    assert out.exit_code == 130, out.output
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(out.stdout)))  # the finished rate's fleet row and its 2 replicas'
    assert [r["replica"] for r in rows] == ["", "0", "1"] and "interrupted: 1 of 2 rates finished" in out.stderr
