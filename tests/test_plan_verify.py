"""`plan --verify`: the frontier served by the engine, the executor (local processes, Ray), ranking."""

from __future__ import annotations

import dataclasses
import importlib.util
import json

import pytest
from helpers import error_line, rows_of, run

import llm_cost as lc
from llm_cost.errors import InvalidValueError
from llm_cost.executor import Interrupted, run_tasks
from llm_cost.planner.verify import (RELATIVE_COST, ServeTask, WorkloadRecipe, candidates_of, served_ranking,
                                     task_weight, verify)
from llm_cost.planner.rows import plan_rows


def _square(x):
    return x * x


def _stop_at_two(x):
    if x == 2:
        raise KeyboardInterrupt
    return x


def _tasks(requests=300, rate=20.0):
    """Llama-3-8B on up to 2 H100s, ISL 1024, OSL 128, TTFT 500 ms, TPOT 20 ms (lecture preset): 7 frontier rows."""
    space = lc.plan_space(lc.load_model("llama-3-8b"), [lc.load_accelerator("h100-sxm")], 2)
    result = lc.plan(lc.evaluate(space, lc.PRESETS["lecture"], isl=1024, osl=128), lc.Target(ttft_s=0.5, tpot_s=0.02))
    rows = plan_rows(result)
    recipe = WorkloadRecipe(requests=requests, rate_req_per_s=rate, prompt="1024", output="128")
    return [ServeTask(c, recipe, 0.5, 0.02) for c in candidates_of(result, rows, 4)]


def test_executor_keeps_task_order_and_counts_progress():
    seen = []
    assert run_tasks(_square, range(7), jobs=2, on_done=lambda d, t: seen.append((d, t))) == [x * x for x in range(7)]
    assert seen[-1] == (7, 7) and len(seen) == 7
    assert run_tasks(_square, range(7), jobs=1) == run_tasks(_square, range(7), jobs=2)


def _started_at(x):
    import time

    t = time.monotonic()
    time.sleep(0.3)
    return t


def test_executor_weights_change_the_order_run_not_the_results():
    """Heaviest first: two processes take tasks 3 and 1 (weights 9 and 5) before 0 and 2 (weight 1 each),
    which start when those are done, 0.3 s later; the results stay in task order."""
    assert run_tasks(_square, range(5), jobs=2, weights=[1, 5, 1, 9, 0]) == [0, 1, 4, 9, 16]
    start = run_tasks(_started_at, range(4), jobs=2, weights=[1, 5, 1, 9])
    assert max(start[1], start[3]) + 0.15 < min(start[0], start[2])


def test_task_weight_puts_pipelines_first():
    """pp 2 candidates (`fast_pipeline`, 0.55-0.75 s per 20,000 requests here) outweigh tp 2 and one GPU
    (0.2-0.47 s) by the ratios of `RELATIVE_COST` (verify.py cites the measurement), each one replica;
    a candidate of two replicas serves half the stream (its round-robin share), half the weight."""
    tasks = _tasks()
    base = tasks[0]
    cand = base.candidate
    dep = cand.deployment

    def on(**split):
        return dataclasses.replace(base, candidate=dataclasses.replace(cand, deployment=dataclasses.replace(dep, **split)))

    one, pipe, tp2 = on(tp=1, pp=1, gpus=1), on(tp=1, pp=2, gpus=2), on(tp=2, pp=1, gpus=2)
    assert task_weight(pipe) > task_weight(tp2) >= task_weight(one) > 0
    assert task_weight(pipe) == RELATIVE_COST["pipeline"] * task_weight(one)
    assert task_weight(tp2) == RELATIVE_COST["deployed"] * task_weight(one)
    assert task_weight(on(tp=1, pp=1, gpus=2)) == task_weight(one) / 2


def test_task_weight_counts_chunked_prompts_at_the_general_loops_cost():
    """Issue 26.4: an engine's defaults that chunk prompts (--engine vllm) take the general loop, 7-9x the
    fast path per request (verify.py cites bench/bench_verify_paths.py), so the ETA weights them by it;
    an engine that does not chunk (trtllm 1.x) keeps its fast path's weight."""
    from llm_cost.planner.verify import ServeSettings

    base = _tasks()[0]
    cand, dep = base.candidate, base.candidate.deployment

    def on(settings, **split):
        moved = dataclasses.replace(cand, deployment=dataclasses.replace(dep, **split))
        return dataclasses.replace(base, candidate=moved, settings=settings)

    vllm, trt = ServeSettings("vllm"), ServeSettings("trtllm")
    one = task_weight(on(None, tp=1, pp=1, gpus=1))
    assert task_weight(on(vllm, tp=1, pp=1, gpus=1)) == RELATIVE_COST["general"] * one
    assert task_weight(on(vllm, tp=2, pp=1, gpus=2)) == RELATIVE_COST["general"] * one
    assert task_weight(on(vllm, tp=1, pp=2, gpus=2)) == RELATIVE_COST["general pipeline"] * one
    assert task_weight(on(trt, tp=1, pp=1, gpus=1)) == one
    assert RELATIVE_COST["general"] > 5 * RELATIVE_COST["deployed"]


def test_executor_interrupt_keeps_what_finished():
    with pytest.raises(Interrupted) as info:
        run_tasks(_stop_at_two, range(5), jobs=1)
    assert info.value.done == {0: 0, 1: 1}


def test_executor_rejects_bad_jobs():
    with pytest.raises(InvalidValueError, match="jobs"):
        run_tasks(_square, [1], jobs=0)


def test_verify_jobs_bit_for_bit_and_order_independent():
    """--jobs 2 equals --jobs 1 exactly, and a candidate's result does not depend on its position
    (each task's seed comes from its own key: the same rows reversed give the same rows reversed)."""
    tasks = _tasks()
    one = verify(tasks, jobs=1)
    assert verify(tasks, jobs=2) == one
    assert verify(tasks[::-1], jobs=2) == one[::-1]
    assert len({r["served_seed"] for r in one}) == len(one)
    assert all(r["served"] and r["served_finished"] == 300 for r in one)


def test_goodput_per_gpu_is_the_replica_goodput_over_its_gpus():
    """At 20 req/s, below every row's capacity, the batch-64 row (tp 2, one replica) finishes every request
    within 500 ms / 20 ms: goodput = throughput = about 20 req/s over 2 GPUs, about 10 per GPU."""
    r = verify(_tasks(requests=2000)[:1], jobs=1)[0]
    assert r["meets_served_slo"]
    assert r["goodput_req_per_s_per_gpu"] == pytest.approx(r["served_throughput_req_per_s_per_gpu"])
    assert r["goodput_req_per_s_per_gpu"] == pytest.approx(10.0, rel=0.03)


def test_served_ranking_puts_slo_first_then_goodput():
    """By hand: row 0 misses the p99 target; rows 1 and 2 meet it with 3.0 and 4.0 req/s per GPU; row 3
    meets it with 4.00001 (equal to row 2 at 4 significant digits: the analytic order breaks the tie)."""
    served = [{"meets_served_slo": False, "goodput_req_per_s_per_gpu": 9.0},
              {"meets_served_slo": True, "goodput_req_per_s_per_gpu": 3.0},
              {"meets_served_slo": True, "goodput_req_per_s_per_gpu": 4.0},
              {"meets_served_slo": True, "goodput_req_per_s_per_gpu": 4.00001}]
    assert served_ranking(served) == [2, 3, 1, 0]


def test_workload_needs_rate_or_concurrency():
    """The library names its parameters (the CLI writes them as --rate and --concurrency)."""
    with pytest.raises(InvalidValueError, match="needs rate_req_per_s .* or concurrency") as err:
        WorkloadRecipe()
    assert err.value.params == ("rate_req_per_s", "concurrency")
    assert "--rate (req/s" in error_line(*PLAN, "--verify", "1")
    half = WorkloadRecipe(requests=10, concurrency=4).for_replicas(2)  # one replica's share of the 10
    assert (len(half), half.concurrency) == (5, 2)


def test_missing_ray_extra_is_one_clear_error():
    if importlib.util.find_spec("ray") is not None:
        pytest.skip("ray is installed: the missing-extra message cannot show")
    with pytest.raises(InvalidValueError, match=r"llm-cost\[ray\]"):
        run_tasks(_square, [1, 2], ray="auto")


# Run in a fresh interpreter: Ray reads RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER when it is imported.
RAY_ON_LOOPBACK = """
import json, sys
import ray
import psutil  # after ray: the copy Ray ships (ray/thirdparty_files)
sys.path.insert(0, sys.argv[1])
from test_plan_verify import _tasks
from llm_cost.planner.verify import verify

ray.init(address="local", include_dashboard=False, num_cpus=1, log_to_driver=False, logging_level="WARNING")
try:
    ours = {p.pid for p in psutil.Process().children(recursive=True)}
    listening = sorted({c.laddr.ip for c in psutil.net_connections(kind="inet")
                        if c.status == psutil.CONN_LISTEN and c.pid in ours})
    tasks = _tasks(requests=100)[:2]
    same = verify(tasks, ray="local") == verify(tasks, jobs=1)
    print(json.dumps({"nodes": [n["NodeManagerAddress"] for n in ray.nodes()], "listening": listening,
                      "same": same}))
finally:
    ray.shutdown()
"""


def test_ray_equals_local_executor_on_loopback():
    """A local Ray instance bound to loopback gives the local executor's results bit for bit. Ray 2.x
    resolves `_node_ip_address="127.0.0.1"` (and `ray start --node-ip-address 127.0.0.1`) to the
    machine's routable address on Linux (ray._private.services.resolve_ip_for_localhost); it keeps a
    node on 127.0.0.1 only where clusters are off, which RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER sets (the
    documented switch, docs.ray.io cluster/getting-started: '=1' enables clusters on Windows and OSX;
    '0' here turns them off on Linux). The test checks the node and every socket its processes listen
    on are loopback."""
    pytest.importorskip("ray", reason="the ray extra is not installed: pip install 'llm-cost[ray]'")
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(lc.__file__).resolve().parent.parent
    env = {**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
           "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", RAY_ON_LOOPBACK, str(Path(__file__).parent)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["nodes"] == ["127.0.0.1"]
    assert got["listening"] and set(got["listening"]) <= {"127.0.0.1", "::ffff:127.0.0.1"}, got["listening"]
    assert got["same"] is True


PLAN = ("plan", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpus", "2", "--isl", "1024", "--osl", "128",
        "--ttft-ms", "500", "--tpot-ms", "20", "--preset", "lecture")


def test_cli_verify_rows_carry_both_rankings():
    rows = rows_of(*PLAN, "--verify", "3", "--rate", "20", "--requests", "300", "--jobs", "1")
    assert [r["served_rank"] for r in rows] == [1, 2, 3]
    assert sorted(r["analytic_rank"] for r in rows) == [1, 2, 3]
    for r in rows:
        assert r["rank_change"] == ("=" if r["analytic_rank"] == r["served_rank"]
                                    else f"{r['analytic_rank'] - r['served_rank']:+d}")
        assert r["served_tpot_s"] > 0 and "goodput_req_per_s_per_gpu" in r


def test_cli_verify_without_workload_is_one_line():
    assert "--rate" in error_line(*PLAN, "--verify", "2")


def test_sweep_jobs_equal_and_grid_order():
    kw = dict(rate_req_per_s=8, requests=200, prompt="1024", output="128", batch=[4, 32], weights=["bf16", "fp8"],
              ttft_s=0.5, tpot_s=0.02)
    one = lc.sweep("llama-3-8b", "h100-sxm", "lecture", jobs=1, **kw)
    assert [(r["batch"], r["weights"]) for r in one] == [(4, "bf16"), (4, "fp8"), (32, "bf16"), (32, "fp8")]
    assert lc.sweep("llama-3-8b", "h100-sxm", "lecture", jobs=2, **kw) == one


def test_static_and_served_rankings_disagree_under_load():
    """Llama-3-8B on one H100 (fp8 weights and K/V, lecture preset), ISL 4096, OSL 256, TTFT <= 3 s,
    TPOT <= 9 ms, batches 16, 32, 64; served at 6 req/s (Poisson, 600 requests, seed 0).

    Static: batch 64 misses TTFT; batch 32 (TPOT 7.3 ms, 2,252 tok/s per GPU) ranks above batch 16
    (TPOT 5.6 ms, 1,759 tok/s per GPU). Served, by hand: a 4096-token prefill takes about
    0.889 s / 16 = 56 ms (batch 16's static TTFT over its 16 prompts) and stalls every running
    decode. A batch-32 request decodes 255 tokens in about 255 x 7.3 ms = 1.9 s, during which
    6 x 1.9 = 11 prompts arrive: 11 x 56 ms = 0.62 s of stalls, TPOT about (1.9 + 0.62) / 255 = 9.8 ms
    > 9 ms. Batch 16: 255 x 5.6 ms = 1.4 s, 8.6 arrivals, 0.48 s of stalls, about 7.5 ms < 9 ms, and
    Little's law puts about 6 x 1.9 s = 11 sequences in flight, under its 16: it keeps up. So the
    served ranking swaps them: batch 16 first (+1), batch 32 misses the p99 TPOT.
    """
    rows = rows_of("plan", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpus", "1", "--isl", "4096", "--osl", "256",
                   "--ttft-ms", "3000", "--tpot-ms", "9", "--preset", "lecture", "--weights", "fp8", "--kv-dtype", "fp8",
                   "--batch", "16", "--batch", "32", "--batch", "64", "--verify", "3", "--rate", "6",
                   "--requests", "600", "--jobs", "1")
    assert [(r["batch"], r["analytic_rank"], r["rank_change"]) for r in rows] == [(16, 2, "+1"), (32, 1, "-1")]
    b16, b32 = rows
    assert b32["tpot_s"] == pytest.approx(0.0073, abs=5e-5) and b32["tpot_s"] <= 0.009  # meets statically
    assert b16["ttft_s"] / 16 == pytest.approx(0.0555, abs=5e-4)  # one 4096-token prefill
    assert b16["meets_served_slo"] and not b32["meets_served_slo"]
    assert 0.009 < b32["served_tpot_s"] < 0.012 and b16["served_tpot_s"] < 0.009
    assert b16["served_finished"] == 600


@pytest.mark.parametrize("finished", [(0,), (1, 2)])
def test_cli_ctrl_c_prints_the_candidates_that_finished(monkeypatch, finished):
    """Ctrl-C after some candidates: the table holds those rows with their frontier ranks (candidates
    2 and 3 finishing first are analytic ranks 2 and 3, not 1 and 2), and the exit is 130."""
    import llm_cost.planner.verify as verify_module

    real = verify_module.verify

    def some_then_stop(tasks, **kw):
        done = real([tasks[k] for k in finished], jobs=1)
        raise Interrupted(dict(zip(finished, done)))

    monkeypatch.setattr(verify_module, "verify", some_then_stop)
    out = run(*PLAN, "--verify", "3", "--rate", "20", "--requests", "200", "--jobs", "1", "--format", "json", "--quiet")
    assert out.exit_code == 130, out.output
    rows = json.loads(out.stdout)
    assert sorted(r["analytic_rank"] for r in rows) == [k + 1 for k in finished]
    assert sorted(r["served_rank"] for r in rows) == list(range(1, len(finished) + 1))
    # one line on stderr, even with --quiet (it is about the result)
    assert out.stderr.splitlines() == [f"Warning: interrupted: {len(finished)} of 3 candidates served; showing those"]


def test_cli_ctrl_c_before_any_candidate_is_one_line(monkeypatch):
    import llm_cost.planner.verify as verify_module

    def stop(tasks, **kw):
        raise Interrupted({})

    monkeypatch.setattr(verify_module, "verify", stop)
    out = run(*PLAN, "--verify", "3", "--rate", "20", "--requests", "200", "--jobs", "1")
    assert out.exit_code == 130 and out.stdout == ""
    assert out.stderr.splitlines() == ["Warning: interrupted: 0 of 3 candidates served; nothing to show"]


def test_cli_emit_refuses_disaggregate_in_one_line():
    assert "--disaggregate" in error_line(*PLAN, "--disaggregate", "--emit", "vllm")


PLAN4 = tuple("4" if a == "2" and PLAN[i - 1] == "--gpus" else a for i, a in enumerate(PLAN))


def test_disaggregated_candidate_served_as_batching_disaggregate_serves_it():
    """`plan --disaggregate --verify 2` on 4 H100s serves the split (lecture preset, fp8, best_split: prefill
    3 x tp 1 batch 32, decode 1 x tp 1 batch 256) as `batching --disaggregate 3:1 --max-batch 32
    --decode-max-batch 256`, each pool as planned, the whole stream of 400 requests at 40 req/s. The served row's p99 TTFT
    and TPOT are batching's exactly (one simulation), its goodput per GPU batching's fleet goodput over
    the 4 GPUs; it ranks with the two colocated rows by goodput per GPU."""
    rows = rows_of(*PLAN4, "--disaggregate", "--verify", "2", "--rate", "40", "--requests", "400", "--jobs", "1")
    assert len(rows) == 3 and [r["served_rank"] for r in rows] == [1, 2, 3]
    split = next(r for r in rows if r.get("prefill_replicas"))
    assert (split["prefill_replicas"], split["decode_replicas"], split["decode_tp"], split["decode_batch"],
            split["weights"], split["kv_dtype"]) == (3, 1, 1, 256, "fp8", "fp8")
    assert split["analytic_rank"] == 3 and split["served_gpus"] == 4 and split["served_requests"] == 400
    assert split["serve_note"] == ""  # nothing simplified: each pool served as planned
    ref = rows_of("batching", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--preset", "lecture", "--weights", "fp8",
                  "--kv-dtype", "fp8", "--tp", "1", "--reservation", "paged", "--max-batch", "32", "--decode-max-batch", "256", "--rate", "40",
                  "--requests", "400", "--prompt-len", "1024", "--output-len", "128", "--seed", "0",
                  "--disaggregate", "3:1", "--slo-ttft-ms", "500", "--slo-tpot-ms", "20")[0]
    assert (ref["prefill_replicas"], ref["decode_replicas"], ref["finished"]) == (3, 1, split["served_finished"])
    assert split["served_ttft_s"] == ref["ttft_p99_s"] and split["served_tpot_s"] == ref["tpot_p99_s"]
    assert split["goodput_req_per_s_per_gpu"] == pytest.approx(ref["goodput_req_per_s"] / 4, rel=1e-12)
    assert split["transfer_mean_s"] == pytest.approx(ref["transfer_mean_s"], rel=1e-12)
    goodput = [r["goodput_req_per_s_per_gpu"] for r in rows]  # all meet the SLO: goodput order
    assert all(r["meets_served_slo"] for r in rows) and goodput == sorted(goodput, reverse=True)


def test_cli_disaggregate_verify_refuses_a_closed_loop_in_one_line():
    assert "--concurrency" in error_line(*PLAN4, "--disaggregate", "--verify", "1", "--concurrency", "8")


def test_validate_jobs_give_the_same_predictions():
    """`validate --jobs 2` predicts the rows in two processes: the same rows as --jobs 1, in file order."""
    from pathlib import Path

    hand = Path(__file__).parent / "data" / "calibrate" / "kinds.csv"
    one = rows_of("validate", hand, "--profile", "article", "--jobs", "1")
    assert rows_of("validate", hand, "--profile", "article", "--jobs", "2") == one and len(one) > 1


def test_cli_verify_replays_a_trace(tmp_path):
    """A CSV trace of 40 requests (1024 prompt, 128 output tokens, 0.1 s apart: 10 req/s) replayed at
    --rate 20: every candidate serves all 40; without --rate the trace's own rate (40 / 3.9 s)."""
    trace = tmp_path / "trace.csv"
    trace.write_text("arrival_s,prompt_tokens,output_tokens\n" +
                     "".join(f"{0.1 * i:.1f},1024,128\n" for i in range(40)))
    rows = rows_of(*PLAN, "--verify", "2", "--trace", trace, "--rate", "20", "--jobs", "1")
    assert [r["served_requests"] for r in rows] == [40, 40]
    assert all(r["served_finished"] == 40 for r in rows)
    assert len(rows_of(*PLAN, "--verify", "1", "--trace", trace, "--jobs", "1")) == 1
