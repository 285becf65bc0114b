"""The property suite (llm_cost.checks.properties and .formulas) over every catalog model, and `llm-cost check`."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from typer.testing import CliRunner

from llm_cost.cli import app
from llm_cost.catalog import catalog_names, load_accelerator, load_model
from llm_cost.checks import runner as check_runner, strategies
from llm_cost.checks.invariant import Invariant
from llm_cost.checks.runner import all_invariants, run

MODELS = catalog_names("models")
GPUS = ["h100-sxm", "l40s"]
MODEL_INVARIANTS = [i for i in all_invariants() if i.scope == "model"]
FORMULA_INVARIANTS = [i for i in all_invariants() if i.scope == "formula"]


@pytest.mark.parametrize("gpu", GPUS)
@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("inv", MODEL_INVARIANTS, ids=lambda i: i.name)
def test_model_invariant(inv, name, gpu):
    result = run(inv, load_model(name), load_accelerator(gpu), examples=40)
    assert result.passed, result.counterexample


@pytest.mark.parametrize("inv", FORMULA_INVARIANTS, ids=lambda i: i.name)
def test_formula_invariant(inv):
    result = run(inv, load_model("llama-3-8b"), load_accelerator("h100-sxm"), examples=200)
    assert result.passed, result.counterexample


def test_a_failing_invariant_reports_its_shrunk_counterexample():
    def too_slow(model, gpu):
        from llm_cost.roofline import step_time
        from llm_cost.specs import PRESETS

        @given(batch=strategies.batches)
        def prop(batch):
            assert step_time(model, gpu, PRESETS["article"], rows=batch, batch=batch).step_time_s < 5e-3
        return prop

    result = run(Invariant("too_slow", "T < 5 ms", too_slow), load_model("llama-3-8b"),
                 load_accelerator("h100-sxm"))
    # 4.79 ms of weights until 15.01 GFLOP x batch / 989 TFLOP/s passes 5 ms: batch 330
    assert not result.passed and "batch=330" in result.counterexample


runner = CliRunner()


def test_check_command_passes_on_user_files(data_dir, tmp_path):
    sheet = tmp_path / "gpu.json"
    sheet.write_text(json.dumps({"name": "Mine", "memory_bytes": 24e9, "bandwidth_bytes_per_s": 1e12,
                                 "bf16_flops_per_s": 1.65e14}))
    out = runner.invoke(app, ["check", "--model", str(data_dir / "qwen2-7b.json"), "--gpu", str(sheet),
                              "--examples", "10", "--format", "json"])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)
    assert rows and all(r["status"] == "pass" for r in rows)
    assert {r["model"] for r in rows} >= {"qwen2-7b"}


def test_check_command_fails_with_counterexample(monkeypatch):
    def never(model, gpu):
        def prop():
            assert False, "planted failure"
        return prop

    monkeypatch.setattr(check_runner, "all_invariants", lambda: [Invariant("planted", "fails", never)])
    out = runner.invoke(app, ["check", "--model", "llama-3-8b", "--format", "json"])
    assert out.exit_code == 1
    row = json.loads(out.stdout)[0]
    assert row["status"] == "FAIL" and "planted failure" in row["counterexample"]


def test_check_command_bad_examples():
    out = runner.invoke(app, ["check", "--examples", "0"])
    assert out.exit_code == 2 and "--examples must be in [1, 100000]" in out.output


def test_a_crash_inside_a_property_is_a_fail_row_not_a_traceback():
    def crashes(model, gpu):
        @given(batch=strategies.batches)
        def prop(batch):
            raise OverflowError("math range error")
        return prop

    result = run(Invariant("crashes", "x", crashes), load_model("llama-3-8b"), load_accelerator("h100-sxm"))
    assert not result.passed and result.counterexample.startswith("OverflowError: math range error")
