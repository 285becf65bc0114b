"""Issue 28 review, item 8: README's first screen says every table's title, and every JSON row, names its
model, GPU and profile: `capacity`'s title names the model and GPU, `plan`'s the profile, and
`validate`'s JSON rows the profile (each point's row its model and GPU too)."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import run

TWO = Path(__file__).resolve().parent / "data" / "calibrate" / "two_sources.csv"


def _title(*args) -> str:
    out = run(*args, "--format", "markdown")
    assert out.exit_code == 0, out.output
    return out.stdout.strip().splitlines()[0]


def test_capacity_title_names_model_gpu_and_profile():
    title = _title("capacity")
    assert "llama-3-8b on H100 SXM" in title and "preset measured" in title, title
    title = _title("capacity", "--model", "gpt-3-13b", "--gpu", "a100-40gb", "--preset", "lecture")
    assert "gpt-3-13b on A100 40GB" in title and "preset lecture" in title, title


def test_plan_title_names_model_gpu_and_profile():
    title = _title("plan", "--gpus", "2")
    assert "llama-3-8b" in title and "H100 SXM" in title and "preset measured" in title, title


def test_validate_json_rows_name_the_profile():
    rows = json.loads(run("validate", str(TWO), "--preset", "lecture", "--format", "json").stdout)
    assert rows and all(r["preset"] == "lecture" and r["model"] and r["gpu"] for r in rows)
    summary = json.loads(run("validate", str(TWO), "--summary", "--format", "json").stdout)
    assert summary and all(r["preset"] == "measured" for r in summary)
