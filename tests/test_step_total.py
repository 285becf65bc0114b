"""PassCost.step_total is PassCost.step(...).step_time_s bit for bit: the sweep's fast path may not drift.

step_total restates the roofline with fewer temporaries (bench/spec_sweep.py); this pins it to the
one formula over dense, MoE, MLA and windowed models, both presets, numbers and arrays.
"""

from __future__ import annotations

import numpy as np
import pytest

from llm_cost.catalog import load_accelerator, load_model
from llm_cost.roofline import PassCost
from llm_cost.specs import BF16, INT4_G128, PRESETS

H100 = load_accelerator("h100-sxm")


@pytest.mark.parametrize("name", ["llama-3-8b", "mixtral-8x7b", "deepseek-v3", "gpt-oss-20b", "gemma-2-9b"])
@pytest.mark.parametrize("preset", ["article", "lecture"])
@pytest.mark.parametrize("weights", [BF16, INT4_G128])
def test_step_total_is_step(name, preset, weights):
    prof = PRESETS[preset]
    cost = PassCost.from_specs(load_model(name), H100, prof, weights)
    batch = np.array([1.0, 1.0, 8.0, 64.0, 512.0])
    rows = batch * np.array([1.0, 5.0, 2.0, 9.0, 5.0])
    context = np.array([0.0, 1024.0, 7.0, 4096.0, 512.0])
    slow = cost.step(rows, batch, context, count_kv=prof.count_kv)
    fast, bound = cost.step_total(rows.copy(), batch, context, count_kv=prof.count_kv, with_bound=True)
    assert np.array_equal(fast, slow.step_time_s)
    assert np.array_equal(bound, slow.bound == "compute")
    for i in range(batch.size):
        one = cost.step(float(rows[i]), float(batch[i]), float(context[i]), count_kv=prof.count_kv).step_time_s
        assert cost.step_total(float(rows[i]), float(batch[i]), float(context[i]), count_kv=prof.count_kv) == one
