"""Issue 24.3: a fast path by allow-list. Every fast path of `serve` declares the fields of the
`ServeConfig`, the `Replica`, its pass cost and the `Workload` it supports (`serving.eligibility`);
a new field none of them lists, as a new feature's is, takes the general loop (or, for the
request-level admission policy, is refused), with the same schedule."""

from __future__ import annotations

import dataclasses

import pytest

from llm_cost.catalog import load_accelerator, load_model
from llm_cost.errors import InvalidValueError
from llm_cost.serving.engine import path_of, serve
from llm_cost.serving.prefixes import prefix_segments
from llm_cost.serving.replica import IterationCost, Replica
from llm_cost.serving.serve_config import ServeConfig
from llm_cost.serving.workload import Workload, poisson_workload
from llm_cost.specs import PRESETS
from llm_cost.specs.deployment import Deployment

GPT3, A100 = load_model("gpt-3-13b"), load_accelerator("a100-40gb")
ONE = Replica.from_specs(GPT3, A100, PRESETS["lecture"])
PIPELINED = Replica.from_specs(GPT3, A100, PRESETS["lecture"], deployment=Deployment(pp=2))
PLAIN = poisson_workload(150, 12.0, seed=3)
PREFIXED = prefix_segments(poisson_workload(150, 12.0, seed=3), shared=64)
# one case per fast path: (workload, replica, config) that takes it
CASES = {
    "fast_reservations": (PLAIN, ONE, ServeConfig()),
    "fast_engine": (PLAIN, ONE, ServeConfig(reservation="paged")),
    "fast_pipeline": (PLAIN, PIPELINED, ServeConfig(reservation="paged", pipeline="orca")),
    "fast_prefix": (PREFIXED, ONE, ServeConfig(reservation="paged", prefix_caching=True)),
}


@dataclasses.dataclass(frozen=True)
class NewConfig(ServeConfig):
    new_feature: int = 0


@dataclasses.dataclass(frozen=True)
class NewCost(IterationCost):
    new_feature: float = 0.0


@dataclasses.dataclass(frozen=True)
class NewReplica(Replica):
    new_feature: int = 0


@dataclasses.dataclass(frozen=True)
class NewWorkload(Workload):
    new_feature: int = 0


def _with_new_field(what: str, wl, replica, cfg):
    """The case with a field no allow-list names on its config, replica, pass cost or workload."""
    def copy(cls, obj):
        return cls(**{f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)})
    if what == "config":
        return wl, replica, copy(NewConfig, cfg)
    if what == "replica":
        return wl, copy(NewReplica, replica), cfg
    if what == "cost":
        return wl, dataclasses.replace(replica, cost=copy(NewCost, replica.cost)), cfg
    return copy(NewWorkload, wl), replica, cfg


@pytest.mark.parametrize("path", sorted(CASES))
@pytest.mark.parametrize("what", ["config", "replica", "cost", "workload"])
def test_a_field_no_allow_list_names_takes_the_general_loop(path, what):
    wl, replica, cfg = CASES[path]
    assert path_of(wl, replica, cfg) == path  # the case does take that path
    base = serve(wl, replica, cfg)
    new = _with_new_field(what, wl, replica, cfg)
    assert path_of(*new) == "general"
    r = serve(*new)
    assert r.path == "general" and r.finish_s == pytest.approx(base.finish_s, rel=1e-9)


@pytest.mark.parametrize("what", ["config", "replica", "cost", "workload"])
def test_request_level_batching_refuses_a_field_it_does_not_list(what):
    cfg = ServeConfig(scheduler="request", reservation="max_len", max_batch=8)
    assert serve(PLAIN, ONE, cfg).path == "request_level"
    with pytest.raises(InvalidValueError, match="scheduler request"):
        serve(*_with_new_field(what, PLAIN, ONE, cfg))


def test_every_field_of_the_specs_is_listed_by_the_allow_lists():
    # the lists name every field there is today, so that the fields missing from them are new ones
    from llm_cost.serving.eligibility import FLAT_KV_ONE_STAGE, OPEN_LOOP, REPLICA

    assert {f.name for f in dataclasses.fields(IterationCost)} == set(FLAT_KV_ONE_STAGE)
    assert {f.name for f in dataclasses.fields(Replica)} == set(REPLICA)
    assert {f.name for f in dataclasses.fields(Workload)} == set(OPEN_LOOP)
