"""One forward pass over `rows` token rows from `batch` sequences with `context` cached tokens each.

    T(m) = max(bytes_read / (BW eta_bw), flops(m) / (F eta_f)) + t_fixed

- bytes_read = weights read + K/V moved (batch x context cached tokens read, the m new rows'
  K/V written), the K/V term only when the profile counts KV;
- flops(m) = m x 2 x (active GEMM params) + attention: each of a sequence's r = m / batch new
  rows attends to the context and to the new rows before it and itself (r ctx + r (r + 1) / 2);
- MoE: a pass over m rows reads the experts those rows touch (N (1 - (1 - k/N)^m) per layer
  under uniform top-k routing), so T(m) of a MoE model grows with m even below the ridge.

The article (speculative decoding, §1.2), article preset: Llama-3-8B on H100, decode 4.79 ms.
The lecture (Optimizing Autoregressive Decode, demo 05), lecture preset: Llama-3.1-8B on H100,
context 1024: 6.65 ms for 1 to 129 rows, 7.76 ms for 257.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llm_cost.counts import BF16_BYTES
from llm_cost.catalog import as_accelerator, as_model, as_profile
from llm_cost.errors import InvalidValueError, check_number
from llm_cost.grids import checked
from llm_cost.roofline.pass_cost import MAX_BATCH, MAX_CONTEXT, MAX_ROWS, PassCost, roofline_total
from llm_cost.specs import BF16, WeightFormat
from llm_cost.specs.weights import as_weights


@dataclass(frozen=True)
class StepTime:
    """One forward pass: its inputs, what it reads and computes, and how long it takes (SI).

    Each field is a float, or a numpy array when an input was one (broadcast shapes).
    """

    rows: Any
    batch: Any
    context: Any
    weight_bytes_read: Any
    kv_bytes: Any
    flops: Any
    memory_time_s: Any
    compute_time_s: Any
    fixed_time_s: float
    comm_time_s: Any = 0.0  # all communication (tp all-reduces, ep all-to-alls, pp hand-offs); 0 on one GPU
    stages: int = 1  # pipeline stages the pass crosses; memory_time_s and compute_time_s are one stage's
    overlap_comm: bool = False  # the collectives hide behind the stages' roofline (hand-offs never do)
    handoff_s: Any = 0.0  # of comm_time_s, the pipeline's stage hand-offs
    fits: Any = None  # the GPU's memory and the context hold the pass (one pass: `step_time`, `deployed_step_time`); None: not checked (a grid)
    fit_note: str = ""  # why it does not fit, in one line ("" when it fits or was not checked)

    @property
    def step_time_s(self):
        """max(memory_time_s, compute_time_s) + fixed_time_s; on a deployment stages x max(...) +
        comm_time_s + fixed_time_s (`overlap_comm`: max(stages x max(...), comm_time_s - handoff_s) +
        handoff_s + fixed_time_s). The CLI's names: every command's JSON says the same."""
        if self.stages == 1 and not _any(self.comm_time_s):
            return roofline_total(self.memory_time_s, self.compute_time_s, self.fixed_time_s)
        import numpy as np

        body = np.maximum(self.memory_time_s, self.compute_time_s) * self.stages
        collectives = np.subtract(self.comm_time_s, self.handoff_s)
        body = np.maximum(body, collectives) if self.overlap_comm else body + collectives
        total = body + self.handoff_s + self.fixed_time_s
        return float(total) if np.ndim(total) == 0 else total

    @property
    def bound(self):
        """'memory', 'compute' or 'communication' (an array of them for arrays): which side sets
        the time (communication: the collectives take longer than the stages' roofline)."""
        scalar = isinstance(self.memory_time_s, float) and isinstance(self.compute_time_s, float)
        if scalar and not _any(self.comm_time_s):
            return "compute" if self.compute_time_s > self.memory_time_s else "memory"
        import numpy as np

        side = np.where(np.asarray(self.compute_time_s) > self.memory_time_s, "compute", "memory")
        longer = np.maximum(self.memory_time_s, self.compute_time_s) * self.stages
        side = np.where(np.asarray(self.comm_time_s) > longer, "communication", side)
        return str(side) if scalar and np.ndim(side) == 0 else side

    @property
    def bytes_read(self):
        return self.weight_bytes_read + self.kv_bytes


def _any(value) -> bool:
    """`value` is not 0 (a number) or has a non-zero element (an array)."""
    if isinstance(value, (int, float)):
        return bool(value)
    import numpy as np

    return bool(np.any(value))


def step_time(model, gpu, profile, *, rows=None, batch=1, context=0, weights: WeightFormat = BF16,
              kv_bytes_per_element: float = BF16_BYTES) -> StepTime:
    """T(m) of one forward pass over `rows` rows from `batch` sequences with `context` cached tokens.

    .. math:: T(m) = \\max(B_{read} / (BW\\,\\eta_{bw}),\\ F(m) / (F_{peak}\\,\\eta_f)) + t_{fixed}

    Parameters
    ----------
    model, gpu, profile
        Specs, or a catalog name or path (`"llama-3-8b"`, `"h100-sxm"`, `"article"`).
    rows
        Token rows in the pass, at least `batch` (default `batch`: one decode step);
        rows / batch new rows per sequence (gamma + 1 to verify gamma drafts).
    batch
        Sequences the rows come from, in [1, 1e12].
    context
        Cached tokens per sequence, in [0, 1e12].
    weights
        Weight format (BF16, INT4 g128, ...).
    kv_bytes_per_element
        Bytes of one K or V element (2 for BF16, 1 for FP8).

    Numbers or numpy arrays (broadcast); the result's fields have the broadcast shape.

    Returns
    -------
    StepTime
        Weight and K/V bytes, FLOPs, memory_time_s, compute_time_s, fixed_time_s, step_time_s (s), bound; for one pass
        (numbers) `fits` and `fit_note` on one GPU (`_with_fit`), None for a grid.

    Examples
    --------
    The article's decode bound of Llama-3-8B on an H100 (§1.2): 4.79 ms.

    >>> round(step_time("llama-3-8b", "h100-sxm", "article").step_time_s * 1e3, 2)
    4.79
    >>> step_time("llama-3-8b", "h100-sxm", "article", rows=[1, 512]).bound.tolist()
    ['memory', 'compute']

    One pass carries its fit: the article prices Llama-3-70B on one card "assuming it fits" (§3.1); the
    time stays, and the result says it does not.

    >>> t = step_time("llama-3-70b", "h100-sxm", "article")
    >>> round(t.step_time_s * 1e3, 2), t.fits, t.fit_note.split(" (")[0]
    (42.12, False, 'needs 141.1 GB per GPU')
    """
    model, gpu, profile = as_model(model), as_accelerator(gpu), as_profile(profile)
    weights = as_weights(weights)  # a format or its name ("int4-g128")
    rows, batch, context = check_pass(rows, batch, context)
    cost = PassCost.from_specs(model, gpu, profile, weights, kv_bytes_per_element)
    return _with_fit(cost.step(rows, batch, context, count_kv=profile.count_kv), model, gpu, weights,
                     kv_bytes_per_element, rows=rows, batch=batch, context=context, profile=profile)


def _with_fit(step: StepTime, model, gpu, weights, kv_bytes_per_element, *, rows, batch, context,
              profile) -> StepTime:
    """`step` with its one-GPU fit (`parallel.fit.deployment_fit` on one GPU, K/V at the dtype of that
    width: 2 bytes bf16, 1 fp8, 0.5 int4, on `profile`'s memory basis): `fits`, and `fit_note` when it
    does not. The time is kept
    (the article's 70B "on one card, assuming it fits"). A grid, or a K/V width no dtype has, is
    returned unchecked (`fits` None): the fit is asked per point."""
    import numpy as np

    from llm_cost.specs.deployment import KV_DTYPES, Deployment

    dtype = next((name for name, width in KV_DTYPES.items() if width == kv_bytes_per_element), None)
    if dtype is None or max(np.ndim(rows), np.ndim(batch), np.ndim(context)) > 0:
        return step
    import dataclasses

    from llm_cost.parallel.fit import deployment_fit

    fit = deployment_fit(model, gpu, Deployment(kv_dtype=dtype).following(profile), weights=weights, rows=rows,
                         batch=batch, context=context)
    return dataclasses.replace(step, fits=fit.fits, fit_note=fit.reason)


def check_pass(rows, batch, context):
    """(rows, batch, context) of a uniform pass, checked: batch in [1, 1e12], rows in [batch, 1e18],
    context in [0, 1e12]; rows None means batch (one decode step). Arrays come back as float arrays."""
    rows = batch if rows is None else rows
    if all(isinstance(value, (int, float)) for value in (rows, batch, context)):
        check_number("batch", batch, low=1, high=MAX_BATCH)
        check_number("rows", rows, low=1, high=MAX_ROWS)
        check_number("context", context, low=0, high=MAX_CONTEXT)
        too_few = rows < batch
    else:
        import numpy as np

        batch = checked("batch", batch, low=1, high=MAX_BATCH)
        rows = checked("rows", rows, low=1, high=MAX_ROWS)
        context = checked("context", context, low=0, high=MAX_CONTEXT)
        too_few = bool(np.any(rows < batch))
    if too_few:
        raise InvalidValueError("rows must be at least batch (one row per sequence of the batch)",
                                params=("rows", "batch"))
    return rows, batch, context
