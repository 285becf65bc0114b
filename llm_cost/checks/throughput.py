"""Throughput and latency invariants the fuzzing of issue 29 found broken, as hypothesis tests.

- a request's output throughput is at most what its batches can produce: replicas x B x OSL tokens
  over its e2e (a static batch cannot fill pp stages; pp 4 once reported 4x);
- a simulated latency per token is always positive and finite, at any rate from `MIN_RATE` (the
  lowest simulated) to every request at once (a rate of 1e-16 once printed latencies of 0).

Both are `formula` invariants: run once, on the (model, gpu) pair `llm-cost check` is given first.
"""

from __future__ import annotations

import math

from hypothesis import example, given
from hypothesis import strategies as st

from llm_cost.checks.invariant import REL, Invariant

pipeline_depths = st.integers(min_value=1, max_value=8)  # pp: one stage .. a deep pipeline
replica_counts = st.integers(min_value=1, max_value=4)  # copies of the model
request_batches = st.integers(min_value=1, max_value=256)  # requests in one static batch
prompt_lengths = st.integers(min_value=1, max_value=4096)  # ISL
output_lengths = st.integers(min_value=1, max_value=64)  # OSL (short: the decode loop is summed)
sim_rates = st.one_of(st.floats(min_value=5e-324, max_value=1e3), st.just(math.inf))  # req/s: subnormal .. all at once
sim_requests = st.lists(st.tuples(st.integers(1, 512), st.integers(1, 64)), min_size=1, max_size=12)


def _request_throughput_bounded(model, gpu):
    from llm_cost.requests import request_cost
    from llm_cost.specs.deployment import Deployment

    @given(pp=pipeline_depths, replicas=replica_counts, batch=request_batches, isl=prompt_lengths, osl=output_lengths)
    @example(pp=4, replicas=1, batch=1, isl=128, osl=64)  # issue 29: reported 4x what one request allows
    def prop(pp, replicas, batch, isl, osl):
        pp = min(pp, model.num_layers) if gpu.interconnect_bytes_per_s else 1  # stages need a link
        dep = Deployment(pp=pp, gpus=pp * replicas)
        cost = request_cost(model, gpu, "article", batch=batch, isl=isl, osl=osl, deployment=dep)
        most = replicas * batch * osl / cost.e2e_s  # every batch's tokens, over the time they take
        assert cost.output_tokens_per_s <= most * (1 + REL), (
            f"pp {pp}, {replicas} replicas: {cost.output_tokens_per_s:g} tok/s > {most:g} its batches produce")
        per_gpu_s = cost.gpu_seconds(cost.e2e_s)  # GPU-seconds one batch holds: all of its replica's GPUs
        assert per_gpu_s >= cost.e2e_s * pp * (1 - REL), f"{per_gpu_s:g} GPU-s < e2e x pp for one batch on pp {pp}"
    return prop


def _latency_per_token_positive(model, gpu):
    from llm_cost.serving.replica import IterationCost, Replica
    from llm_cost.serving.engine import serve
    from llm_cost.serving.serve_config import config_for
    from llm_cost.errors import InvalidValueError
    from llm_cost.serving.workload import MIN_RATE, fixed_workload

    import dataclasses

    # 1 ms an iteration (a fast decode step): the smallest latency a float at 1e8 s of arrivals must keep
    server = Replica(dataclasses.replace(IterationCost.unit(), fixed_s=1e-3), 100_000, 4096)

    @given(requests=sim_requests, rate=sim_rates, scheduler=st.sampled_from(["request", "iteration"]),
           gaps=st.lists(st.floats(min_value=0.0, max_value=10.0), min_size=12, max_size=12))
    @example(requests=[(4, 5), (4, 5)], rate=1e-6, scheduler="iteration", gaps=[1.0] * 12)
    @example(requests=[(4, 5), (4, 5)], rate=1e-16, scheduler="iteration", gaps=[1.0] * 12)  # issue 29
    def prop(requests, rate, scheduler, gaps):
        times = [sum(gaps[:index]) for index in range(len(requests))]
        wl = fixed_workload(requests, arrivals_s=times)
        if rate < MIN_RATE:  # arrivals past 1e8 s would absorb the steps: refused, not simulated as 0
            try:
                wl.at_rate(rate)
            except InvalidValueError:
                return
            raise AssertionError(f"rate {rate:g} below {MIN_RATE:g} was accepted")
        if any(times):
            wl = wl.at_rate(rate)
        sim = serve(wl, server, config_for(scheduler, 8))
        lat = sim.latency_per_token_s
        assert lat and all(math.isfinite(latency) and latency > 0 for latency in lat), (
            f"latencies per token {lat[:4]} at rate {rate}")
    return prop


SERVING = [
    Invariant("request_throughput_bounded", "a request's output tokens/s is at most replicas x B x OSL / e2e "
              "(a static batch cannot fill pp stages)", _request_throughput_bounded, scope="formula"),
    Invariant("latency_per_token_positive", "a simulated latency per token is positive and finite at any rate",
              _latency_per_token_positive, scope="formula"),
]
