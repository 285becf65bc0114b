"""CLI: `spec`, `gamma`, `tree`, `leviathan` -- keys, formats, the design card's example, errors."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest


from helpers import rows_of, run


@pytest.mark.parametrize("cmd", ["spec", "gamma", "tree", "leviathan"])
def test_help_has_an_example(cmd):
    out = run(cmd, "--help")
    assert out.exit_code == 0 and "Example: llm-cost " + cmd in out.output


def test_design_card_example_as_written():
    # SPEC.md: `llm-cost spec --alpha 0.8 --gamma 4 --batch 64` -- peak and 60% MFU by default
    out = run("spec", "--alpha", "0.8", "--gamma", "4", "--batch", "64")
    assert out.exit_code == 0, out.output
    assert "2.38" in out.output and "1.61" in out.output and "3.36" in out.output


def test_spec_json_keys_and_article_table():
    rows = rows_of("spec", "--alpha", "0.8", "--gamma", "4", *sum((["--batch", str(b)] for b in
                                                                   (1, 8, 32, 64, 128, 256)), []))
    for key in ("batch", "alpha", "gamma", "c", "mfu", "expected_tokens", "speedup", "verify_over_base",
                "base_step_s", "verify_step_s", "draft_step_s", "round_s", "gamma_opt", "speedup_opt",
                "turning_batch", "tokens_per_s"):
        assert key in rows[0]
    assert [(r["batch"], r["mfu"]) for r in rows[:4]] == [(1, 1.0), (1, 0.6), (8, 1.0), (8, 0.6)]
    speedups = {(r["batch"], r["mfu"]): round(r["speedup"], 2) for r in rows}
    # the article §3.1 printed output
    assert speedups[(64, 1.0)] == 2.38 and speedups[(64, 0.6)] == 1.61
    assert speedups[(128, 1.0)] == 1.39 and speedups[(128, 0.6)] == 0.89
    assert speedups[(256, 1.0)] == 0.76 and speedups[(256, 0.6)] == 0.62
    assert all(round(r["expected_tokens"], 2) == 3.36 and r["c"] == 0.1 for r in rows)


def test_spec_repeatable_options_make_a_grid():
    rows = rows_of("spec", "--alpha", "0.7", "--alpha", "0.8", "--gamma", "2", "--gamma", "4",
                   "--c", "0.05", "--c", "0.1", "--batch", "1", "--batch", "64", "--mfu", "0.5")
    assert len(rows) == 2 * 2 * 2 * 2
    assert {r["mfu"] for r in rows} == {0.5}
    assert [r["alpha"] for r in rows[:8]] == [0.7] * 8


def test_spec_with_a_draft_model():
    # the lecture demo 05: c derived from the draft's roofline time, 0.186 at batch 1, context 1024
    rows = rows_of("spec", "--model", "llama-3.1-8b", "--draft", "llama-3.2-1b", "--preset", "lecture",
                   "--context", "1024", "--alpha", "0.8", "--gamma", "4")
    assert len(rows) == 1  # the lecture preset already runs at 60% compute efficiency
    assert rows[0]["c"] == pytest.approx(0.186, abs=5e-4)
    assert rows[0]["draft"] == "llama-3.2-1b" and rows[0]["gamma_opt"] == 4


def test_spec_w4a16_and_moe():
    w4 = rows_of("spec", "--weights", "w4a16", "--batch", "32", "--mfu", "1")
    bf16 = rows_of("spec", "--batch", "32", "--mfu", "1")
    assert w4[0]["turning_batch"] < bf16[0]["turning_batch"] / 3.5
    assert w4[0]["turning_batch_estimate"] == pytest.approx(295.2 / 20, abs=0.1)
    moe = rows_of("spec", "--model", "mixtral-8x7b", "--batch", "1", "--mfu", "1")
    assert moe[0]["speedup"] < moe[0]["dense_twin_speedup"]
    out = run("spec", "--model", "mixtral-8x7b")
    assert "dense twin" in out.output


def test_spec_csv():
    out = run("spec", "--batch", "64", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out.output)))
    assert len(rows) == 2 and float(rows[0]["speedup"]) == pytest.approx(2.38, abs=0.005)


def test_gamma_grid():
    rows = rows_of("gamma", "--alpha", "0.8", "--alpha", "0.3", "--c", "0.05", "--c", "0.3")
    assert [(r["alpha"], r["c"]) for r in rows] == [(0.8, 0.05), (0.8, 0.3), (0.3, 0.05), (0.3, 0.3)]
    for key in ("alpha", "c", "gamma_opt", "speedup"):
        assert key in rows[0]
    assert rows[0]["gamma_opt"] == 8 and round(rows[0]["speedup"], 2) == 3.09  # the lecture exercise 6
    assert rows[3]["gamma_opt"] == 0 and rows[3]["speedup"] == 1.0  # alpha = c: do not speculate
    assert run("gamma").exit_code == 0


def test_tree_command():
    rows = rows_of("tree", "--widths", "4,2,2,1", "--widths", "8x4x2x1",
                   "--hits", "1:0.44,2:0.64,4:0.79,8:0.91", "--batch", "1", "--batch", "32")
    for key in ("nodes", "tau", "speedup", "widths", "batch", "verify_rows", "chain_speedup",
                "base_step_s", "verify_step_s", "draft_round_s", "round_s"):
        assert key in rows[0]
    # a round drafts every level (depth x c x T(B)), then verifies once
    assert "draft_s" not in rows[0]
    for r in rows:
        assert r["draft_round_s"] == pytest.approx(r["depth"] * r["c"] * r["base_step_s"], rel=1e-12)
        assert r["round_s"] == pytest.approx(r["draft_round_s"] + r["verify_step_s"], rel=1e-12)
    assert [r["nodes"] for r in rows] == [44, 44, 168, 168]
    assert round(rows[0]["tau"], 2) == 2.76  # the lecture exercise 9
    assert rows[0]["speedup"] > rows[0]["chain_speedup"]  # batch 1: trees win
    assert rows[3]["speedup"] * 5 < rows[3]["chain_speedup"]  # batch 32: far slower than a chain


def test_leviathan_pairs():
    rows = rows_of("leviathan", "--alpha", "0.7", "--gamma", "3", "--alpha", "0.75", "--gamma", "7",
                   "--c-hat", "0.1")
    for key in ("alpha", "gamma", "c", "expected_tokens", "speedup", "ops_factor"):
        assert key in rows[0]
    assert round(rows[0]["ops_factor"], 2) == 1.70  # the lecture exercise 7 (b)
    assert round(rows[1]["expected_tokens"], 2) == 3.60  # the lecture exercise 5 (a)
    assert rows[1]["c_hat"] == 0.1


@pytest.mark.parametrize("args,needle", [
    (["spec", "--alpha", "1.5"], "--alpha must be in [0, 1], got 1.5"),
    (["spec", "--alpha", "nan"], "--alpha must be a finite number"),
    (["spec", "--gamma", "-1"], "--gamma must be in [0, inf), got -1"),
    (["spec", "--batch", "0"], "--batch must be in [1, inf), got 0"),
    (["spec", "--c", "-0.1"], "--c must be in [0, inf)"),
    (["spec", "--c", "inf"], "--c must be a finite number"),
    (["spec", "--mfu", "1.5"], "--mfu must be in (0, 1]"),
    (["spec", "--c", "0.1", "--draft", "llama-3.2-1b"], "--c and --draft exclude each other"),
    (["spec", "--draft", "nope"], "unknown model 'nope'"),
    (["spec", "--draft", "llama-3.2-1b", "--draft-preset", "fast"], "--draft-preset must be one of"),
    (["spec", "--weights", "int3"], "--weights must be one of"),
    (["spec", "--gamma-max", "5000"], "--gamma-max must be in [1, 1024]"),
    (["spec", "--format", "xml"], "--format must be one of"),
    (["gamma", "--alpha", "-0.2"], "--alpha must be in [0, 1]"),
    (["gamma", "--c", "nan"], "--c must be a finite number"),
    (["tree", "--widths", "4,3"], "width 3 has no rate in --hits (given for k = 1, 2, 4, 8)"),
    (["tree", "--widths", "4,,2"], "--widths must be whole numbers"),
    (["tree", "--hits", "1:0.5,2:0.4"], "--hits: top-2 hit rate"),
    (["tree", "--hits", "2:1.5"], "--hits rate for k = 2 must be in [0, 1], got 1.5"),
    (["tree", "--hits", "x:y"], "--hits must be k:rate pairs"),
    (["tree", "--batch", "0"], "--batch must be in [1, inf)"),
    (["leviathan", "--alpha", "2"], "--alpha must be in [0, 1]"),
    (["leviathan", "--gamma", "-3"], "--gamma must be in [0, inf)"),
    (["leviathan", "--alpha", "0.7", "--alpha", "0.8", "--gamma", "1", "--gamma", "2", "--gamma", "3"],
     "--alpha and --gamma come in pairs"),
    (["leviathan", "--c-hat", "-1"], "--c-hat must be in [0, inf)"),
])
def test_bad_input_is_one_line(args, needle):
    out = run(*args)
    assert out.exit_code == 2, out.output
    assert "Traceback" not in out.output
    lines = [ln for ln in out.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0], out.output


def test_numpy_stays_out_of_light_commands():
    # cli.py imports numpy only inside the speculative commands, never at the top level
    import subprocess
    import sys

    code = ("import sys, cli; from typer.testing import CliRunner; "
            "CliRunner().invoke(cli.app, ['model', 'llama-3-8b']); print('numpy' in sys.modules)")
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert out.stdout.strip() == "False"
