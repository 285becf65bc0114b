"""The package's `step_time`: one forward pass on one GPU or on a deployment.

`llm_cost.roofline.step_time` is the one-GPU roofline and `llm_cost.parallel.deployed_step_time`
the same pass on tp x pp GPUs; a script asks `lc.step_time(..., deployment=...)` for either, and
gets the pass's fit with it (`parallel.step.with_fit`: the roofline floor times a pass, memory is
`parallel`'s question). This module sits above `parallel` (it imports both floors) and adds no
formula of its own.
"""

from __future__ import annotations

from llm_cost.errors import InvalidValueError
from llm_cost.specs import BF16, WeightFormat
from llm_cost.catalog.arguments import check_arguments


@check_arguments(rows=None, batch=None, context=None)  # the grids: checked once, by check_pass
def step_time(model, gpu, profile, *, rows=None, batch=1, context=0, weights: WeightFormat = BF16,
              kv_bytes_per_element: float | None = None, deployment=None):
    """T(m) of one forward pass (`roofline.step_time`), on `deployment` when one is given.

    .. math:: T = \\mathit{stages} \\cdot \\max(B_{read} / (BW\\,\\eta_{bw}),\\ F / (F_{peak}\\,\\eta_f))
              + \\mathit{comm} + t_{fixed}

    Parameters
    ----------
    model, gpu, profile
        Specs, or catalog names (`"llama-3-8b"`, `"h100-sxm"`, `"article"`).
    rows, batch, context
        Token rows, sequences and cached tokens per sequence (`roofline.step_time`).
    weights
        Weight format.
    kv_bytes_per_element
        Bytes of one K or V element on one GPU (default 2, BF16); with a deployment its `kv_dtype`
        says it instead.
    deployment
        A `Deployment` (tp, pp, ep, kv_dtype): one GPU's share of the pass plus the collectives
        (`parallel.deployed_step_time`); None: one GPU.

    Returns
    -------
    StepTime
        Bytes, FLOPs and seconds (memory_time_s, compute_time_s, fixed_time_s, comm_time_s, step_time_s) of the pass.
        For one pass (numbers) `fits` and `fit_note` (`parallel.step.with_fit`); None for a grid.

    Examples
    --------
    The article's decode bound of Llama-3-8B on an H100 (§1.2), then Llama-3-70B on 4 of them:

    >>> import llm_cost as lc
    >>> round(lc.step_time("llama-3-8b", "h100-sxm", "article").step_time_s * 1e3, 2)
    4.79
    >>> t = lc.step_time("llama-3-70b", "h100-sxm", "article", deployment=lc.Deployment(tp=4))
    >>> round(t.memory_time_s * 1e3, 2), t.bound
    (10.53, 'memory')

    One pass carries its fit, on one GPU too: the article's 70B "on one card, assuming it fits" does not.

    >>> one = lc.step_time("llama-3-70b", "h100-sxm", "article")
    >>> round(one.step_time_s * 1e3, 2), one.fits, one.fit_note.split(" (")[0]
    (42.12, False, 'needs 141.1 GB per GPU')
    """
    from llm_cost.specs.weights import as_weights

    weights = as_weights(weights)  # a format or its name ("fp8")
    if deployment is None:
        return _one_gpu(model, gpu, profile, rows=rows, batch=batch, context=context, weights=weights,
                        kv_bytes_per_element=kv_bytes_per_element)
    if kv_bytes_per_element is not None:
        raise InvalidValueError("kv_bytes_per_element and deployment exclude each other: give the K/V precision "
                                "as the deployment's kv_dtype", params=("kv_bytes_per_element", "deployment"))
    from llm_cost.parallel import deployed_step_time

    return deployed_step_time(model, gpu, profile, deployment, rows=rows, batch=batch, context=context,
                              weights=weights)




def _one_gpu(model, gpu, profile, *, rows, batch, context, weights, kv_bytes_per_element):
    """`roofline.step_time` with its one-GPU fit (`parallel.step.with_fit`, K/V at the dtype of that width:
    2 bytes bf16, 1 fp8, 0.5 int4). A K/V width no dtype has is returned unchecked (`fits` None)."""
    from llm_cost.catalog import as_accelerator, as_model, as_profile
    from llm_cost.counts.params import BF16_BYTES
    from llm_cost.parallel.step import with_fit
    from llm_cost.roofline.step import step_time as one_gpu
    from llm_cost.specs.deployment import KV_DTYPES, Deployment

    model, gpu, profile = as_model(model), as_accelerator(gpu), as_profile(profile)
    kv = BF16_BYTES if kv_bytes_per_element is None else kv_bytes_per_element
    step = one_gpu(model, gpu, profile, rows=rows, batch=batch, context=context, weights=weights,
                   kv_bytes_per_element=kv)
    dtype = next((name for name, width in KV_DTYPES.items() if width == kv), None)
    if dtype is None:
        return step
    return with_fit(step, model, gpu, profile, Deployment(kv_dtype=dtype), weights)
