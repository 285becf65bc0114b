"""`capacity` and `batching` on deployments (issue 11, deliverables 3 and 4): one replica's KV
capacity over tp x pp GPUs, its totals over replicas, the batching simulator's deployed iteration
cost, and no silent number for a replica that cannot hold its weights.

Decisions pinned here:
- capacity uses the profile's memory basis (the lecture's: the marketed 40e9 for an A100 40GB; the
  default `measured`: usable) and says so in `memory_basis`; `--usable-memory` / `--marketed-memory`
  switch it; the lecture's figures name their setting (helpers.ORCA);
- `--kv-bytes` keeps working, `--kv-dtype` names it, both together must agree;
- a batching replica runs one batch at a time (no microbatches in flight under pp), and --rate is the
  arrival rate at the one replica simulated; the totals are x replicas.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_cost.catalog import load_accelerator, load_model
from llm_cost.report.serving_rows import CAPACITY_KEYS, REPLICA_KEYS, capacity_row
from llm_cost.serving.capacity import kv_capacity, sequences_that_fit
from llm_cost.serving.replica import IterationCost, Replica
from llm_cost.serving.fast_reservations import decode_stretch
from reference_scheduler import served
from llm_cost.serving.workload import poisson_workload
from llm_cost.specs import PRESETS, weight_format
from llm_cost.specs.deployment import Deployment
from tests.helpers import ORCA, error_line, rows_of, run

GPT3_13B, A100 = load_model("gpt-3-13b"), load_accelerator("a100-40gb")
LLAMA_8B, LLAMA_70B, H100 = load_model("llama-3-8b"), load_model("llama-3-70b"), load_accelerator("h100-sxm")
LECTURE = PRESETS["lecture"]


# ---- default rows unchanged ---------------------------------------------------------------------

def test_capacity_library_same_with_and_without_a_one_gpu_deployment():
    lecture = Deployment(memory_basis="marketed")  # the lecture's 40e9 bytes (its preset's basis)
    plain = kv_capacity(GPT3_13B, A100, reserve=0.1, deployment=lecture)
    assert plain == kv_capacity(GPT3_13B, A100, deployment=Deployment(reserve=0.1, memory_basis="marketed"))
    assert plain == kv_capacity(GPT3_13B, A100, reserve=0.1, deployment=Deployment().following(PRESETS["lecture"]))
    assert (plain.kv_tokens, plain.memory_bytes, plain.memory_basis) == (12_564, 40e9, "marketed")
    assert plain.weight_bytes_per_gpu == plain.weight_bytes and plain.kv_tokens_total == 12_564
    row = capacity_row(GPT3_13B, A100, reserve=0.1, prompt=272, max_gen=64.5, deployment=lecture)
    assert row["kv_tokens"] == 12_564 and row["memory_basis"] == "marketed"
    assert set(CAPACITY_KEYS) <= set(row)


def test_capacity_cli_goldens_and_one_gpu_options_change_nothing():
    row = rows_of("capacity", *ORCA)[0]
    assert (row["kv_tokens"], row["requests_max_len"], row["requests_declared"]) == (12_564, 6, 37)
    assert row["memory_bytes"] == 40e9 and row["memory_basis"] == "marketed" and row["fits"] is True
    same = rows_of("capacity", *ORCA, "--tp", "1", "--pp", "1", "--ep", "1", "--gpus", "1", "--kv-dtype", "bf16",
                   "--kv-bytes", "2", "--marketed-memory")[0]
    assert same == row
    assert run("capacity", *ORCA).stderr == ""


def test_capacity_table_on_one_gpu_keeps_its_columns():
    out = run("capacity")
    assert out.exit_code == 0 and "replicas" not in out.stdout and "fits" not in out.stdout


def test_sequences_that_fit_same_on_one_gpu():
    oss = load_model("gpt-oss-20b")
    marketed = Deployment(memory_basis="marketed")
    assert sequences_that_fit(oss, H100, 8192) == sequences_that_fit(oss, H100, 8192, deployment=Deployment()) == 171
    assert sequences_that_fit(oss, H100, 8192, deployment=marketed) == 147


def test_replica_and_simulation_same_with_and_without_a_one_gpu_deployment():
    plain = Replica.from_specs(GPT3_13B, A100)
    one = Replica.from_specs(GPT3_13B, A100, deployment=Deployment())
    assert one.cost == plain.cost == IterationCost.from_roofline(GPT3_13B, A100, LECTURE)
    assert not plain.cost.deployed and plain.kv_capacity_tokens == 12_564
    wl = poisson_workload(300, 6.0, seed=1)
    a, b = served(wl, plain), served(wl, one)
    assert a.finish_s == b.finish_s and a.busy_s == b.busy_s and a.comm_total_s == b.comm_total_s == 0.0


def test_batching_cli_one_gpu_options_change_nothing():
    base = ["batching", "--rate", "6", "-n", "200"]
    row = rows_of(*base)[0]
    assert rows_of(*base, "--tp", "1", "--pp", "1", "--gpus", "1", "--kv-dtype", "bf16")[0] == row
    assert set(REPLICA_KEYS) <= set(row)
    assert row["comm_time_s"] == 0.0 and row["replicas"] == 1 and row["pipeline"] == ""
    assert row["tokens_per_s_per_gpu"] == row["tokens_per_s"] > 0


# ---- tensor parallel capacity by hand -----------------------------------------------------------

def test_tp2_capacity_by_hand():
    # Llama-3-8B BF16: 16,060,522,496 weight bytes, 131,072 KV bytes a token (32 layers x 8 K/V heads x
    # 128 x 2 (K, V) x 2 bytes). One H100 on its marketed memory, 80e9 x 0.9 = 72e9 after the reserve:
    #   (72e9 - 16,060,522,496) / 131,072 = 426,784.9 -> 426,784 tokens
    # tp = 2: each GPU half the weights (8 K/V heads split, nothing replicated) and 4 of the 8 heads:
    #   (72e9 - 8,030,261,248) / 65,536 = 976,100.7 -> 976,100 tokens (2.29x: the weight room grew too)
    one = kv_capacity(LLAMA_8B, H100, deployment=Deployment(memory_basis="marketed"))
    two = kv_capacity(LLAMA_8B, H100, deployment=Deployment(tp=2, memory_basis="marketed"))
    assert one.weight_bytes == 16_060_522_496 and one.kv_tokens == 426_784
    assert two.weight_bytes_per_gpu == one.weight_bytes / 2 and two.kv_bytes_per_token_per_gpu == 65_536
    assert two.kv_tokens == 976_100
    assert two.kv_bytes_available == pytest.approx(72e9 - 8_030_261_248)
    assert two.kv_tokens > 2 * one.kv_tokens


def test_replicas_multiply_the_totals():
    row = rows_of("capacity", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--preset", "lecture", "--tp", "2",
                  "--gpus", "8")[0]
    assert (row["tp"], row["gpus"], row["replicas"], row["kv_tokens"]) == (2, 8, 4, 976_100)
    assert row["kv_tokens_total"] == 4 * 976_100
    assert row["requests_declared_total"] == 4 * row["requests_declared"]


def test_pipeline_stages_split_weights_and_kv():
    # pp = 2: each GPU half the layers, so half the weights and half of each token's K/V
    pp = kv_capacity(LLAMA_8B, H100, deployment=Deployment(pp=2))
    assert pp.weight_bytes_per_gpu == 16_060_522_496 / 2
    assert pp.kv_bytes_per_token_per_gpu == 65_536


def test_kv_dtype_and_kv_bytes():
    fp8 = rows_of("capacity", *ORCA, "--kv-dtype", "fp8")[0]
    assert fp8 == rows_of("capacity", *ORCA, "--kv-bytes", "1")[0] == rows_of("capacity", *ORCA, "--kv-bytes", "1",
                                                                               "--kv-dtype", "FP8")[0]
    assert fp8["kv_dtype"] == "fp8" and fp8["kv_bytes_per_token"] == 409_600 and fp8["kv_tokens"] == 25_129
    line = error_line("capacity", "--kv-bytes", "1", "--kv-dtype", "bf16")
    assert "--kv-bytes 1" in line and "--kv-dtype bf16" in line
    assert rows_of("capacity", *ORCA, "--kv-bytes", "1.5")[0]["kv_dtype"] == "custom"


def test_usable_memory_basis():
    marketed = rows_of("capacity", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--preset", "lecture")[0]
    usable = rows_of("capacity", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--preset", "lecture",
                     "--usable-memory")[0]
    assert marketed["memory_basis"] == "marketed" and usable["memory_basis"] == "usable"
    assert usable["memory_bytes"] == H100.memory_available_bytes > marketed["memory_bytes"] == 80e9
    assert usable["kv_tokens"] > marketed["kv_tokens"]
    assert "usable memory" in run("capacity", "--usable-memory").stdout.replace("\n", " ")


# ---- a replica that cannot run: said, warned, --strict ------------------------------------------

def test_llama_70b_on_one_h100_does_not_fit():
    args = ("capacity", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--preset", "lecture")
    out = run(*args)
    assert out.exit_code == 0
    assert "does not fit" in out.stderr and "short by 69.1 GB" in out.stderr
    row = rows_of(*args)[0]
    assert row["fits"] is False and "141.1 GB" in row["fit_note"]
    assert row["kv_tokens"] == 0 and row["kv_bytes_available"] == 0 and row["requests_declared_total"] == 0
    strict = run(*args, "--strict")
    assert strict.exit_code == 2 and "does not fit" in strict.stderr


def test_llama_70b_over_four_h100s_fits():
    row = rows_of("capacity", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--preset", "lecture", "--tp", "4",
                  "--strict")[0]
    assert row["fits"] is True and row["fit_note"] == "" and row["kv_tokens"] > 0
    # (72e9 - 35,276,853,248) / 81,920 (2 of 8 K/V heads of 327,680 bytes) = 448,280.6
    assert row["kv_tokens"] == 448_280 and row["shortfall_bytes"] == 0
    assert run("capacity", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--preset", "lecture", "--tp", "4").stderr == ""


def test_weights_fit_but_no_token_does():
    # reserve chosen so that the 8B's weights fit with less than one token's K/V beside them
    weights = 16_060_522_496
    reserve = 1 - (weights + 100_000) / 80e9
    cap = kv_capacity(LLAMA_8B, H100, reserve=reserve, deployment=Deployment(memory_basis="marketed"))
    assert cap.fits and cap.kv_tokens == 0 and not cap.runs and "less than one token" in cap.note


def test_batching_that_cannot_hold_weights_is_one_error_line():
    line = error_line("batching", "--rate", "1", "--model", "llama-3-70b", "--gpu", "h100-sxm")
    assert "no KV room" in line and "--tp" in line


def test_batching_kv_tokens_override_on_a_replica_that_does_not_fit_warns():
    out = run("batching", "--rate", "1", "-n", "20", "--model", "llama-3-70b", "--gpu", "h100-sxm",
              "--kv-tokens", "20000", "--format", "json")
    assert out.exit_code == 0 and "does not fit" in out.stderr
    assert run("batching", "--rate", "1", "-n", "20", "--model", "llama-3-70b", "--gpu", "h100-sxm",
               "--kv-tokens", "20000", "--strict").exit_code == 2


@pytest.mark.parametrize("command", [["capacity"], ["batching", "--rate", "1"]])
@pytest.mark.parametrize("args, flag", [(["--tp", "3"], "--tp"), (["--ep", "2"], "--ep"),
                                        (["--kv-dtype", "fp7"], "--kv-dtype"), (["--tp", "4", "--gpus", "2"], "--gpus")])
def test_bad_deployment_is_one_line_naming_the_option(command, args, flag):
    line = error_line(*command, "--model", "llama-3-70b", "--gpu", "h100-sxm", *args)
    assert flag in line


# ---- batching on a deployment --------------------------------------------------------------------

def test_decode_stretch_on_a_deployed_cost_is_time_step_by_step():
    cost = Replica.from_specs(LLAMA_8B, H100, deployment=Deployment(tp=2, pp=2)).cost
    assert cost.deployed and cost.stages == 2 and cost.comm_time_s(1) > 0
    n, written, k_max = 8, 4000, 50
    k, span, _, w = decode_stretch(cost, n, written, k_max)
    steps = [cost.time(n, written + j * n + n, written + j * n + n) for j in range(k_max)]
    assert (k, w) == (k_max, written + k_max * n)
    assert span == pytest.approx(math.fsum(steps), rel=1e-12)
    # each step: 2 stages x max(memory, compute) + comm + fixed
    first = 2 * max(cost.memory_s(n, written + n), cost.compute_s(n, written + n)) + cost.comm_time_s(n) + cost.fixed_s
    assert steps[0] == pytest.approx(first, rel=1e-15)


def test_batching_at_tp2_includes_the_collectives():
    replica = Replica.from_specs(LLAMA_8B, H100, deployment=Deployment(tp=2))
    no_comm = dataclasses.replace(replica, cost=dataclasses.replace(replica.cost, comm_fixed_s=0.0, comm_row_s=0.0))
    wl = poisson_workload(200, math.inf, seed=3)  # all at once: the schedule does not depend on the times
    with_comm, without = served(wl, replica), served(wl, no_comm)
    assert with_comm.iterations == without.iterations and with_comm.comm_total_s > 0 and without.comm_total_s == 0
    assert with_comm.busy_s - without.busy_s == pytest.approx(with_comm.comm_total_s, rel=1e-9)
    for scheduler in ("request", "none"):
        r = served(wl, replica, scheduler=scheduler, max_batch=8)
        assert r.comm_total_s > 0


def test_batching_cli_at_tp2():
    row = rows_of("batching", "--rate", "4", "-n", "200", "--model", "llama-3-8b", "--gpu", "h100-sxm",
                  "--preset", "lecture", "--tp", "2", "--gpus", "4")[0]
    assert row["finished"] == 200 and row["tp"] == 2 and row["replicas"] == 2 and row["fits"] is True
    assert row["kv_capacity_tokens"] == 976_100 and row["comm_time_s"] > 0 and 0 < row["comm_fraction"] < 1
    assert row["rate_total_req_per_s"] == 8.0
    assert row["throughput_total_req_per_s"] == pytest.approx(2 * row["throughput_req_per_s"])
    assert row["tokens_per_s_per_gpu"] == pytest.approx(row["tokens_per_s"] / 4)
    assert row["weight_bytes_per_gpu"] == 8_030_261_248 and row["memory_basis"] == "marketed"
    text = run("batching", "--rate", "4", "-n", "50", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--preset",
               "lecture", "--tp", "2")
    assert text.exit_code == 0 and "comm/iter" in text.stdout and text.stderr == ""  # its header wraps "(ms)"


def test_batching_search_at_tp4():
    row = rows_of("batching", "--slo-ms", "60", "-n", "100", "--model", "llama-3-70b", "--gpu", "h100-sxm",
                  "--tp", "4")[0]
    assert row["rate_req_per_s"] > 0 and row["comm_time_s"] > 0 and row["tp"] == 4


def test_pipeline_runs_one_batch_in_flight():
    row = rows_of("batching", "--rate", "2", "-n", "100", "--model", "llama-3-8b", "--gpu", "h100-sxm",
                  "--pp", "2")[0]
    assert "one batch in flight" in row["pipeline"]
    replica = Replica.from_specs(LLAMA_8B, H100, deployment=Deployment(pp=2))
    one = Replica.from_specs(LLAMA_8B, H100)
    # a stage holds half the weights, and a step crosses both: about the one-GPU time plus a hand-off
    assert replica.cost.decode_s(500, 8) == pytest.approx(one.cost.decode_s(500, 8) + replica.cost.comm_time_s(8),
                                                         rel=1e-9)


# ---- property -----------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(reserve=st.floats(0.0, 0.5), kv_dtype=st.sampled_from(["bf16", "fp8", "int4"]),
       weights=st.sampled_from(["bf16", "fp8", "w4a16", "int8"]), usable=st.booleans(),
       gpu=st.sampled_from(["h100-sxm", "h200", "a100-80gb"]))
def test_more_gpus_never_lower_a_replicas_kv_tokens(reserve, kv_dtype, weights, usable, gpu):
    acc, fmt = load_accelerator(gpu), weight_format(weights)
    basis = "usable" if usable else "marketed"
    tokens = [kv_capacity(LLAMA_70B, acc, weights=fmt,
                          deployment=Deployment(tp=tp, reserve=reserve, kv_dtype=kv_dtype, memory_basis=basis)).kv_tokens
              for tp in (1, 2, 4, 8)]
    assert tokens == sorted(tokens)
    assert tokens[2] > 0  # 4 GPUs hold the 70B in any of these formats
