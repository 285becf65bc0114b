"""The time model of `roofline.step_time` over numpy arrays of rows, batch and context.

The same formula (`roofline.PassCost` at `roofline.uniform_pass`), validated for arrays and
evaluated element-wise, so that a speedup sweep over a million (gamma, batch) points is a handful
of array operations instead of a million Python calls:

    T(m) = max(bytes_read / (BW * eta_bw), flops(m) / (F * eta_f)) + t_fixed

`tests/test_speculative.py` pins it to `roofline.step_time` point by point (dense, MoE, MLA,
both presets, BF16 and INT4), so the two cannot drift apart unnoticed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llm_cost.arrays import checked
from llm_cost.errors import InvalidValueError
from llm_cost.roofline.step_time import MAX_BATCH, MAX_CONTEXT, MAX_ROWS, PassCost, uniform_pass
from llm_cost.specs.model import BF16, Accelerator, ModelSpec, Profile, WeightFormat


@dataclass(frozen=True)
class StepTimes:
    """Element-wise forward-pass times (seconds), broadcast over the inputs' shapes."""

    memory_s: np.ndarray
    compute_s: np.ndarray
    fixed_s: float

    @property
    def total_s(self) -> np.ndarray:
        longer = np.maximum(self.memory_s, self.compute_s)
        return longer + self.fixed_s if self.fixed_s else longer

    @property
    def compute_bound(self) -> np.ndarray:
        return self.compute_s > self.memory_s


def step_times(model: ModelSpec, gpu: Accelerator, profile: Profile, *, rows, batch=1,
               context=0, fmt: WeightFormat = BF16, kv_bytes_per_element: float = 2) -> StepTimes:
    """`roofline.step_time` element-wise: rows, batch, context may be arrays (broadcast).

    rows >= batch >= 1: `rows / batch` new rows per sequence (gamma + 1 to verify gamma drafts).
    """
    batch = checked("--batch", batch, low=1, high=MAX_BATCH)
    rows = checked("--rows", rows, low=1, high=MAX_ROWS)
    context = checked("--context", context, low=0, high=MAX_CONTEXT)
    if np.any(rows < batch):
        raise InvalidValueError("rows must be at least batch (one row per sequence)")
    return step_times_unchecked(model, gpu, profile, rows=rows, batch=batch, context=context, fmt=fmt,
                                kv_bytes_per_element=kv_bytes_per_element)


def step_times_unchecked(model: ModelSpec, gpu: Accelerator, profile: Profile, *, rows, batch,
                         context=0, fmt: WeightFormat = BF16, kv_bytes_per_element: float = 2) -> StepTimes:
    """`step_times` without validation, for callers that have checked rows >= batch >= 1 and
    context >= 0 themselves (a million-point sweep need not check the same grid twice)."""
    cost = PassCost.from_specs(model, gpu, profile, fmt, kv_bytes_per_element)
    kv_tokens, pairs = uniform_pass(rows, batch, context) if profile.count_kv else (0.0, 0.0)
    return StepTimes(memory_s=np.asarray(cost.memory_s(rows, kv_tokens)),
                     compute_s=np.asarray(cost.compute_s(rows, pairs)), fixed_s=profile.fixed_time_s)
