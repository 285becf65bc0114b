"""CLI: `table` in every format and `plot` for each kind, with their error paths."""

from __future__ import annotations

import csv
import io
import json

import pytest


from helpers import rows_of, run

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def one_error_line(out, *needles):
    assert out.exit_code == 2, out.output
    lines = [ln for ln in out.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), out.output
    for n in needles:
        assert n in lines[0], lines[0]


@pytest.mark.parametrize("cmd", ["table", "plot"])
def test_help_has_an_example(cmd):
    out = run(cmd, "--help")
    assert out.exit_code == 0 and "Example: llm-cost " + cmd in out.output


# ---- table ---------------------------------------------------------------------------------------

def test_table_default_is_the_article_table():
    out = run("table")
    assert out.exit_code == 0, out.output
    for figure in ("8.03", "70.55", "671.03", "16.06", "141.11", "4.27", "37.48", "4.79", "42.12", "1.27",
                   "11.19", "2.40", "70,272", "1.85–1.90", "Technical Report"):
        assert figure in out.output, figure
    assert "llama-3-8b" in out.output and "deepseek-v3" in out.output


def test_table_markdown_has_models_as_columns():
    out = run("table", "--format", "markdown")
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()
    assert lines[0].startswith("**Cost table: H100 SXM")
    assert "|  | llama-3-8b | llama-3-70b | deepseek-v3 |" in lines
    assert "| weights, BF16 (GB) | 16.06 | 141.11 | 1,342.05 |" in lines
    assert "| MTP draft, γ 1, α 0.85–0.90: tokens per step | - | - | 1.85–1.90 |" in lines
    table = [ln for ln in lines if ln.startswith("|")]
    assert len({ln.count("|") for ln in table}) == 1  # every row has 4 cells
    assert any(ln.startswith("- ") and "1.8x TPS" in ln for ln in lines)  # notes as a list


def test_table_json_is_one_flat_row_per_model():
    out = run("table", "--format", "json")
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)
    assert [r["model"] for r in rows] == ["llama-3-8b", "llama-3-70b", "deepseek-v3"]
    for r in rows:
        assert all(not isinstance(v, (dict, list)) for v in r.values())
        assert {"params_text", "weight_bytes_bf16", "kv_bytes_per_sequence_at_4096", "decode_step_s_w4a16",
                "spec_speedup", "mtp_c", "fits_bf16", "max_batch_int4_at_4096"} <= set(r)
    assert rows[2]["mtp_layers"] == 1 and rows[0]["mtp_layers"] is None
    assert round(rows[0]["decode_step_s_bf16"] * 1e3, 2) == 4.79


def test_table_csv_has_the_json_keys():
    rows = json.loads(run("table", "-f", "json").stdout)
    out = run("table", "-f", "csv")
    assert out.exit_code == 0, out.output
    parsed = list(csv.DictReader(io.StringIO(out.stdout)))
    assert len(parsed) == 3 and list(parsed[0]) == list(rows[0])
    assert float(parsed[1]["weight_bytes_int4"]) == rows[1]["weight_bytes_int4"]


def test_table_options():
    rows = json.loads(run("table", "-m", "llama-3.1-8b", "-m", "mixtral-8x7b", "--gpu", "h200", "--context", "8192",
                          "--batch", "8", "--reserve", "0.2", "-f", "json").output)
    assert [r["model"] for r in rows] == ["llama-3.1-8b", "mixtral-8x7b"]
    assert all(r["gpu"] == "h200" and r["gpu_name"] == "H200 SXM" and r["batch"] == 8 and r["reserve_fraction"] == 0.2 for r in rows)
    assert "max_batch_bf16_at_8192" in rows[0] and "max_batch_bf16_at_4096" not in rows[0]
    out = run("table", "-m", "deepseek-v3", "--mtp-alpha", "0.8", "-f", "markdown")
    assert "| MTP draft, γ 1, α 0.80: tokens per step | 1.80 |" in out.output


def test_table_takes_a_config_path(data_dir):
    rows = json.loads(run("table", "-m", str(data_dir / "qwen2-7b.json"), "-f", "json").stdout)
    assert rows[0]["model"] == "qwen2-7b" and rows[0]["params_text"] == 7_615_616_512


@pytest.mark.parametrize("args,needles", [
    (["--model", "nope"], ["unknown model 'nope'"]),
    (["--gpu", "/nonexistent/gpu.json"], ["not found"]),
    (["--alpha", "1.5"], ["--alpha"]),
    (["--gamma", "-1"], ["--gamma"]),
    (["--batch", "0"], ["--batch"]),
    (["--context", "0"], ["--context"]),
    (["--reserve", "1"], ["--reserve"]),
    (["--mtp-alpha", "nan"], ["--mtp-alpha"]),
    (["--format", "xml"], ["--format", "markdown"]),
    (["--bogus"], ["--bogus"]),
])
def test_table_errors(args, needles):
    one_error_line(run("table", *args), *needles)


# ---- plot ------------------------------------------------------------------------------------------

def test_plot_writes_the_file(tmp_path):
    target = tmp_path / "gamma.png"
    out = run("plot", "gamma", "-o", str(target))
    assert out.exit_code == 0, out.output
    assert out.output.strip() == f"wrote {target}"
    assert target.read_bytes()[:8] == PNG_MAGIC and target.stat().st_size > 20_000


def test_plot_svg_and_options(tmp_path):
    target = tmp_path / "spec.svg"
    out = run("plot", "spec-vs-batch", "--mfu", "0.6", "--alpha", "0.7", "--alpha", "0.9", "--batch-max", "512",
              "--batch", "64", "-o", str(target))
    assert out.exit_code == 0, out.output
    assert b"<svg" in target.read_bytes()[:500]


def test_plot_batching_is_quick_with_few_requests(tmp_path):
    target = tmp_path / "b.png"
    out = run("plot", "batching", "-n", "100", "--rate", "1", "--rate", "8", "--max-batch", "16", "--slo-ms", "45",
              "-o", str(target))
    assert out.exit_code == 0, out.output
    assert target.stat().st_size > 20_000


@pytest.mark.parametrize("args,needles", [
    (["pie", "-o", "x.png"], ["KIND", "spec-vs-batch"]),
    (["gamma", "-o", "x.pdf"], [".png or .svg"]),
    (["gamma", "-o", "/nonexistent/dir/x.png"], ["folder does not exist"]),
    (["gamma"], ["--output"]),
    (["gamma", "--widths", "4,2", "-o", "x.png"], ["--widths does not apply to plot gamma"]),
    (["roofline", "--gamma", "1", "--gamma", "2", "-o", "x.png"], ["--gamma takes one value"]),
    (["roofline", "--model", "nope", "-o", "x.png"], ["unknown model"]),
    (["spec-vs-batch", "--alpha", "2", "-o", "x.png"], ["--alpha"]),
    (["spec-vs-batch", "--batch", "0", "-o", "x.png"], ["--batch"]),
    (["gamma", "--gamma-max", "100000", "-o", "x.png"], ["--gamma-max"]),
    (["tree", "--widths", "3,1", "-o", "x.png"], ["width 3"]),
    (["tree", "--hits", "1:2", "-o", "x.png"], ["--hits"]),
    (["batching", "--requests", "100000", "-o", "x.png"], ["--requests"]),
    (["batching", "--rate", "0", "-o", "x.png"], ["--rate"]),
    (["batching", "--scheduler", "none", "-o", "x.png"], ["--scheduler"]),
    (["batching", "--model", "llama-3-70b", "-o", "x.png"], ["no KV room"]),
])
def test_plot_errors(tmp_path, args, needles):
    args = [str(tmp_path / a) if a in ("x.png", "x.pdf") else a for a in args]
    one_error_line(run("plot", *args), *needles)
    assert not (tmp_path / "x.png").exists()


def test_table_on_a_deployment_with_ttft_and_price():
    """`table --tp 8 --isl 4096 --usd-per-gpu-hour 2.5`: each decode step is one GPU's (roofline on the same
    deployment), TTFT the prefill of one prompt, dollars the decode step's 8 GPU-seconds per B tokens."""
    rows = rows_of("table", "--tp", "8", "--isl", "4096", "--usd-per-gpu-hour", "2.5")
    (step,) = rows_of("roofline", "--model", "llama-3-70b", "--tp", "8")
    r = rows[1]
    assert (r["tp"], r["gpus"], r["isl"]) == (8, 8, 4096)
    assert r["decode_step_s_bf16"] == step["step_time_s"]
    assert r["usd_per_million_output_tokens_bf16"] == pytest.approx(r["decode_step_s_bf16"] * 8 * 2.5 / 3600 * 1e6)
    (req,) = rows_of("request", "--model", "llama-3-70b", "--tp", "8", "--isl", "4096", "--osl", "1", "--preset", "article")
    assert r["ttft_s_bf16"] == pytest.approx(req["ttft_s"], rel=1e-12)
    assert rows[1]["fits_bf16"] and not rows[2]["fits_bf16"]  # DeepSeek-V3 in BF16: 1.34 TB on 8 x 80 GB
    out = run("table", "--tp", "8", "--strict")
    assert out.exit_code == 2 and "deepseek-v3 on H100 SXM, tp 8: BF16 weights do not fit" in out.stderr
    text = run("table", "--tp", "8", "--isl", "4096", "--usd-per-gpu-hour", "2.5", "-f", "markdown").stdout
    assert "time to first token, 4,096-token prompt, BF16 (ms)" in text and "$ per million output tokens" in text


def test_table_marks_a_deployment_that_does_not_fit_instead_of_pricing_it():
    """Issue 28.8: `table` priced DeepSeek-V3 on one H100 (1.34 TB of BF16 weights on 80 GB). A format
    whose weights do not fit has no $ keys (None) and its price cells say so; what fits keeps its price,
    and the times stay, marked, as the article's "assuming it fits"."""
    args = ["table", "--usd-per-gpu-hour", "2.5", "--usd-per-kwh", "0.1"]
    small, big, v3 = rows_of(*args)
    assert small["fits_bf16"] and small["fits_int4"] and small["usd_per_million_output_tokens_bf16"] > 0
    assert big["fits_int4"] and not big["fits_bf16"] and big["usd_per_million_output_tokens_w4a16"] > 0
    for key in ("usd_per_million_output_tokens", "usd_per_million_tokens_energy"):
        assert big[f"{key}_bf16"] is None and v3[f"{key}_bf16"] is None and v3[f"{key}_w4a16"] is None
    assert v3["decode_step_s_bf16"] > 0  # the time stays
    text = run(*args, "-f", "markdown").stdout
    (price,) = [ln for ln in text.splitlines() if ln.startswith("| decode cost, batch 1, BF16")]
    assert price.split("|")[3].strip() == "no fit" and price.split("|")[4].strip() == "no fit"
    assert price.split("|")[2].strip() == f"{small['usd_per_million_output_tokens_bf16']:.2f}"
    assert "no fit: that format's weights do not fit" in text
