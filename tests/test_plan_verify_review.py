"""Issue 26 review, items 7-9 (`plan --verify` and the executor): prompts past the model's context
warned as `batching` warns; the help of --prompt-len / --output-len / --slo-stat / --verify says what
plan does (median accepted as p50; N of --verify required, 10 suggested); `lc.sweep` names its own
parameters; --jobs with --ray refused; the verify caption names the served lengths."""

from __future__ import annotations

import pytest

from helpers import error_line, rows_of, run
from llm_cost.catalog import load_model
from llm_cost.errors import InvalidValueError
from llm_cost.planner.verify import WorkloadRecipe
from llm_cost.serving.workload import fixed_workload

VERIFY = ("plan", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpus", "1", "--ttft-ms", "5000", "--tpot-ms",
          "50", "--preset", "lecture", "--verify", "1", "--rate", "1", "-n", "20", "--jobs", "1")
CONTEXT = "exceed the model's context of 8,192 tokens"  # llama-3-8b's max_position_embeddings


def test_prompts_past_the_context_warn_once_naming_how_many():
    out = run(*VERIFY, "--prompt-len", "50000", "--format", "csv")
    assert out.exit_code == 0, out.output
    warned = [ln for ln in out.stderr.splitlines() if CONTEXT in ln]
    assert warned == ["Warning: does not fit: 20 of 20 requests, of up to 50,256 tokens (prompt + output), "
                      "exceed the model's context of 8,192 tokens (the times assume it does)"]


def test_prompts_within_the_context_do_not_warn():
    out = run(*VERIFY, "--prompt-len", "8000", "--output-len", "192", "--format", "csv")  # 8,192: just fits
    assert out.exit_code == 0 and CONTEXT not in out.stderr, out.output


def test_past_context_counts_the_requests_past_it():
    from llm_cost.planner.plan_served import past_context

    trace = fixed_workload([(8000, 100), (8100, 100), (100, 10)], arrivals_s=[0.0, 1.0, 2.0])  # 8,100, 8,200, 110
    recipe = WorkloadRecipe(trace=trace, rate_req_per_s=1.0)
    assert past_context(recipe, load_model("llama-3-8b")).startswith("does not fit: 1 of 3 requests, of up to 8,200")
    assert past_context(recipe, load_model("llama-3.1-8b")) == ""  # 131,072 tokens of context


def test_help_says_what_plan_does():
    text = " ".join(run("plan", "--help").output.split())  # the help's lines joined, box edges aside
    text = text.replace("│ ", "").replace(" │", "")
    assert "plan --verify: every prompt --isl long" in text and "plan --verify: every output --osl long" in text
    assert "median (= p50), p50, p90 or p99" in text
    assert "N is required (10 is a good start: --verify 10)" in text


def test_slo_stat_median_is_p50():
    median = rows_of(*VERIFY, "--slo-stat", "median")
    assert median == rows_of(*VERIFY, "--slo-stat", "p50") and "served_ttft_p50_s" in median[0]
    assert "--slo-stat must be one of median, p50, p90, p99" in error_line(*VERIFY, "--slo-stat", "mean")


def test_sweep_names_its_own_parameters():
    import llm_cost as lc

    for name in ("prompt", "output"):
        with pytest.raises(InvalidValueError, match=rf"^{name} must be N, uniform") as err:
            lc.sweep("llama-3-8b", "h100-sxm", "lecture", rate_req_per_s=1, requests=10, **{name: "bogus"})
        assert err.value.params == (name,)


def test_jobs_with_ray_is_refused():
    from llm_cost.executor import TaskPool, run_tasks

    line = error_line(*VERIFY[:-2], "--jobs", "2", "--ray", "auto")
    assert "--jobs" in line and "--ray" in line and "not both" in line
    with pytest.raises(InvalidValueError, match="not both"):
        run_tasks(abs, [1, -2], jobs=2, ray="auto")
    with pytest.raises(InvalidValueError, match="not both"):
        TaskPool(4, ray="auto")


def test_caption_names_the_served_lengths():
    out = run(*VERIFY, "--prompt-len", "uniform:32:512", "--output-len", "64", "--format", "markdown")
    assert out.exit_code == 0, out.output
    assert "same stream of 20 requests (prompt uniform:32:512 tokens, output 64 tokens) at rate 1 req/s" in out.stdout
