"""A closed loop's schedule in iteration counts, re-timed by a cost, is the engine's own run (serving/retime)."""

from __future__ import annotations

import dataclasses

import pytest

from llm_cost.errors import InvalidValueError
from llm_cost.serving import Replica
from llm_cost.serving.engine import serve
from llm_cost.serving.retime import closed_loop_schedule
from llm_cost.serving.serve_config import ServeConfig
from llm_cost.serving.workload import fixed_workload
from llm_cost.specs.deployment import Deployment
from llm_cost.specs.profiles import PRESETS

PAGED = ServeConfig(max_batch=256, reservation="paged", prefill_chunk=8192)


def _loop(clients: int, isl: int, osl: int, rounds: int = 6):
    return dataclasses.replace(fixed_workload([(isl, osl)] * (clients * rounds)), concurrency=clients)


@pytest.mark.parametrize("model,gpu,tp,clients,isl,osl", [
    ("llama-3.1-8b", "h100-sxm", 1, 64, 1024, 256),  # prompts chunked over iterations, rounds drifting apart
    ("llama-3.1-8b", "l4", 1, 32, 512, 1024),  # K/V short: recompute preemptions
    ("gemma-2-9b", "a100-80gb", 1, 16, 512, 128),  # sliding-window layers
    ("mixtral-8x7b", "h100-sxm", 2, 32, 2048, 128),  # experts touched, tensor-parallel collectives
])
def test_the_schedule_re_timed_is_the_engines_run(model, gpu, tp, clients, isl, osl):
    wl = _loop(clients, isl, osl)
    for profile in (PRESETS["measured"], PRESETS["lecture"].with_(memory_basis="usable")):
        replica = Replica.from_specs(model, gpu, profile, deployment=Deployment(tp=tp, gpus=tp))
        res = serve(wl, replica, PAGED)
        schedule = closed_loop_schedule(wl, replica, PAGED)
        arrival, first, finish = schedule.times(replica.cost)
        assert list(arrival) == list(res.arrival_s) and list(first) == list(res.first_token_s)
        assert list(finish) == list(res.finish_s)  # the same sums in the same order: the same bits
        assert schedule.preemptions == res.preemptions and schedule.output == res.output
    assert "l4" != gpu or res.preemptions > 0  # the preempting case preempts


def test_one_schedule_serves_every_profile_of_the_same_memory():
    """What runs in each iteration does not depend on how long iterations take: one schedule, re-timed
    by another profile's cost (same K/V capacity), is that profile's run."""
    wl = _loop(32, 1024, 512)
    fast = Replica.from_specs("llama-3.1-8b", "h100-sxm", PRESETS["measured"])
    slow = Replica.from_specs("llama-3.1-8b", "h100-sxm", PRESETS["measured"].with_(fixed_time_s=5e-3))
    assert fast.kv_capacity_tokens == slow.kv_capacity_tokens
    schedule = closed_loop_schedule(wl, fast, PAGED)
    assert list(schedule.times(slow.cost)[2]) == list(serve(wl, slow, PAGED).finish_s)


def test_what_depends_on_time_is_refused():
    replica = Replica.from_specs("llama-3.1-8b", "h100-sxm", PRESETS["measured"])
    with pytest.raises(InvalidValueError, match="needs a closed loop"):
        closed_loop_schedule(fixed_workload([(128, 16)] * 4), replica, PAGED)
    staged = Replica.from_specs("llama-3.1-8b", "h100-sxm", PRESETS["measured"], deployment=Deployment(pp=2, gpus=2))
    with pytest.raises(InvalidValueError, match="one stage"):
        closed_loop_schedule(_loop(4, 128, 16), staged, PAGED)
    with pytest.raises(InvalidValueError, match="recompute"):
        closed_loop_schedule(_loop(4, 128, 16), replica, dataclasses.replace(PAGED, preemption="swap"))


def _tight_loop(cached: bool):
    from llm_cost.serving.prefixes import with_prefix_groups

    wl = fixed_workload([(300 + 37 * (i % 9), 100 + 13 * (i % 5)) for i in range(120)])
    wl = with_prefix_groups(wl, 4, 256, "uniform", seed=0) if cached else wl
    replica = dataclasses.replace(Replica.from_specs("llama-3-8b", "h100-sxm", PRESETS["measured"]),
                                  kv_capacity_tokens=7000)
    return dataclasses.replace(wl, concurrency=32), replica


def test_the_host_tier_is_refused_in_one_line_naming_it():
    """Review 24, defect 2: the host tier's reloads are seconds, not iterations; the deny-list missed it
    and the schedule was wrong (the review's run: an IndexError in `Schedule.times`)."""
    wl, replica = _tight_loop(True)
    config = ServeConfig(max_batch=64, reservation="paged", prefix_caching=True, kv_offload_bytes=2e9)
    with pytest.raises(InvalidValueError) as error:
        closed_loop_schedule(wl, replica, config)
    assert error.value.params == ("kv_offload_bytes",) and "\n" not in str(error.value)


def test_a_field_not_in_the_allow_list_is_refused():
    """An allow-list: a `ServeConfig` field the schedule does not declare (a new feature's) is refused."""
    @dataclasses.dataclass(frozen=True)
    class Newer(ServeConfig):
        new_feature: float = 1.0

    wl, replica = _tight_loop(False)
    with pytest.raises(InvalidValueError) as error:
        closed_loop_schedule(wl, replica, Newer(reservation="paged"))
    assert error.value.params == ("new_feature",)


@pytest.mark.parametrize("config", [ServeConfig(max_batch=64, reservation="paged", prefix_caching=True),
                                    ServeConfig(max_batch=64, reservation="declared")])
def test_the_allowed_features_re_time_to_the_engines_run(config):
    wl, replica = _tight_loop(config.prefix_caching)
    res = serve(wl, replica, config)
    arrival, first, finish = closed_loop_schedule(wl, replica, config).times(replica.cost)
    assert list(first) == list(res.first_token_s) and list(finish) == list(res.finish_s)
    assert not config.prefix_caching or res.preemptions > 0
