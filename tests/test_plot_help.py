"""Issue 28 review, item 7: `plot --help` states each kind's defaults as a run without those options uses
them (`plot.defaults`, read from each kind's table command), not a copy that can go stale."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from llm_cost.cli import app
from llm_cost.commands.plot import defaults

runner = CliRunner()


def _help() -> str:
    out = runner.invoke(app, ["plot", "--help"], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    return " ".join(out.output.split()).replace("- ", "-")  # wrapped lines joined (spec-vs- batch)


@pytest.mark.parametrize("kind", ["roofline", "spec-vs-batch", "tree", "batching", "plan"])
def test_plot_help_states_each_kinds_defaults(kind):
    stated = _help().split("its defaults: ", 1)[1].split(". An option", 1)[0]
    (said,) = [part for part in stated.split("; ") if re.match(rf"(\S+ and )?{re.escape(kind)} ", part)]
    d = defaults(kind)
    assert f"{d['model']} on " in said and f"preset {d['preset']}" in said and d["gpu"] in said, (kind, said)
    if kind == "tree":
        assert f"context {d['context']}" in said
    if kind == "batching":
        assert f"{d['requests']} requests per rate" in said
    if kind == "plan":
        assert f"up to {d['gpus']} x" in said
