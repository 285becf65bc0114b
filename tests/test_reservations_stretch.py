"""fast_reservations' decode stretch on a cost without inline coefficients (the `measured` profile's GEMM
ramp, routed experts) is `PassCost.time` iteration by iteration, bit for bit, whether it calls `time`
per iteration or once on arrays (issue 24, 2: T is evaluated by PassCost alone; it stepped memory and
compute by `kv_token_s` and `pair_s` before, 1e-14 apart)."""

from __future__ import annotations

import math

import pytest

from llm_cost.catalog import as_profile, load_accelerator, load_model
from llm_cost.serving.fast_reservations import ARRAY_FROM, decode_stretch
from llm_cost.serving.replica import Replica
from llm_cost.specs.deployment import Deployment

DENSE = Replica.from_specs(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"), as_profile("measured")).cost
MOE = Replica.from_specs(load_model("mixtral-8x7b"), load_accelerator("h100-sxm"), as_profile("measured"),
                         deployment=Deployment(tp=2)).cost


def _by_time(cost, n, written, k_max, t, watch):
    taken, span, area, held = 0, 0.0, 0.0, written
    while taken < k_max:
        held += n
        dt = cost.time(n, held, held)
        span += dt
        area += dt * held
        taken += 1
        if t + span >= watch:
            break
    return taken, span, area, held


@pytest.mark.parametrize("cost", [DENSE, MOE], ids=["dense", "moe-tp2"])
@pytest.mark.parametrize("n,written,k_max", [(1, 10, 5), (7, 3000, 200), (64, 100_000, 2000), (3, 0, ARRAY_FROM)])
@pytest.mark.parametrize("horizon", [0.0, 0.05, 0.5, math.inf])
def test_stretch_is_pass_cost_time_bit_for_bit(cost, n, written, k_max, horizon):
    assert cost.inline_coefficients() is None  # the branch under test
    t = 1.25
    got = decode_stretch(cost, n, written, k_max, t, t + horizon)
    assert got == _by_time(cost, n, written, k_max, t, t + horizon)
    assert all(type(x) in (int, float) for x in got)


def test_equal_iteration_times_and_a_zero_time_pass_stop_where_the_loop_does():
    """Review 24c, 2 and 3: a cost whose iterations all take the same time (no K/V, no pairs) with the
    watch on a whole number of them (the array's estimate fell one short), and a pass of 0 s (it divided
    by it), each as the loop."""
    import dataclasses

    flat = dataclasses.replace(DENSE, kv_token_bytes=0.0, pair_flops=0.0)
    first = flat.time(4, 104, 104)
    for whole in (20, 313, 1000):
        for watch in (whole * first, whole * first * (1 + 1e-16), whole * first * (1 - 1e-16)):
            assert decode_stretch(flat, 4, 100, 5000, 0.0, watch) == _by_time(flat, 4, 100, 5000, 0.0, watch)
    free = dataclasses.replace(flat, weight_bytes=0.0, row_flops=0.0, fixed_s=0.0)
    assert decode_stretch(free, 4, 100, 50, 0.0, 1.0) == _by_time(free, 4, 100, 50, 0.0, 1.0)
