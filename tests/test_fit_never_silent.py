"""Issue 11, deliverable 4 on the commands that are not one pass (`table`, `batching`, `plot`) and on
`plan`'s expert parallelism: a deployment that cannot run still prints its numbers, and its rows and
one stderr line say so; `--strict` exits 2. The largest batch `table` gives is the one the timing
commands' fit accepts (weights, K/V and activations), so the two never disagree.
"""

from __future__ import annotations

import shlex

import pytest

import llm_cost as lc

from llm_cost.catalog import load_accelerator, load_model
from llm_cost.parallel import deployment_fit, largest_batch, workspace_bytes
from llm_cost.specs import BF16
from llm_cost.specs.deployment import Deployment
from helpers import error_line, rows_of, run

H100 = load_accelerator("h100-sxm")


def test_largest_batch_is_the_last_batch_whose_decode_fits():
    m, d = load_model("qwen2.5-7b"), Deployment()
    most = largest_batch(m, H100, d, weights=BF16, tokens=4096)
    assert deployment_fit(m, H100, d, weights=BF16, rows=most, batch=most, context=4095).fits_memory
    assert not deployment_fit(m, H100, d, weights=BF16, rows=most + 1, batch=most + 1, context=4095).fits_memory
    # by hand: what the weights leave, over one sequence's K/V at 4,096 tokens plus its decode activations
    fit = deployment_fit(m, H100, d, weights=BF16, rows=1, batch=1, context=4095)
    per_sequence = fit.kv_bytes + workspace_bytes(m, 1, 1)
    assert most == int((fit.available_bytes - fit.weight_bytes) // per_sequence)


def test_table_and_roofline_agree_on_the_largest_batch():
    # the review's case: the table said 241 where roofline's fit refused 241 by its activations
    (row,) = rows_of("table", "--model", "qwen2.5-7b", "--context", "4096")
    most = row["max_batch_bf16_at_4096"]
    at = rows_of("roofline", "--model", "qwen2.5-7b", "--batch", most, "--context", 4095)[0]
    past = rows_of("roofline", "--model", "qwen2.5-7b", "--batch", most + 1, "--context", 4095)[0]
    assert at["fits"] is True and past["fits"] is False


def test_table_says_a_batch_that_does_not_fit_its_context():
    args = ("table", "--model", "llama-3-70b", "--tp", "2", "--batch", "8", "--context", "4096")
    (row,) = rows_of(*args)
    assert row["fits"] is False and row["max_batch_bf16_at_4096"] == 2
    assert "batch 8 exceeds the largest BF16 batch at 4,096 tokens (2)" in row["fit_note"]
    assert "memory_needed_bytes" in row and "memory_available_bytes" in row
    out = run(*args)
    assert out.exit_code == 0 and out.stderr.count("\n") == 1 and "batch 8 exceeds" in out.stderr
    assert run(*args, "--strict").exit_code == 2


def test_table_says_a_context_past_the_models_limit():
    (row,) = rows_of("table", "--model", "llama-3-8b", "--context", "100000")
    assert row["fits"] is False and "context 100,000 exceeds the model's limit of 8,192 tokens" in row["fit_note"]
    out = run("table", "--model", "llama-3-8b", "--context", "100000")
    assert "‡ Past the model's context limit (llama-3-8b: 8K tokens)" in out.stdout and "exceeds the model's limit" in out.stderr
    fine = run("table", "--model", "llama-3-8b", "--context", "4096")
    assert fine.exit_code == 0 and fine.stderr == "" and rows_of("table", "--model", "llama-3-8b",
                                                                 "--context", "4096")[0]["fits"] is True


def test_batching_says_requests_past_the_models_context():
    args = ("batching", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--prompt-len", "100000", "--output-len", "10",
            "--rate", "1", "-n", "5")
    (row,) = rows_of(*args)
    assert row["fits"] is False and "100,010 tokens" in row["fit_note"] and "8,192" in row["fit_note"]
    assert run(*args, "--strict").exit_code == 2
    ok = rows_of("batching", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--prompt-len", "1000", "--output-len", "10",
                 "--rate", "1", "-n", "5")[0]
    assert ok["fits"] is True


def test_plot_warns_for_a_figure_of_a_deployment_that_does_not_fit(tmp_path):
    out = run("plot", "roofline", "--model", "llama-3-70b", "-o", tmp_path / "r.png")
    assert out.exit_code == 0 and "Warning" in out.stderr and "the figure assumes it does" in out.stderr
    assert run("plot", "roofline", "--model", "llama-3-70b", "--strict", "-o", tmp_path / "r.png").exit_code == 2
    spec = run("plot", "spec-vs-batch", "--model", "llama-3-70b", "--tp", "2", "--context", "4096",
               "-o", tmp_path / "s.png")
    assert spec.exit_code == 0 and "batches above 2 of gamma 4 at context 4096" in spec.stderr
    quiet = run("plot", "roofline", "-o", tmp_path / "q.png")
    assert quiet.exit_code == 0 and quiet.stderr == ""
    past = run("plot", "spec-vs-batch", "--context", "9000", "--batch-max", "2", "--batch", "1", "--batch", "2",
               "--strict", "-o", tmp_path / "c.png")
    assert past.exit_code == 2 and "context 9005 exceeds the model's limit of 8192 tokens" in past.stderr


def test_plan_searches_expert_parallelism_for_a_moe():
    rows = rows_of("plan", "--model", "mixtral-8x7b", "--gpu", "h100-sxm", "--gpus", "8", "--isl", "1024",
                   "--osl", "128")
    assert any(r["ep"] > 1 for r in rows)
    r = next(r for r in rows if r["ep"] > 1)
    assert f"--ep {r['ep']}" in r["request_args"]
    got = rows_of("request", *shlex.split(r["request_args"]))[0]
    assert got["ttft_s"] == pytest.approx(r["ttft_s"], rel=1e-9) and got["tpot_s"] == pytest.approx(r["tpot_s"], rel=1e-9)
    only = rows_of("plan", "--model", "mixtral-8x7b", "--gpu", "h100-sxm", "--gpus", "8", "--isl", "1024",
                   "--osl", "128", "--ep", "1")
    assert all(x["ep"] == 1 for x in only)


def test_plan_refuses_expert_parallelism_for_a_dense_model():
    line = error_line("plan", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpus", "8", "--isl", "512", "--osl", "64",
                      "--ep", "2")
    assert "--ep" in line and "llama-3-8b has none" in line


def test_plan_request_args_name_the_profile_as_given(tmp_path):
    # a calibrated profile is a file: request_args carry its path (quoted) and the knobs given over it
    path = tmp_path / "my profile.json"
    path.write_text('{"name": "mine", "bw_efficiency": 0.7}')
    (r,) = rows_of("plan", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpus", "1", "--isl", "100", "--osl", "10",
                   "--profile", str(path), "--mfu", "0.5")[:1]
    args = shlex.split(r["request_args"])
    assert args[args.index("--preset") + 1] == str(path) and args[args.index("--mfu") + 1] == "0.5"
    got = rows_of("request", *args)[0]
    assert got["ttft_s"] == pytest.approx(r["ttft_s"], rel=1e-9) and got["tpot_s"] == pytest.approx(r["tpot_s"], rel=1e-9)


# Issue 28.8: one pass on one GPU (`lc.step_time`) carries the fit as deployed_step_time does. The
# article prices Llama-3-70B on one H100 "assuming it fits" (§3.1: 141.1 GB of BF16 weights, 80 GB of
# HBM): it keeps its 42.12 ms (printed to 0.01 ms) and says it does not fit. The roofline floor
# (`roofline.step_time`) times the pass and leaves the fit to `parallel`, the floor above it.
def test_one_gpu_step_time_carries_the_fit_and_keeps_the_articles_time():
    from llm_cost.roofline import step_time as roofline_step_time

    big = lc.step_time("llama-3-70b", "h100-sxm", "article")
    assert round(big.step_time_s * 1e3, 2) == 42.12 and big.fits is False
    assert big.fit_note.startswith("needs 141.1 GB per GPU")
    small = lc.step_time("llama-3-8b", "h100-sxm", "article")
    assert small.fits is True and small.fit_note == ""
    floor = roofline_step_time("llama-3-70b", "h100-sxm", "article")
    assert floor.fits is None and floor.step_time_s == big.step_time_s


@pytest.mark.parametrize("kv_bytes, kv_dtype", [(2, "bf16"), (1, "fp8"), (0.5, "int4")])
@pytest.mark.parametrize("batch, context", [(1, 0), (64, 4096), (400, 8000)])
def test_one_gpu_fit_is_the_deployments_on_one_gpu(kv_bytes, kv_dtype, batch, context):
    from llm_cost.parallel import deployed_step_time

    one = lc.step_time("llama-3-8b", "h100-sxm", "article", batch=batch, context=context, kv_bytes_per_element=kv_bytes)
    dep = deployed_step_time("llama-3-8b", "h100-sxm", "article", Deployment(kv_dtype=kv_dtype), batch=batch,
                             context=context)
    assert (one.fits, one.fit_note) == (dep.fits, dep.fit_note) and one.step_time_s == pytest.approx(dep.step_time_s)


def test_one_gpu_grid_leaves_the_fit_to_each_point():
    assert lc.step_time("llama-3-8b", "h100-sxm", "article", rows=[1, 512]).fits is None
    assert lc.step_time("llama-3-8b", "h100-sxm", "article", kv_bytes_per_element=1.5).fits is None
