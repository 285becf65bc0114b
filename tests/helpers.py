"""Helpers the test modules share: invoking the CLI, and the golden tests' tolerance."""

from __future__ import annotations

import json
from pathlib import Path

from llm_cost.cli import app
from typer.testing import CliRunner

runner = CliRunner()
README = Path(__file__).resolve().parent.parent / "README.md"


def run(*args):
    """Invoke `llm-cost ARGS...` in-process; the Result carries exit code and output."""
    return runner.invoke(app, [str(a) for a in args])


def rows_of(*args):
    """The JSON rows of a command that must succeed."""
    out = run(*args, "--format", "json")
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)


def error_line(*args) -> str:
    """The one line a command that must fail prints: exit 2, no traceback, nothing else."""
    out = run(*args)
    assert out.exit_code == 2 and "Traceback" not in out.output, out.output
    lines = [ln for ln in out.output.splitlines() if ln.strip()]
    assert len(lines) == 1, out.output
    return lines[0]


def half_unit(digits: int) -> float:
    """Half a unit of the last printed digit: the tolerance of a golden figure printed to `digits`."""
    return 0.5 * 10 ** -digits
