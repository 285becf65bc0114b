"""The fast path for Orca's pipeline (`serving.fast_pipeline`, issue 26's speed): pipelined configs
(pp 2 and 4, with and without tp) served with `fast=True` give the general loop's run bit for bit,
every `ServeResult` field but `path`; runs that would preempt (a small K/V capacity) are handed to
the general loop whole; configs outside the allow-list (speculation, chunked prefill, `serial`,
`declared`) never take it. The cohorts' merges and splits at max_batch are exercised (counted), so
the comparison covers them.

Llama-3-8B on H100 SXM, the lecture preset (bench/bench_verify.py's setting), Poisson workloads.
"""

from __future__ import annotations

import dataclasses
import math
import random

import pytest

from llm_cost.catalog import load_accelerator, load_model
from llm_cost.serving import fast_pipeline
from llm_cost.serving.engine import path_of, serve
from llm_cost.serving.replica import Replica
from llm_cost.serving.serve_config import ServeConfig, SpecConfig
from llm_cost.serving.workload import poisson_workload
from llm_cost.specs import PRESETS
from llm_cost.specs.deployment import Deployment

LLAMA_8B, H100 = load_model("llama-3-8b"), load_accelerator("h100-sxm")
REPLICAS = {d: Replica.from_specs(LLAMA_8B, H100, PRESETS["lecture"], deployment=d)
            for d in (Deployment(pp=2), Deployment(tp=2, pp=2), Deployment(pp=4))}


def _fields(r) -> dict:
    """Every field of a `ServeResult` but the path, nan made comparable."""
    out = {}
    for k, v in dataclasses.asdict(r).items():
        if k == "path":
            continue
        if isinstance(v, tuple):
            v = tuple("nan" if isinstance(x, float) and math.isnan(x) else x for x in v)
        out[k] = v
    return out


def _case(seed: int):
    """A random pipelined replica (its K/V capacity cut to force preemptions in some), config and workload."""
    rnd = random.Random(seed)
    dep = rnd.choice(list(REPLICAS))
    replica = REPLICAS[dep]
    if rnd.random() < 0.4:
        replica = Replica(replica.cost, rnd.randint(1500, 8000), replica.max_len)
    cfg = ServeConfig(max_batch=rnd.choice([1, 2, 5, 16, 32, 64]), reservation="paged",
                      block_size=rnd.choice([1, 16, 32]), watermark=rnd.choice([0.0, 0.01, 0.2]),
                      pipeline="orca", preemption=rnd.choice(["recompute", "swap"]))
    wl = poisson_workload(rnd.randint(50, 250), rnd.choice([2.0, 20.0, 100.0, math.inf]), seed=seed,
                          prompt=rnd.choice([(1, 64), (32, 1024), 1024, (16, 16)]),
                          output=rnd.choice([(1, 128), 1, (1, 4), 128]))
    return wl, replica, cfg


def test_pipelined_runs_are_the_general_loops_bit_for_bit(monkeypatch):
    counts = {"merge": 0, "split": 0}
    for name in counts:
        real = getattr(fast_pipeline._Run, name)

        def counted(self, *a, _real=real, _name=name):
            counts[_name] += 1
            return _real(self, *a)
        monkeypatch.setattr(fast_pipeline._Run, name, counted)
    paths = {"fast_pipeline": 0, "general": 0}
    for seed in range(40):
        wl, replica, cfg = _case(seed)
        assert path_of(wl, replica, cfg) == "fast_pipeline", seed
        fast, general = serve(wl, replica, cfg), serve(wl, replica, cfg, fast=False)
        assert general.path == "general"
        assert _fields(fast) == _fields(general), seed
        paths[fast.path] += 1
        if fast.path == "general":  # handed over whole: the run preempts
            assert general.preemptions > 0 or general.deadlock is not None, seed
    assert paths["fast_pipeline"] >= 20 and paths["general"] >= 2, paths  # both ways exercised
    assert counts["merge"] >= 10 and counts["split"] >= 3, counts  # cohorts merged and split at max_batch


def test_bench_verify_candidates_take_it():
    # pp 2 at 20 req/s, ISL 1024, OSL 128, batch 16 and 32 (bench/bench_verify.py's pipelined rows)
    replica = REPLICAS[Deployment(pp=2)]
    wl = poisson_workload(600, 20.0, seed=3, prompt=1024, output=128)
    for batch in (16, 32):
        cfg = ServeConfig(max_batch=batch, reservation="paged", pipeline="orca")
        fast, general = serve(wl, replica, cfg), serve(wl, replica, cfg, fast=False)
        assert fast.path == "fast_pipeline" and fast.preemptions == 0
        assert _fields(fast) == _fields(general)


@pytest.mark.parametrize("change", [
    {"spec": SpecConfig(gamma=3, alpha=0.7, c=0.05)}, {"prefill_chunk": 256}, {"pipeline": "serial"},
    {"pipeline": "microbatch"}, {"reservation": "declared"}])
def test_configs_outside_the_allow_list_keep_their_path(change):
    replica = REPLICAS[Deployment(pp=2)]
    wl = poisson_workload(80, 20.0, seed=1, prompt=(32, 512), output=(1, 64))
    cfg = dataclasses.replace(ServeConfig(max_batch=16, reservation="paged", pipeline="orca"), **change)
    assert path_of(wl, replica, cfg) != "fast_pipeline"
    assert _fields(serve(wl, replica, cfg)) == _fields(serve(wl, replica, cfg, fast=False))


def test_one_stage_never_takes_it():
    one = Replica.from_specs(LLAMA_8B, H100, PRESETS["lecture"])
    wl = poisson_workload(50, 20.0, seed=0)
    cfg = ServeConfig(reservation="paged", pipeline="orca", prefill_chunk=256)  # not fast_engine's either
    assert not fast_pipeline.covers(wl, one, cfg) and path_of(wl, one, cfg) == "general"
    assert set(fast_pipeline.FEATURES) == set(ServeConfig.__dataclass_fields__)
    pp2, orca = REPLICAS[Deployment(pp=2)], ServeConfig(reservation="paged", pipeline="orca")
    assert fast_pipeline.covers(wl, pp2, orca)
    for change in ({"prefix_caching": True}, {"kv_offload_bytes": 1e9}):
        assert not fast_pipeline.covers(wl, pp2, dataclasses.replace(orca, **change)), change


def test_routed_experts_take_the_called_pass_time():
    # Mixtral on tp 2 x pp 2 (the default profile): routed experts leave `inline_coefficients` None, and
    # the path calls `iteration.totals_time` instead, the same run
    replica = Replica.from_specs(load_model("mixtral-8x7b"), H100, deployment=Deployment(tp=2, pp=2))
    assert fast_pipeline.inline_coefficients(replica.cost) is None
    assert fast_pipeline.inline_coefficients(REPLICAS[Deployment(pp=2)].cost) is not None
    wl = poisson_workload(150, 30.0, seed=2)
    for batch in (8, 64):
        cfg = ServeConfig(max_batch=batch, reservation="paged", pipeline="orca")
        fast = serve(wl, replica, cfg)
        assert fast.path == "fast_pipeline" and _fields(fast) == _fields(serve(wl, replica, cfg, fast=False))
