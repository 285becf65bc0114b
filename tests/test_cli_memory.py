"""CLI: `capacity`, `waste`, `batching` (the lecture §2-§3, exercises 1 and 2), their formats and errors."""

from __future__ import annotations

import csv
import io

import pytest
from rich.console import Console

from llm_cost.commands.progress import SweepProgress

from helpers import ORCA, ORCA_GPU, rows_of, run


@pytest.mark.parametrize("cmd", ["capacity", "waste", "batching"])
def test_help_has_an_example(cmd):
    out = run(cmd, "--help")
    assert out.exit_code == 0 and "Example: llm-cost" in out.output


def test_capacity_json():
    # exercise 2 (b) by default: 272 + 64.5 -> 37; (a) 2048 -> 6
    row = rows_of("capacity", *ORCA)[0]
    assert {"kv_tokens", "requests_max_len", "requests_declared", "requests_none", "shortfall_bytes"} <= set(row)
    assert (row["kv_tokens"], row["requests_max_len"], row["requests_declared"]) == (12_564, 6, 37)
    big = rows_of("capacity", *ORCA, "--max-gen", "512", "--gen", "64.5")[0]
    assert (big["requests_declared"], big["requests_none"]) == (16, 37)


def test_capacity_table_and_csv():
    out = run("capacity", *ORCA, "--reserve", "0.1")
    assert out.exit_code == 0 and "12,564" in out.output and "GB = 1e9 bytes" in out.output
    row = next(csv.DictReader(io.StringIO(run("capacity", *ORCA, "-f", "csv").output)))
    assert int(row["kv_tokens"]) == 12_564


def test_capacity_model_that_does_not_fit():
    out = run("capacity", "--model", "gpt-3-175b", *ORCA_GPU)
    assert out.exit_code == 0 and "do not fit" in out.output
    row = rows_of("capacity", "--model", "gpt-3-175b", *ORCA_GPU)[0]
    assert row["kv_tokens"] == 0 and row["requests_declared"] == 0
    assert row["shortfall_bytes"] == pytest.approx(row["weight_bytes"] - 36e9)


def test_waste_exercise_1_by_default():
    row = rows_of("waste")[0]
    assert (row["positions_computed"], row["positions_needed"]) == (1047, 687)
    assert row["waste_fraction"] == pytest.approx(0.344, abs=5e-4)
    same = rows_of("waste", "--isl", "100", "--isl", "300", "--isl", "200",
                   "--osl", "10", "--osl", "50", "--osl", "30")
    assert same[0] == row
    assert "34.4" in run("waste").output


def test_waste_grows_with_load():
    # §2.2: "负载越高、批越满，白算得越多"
    rows = rows_of("waste", *ORCA, "--rate", "0.3", "--rate", "2", "--requests", "300")
    assert rows[0]["waste_fraction"] < rows[1]["waste_fraction"]
    assert rows[0]["mean_batch"] < rows[1]["mean_batch"]


def test_batching_rates():
    rows = rows_of("batching", "--scheduler", "iteration", "--max-batch", "32", "--rate", "2", "--rate", "8",
                   "--requests", "300", "--seed", "1")
    for key in ("scheduler", "max_batch", "rate_req_per_s", "throughput_req_per_s", "latency_per_token_median_s",
                "latency_per_token_p90_s", "kv_reserved_mean_tokens", "kv_written_mean_tokens", "deadlock"):
        assert key in rows[0]
    assert [r["rate_req_per_s"] for r in rows] == [2, 8]
    assert rows[0]["latency_per_token_median_s"] < rows[1]["latency_per_token_median_s"]
    assert not rows[0]["deadlock"] and rows[0]["finished"] == 300
    assert rows_of("batching", "--rate", "2", "--requests", "300", "--seed", "1")[0] == rows[0]  # deterministic


def test_batching_search():
    row = rows_of("batching", *ORCA, "--scheduler", "iteration", "--max-batch", "32", "--slo-ms", "45",
                  "--requests", "300")[0]
    assert 9 < row["rate_req_per_s"] < 16 and row["latency_per_token_median_s"] <= 0.045
    assert row["slo_s"] == 0.045 and 0.021 < row["unloaded_latency_per_token_s"] < 0.023
    # a target below the unloaded latency: no rate, the same keys, no traceback
    none = rows_of("batching", *ORCA, "--slo-ms", "10", "--requests", "100")[0]
    assert none["rate_req_per_s"] == 0 and none["throughput_req_per_s"] is None
    assert set(none) == set(row)


def test_batching_deadlock_reported():
    out = run("batching", *ORCA, "--scheduler", "none", "--max-batch", "64", "--rate", "12", "--max-gen", "512",
              "--requests", "1000")
    assert out.exit_code == 0 and "deadlock: iteration" in out.output and "hold 12564 of 12564" in out.output
    row = rows_of("batching", *ORCA, "--scheduler", "none", "--max-batch", "64", "--rate", "12", "--max-gen", "512",
                  "--requests", "1000")[0]
    assert row["deadlock"] and row["deadlock_kv_held_tokens"] == 12_564 and row["finished"] < 1000


def test_batching_equal_lengths_and_kv_override():
    row = rows_of("batching", "--rate", "inf", "--prompt-len", "4", "--output-len", "5", "--requests", "2",
                  "--kv-tokens", "10", "--scheduler", "none")[0]
    assert row["deadlock"] and row["deadlock_iterations_done"] == 2 and row["deadlock_kv_held_tokens"] == 10


@pytest.mark.parametrize("args,needle", [
    (["capacity", "--reserve", "1.5"], "--reserve must be in [0, 1)"),
    (["capacity", "--prompt", "0"], "--prompt must be in [1, inf)"),
    (["capacity", "--gen", "600", "--max-gen", "512"], "--gen must be in [1, 512]"),
    (["capacity", *ORCA, "--prompt", "2000", "--max-gen", "512"], "--prompt + --max-gen must be at most --max-len (2048)"),
    (["capacity", "--gpu", "a99"], "unknown gpu 'a99'"),
    (["waste", "--isl", "100", "--osl", "10", "--osl", "20"], "same number of times"),
    (["waste", "--isl", "0", "--osl", "10"], "--isl must be in [1, inf)"),
    (["waste", "--rate", "1", "--isl", "5", "--osl", "5"], "without --isl and --osl"),
    (["waste", "--prompt", "100", "--output", "10"], "--prompt is now --isl"),  # issue 24.4: renamed
    (["waste", "--isl", "100", "--output=10"], "--output is now --osl"),
    (["batching"], "give --rate R"),
    (["batching", "--rate", "1", "--slo-ms", "45"], "not both"),
    (["batching", "--rate", "-1"], "--rate must be in [1e-06, inf)"),
    (["batching", "--rate", "nan"], "--rate must be a finite number"),
    (["batching", "--rate", "1", "--max-batch", "0"], "--max-batch must be in [1, inf)"),
    (["batching", "--rate", "1", "--requests", "0"], "--requests must be in [1, inf)"),
    (["batching", "--rate", "1", "--scheduler", "fifo"], "--scheduler must be one of request, iteration, none"),
    (["batching", "--rate", "1", "--scheduler", "request", "--reservation", "declared"], "--reservation"),
    (["batching", "--rate", "1", "--max-gen", "64"], "--max-gen must be in [128, inf)"),
    (["batching", "--rate", "1", "--kv-tokens", "100"], "needs"),
    (["batching", "--rate", "1", "--model", "gpt-3-175b"], "no KV room"),
    (["batching", "--slo-ms", "0"], "--slo-ms must be in (0, inf)"),
    (["batching", "--slo-ms", "45", "--slo-stat", "p95"], "--slo-stat must be one of median, p50, p90, p99"),
])
def test_bad_input_is_one_line(args, needle):
    out = run(*args)
    assert out.exit_code == 2
    lines = [ln for ln in out.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: ") and needle in lines[0], out.output


def test_progress_bar_only_for_long_sweeps():
    ticks = iter([0.0, 0.1, 0.2])
    quick = SweepProgress("x", console=Console(file=io.StringIO(), force_terminal=True))
    quick._clock = lambda: next(ticks)
    quick._start = 0.0
    quick(1, 5)  # 0.1 s per step, 0.5 s expected: stays hidden
    assert not quick.shown
    buf = io.StringIO()
    slow = SweepProgress("searching", console=Console(file=buf, force_terminal=True))
    slow._clock, slow._start = (lambda: 0.5), 0.0
    with slow:
        slow(1, 10)  # 0.5 s per step, 5 s expected: shown at once
        assert slow.shown
    piped = SweepProgress("x", console=Console(file=io.StringIO(), force_terminal=False))
    piped._clock, piped._start = (lambda: 5.0), 0.0
    piped(1, 2)
    assert not piped.shown
