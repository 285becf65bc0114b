"""`plan --verify` serves every candidate as `batching` would serve it: the prefix options and the
engine's defaults (`--engine`) reach each run, every candidate serves the same arrival stream (its
replicas take it round-robin), and a disaggregated row names both pools."""

from __future__ import annotations

import pytest
from helpers import error_line, rows_of, run

from llm_cost.planner.verify import WorkloadRecipe, share

PLAN = ("plan", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--isl", "1024", "--osl", "128",
        "--ttft-ms", "500", "--tpot-ms", "20", "--preset", "lecture", "--weights", "fp8", "--kv-dtype", "fp8",
        "--jobs", "1")
# batching serving one replica of the best row (tp 2 fp8, batch 64) the same stream, paged K/V
BATCHING = ("batching", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--preset", "lecture", "--weights", "fp8",
            "--kv-dtype", "fp8", "--tp", "2", "--reservation", "paged", "--max-batch", "64", "--rate", "20",
            "--requests", "300", "--prompt-len", "1024", "--output-len", "128", "--seed", "0",
            "--slo-ttft-ms", "500", "--slo-tpot-ms", "20")


def _best(*extra):
    """The best frontier row (tp 2, one replica, batch 64) on 2 GPUs served at 20 req/s, 300 requests."""
    rows = rows_of(*PLAN, "--gpus", "2", "--tp", "2", "--batch", "64", "--verify", "1", "--rate", "20",
                   "--requests", "300", *extra)
    assert len(rows) == 1 and (rows[0]["tp"], rows[0]["replicas"], rows[0]["batch"]) == (2, 1, 64)
    return rows[0]


@pytest.mark.parametrize("prefix", [("--shared-prefix", "512"), ("--prefix-groups", "4", "--group-prefix", "512"),
                                    ("--sessions", "8", "--turns", "3")])
def test_prefix_options_reach_the_served_run(prefix):
    """With a shared prompt prefix and --prefix-caching, the served row is batching's run with the same
    options exactly (one simulation: the same p99 TTFT and TPOT and prefix hit rate); the cache saves
    prefill, so the served TTFT is below the run without it."""
    cached = _best(*prefix, "--prefix-caching")
    ref = rows_of(*BATCHING, *prefix, "--prefix-caching")[0]
    assert cached["served_ttft_s"] == ref["ttft_p99_s"] and cached["served_tpot_s"] == ref["tpot_p99_s"]
    assert cached["served_prefix_token_hit_rate"] == ref["prefix_token_hit_rate"] > 0
    uncached = _best(*prefix)
    assert uncached["served_ttft_s"] == rows_of(*BATCHING, *prefix)[0]["ttft_p99_s"]
    assert cached["served_ttft_s"] < uncached["served_ttft_s"]


@pytest.mark.parametrize("engine, chunk, block", [("vllm", "8192", "16"), ("sglang", "8192", "1")])
def test_engine_defaults_reach_the_served_run(engine, chunk, block):
    """--engine vllm on an H100: prompts in chunks of 8,192 tokens (its budget on a GPU of >= 70 GiB),
    16-token blocks; sglang: 8,192 and token pages (`specs.engines`); the served row is batching's run
    with those settings given by hand, and the caption says which were taken."""
    row = _best("--engine", engine)
    ref = rows_of(*BATCHING, "--prefill-chunk", chunk, "--block-size", block)[0]
    assert row["served_ttft_s"] == ref["ttft_p99_s"] and row["served_tpot_s"] == ref["tpot_p99_s"]
    plain = _best()
    assert plain["served_ttft_s"] == rows_of(*BATCHING)[0]["ttft_p99_s"]


def test_tensorrt_llm_serves_whole_prompts():
    """--engine trtllm (1.x): enable_chunked_prefill is off by default (`specs.engines`), so the served row is
    batching's run with 32-token blocks and no --prefill-chunk, and the caption says whole prompts."""
    row = _best("--engine", "trtllm")
    ref = rows_of(*BATCHING, "--block-size", "32")[0]
    assert row["served_ttft_s"] == ref["ttft_p99_s"] and row["served_tpot_s"] == ref["tpot_p99_s"]


def test_an_engine_that_cannot_serve_the_options_is_one_line():
    assert "static batches only" in error_line(*PLAN, "--gpus", "1", "--verify", "1", "--rate", "5",
                                               "--engine", "gpt-fast")
    line = error_line(*PLAN, "--gpus", "1", "--verify", "1", "--rate", "5", "--engine", "llama.cpp",
                      "--prefix-caching")
    assert "--prefix-caching" in line and "contiguous" in line


def test_every_candidate_serves_the_same_window():
    """On 2 GPUs, a tp 1 row (2 replicas) and a tp 2 row (1 replica) serve the same stream of 300 requests
    at 20 req/s: the tp 1 replica its round-robin half (150, the even-numbered arrivals), the tp 2 replica
    all 300, both over the stream's window (first to last arrival: 17.3 s at seed 0, 300 / 20 = 15 s in
    the mean), not twice that for the two-replica row as when each replica drew 300 requests of its own."""
    rows = [rows_of(*PLAN, "--gpus", "2", "--tp", tp, "--pp", "1", "--batch", "16", "--verify", "1", "--rate", "20",
                    "--requests", "300")[0] for tp in ("1", "2")]
    by_replicas = {r["replicas"]: r for r in rows}
    assert set(by_replicas) == {1, 2}
    stream = WorkloadRecipe(requests=300, rate_req_per_s=20.0, prompt="1024", output="128").stream()
    for r, row in by_replicas.items():
        arrivals = stream.arrival_s[::r]
        assert row["served_requests"] == 300 // r and row["stream_requests"] == 300
        assert row["served_window_s"] == pytest.approx(arrivals[-1] - arrivals[0], rel=1e-12)
    windows = [row["served_window_s"] for row in rows]
    assert max(windows) - min(windows) < 0.1 and min(windows) == pytest.approx(17.3, abs=0.1)  # seed 0's stream


def test_round_robin_share_keeps_arrival_times_and_splits_clients():
    wl = WorkloadRecipe(requests=9, concurrency=5, prompt="16", output="4").stream()
    third = share(wl, 3, index=1)
    assert third.arrival_s == wl.arrival_s[1::3] and third.concurrency == 2 and len(third) == 3
    assert share(wl, 1) is wl


def test_disaggregated_rows_name_both_pools():
    """A split row's tp x pp cell and JSON name the prefill pool's replicas and split and the decode
    pool's (best_split on 4 H100s: 3 prefill replicas of tp 1, 1 decode replica of tp 1)."""
    rows = rows_of(*PLAN, "--gpus", "4", "--disaggregate", "--verify", "1", "--rate", "40", "--requests", "200")
    split = next(r for r in rows if r.get("prefill_replicas"))
    assert split["split"] == (f"P {split['prefill_replicas']} x tp{split['prefill_tp']}, "
                              f"D {split['decode_replicas']} x tp{split['decode_tp']}")
    assert (split["prefill_replicas"], split["prefill_tp"], split["decode_replicas"], split["decode_tp"]) == (3, 1, 1, 1)


def test_progress_on_a_terminal_unless_quiet(monkeypatch):
    """plan --verify shows 'serving N candidates' on a terminal past a second; --quiet shows no bar and
    no note (the defaults' note included)."""
    import io

    from rich.console import Console

    from llm_cost.commands import progress as progress_module

    screen = io.StringIO()
    original = progress_module.SweepProgress.__init__

    def on_terminal(self, label, console=None, *, quiet=False):
        original(self, label, Console(file=screen, force_terminal=True, width=100), quiet=quiet)
        ticks = iter(range(2, 10_000, 2))  # every step looks like 2 s
        self._clock, self._start = (lambda: float(next(ticks))), 0.0

    monkeypatch.setattr(progress_module.SweepProgress, "__init__", on_terminal)
    args = ("plan", "--gpus", "1", "--verify", "2", "--rate", "5", "--requests", "40", "--jobs", "1")
    loud = run(*args)
    assert loud.exit_code == 0 and "serving 2 candidates" in screen.getvalue() and "Note:" in loud.stderr
    screen.seek(0), screen.truncate()
    quiet = run(*args, "--quiet")
    assert quiet.exit_code == 0 and screen.getvalue() == "" and quiet.stderr == ""
    assert quiet.stdout == loud.stdout


@pytest.mark.parametrize("width", [80, 120])
def test_verified_disaggregated_table_fits_the_screen(width):
    """The served table with a split row (its pools' label the longest cell) fits 80 and 120 columns
    with every figure whole; only the best row's command to paste is printed whole on one line."""
    import re

    from typer.testing import CliRunner

    from llm_cost.cli import app

    args = [*PLAN, "--gpus", "4", "--disaggregate", "--verify", "1", "--rate", "40", "--requests", "200"]
    runner, number = CliRunner(), re.compile(r"(?<![\w/.\-])\d[\d,]*(?:\.\d+)?(?![\w/\-])")
    full = runner.invoke(app, args, env={"COLUMNS": "400"}).stdout
    fitted = runner.invoke(app, args, env={"COLUMNS": str(width)})
    assert fitted.exit_code == 0, fitted.output
    lines = [ln for ln in fitted.stdout.splitlines() if not ln.startswith("llm-cost ")]
    assert max(len(ln) for ln in lines) <= width, fitted.stdout
    table = full.split("searched", 1)[0]  # the table's figures (the caption rewraps)
    assert set(number.findall(table)) <= set(number.findall(fitted.stdout))


def test_serving_options_without_verify_say_they_change_nothing():
    out = run(*PLAN, "--gpus", "1", "--shared-prefix", "512", "--prefix-caching", "--rate", "5")
    assert out.exit_code == 0
    assert ("Note: --rate, --jobs, --prefix-caching, --shared-prefix change nothing without --verify N (the "
            "static plan serves no workload)") in out.stderr.splitlines()  # PLAN gives --jobs 1
    assert "without --verify" not in run(*PLAN[:-2], "--gpus", "1").stderr
