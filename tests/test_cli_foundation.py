"""CLI: `model`, `roofline`, `catalog`, --version, --help, and one-line errors."""

from __future__ import annotations

import csv
import io
import json

import pytest

from llm_cost import __version__

from helpers import run


def test_version_and_help():
    assert run("--version").output.strip() == f"llm-cost {__version__}"
    for cmd in ("model", "roofline", "catalog"):
        out = run(cmd, "--help")
        assert out.exit_code == 0 and "Example: llm-cost" in out.output


def test_model_json_keys():
    out = run("model", "llama-3-8b", "deepseek-v3", "--format", "json")
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)
    assert [r["name"] for r in rows] == ["llama-3-8b", "deepseek-v3"]
    for key in ("name", "params_total", "params_active", "weight_bytes_bf16", "weight_bytes_int4",
                "bits_int4", "kv_bytes_per_token", "flops_per_token"):
        assert key in rows[0]
    assert rows[0]["params_total"] == 8_030_261_248
    assert rows[1]["kv_bytes_per_token"] == 70_272


def test_model_table_and_csv():
    out = run("model", "llama-3-8b")
    assert out.exit_code == 0 and "8.03" in out.output and "GB = 1e9 bytes" in out.output
    rows = list(csv.DictReader(io.StringIO(run("model", "llama-3-8b", "-f", "csv").output)))
    assert float(rows[0]["weight_bytes_int4"]) == pytest.approx(4.266e9, rel=1e-3)


def test_model_from_path(data_dir):
    out = run("model", str(data_dir / "qwen2-7b.json"), "-f", "json")
    assert json.loads(out.stdout)[0]["params_total"] == 7_615_616_512


def test_roofline_lecture_rows():
    out = run("roofline", "--model", "llama-3.1-8b", "--preset", "lecture", "--context", "1024",
              "--rows", "1", "--rows", "257", "--format", "json")
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)
    for key in ("rows", "batch", "context", "step_time_s", "memory_time_s", "compute_time_s", "bound"):
        assert key in rows[0]
    assert rows[0]["step_time_s"] == pytest.approx(6.65e-3, abs=5e-6)
    assert rows[1]["step_time_s"] == pytest.approx(7.76e-3, abs=5e-6) and rows[1]["bound"] == "compute"


def test_roofline_knob_overrides():
    base = json.loads(run("roofline", "-f", "json").stdout)[0]
    knobs = json.loads(run("roofline", "--bw-eff", "0.5", "--fixed-ms", "0.3", "-f", "json").stdout)[0]
    assert knobs["memory_time_s"] == pytest.approx(2 * base["memory_time_s"])
    assert knobs["step_time_s"] == pytest.approx(2 * base["memory_time_s"] + 0.3e-3)
    mfu = json.loads(run("roofline", "--rows", "1000", "--mfu", "0.6", "-f", "json").stdout)[0]
    assert mfu["bound"] == "compute" and mfu["compute_efficiency"] == 0.6 and knobs["bw_efficiency"] == 0.5
    w4 = json.loads(run("roofline", "--weights", "w4a16", "-f", "json").stdout)[0]
    assert w4["step_time_s"] == pytest.approx(1.27e-3, abs=5e-6)


@pytest.mark.parametrize("args,needle", [
    (["roofline", "--mfu", "1.5"], "--mfu must be in [0.0001, 1]"),
    (["roofline", "--bw-eff", "0"], "--bw-eff must be in [0.0001, 1]"),
    (["roofline", "--fixed-ms", "-1"], "--fixed-ms must be in [0, inf)"),
    (["roofline", "--batch", "0"], "--batch must be in [1, 1e+12]"),
    (["roofline", "--rows", "1", "--batch", "4"], "rows"),
    (["roofline", "--context", "-5"], "--context must be in [0, 1e+12]"),
    (["roofline", "--preset", "fast"], "--preset must be one of article, lecture"),
    (["roofline", "--weights", "int3"], "--weights must be one of"),
    (["roofline", "--gpu", "h101"], "unknown gpu 'h101'; did you mean h200 or h100-sxm? (known:"),
    (["roofline", "--format", "xml"], "--format must be one of table, json, csv"),
    (["model", "nope"], "unknown model 'nope'"),
    (["model", "/nonexistent/config.json"], "file not found"),
    (["model", "llama-3-8b", "--lora-rank", "0"], "--lora-rank must be in [1, inf)"),
])
def test_bad_input_is_one_line(args, needle):
    out = run(*args)
    assert out.exit_code == 2
    assert "Traceback" not in out.output
    lines = [ln for ln in out.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0], out.output


def test_unparseable_number_no_traceback():
    out = run("roofline", "--batch", "many")
    assert out.exit_code == 2 and "Traceback" not in out.output and "--batch" in out.output


def test_catalog_lists_sources():
    rows = json.loads(run("catalog", "-f", "json").stdout)
    assert {"h100-sxm", "llama-3-8b"} <= {r["name"] for r in rows}
    assert all(r["source"] for r in rows)


def test_catalog_lists_each_models_params_and_context():
    rows = {r["name"]: r for r in json.loads(run("catalog", "-f", "json").stdout)}
    assert (rows["llama-3-8b"]["params_total"], rows["llama-3-8b"]["max_position_embeddings"]) == (8_030_261_248, 8192)
    oss = rows["gpt-oss-20b"]
    assert (oss["params_total"], oss["params_active"], oss["max_position_embeddings"]) == (
        20_914_757_184, 4_187_440_704, 131_072)
    assert rows["h100-sxm"]["params_total"] is None and rows["h100-sxm"]["max_position_embeddings"] is None
    assert all(r["params_active"] <= r["params_total"] for r in rows.values() if r["kind"] == "model")
    table = run("catalog").output
    assert "total (B)" in table and "text (B)" in table and "context (tokens)" in table and "20.91" in table


def test_every_command_is_mapped_to_its_module():
    # main() imports only the invoked command's module, so the map must be complete and right
    from llm_cost import cli

    registered = {info.name: info.callback.__module__ for info in cli.app.registered_commands}
    assert set(registered) == set(cli.COMMAND_MODULES)
    for name, module in registered.items():
        assert module == f"llm_cost.commands.{cli.COMMAND_MODULES[name]}", name


def test_main_runs_one_command_module_in_a_fresh_process():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "llm_cost.cli", "spec", "--alpha", "0.8", "--gamma", "4",
                          "--batch", "64", "--format", "json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert {round(r["speedup"], 2) for r in rows} == {2.38, 1.61}  # article table, B = 64
    bad = subprocess.run([sys.executable, "-m", "llm_cost.cli", "spec", "--alpha", "2"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--alpha" in bad.stderr
