"""Issue 24.4: `batching` as one library call, `run_batching(BatchingRequest(...))`; the command parses its
options into the request, calls it and renders. The refusals name the request's parameters; the runs are
the engine's own (the same results as calling `engine.serve`, `fleet.serve_fleet` directly)."""

from __future__ import annotations

import json

import pytest

import llm_cost as lc
from helpers import error_line, run
from llm_cost.errors import InvalidValueError, LlmCostError
from llm_cost.serving.batching_request import BatchingRequest, implied_reservation
from llm_cost.serving.batching_run import run_batching
from llm_cost.serving.prefixes import PromptPrefixes

SMALL = dict(model="llama-3.2-1b", profile="lecture", requests=40, prompt="uniform:8:64", output="uniform:1:16")


@pytest.mark.parametrize("fields, params", [
    ({"rates": (1.0,), "slo_s": 0.05}, {"rates", "slo_s"}),
    ({}, {"rates", "slo_s", "trace", "concurrency"}),
    ({"slo_s": 0.05, "router": "round-robin"}, {"router", "slo_s"}),
    ({"rates": (1.0,), "disaggregate": (1, 1), "concurrency": 4}, {"disaggregate", "concurrency"}),
    ({"rates": (1.0,), "compare_prefix_caching": True, "disaggregate": (1, 1)}, {"compare_prefix_caching", "disaggregate"}),
    ({"rates": (1.0,), "decode_tp": 2}, {"decode_tp", "disaggregate"}),
    ({"rates": (1.0,), "disaggregate": (0, 1)}, {"disaggregate"}),
    ({"rates": (1.0,), "decode_max_batch": 0, "disaggregate": (1, 1)}, {"decode_max_batch"}),
    ({"rates": (-1.0,)}, {"rates"}),
    ({"rates": (1.0,), "max_batch": 0}, {"max_batch"}),
    ({"concurrency": 4, "router": "round-robin"}, {"router", "concurrency"}),  # when built, not when run
    ({"rates": (1.0,), "prompt": "bad"}, {"prompt"}),  # the request's own field names
    ({"rates": (1.0,), "output": "uniform:9"}, {"output"}),
])
def test_a_request_that_cannot_run_is_refused_naming_its_parameters(fields, params):
    with pytest.raises(InvalidValueError) as err:
        BatchingRequest(**fields)
    assert params <= set(err.value.params), (str(err.value), err.value.params)


@pytest.mark.parametrize("field, value", [("slo_stat", "p999"), ("slo_metric", "ttfb")])
def test_the_slo_choices_are_checked_though_no_search_uses_them(field, value):
    with pytest.raises(LlmCostError) as err:
        BatchingRequest(rates=(2.0,), **{field: value})
    assert err.value.params == (field,) and str(err.value).startswith(f"{field} must be one of")
    assert error_line("batching", "--rate", "2", f"--{field.replace('_', '-')}", value).startswith(
        f"Error: --{field.replace('_', '-')} must be one of")


def test_prefix_caching_without_prefixes_is_refused_naming_the_requests_fields():
    for field in ("compare_prefix_caching", "prefix_caching"):
        with pytest.raises(InvalidValueError) as err:
            run_batching(BatchingRequest(**SMALL, rates=(1.0,), **{field: True}))
        assert {field, "prefixes"} <= set(err.value.params) and str(err.value).startswith(f"{field} needs")
    assert error_line("batching", "--rate", "1", "--prompt-len", "bad") == (
        "Error: --prompt-len must be N, uniform:A:B, lognormal:MEAN:SIGMA or zipf:S:MAX, got 'bad'")


def test_the_mode_is_the_one_the_options_ask_for():
    assert BatchingRequest(rates=(1.0,)).mode == "rates"
    assert BatchingRequest(slo_s=0.05).mode == "search"
    assert BatchingRequest(rates=(1.0,), router="round-robin").mode == "fleet"
    assert BatchingRequest(rates=(1.0,), disaggregate=(1, 2)).mode == "disaggregated"
    assert BatchingRequest(rates=(1.0,), compare_prefix_caching=True, router="round-robin").mode == "compare"
    assert implied_reservation(BatchingRequest(rates=(1.0,), compare_prefix_caching=True)) == "paged"
    assert implied_reservation(BatchingRequest(rates=(1.0,), prefix_caching=True, reservation="paged")) is None


def test_each_rate_is_the_engines_own_run():
    out = run_batching(BatchingRequest(**SMALL, rates=(2.0, 8.0)))
    assert out.mode == "rates" and out.planned == 2 and not out.interrupted
    for rate, workload, result in zip((2.0, 8.0), out.workloads, out.results):
        assert workload == out.workload.at_rate(rate)
        assert result == lc.serve(workload, out.replica, out.config)


def test_a_fleet_is_serve_fleets_run():
    from llm_cost.serving.fleet import serve_fleet

    out = run_batching(BatchingRequest(**SMALL, rates=(6.0,), router="least-loaded", deployment=lc.Deployment(gpus=2)))
    assert out.mode == "fleet" and out.deployment.replicas == 2
    again = serve_fleet(out.workloads[0], out.replica, out.config, 2, "least-loaded")
    assert out.fleets[0] == again and out.results[0] == again.fleet


def test_the_comparison_serves_the_same_requests_without_then_with_the_cache():
    out = run_batching(BatchingRequest(**SMALL, rates=(4.0,), compare_prefix_caching=True,
                                       prefixes=PromptPrefixes(shared_prefix=64)))
    assert [c.prefix_caching for c in out.configs] == [False, True] and out.workloads[0] == out.workloads[1]
    assert out.config.reservation == "paged" and out.implied_reservation == "paged"
    assert out.results[1].prefill_tokens_saved > 0 == out.results[0].prefill_tokens_saved


def test_disaggregated_pools_refuse_gpus_they_do_not_use():
    with pytest.raises(InvalidValueError) as err:
        run_batching(BatchingRequest(**SMALL, rates=(2.0,), disaggregate=(2, 2), deployment=lc.Deployment(gpus=2)))
    assert {"gpus", "disaggregate"} <= set(err.value.params) and "= 4 GPUs" in str(err.value)
    out = run_batching(BatchingRequest(**SMALL, rates=(2.0,), disaggregate=(1, 2), decode_tp=2, reservation="paged"))
    assert (out.pools.prefill, out.pools.decode, out.pools.gpus, out.pools.decode_deployment.tp) == (1, 2, 5, 2)
    assert out.results[0].finished == 40


def test_the_decode_pools_split_refused_names_decode_tp():
    with pytest.raises(InvalidValueError) as err:  # llama-3.2-1b: 32 attention heads
        run_batching(BatchingRequest(**SMALL, rates=(1.0,), disaggregate=(1, 1), decode_tp=3))
    assert err.value.params == ("decode_tp",) and str(err.value).startswith("decode_tp must divide")
    assert error_line("batching", "--disaggregate", "1:1", "--decode-tp", "3", "--rate", "1", "--requests", "20") == (
        "Error: --decode-tp must divide the model's 32 attention heads, got 3")


def test_ctrl_c_keeps_the_rates_that_finished(monkeypatch):
    from llm_cost.serving import engine

    real, calls = engine.serve, []

    def stop_second(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "serve", stop_second)
    out = run_batching(BatchingRequest(**SMALL, rates=(2.0, 4.0, 8.0)))
    assert out.interrupted and len(out.results) == 1 and out.planned == 3 and len(out.workloads) == 1


def test_the_command_prints_what_the_library_served():
    out = run_batching(BatchingRequest(**SMALL, rates=(3.0,), spec_gamma=2, spec_alpha=0.7))
    cli = run("batching", "--model", "llama-3.2-1b", "--preset", "lecture", "-n", "40", "--prompt-len", "uniform:8:64",
              "--output-len", "uniform:1:16", "--rate", "3", "--spec-gamma", "2", "--spec-alpha", "0.7",
              "--format", "json")
    assert cli.exit_code == 0, cli.output
    (row,) = json.loads(cli.stdout)
    assert row["throughput_req_per_s"] == out.results[0].throughput_req_per_s
    assert row["ttft_p50_s"] == out.results[0].percentile_s("ttft", "p50")


def test_run_batching_takes_only_a_request():
    with pytest.raises(InvalidValueError, match="request must be a BatchingRequest") as err:
        run_batching({"rates": (1.0,)})
    assert err.value.params == ("request",)


def test_no_command_hands_its_locals_on():
    # issue 24.4: a command builds a typed request from its options (BatchingRequest, PlanRequest), not a dict
    import ast
    import pathlib

    import llm_cost.commands

    root = pathlib.Path(llm_cost.commands.__file__).parent
    found = [f"{path.name}:{node.lineno}" for path in root.glob("*.py") for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "locals"]
    assert found == [], found
