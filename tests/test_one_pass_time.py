"""Issue 24.2, strictly: serving/ evaluates no pass time of its own. Every fast path times a pass by what
`PassCost.inline_coefficients` gives (`InlineTerms.evaluator`, `memory_evaluator`, `decode_stretch`) or by
`PassCost.time`: with both saying 1 ms a pass (the coefficients themselves unchanged), every path gives the
general loop's finish times; a path that wrote T from the coefficients (fast_engine, fast_prefix and
fast_reservations' stretches did) would time the real passes instead."""

from __future__ import annotations

import math

import pytest

import llm_cost as lc
from llm_cost.roofline.inline_terms import InlineTerms
from llm_cost.roofline.pass_cost import PassCost
from llm_cost.serving.prefixes import prefix_segments
from llm_cost.serving.serve_config import ServeConfig, SpecConfig
from llm_cost.specs.deployment import Deployment

PASS_S = 1e-3  # what the patched evaluators say every pass takes


def stretch_by_evaluator(terms, n, written, k_max, t=0.0, watch=math.inf):
    """`InlineTerms.decode_stretch` by its definition: pass j (from 1) timed as evaluator(n, kv, kv),
    kv = written + j n, its seconds and seconds x kv summed in order, stopping after the pass that ends
    at or past `watch`."""
    timed = terms.evaluator()
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
        return stretch_by_evaluator(self, n, written, k_max, t, watch)


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
