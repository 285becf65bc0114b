"""A closed loop's client round trip (`Workload.client_round_trip`): a request re-sent as its predecessor
finishes misses the iteration a busy engine starts then, and joins the one after (issue 23: benchmark
clients send the next request only once they have the last token, and the engine does not wait)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from llm_cost.calibrate.prediction import weight_format_of
from llm_cost.calibrate.under_load import load_figures
from llm_cost.catalog import load_accelerator, load_model
from llm_cost.serving import Replica
from llm_cost.serving.engine import serve
from llm_cost.serving.retime import closed_loop_schedule
from llm_cost.serving.serve_config import ServeConfig
from llm_cost.serving.workload import fixed_workload
from llm_cost.specs.deployment import Deployment
from llm_cost.specs.profiles import PRESETS

PAGED = ServeConfig(max_batch=256, reservation="paged", prefill_chunk=8192)
PROFILE = PRESETS["measured"]


def _replica():
    return Replica.from_specs("llama-3.1-8b", "h100-sxm", PROFILE)


def _times(lengths, clients, round_trip):
    wl = dataclasses.replace(fixed_workload(lengths), concurrency=clients, client_round_trip=round_trip)
    res = serve(wl, _replica(), PAGED)
    return tuple(np.asarray(x, dtype=float) for x in (res.arrival_s, res.first_token_s, res.finish_s))


def test_a_re_sent_request_waits_out_the_iteration_a_busy_engine_starts():
    # two clients: request 0 (8 output tokens) finishes while request 1 (64) still decodes, so request 2 is
    # sent to a busy engine; with the round trip it joins an iteration later: its TTFT is one decode
    # iteration (1 sequence) longer, the requests sent at time 0 are the same
    lengths = [(256, 8), (256, 64), (256, 8)]
    arrival0, first0, _ = _times(lengths, 2, False)
    arrival1, first1, _ = _times(lengths, 2, True)
    assert list(arrival1) == list(arrival0) and list(first1[:2]) == list(first0[:2])
    extra = (first1[2] - arrival1[2]) - (first0[2] - arrival0[2])
    decode = _replica().cost.time(1, 256 + 8, 0.0)  # one decode row of request 1 at about its context
    assert extra == pytest.approx(decode, rel=0.05)


def test_an_idle_engine_starts_on_the_re_sent_request_at_once():
    # one client: nothing else runs when its request finishes, so the next starts at once either way
    lengths = [(256, 8)] * 3
    assert all(np.array_equal(a, b) for a, b in zip(_times(lengths, 1, False), _times(lengths, 1, True)))


@pytest.mark.parametrize("clients,isl,osl", [(4, 1024, 256), (64, 1024, 128), (8, 8000, 64)])
def test_the_schedule_re_timed_is_the_engines_run_with_the_round_trip(clients, isl, osl):
    # the decode stretches stop at a request due now and not queued: the counting run's terms stay
    # aligned with its iterations (before that bound, re-timing gave 11.8 ms where serving gave 19.2)
    lengths = [(isl - 37 * (i % 5), osl - 3 * (i % 7)) for i in range(clients * 4)]
    wl = dataclasses.replace(fixed_workload(lengths), concurrency=clients, client_round_trip=True)
    replica = _replica()
    res = serve(wl, replica, PAGED)
    arrival, first, finish = closed_loop_schedule(wl, replica, PAGED).times(replica.cost)
    assert list(arrival) == list(res.arrival_s) and list(first) == list(res.first_token_s)
    assert list(finish) == list(res.finish_s)


def test_calibrations_closed_loops_have_the_round_trip():
    # a served closed-loop row (`under_load.load_figures`) is the engine's run with the client's round trip
    model, gpu = load_model("llama-3.1-8b"), load_accelerator("h100-sxm")
    single = Deployment()
    lengths = tuple((1024 - 11 * (i % 9), 128 - 5 * (i % 4)) for i in range(32))
    weights = weight_format_of("bf16", 0, model)
    ttft = load_figures(model, gpu, PROFILE, weights, single, 1024, 128, 8, 32, True, (8192, 256, 16), lengths,
                        False)[0]
    replica = Replica.from_specs(model, gpu, PROFILE, weights=weights, deployment=single,
                                 kv_bytes_per_element=single.kv_bytes_per_element)
    config = ServeConfig(max_batch=256, reservation="paged", prefill_chunk=8192, block_size=16)
    for round_trip, same in ((True, True), (False, False)):
        wl = dataclasses.replace(fixed_workload(list(lengths)), concurrency=8, client_round_trip=round_trip)
        res = serve(wl, replica, config)
        served = float(np.mean(np.asarray(res.first_token_s) - np.asarray(res.arrival_s)))
        assert (served == pytest.approx(ttft, rel=1e-12)) is same
