"""Issue 24.2, strictly: serving/ evaluates no pass time of its own. Every fast path times a pass by what
`PassCost.inline_coefficients` gives (`InlineTerms.evaluator`, `memory_evaluator`, `decode_stretch`) or by
`PassCost.time`: with both saying 1 ms a pass (the coefficients themselves unchanged), every path gives the
general loop's finish times; a path that wrote T from the coefficients (fast_engine, fast_prefix and
fast_reservations' stretches did) would time the real passes instead."""

from __future__ import annotations

import dataclasses
import math

import pytest

import llm_cost as lc
from llm_cost.parallel import deployed_cost
from llm_cost.roofline.inline_terms import InlineTerms
from llm_cost.roofline.pass_cost import PassCost
from llm_cost.serving.replica import IterationCost
from llm_cost.specs import BF16
from llm_cost.serving.prefixes import prefix_segments
from llm_cost.serving.serve_config import ServeConfig, SpecConfig
from llm_cost.specs.deployment import Deployment

PASS_S = 1e-3  # what the patched evaluators say every pass takes


def stretch_by(timed, n, written, k_max, t=0.0, watch=math.inf):
    """`InlineTerms.decode_stretch` by its definition: pass j (from 1) timed as timed(n, kv, kv), kv = written +
    j n, its seconds and seconds x kv summed in order, stopping after the pass that ends at or past `watch`."""
    taken, span, area, kv = 0, 0.0, 0.0, written
    for taken in range(1, k_max + 1):
        kv += n
        seconds = timed(n, kv, kv)
        span += seconds
        area += seconds * kv
        if t + span >= watch:
            break
    return taken, span, area, written + taken * n


class OneMillisecond(InlineTerms):
    """Coefficients whose evaluators time every pass `PASS_S` (the coefficients themselves unchanged)."""

    def evaluator(self):
        return lambda rows, kv_tokens, pairs: PASS_S

    def memory_evaluator(self):
        return lambda rows, kv_tokens, pairs=0.0: PASS_S

    def decode_stretch(self, n, written, k_max, t=0.0, watch=math.inf):
        return stretch_by(self.evaluator(), n, written, k_max, t, watch)


@pytest.fixture
def one_millisecond(monkeypatch):
    import numpy as np

    def inline(cost):
        terms = PassCost._inline_terms(cost)
        return None if terms is None else OneMillisecond(*terms)

    def time(cost, rows, kv_tokens, pairs):
        shape = np.broadcast(rows, kv_tokens, pairs).shape
        return np.full(shape, PASS_S) if shape else PASS_S
    monkeypatch.setattr(PassCost, "inline_coefficients", inline)
    monkeypatch.setattr(PassCost, "time", time)


def _replica(**deployment):
    model, gpu = lc.load_model("gpt-3-13b"), lc.load_accelerator("a100-40gb")
    if deployment:
        return lc.Replica.from_specs(model, gpu, lc.PRESETS["lecture"], deployment=Deployment(**deployment))
    return lc.Replica.from_specs(model, gpu, lc.PRESETS["lecture"])


GAMMA, RATIO = 4, 0.05
CASES = [  # (path, replica options, config, prefixes): each fast path on a config it runs
    ("fast_reservations", {}, lc.config_for("iteration", 32), False),
    ("fast_reservations", {}, lc.config_for("none", 64), False),
    ("fast_engine", {}, ServeConfig(max_batch=32, reservation="paged"), False),
    ("fast_engine", {}, ServeConfig(max_batch=32, reservation="paged", spec=SpecConfig(GAMMA, 0.8, c=RATIO)), False),
    ("fast_engine", {"tp": 2}, ServeConfig(max_batch=32, reservation="paged"), False),
    ("fast_prefix", {}, ServeConfig(reservation="paged", prefix_caching=True), True),
    ("fast_pipeline", {"pp": 2}, ServeConfig(max_batch=32, reservation="paged", pipeline="orca"), False),
]


@pytest.mark.parametrize("path, deployment, config, prefixes", CASES)
def test_every_fast_path_times_a_pass_by_the_pass_costs_evaluators(one_millisecond, path, deployment, config,
                                                                   prefixes):
    workload = lc.poisson_workload(300, 12.4, seed=0, max_gen=512)
    if prefixes:
        workload = prefix_segments(workload, seed=1, groups=8, group_tokens=256)
    replica = _replica(**deployment)
    fast, general = lc.serve(workload, replica, config, fast=(path,)), lc.serve(workload, replica, config, fast=False)
    assert fast.path == path and fast.iterations > 100
    # the same finish times (fast_reservations sums a stretch's seconds before adding them to the clock: to rounding)
    assert list(fast.finish_s) == pytest.approx(list(general.finish_s), rel=1e-12, abs=0.0), path
    if config.spec is None and not deployment:  # the patch holds: 1 ms a pass
        assert general.busy_s / general.iterations == pytest.approx(PASS_S, rel=1e-9)


# The evaluators themselves: `PassCost.time` bit for bit on one GPU and deployed, compute- or memory-bound


def _costs():
    model, gpu = lc.load_model("llama-3.1-8b"), lc.load_accelerator("h100-sxm")
    one = IterationCost.from_roofline(model, gpu, lc.PRESETS["lecture"])
    costs = {f"tp{dep.tp} pp{dep.pp}": deployed_cost(one, model, gpu, BF16, dep)
             for dep in (Deployment(tp=2), Deployment(tp=2, pp=2))}
    costs["one GPU"] = one
    costs["compute-bound"] = dataclasses.replace(one, flops_per_s=one.flops_per_s * 1e-3)
    costs["no fixed time, no pair flops"] = dataclasses.replace(one, fixed_s=0.0, pair_flops=0.0)
    return costs


def test_the_evaluators_are_time_bit_for_bit():
    # `evaluator` is T (`time` is its call); `memory_evaluator` is T wherever memory >= compute
    import random

    rng = random.Random(11)
    seen_bound = set()
    for name, cost in _costs().items():
        terms = cost.inline_coefficients()
        timed, memory = terms.evaluator(), terms.memory_evaluator()
        for _ in range(2000):
            rows = rng.choice([1, 5, 32, 160, 8192, rng.randrange(1, 20000)])
            kv = rng.randrange(0, 3_000_000)
            pairs = rng.choice([0, kv + rows, rng.randrange(0, 10**9)])
            expected = float(cost.time(rows, kv, pairs)).hex()
            assert timed(rows, kv, pairs).hex() == expected == terms.time(rows, kv, pairs).hex(), (name, rows)
            bound = cost.memory_s(rows, kv) >= cost.compute_s(rows, pairs)
            seen_bound.add(bound)
            if bound:
                assert memory(rows, kv).hex() == expected, (name, rows, kv)
    assert seen_bound == {True, False}


def test_a_decode_stretch_is_time_pass_by_pass_bit_for_bit():
    # `InlineTerms.decode_stretch` (memory-bound throughout or not, one GPU or deployed) against
    # `PassCost.time(n, kv, kv)` called pass by pass, stopping at the same pass
    for name, cost in _costs().items():
        terms = cost.inline_coefficients()
        for n, written in ((1, 0), (8, 1000), (32, 40_000), (256, 10)):
            first = float(cost.time(n, written + n, written + n))
            for k_max, watch in ((1, math.inf), (500, math.inf), (500, 37.5 * first), (500, first)):
                got = terms.decode_stretch(n, written, k_max, 0.25, 0.25 + watch)
                assert got == stretch_by(cost.time, n, written, k_max, 0.25, 0.25 + watch), (name, n, k_max)
