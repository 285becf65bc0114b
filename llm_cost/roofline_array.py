"""The time model of `roofline.step_time` over numpy arrays of rows, batch and context.

The same formula (`roofline.pass_costs`), validated for arrays and evaluated element-wise, so
that a speedup sweep over a million (gamma, batch) points is a handful of array operations
instead of a million Python calls:

    T(m) = max(bytes_read / (BW * eta_bw), flops(m) / (F * eta_f)) + t_fixed

`tests/test_speculative.py` pins it to `roofline.step_time` point by point (dense, MoE, MLA,
both presets, BF16 and INT4), so the two cannot drift apart unnoticed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llm_cost.arrays import checked
from llm_cost.errors import InvalidValueError
from llm_cost.roofline import pass_costs
from llm_cost.specs import BF16, Accelerator, ModelSpec, Profile, WeightFormat


@dataclass(frozen=True)
class StepTimes:
    """Element-wise forward-pass times (seconds), broadcast over the inputs' shapes."""

    memory_s: np.ndarray
    compute_s: np.ndarray
    fixed_s: float

    @property
    def total_s(self) -> np.ndarray:
        return np.maximum(self.memory_s, self.compute_s) + self.fixed_s

    @property
    def compute_bound(self) -> np.ndarray:
        return self.compute_s > self.memory_s


def step_times(model: ModelSpec, gpu: Accelerator, profile: Profile, *, rows, batch=1,
               context=0, fmt: WeightFormat = BF16, kv_bytes_per_element: float = 2) -> StepTimes:
    """`roofline.step_time` element-wise: rows, batch, context may be arrays (broadcast).

    rows >= batch >= 1: `rows / batch` new rows per sequence (gamma + 1 to verify gamma drafts).
    """
    batch = checked("batch", batch, low=1)
    rows = checked("rows", rows, low=1)
    context = checked("context", context, low=0)
    if np.any(rows < batch):
        raise InvalidValueError("rows must be at least batch (one row per sequence)")
    _, _, _, memory, compute = pass_costs(model, gpu, profile, rows=rows, batch=batch, context=context,
                                          fmt=fmt, kv_bytes_per_element=kv_bytes_per_element)
    return StepTimes(memory_s=np.asarray(memory), compute_s=np.asarray(compute),
                     fixed_s=profile.fixed_time_s)
