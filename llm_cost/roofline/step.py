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

from llm_cost.counts import BF16_BYTES
from llm_cost.catalog import as_accelerator, as_model, as_profile
from llm_cost.errors import InvalidValueError, check_number
from llm_cost.grids import checked
from llm_cost.roofline.pass_cost import MAX_BATCH, MAX_CONTEXT, MAX_ROWS, PassCost
from llm_cost.roofline.timing import StepTime
from llm_cost.specs import BF16, WeightFormat
from llm_cost.specs.weights import as_weights


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
        Weight and K/V bytes, FLOPs, memory_time_s, compute_time_s, fixed_time_s, step_time_s (s), bound;
        `fits` None: whether the pass fits in memory is `parallel`'s question, a floor up (`lc.step_time`
        asks it for one pass on one GPU, `parallel.deployed_step_time` on a deployment).

    Examples
    --------
    The article's decode bound of Llama-3-8B on an H100 (§1.2): 4.79 ms.

    >>> round(step_time("llama-3-8b", "h100-sxm", "article").step_time_s * 1e3, 2)
    4.79
    >>> step_time("llama-3-8b", "h100-sxm", "article", rows=[1, 512]).bound.tolist()
    ['memory', 'compute']

    The article prices Llama-3-70B on one card "assuming it fits" (§3.1): the time model times it and
    leaves the fit unchecked (`lc.step_time` says it does not fit).

    >>> t = step_time("llama-3-70b", "h100-sxm", "article")
    >>> round(t.step_time_s * 1e3, 2), t.fits
    (42.12, None)
    """
    model, gpu, profile = as_model(model), as_accelerator(gpu), as_profile(profile)
    weights = as_weights(weights)  # a format or its name ("int4-g128")
    rows, batch, context = check_pass(rows, batch, context)
    cost = PassCost.from_specs(model, gpu, profile, weights, kv_bytes_per_element)
    return cost.step(rows, batch, context, count_kv=profile.count_kv)


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
