"""CLI: `--format markdown` on every table command (issue 15, deliverable 5)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from llm_cost.report.render import FORMATS, Column, render

from helpers import run

COMMANDS = {
    "model": ["model", "llama-3-8b"],
    "roofline": ["roofline"],
    "catalog": ["catalog"],
    "capacity": ["capacity"],
    "request": ["request"],
    "plan": ["plan"],  # the defaults (options.DEFAULT, one node)
    "plan with speculation": ["plan", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpus", "2", "--isl", "512",
                              "--osl", "64", "--batch", "1", "--batch", "16", "--spec-alpha", "0.8", "--max-gamma", "2"],
    "selective": ["selective"],
    "waste": ["waste"],
    "batching": ["batching", "--rate", "2", "--requests", "50"],
    "spec": ["spec"],
    "gamma": ["gamma", "--alpha", "0.8", "--c", "0.1"],
    "tree": ["tree"],
    "leviathan": ["leviathan"],
    "table": ["table"],
    "check": ["check", "--model", "llama-3.2-1b", "--examples", "1"],
    "validate": ["validate", Path(__file__).parent / "data" / "calibrate" / "hand.csv", "--profile", "article"],
    "calibrate": ["calibrate", Path(__file__).parent / "data" / "measured" / "train.csv", "--no-cv", "--free",
                  "bw_efficiency", "-o", Path(tempfile.mkdtemp()) / "profile.json", "--force"],  # run more than once
}


def test_every_command_with_format_is_listed():
    from llm_cost.cli import COMMAND_MODULES

    with_format = {c for c in COMMAND_MODULES if "--format" in run(c, "--help").output}
    assert with_format == {args[0] for args in COMMANDS.values()}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_markdown(command):
    out = run(*COMMANDS[command], "--format", "markdown")
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()
    assert lines[0].startswith("**") and lines[0].endswith("**")
    blocks = "\n".join(ln if ln.startswith("|") else "" for ln in lines).split("\n\n")
    for table in [b.strip("\n").splitlines() for b in blocks if b.strip()]:  # catalog: one per kind
        assert len(table) >= 3 and set(table[1]) <= set("|-: ")
        assert len({ln.replace("\\|", "").count("|") for ln in table}) == 1  # every row has the header's cells


@pytest.mark.parametrize("spelling", ["markdown", "Markdown", "MARKDOWN"])
def test_markdown_any_case(spelling):
    assert run("spec", "-f", spelling).stdout == run("spec", "-f", "markdown").stdout


def test_markdown_numbers_are_the_tables():
    rows = json.loads(run("roofline", "-f", "json").stdout)
    md = run("roofline", "-f", "markdown").stdout
    assert f"| {rows[0]['step_time_s'] * 1e3:.3f} |" in md


def test_markdown_escapes_pipes():
    import io

    out = io.StringIO()
    render([{"a": "x|y"}], [Column("a", "a")], "markdown", out=out)
    assert "| x\\|y |" in out.getvalue()


def test_formats_include_markdown():
    assert "markdown" in FORMATS
    assert "--format must be one of table, json, csv, markdown" in run("spec", "-f", "xml").output
