"""The rate search says what it found (issue 24, deliverable 6): found and confirmed on a longer run,
saturated (no rate tried missed), never met, and when the metric did not settle; and the issue's
example, scaled down, reports a settled rate that meets its target on a run ten times longer than the
runs it was found on."""

from __future__ import annotations

from llm_cost.catalog import load_accelerator, load_model
from llm_cost.report.serving_rows import search_caption, search_fields, search_verdict
from llm_cost.serving.engine import serve
from llm_cost.serving.rate_search import HOLD_FACTOR, OUTCOMES, highest_rate
from llm_cost.serving.replica import Replica
from llm_cost.serving.serve_config import ServeConfig
from llm_cost.serving.workload import poisson_workload
from llm_cost.serving.workload_spec import synthetic_workload
from llm_cost.specs import PRESETS
from tests.helpers import rows_of, run

ORCA = Replica.from_specs(load_model("gpt-3-13b"), load_accelerator("a100-40gb"))  # the lecture's §3.3 setting


def orca(n: int):
    return poisson_workload(n, 1.0, seed=0)


def test_a_rate_bounded_from_above_is_found_and_its_caption_says_where_it_held():
    # Orca's setting at a p99 per-token latency of 45 ms: a rate above the one reported missed (found);
    # the 200-request runs' rate missed on 2,000 requests, the one found there met it on 20,000
    s = highest_rate(orca(200), ORCA, scheduler="iteration", max_batch=32, slo_s=0.045, statistic="p99",
                     longer=orca, max_requests=20_000)
    assert s.outcome == "found" and s.settled and s.held_on_requests == HOLD_FACTOR * s.found_on_requests
    text = search_caption(s)
    assert text.startswith("; found: ") and "confirmed on a run 10 times longer (20,000 requests)" in text
    assert "below the" in text  # the rate of the shorter runs, which did not hold, is named
    fields = search_fields(s)
    assert fields["search_outcome"] == "found" and fields["search_requests"] == 200 and fields["settled"] is True


def test_a_target_that_never_binds_is_saturated_not_found():
    # an e2e p99 of a day: every rate tried meets it, so the rate reported is a lower bound (the highest
    # tried, well past the saturated throughput), and the caption says so instead of "found"
    s = highest_rate(orca(100), ORCA, scheduler="iteration", max_batch=32, slo_s=86_400.0, statistic="p99",
                     metric="e2e")
    assert s.outcome == "saturated" and s.rate_req_per_s > 10 * s.saturated_req_per_s
    text = search_caption(s)
    assert "saturated: even the highest rate tried" in text and "found" not in text
    assert "x the all-at-once throughput" in text and "not checked on a longer run" in text


def test_a_target_below_the_unloaded_latency_is_never_met():
    s = highest_rate(orca(100), ORCA, scheduler="iteration", max_batch=32, slo_s=0.001, longer=orca)
    assert s.outcome == "never met" and s.rate_req_per_s == 0 and s.result is None
    assert search_caption(s).startswith("; never met: served alone the median latency per token is 22.")
    assert set(OUTCOMES) == {"found", "saturated", "never met"}


def test_a_check_past_the_limit_is_not_settled():
    # the runs may not lengthen at all (a check on 10 x 100 requests passes max_requests 999)
    s = highest_rate(orca(100), ORCA, scheduler="iteration", max_batch=32, slo_s=0.045, statistic="p99",
                     longer=orca, max_requests=999)
    assert s.outcome == "found" and s.settled is False and s.found_on_requests == 100 and s.held_on_requests == 0
    assert "the metric did not settle" in search_caption(s) and "may not hold" in search_caption(s)


H100 = Replica.from_specs(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"), PRESETS["measured"])
ISSUE = ServeConfig(max_batch=256, reservation="paged", prefill_chunk=8192)


def issue_workload(n: int, seed: int = 0):
    # the issue's lognormal lengths, halved (1,024 -> 512 prompt, 256 -> 128 output) so the test runs fast
    return synthetic_workload(n, 1.0, seed=seed, prompt="lognormal:512:0.6", output="lognormal:128:0.8")


def test_the_issues_example_scaled_down_settles_and_meets_its_target_ten_times_longer():
    # issue 24: Llama-3.1-8B on an H100, paged, chunks of 8,192, lognormal lengths, max batch 256, a p99
    # TTFT target. Scaled down (halved lengths, 150 ms: the issue's 500 ms on its lengths does not settle
    # before runs of 200,000 requests, ~90 CPU s). The 20-request search alone reports a rate far over
    # the target on 200 requests (the defect); lengthening its runs up to 20,000 requests, the rate it
    # reports is settled and meets the target on a fresh run ten times longer than the runs it was found
    # on (found on 2,000 requests, checked on 20,000; about 6 CPU s in all)
    args = dict(scheduler="iteration", max_batch=256, slo_s=0.15, statistic="p99", config=ISSUE, metric="ttft")
    plain = highest_rate(issue_workload(20), H100, **args)
    missed = serve(issue_workload(HOLD_FACTOR * 20).at_rate(plain.rate_req_per_s), H100, ISSUE)
    assert missed.percentile_s("ttft", "p99") > 0.15
    s = highest_rate(issue_workload(20), H100, **args, longer=issue_workload, max_requests=20_000)
    assert s.outcome == "found" and s.rate_req_per_s < plain.rate_req_per_s and s.requests == 20
    assert s.settled is True and s.held_on_requests == HOLD_FACTOR * s.found_on_requests
    check = serve(issue_workload(HOLD_FACTOR * s.found_on_requests).at_rate(s.rate_req_per_s), H100, ISSUE)
    assert check.requests == HOLD_FACTOR * s.found_on_requests
    assert check.finished == check.requests and check.percentile_s("ttft", "p99") <= 0.15
    assert "did not settle" not in search_caption(s)


def test_a_target_met_on_the_short_runs_only_is_never_met_not_a_crash():
    # p99 TTFT <= 50 ms: met on 20 requests at 0.56 req/s, at no rate on 200 (the longer run's tail is
    # longer than the target even unloaded); the search down to the lowest rate a workload takes stops
    # there ("never met") instead of asking for a rate below `workload.MIN_RATE` (it raised)
    s = highest_rate(issue_workload(20), H100, scheduler="iteration", max_batch=256, slo_s=0.05, statistic="p99",
                     config=ISSUE, metric="ttft", longer=issue_workload, max_requests=2000)
    assert s.outcome == "never met" and s.rate_req_per_s == 0 and s.result is None
    assert s.found_on_requests == 200 and s.settled is False and s.shorter_rate_req_per_s > 0
    assert search_caption(s) == "; never met: no rate tried has its p99 ttft within 50 ms"


def test_each_outcome_says_so_in_its_row():
    # the row beside the rate: a found rate "found", a rate no target bound a "lower bound" (the highest tried,
    # 160 x the all-at-once throughput: not a rate the search found), none "never met"; not settled, it says so
    wide = highest_rate(orca(100), ORCA, scheduler="iteration", max_batch=32, slo_s=86_400.0, statistic="p99",
                        metric="e2e")
    never = highest_rate(orca(100), ORCA, scheduler="iteration", max_batch=32, slo_s=0.001)
    found = highest_rate(orca(100), ORCA, scheduler="iteration", max_batch=32, slo_s=0.045, statistic="p99",
                         longer=orca, max_requests=999)
    assert (wide.outcome, never.outcome, found.outcome, found.settled) == ("saturated", "never met", "found", False)
    assert [search_verdict(s) for s in (wide, never, found)] == ["lower bound", "never met", "found, unsettled"]
    assert search_fields(wide)["search_verdict"] == "lower bound"


ORCA_CLI = ("batching", "--model", "gpt-3-13b", "--gpu", "a100-40gb", "--scheduler", "iteration", "--max-batch", "32",
            "--requests", "100")


def test_batching_prints_a_saturated_rate_as_a_lower_bound_and_a_missed_target_as_never_met():
    # `batching --slo-ms` when the target never binds (the search ends at its ceiling) and when even an
    # unloaded server misses it: the table's row names the outcome beside the rate
    ceiling = ORCA_CLI + ("--slo-ms", "86400000", "--slo-metric", "e2e", "--slo-stat", "p99")
    row = rows_of(*ceiling)[0]
    assert row["search_outcome"] == "saturated" and row["search_verdict"] == "lower bound"
    assert row["rate_req_per_s"] > 100 * row["saturated_throughput_req_per_s"]
    table = run(*ceiling, "--format", "markdown").stdout
    header, _, first = [line for line in table.splitlines() if line.startswith("|")]
    cells = [c.strip() for c in first.strip("|").split("|")]
    assert [c.strip() for c in header.strip("|").split("|")][cells.index("lower bound")] == "search"
    assert cells.index("lower bound") == cells.index(f"{row['rate_req_per_s']:,.2f}") + 1  # beside the rate
    missed = rows_of(*ORCA_CLI, "--slo-ms", "1")[0]
    assert (missed["rate_req_per_s"], missed["search_verdict"]) == (0.0, "never met")
    assert "never met" in run(*ORCA_CLI, "--slo-ms", "1", "--format", "markdown").stdout


def test_the_caption_counts_the_requests_of_the_row_it_shows():
    # review 24d D3: the caption opened with the search's short runs (2,000 requests) under the row of
    # the run ten times longer that confirmed the rate
    import json

    from typer.testing import CliRunner

    import cli

    args = ["batching", "--model", "llama-3.2-1b", "--gpu", "h100", "--profile", "lecture", "--slo-ms", "200",
            "--slo-metric", "ttft", "--requests", "200"]
    row = json.loads(CliRunner().invoke(cli.app, [*args, "--format", "json"]).output)[0]
    table = CliRunner().invoke(cli.app, args, env={"COLUMNS": "400"}).output
    assert row["requests"] > 200 and f"{row['requests']:,} requests, Poisson" in table
