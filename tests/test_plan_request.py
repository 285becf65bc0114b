"""`PlanRequest` checks its fields when it is built (issue 24.5: it took any value silently, and a bad one
surfaced, if at all, deep in the search or after it: a negative `usd_per_kwh` only once every row was
priced). Each bad value is refused in one line naming the library's field, never a CLI flag; `llm-cost plan`
still prints its own flag for the same mistake (exit 2, one line, no traceback)."""

from __future__ import annotations

import math

import pytest
from helpers import error_line

from llm_cost.errors import LlmCostError
from llm_cost.planner.plan_request import PlanRequest


def _refused(field: str, value, **others) -> str:
    """The one line `PlanRequest(field=value)` is refused with; it names `field` (message and params)."""
    with pytest.raises(LlmCostError) as caught:
        PlanRequest(**{field: value}, **others)
    message = str(caught.value)
    assert "\n" not in message and "--" not in message, message
    assert message.startswith(field) and field in caught.value.params, (message, caught.value.params)
    return message


@pytest.mark.parametrize("field, value", [
    ("gpus", 0), ("gpus", 2.5), ("gpus", 10**6), ("gpus", "8"), ("max_tp", 0), ("tp", (0,)), ("pp", (1, -2)),
    ("ep", (1.5,)), ("batch", (0,)), ("batch", (8, "x"))])
def test_the_space_is_checked(field, value):
    _refused(field, value)


@pytest.mark.parametrize("field, value", [("isl", 0), ("isl", 1.5), ("osl", 1), ("osl", -3), ("osl", 10**8)])
def test_the_lengths_are_checked(field, value):
    assert "must be" in _refused(field, value)


def test_osl_is_two_at_least_as_the_planner_takes():
    assert "[2," in _refused("osl", 1)  # a plan ranks decoding: one decode step
    assert PlanRequest(osl=2).osl == 2


@pytest.mark.parametrize("field, value", [
    ("ttft_s", 0), ("ttft_s", -1.0), ("tpot_s", 0.0), ("tpot_s", math.nan), ("tokens_per_s_per_user", 0),
    ("tokens_per_s_per_user", "fast")])
def test_the_target_is_checked(field, value):
    _refused(field, value)


@pytest.mark.parametrize("field, value", [
    ("spec_alpha", 1.5), ("spec_alpha", -0.1), ("c", -1.0), ("c", 11.0), ("max_gamma", 0), ("max_gamma", 65),
    ("max_gamma", 2.5), ("mtp_alpha", 1.01), ("mtp_alpha", -1)])
def test_the_speculation_is_checked(field, value):
    _refused(field, value)


@pytest.mark.parametrize("field, value", [("usd_per_kwh", -1.0), ("usd_per_kwh", 1e4)])
def test_the_energy_price_is_checked(field, value):
    _refused(field, value)


@pytest.mark.parametrize("field, value", [
    ("verify", 0), ("verify", 2.5), ("requests", 0), ("concurrency", 0), ("rate", (0.0,)), ("rate", (2.0, -1.0)), ("rate", (math.inf,)),
    ("seed", -1), ("jobs", 0), ("kv_offload_bytes", -1.0), ("slo_stat", "p77")])
def test_the_served_workload_is_checked(field, value):
    _refused(field, value)


@pytest.mark.parametrize("field", ["dp_attention", "disaggregate", "emit_k8s", "prefix_caching"])
def test_the_switches_are_true_or_false(field):
    assert "True or False" in _refused(field, "yes")


@pytest.mark.parametrize("field, value", [
    ("model", 3), ("draft", -1), ("profile", math.nan), ("gpu", (1,)), ("gpu", ("h100-sxm", None)), ("weights", -1),
    ("kv_dtype", (2,)), ("usd_per_gpu_hour", (-2.0,)), ("profile_args", ("--preset", 1)), ("prefixes", "x"),
    ("prompt_len", 128), ("engine", 1.0)])
def test_the_kinds_are_checked(field, value):
    _refused(field, value)


def test_the_launch_engine_is_checked():
    assert "vllm" in _refused("emit_engine", "vllmm")


def test_good_values_pass_and_none_is_not_given():
    asked = PlanRequest(gpus=4, isl=1, osl=2, ttft_s=0.5, tpot_s=0.02, spec_alpha=0.7, c=0.1, max_gamma=4,
                        mtp_alpha=0.8, tp=(1, 2), batch=(8,), usd_per_kwh=0.1, verify=3, rate=(4.0,),
                        requests=100, seed=3, jobs=2, kv_offload_bytes=0.0, slo_stat="median", emit_engine="VLLM")
    assert asked.rate == (4.0,) and asked.emit_engine == "VLLM"  # as given: checked, not rewritten
    assert PlanRequest().verify is None


@pytest.mark.parametrize("args, flag", [
    (("--gpus", "0"), "--gpus"), (("--osl", "1"), "--osl"), (("--max-gamma", "0"), "--max-gamma"),
    (("--mtp-alpha", "2"), "--mtp-alpha"), (("--usd-per-kwh", "-1"), "--usd-per-kwh"),
    (("--tp", "0"), "--tp"), (("--batch", "0"), "--batch"), (("--verify", "0"), "--verify"),
    (("--verify", "1", "--rate", "1", "--requests", "0"), "--requests"),
    (("--verify", "1", "--rate", "1", "--jobs", "0"), "--jobs"),
    (("--verify", "1", "--rate", "1", "--slo-stat", "p77"), "--slo-stat"),
    (("--emit", "vllmm"), "--emit"), (("--tokens-per-s-per-user", "0"), "--tokens-per-s-per-user")])
def test_the_command_names_its_flag(args, flag):
    line = error_line("plan", *args)
    assert line.startswith(f"Error: {flag} "), line


def test_a_target_past_the_bound_is_told_in_milliseconds():
    # the library's bound is 1e6 s; the command checks --ttft-ms in the unit typed (it said "got 2e9" seconds)
    assert error_line("plan", "--ttft-ms", "2e12") == "Error: --ttft-ms must be in (0, 1e+09], got 2000000000000.0"
