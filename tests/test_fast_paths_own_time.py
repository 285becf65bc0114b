"""A pass cost that times its passes its own way (a PassCost subclass overriding `time`) is run by the
general loop, which calls its `time` every iteration: no fast path evaluates PassCost's formula in its
stead (second review of issue 24, defect A: fast_reservations finished at 71.96 s, the loop at 74.69 s)."""

from __future__ import annotations

import dataclasses

import llm_cost as lc
from llm_cost.serving.replica import IterationCost


class SlowerFirstIterations(IterationCost):
    def time(self, rows, kv_tokens, pairs):
        return super().time(rows, kv_tokens, pairs) * 1.25


def _replica():
    plain = lc.Replica.from_specs(lc.load_model("gpt-3-13b"), lc.load_accelerator("a100-40gb"), lc.PRESETS["lecture"])
    own = SlowerFirstIterations(**{field.name: getattr(plain.cost, field.name)
                                   for field in dataclasses.fields(plain.cost)})
    return plain, dataclasses.replace(plain, cost=own)


def test_an_overridden_time_is_never_evaluated_by_a_fast_path():
    plain, own = _replica()
    assert plain.cost.times_as_defined() and not own.cost.times_as_defined()
    workload = lc.poisson_workload(300, 12.4, seed=0)
    for config in (lc.config_for("iteration", 32), lc.config_for("request", 8),
                   lc.ServeConfig(max_batch=32, reservation="paged")):
        assert lc.serve(workload, own, config).finish_s == lc.serve(workload, own, config, fast=False).finish_s
        assert max(lc.serve(workload, own, config).finish_s) > max(lc.serve(workload, plain, config).finish_s)
