"""Whether speculative decoding fits: the verification pass's memory on a deployment, with a draft
model beside the target on its GPUs (`draft_deployment_for`), and the grid `best_gamma` searches."""

from __future__ import annotations

import dataclasses

import numpy as np

from llm_cost.catalog import as_model
from llm_cost.specs import BF16, ModelSpec, WeightFormat
from llm_cost.specs.deployment import SINGLE_GPU, Deployment
from llm_cost.catalog.arguments import check_arguments


@check_arguments()
def draft_deployment_for(draft, deployment: Deployment) -> Deployment:
    """Where the draft runs by default: on the target's GPUs, the same tp and pp (and ep and
    dp-attention for a MoE draft; a dense draft has no experts to spread, so ep 1 and attention over tp).

    Examples
    --------
    >>> from llm_cost.specs.deployment import Deployment
    >>> draft_deployment_for("llama-3.2-1b", Deployment(tp=4, ep=4)).ep
    1
    """
    if deployment.ep == 1 or as_model(draft).is_moe:
        return deployment
    return dataclasses.replace(deployment, ep=1, dp_attention=False)


@check_arguments()
def verification_fit(target, gpu, deployment: Deployment = SINGLE_GPU, *, rows, batch, context=0,
                     weights: WeightFormat = BF16, draft=None, draft_weights: WeightFormat = BF16,
                     draft_deployment: Deployment | None = None):
    """`parallel.Fit` of one GPU for a verification pass over `rows` rows of `batch` sequences with
    `context` cached tokens each (numbers): the target's weights, K/V and workspace, plus a `draft`
    model's weights and K/V when it shares the GPUs (its workspace is reused: the larger one counts).

    Examples
    --------
    Llama-3-70B in BF16 does not fit one H100 (141 GB of weights), and fits four:

    >>> from llm_cost.specs.deployment import Deployment
    >>> verification_fit("llama-3-70b", "h100-sxm", rows=5, batch=1).fits
    False
    >>> verification_fit("llama-3-70b", "h100-sxm", Deployment(tp=4), rows=5, batch=1).fits
    True
    """
    from llm_cost.parallel import step_fit

    fit = step_fit(target, gpu, deployment, rows=rows, batch=batch, context=context, weights=weights)
    if draft is None:
        return fit
    on = draft_deployment if draft_deployment is not None else draft_deployment_for(draft, deployment)
    return fit.beside(step_fit(draft, gpu, on, rows=rows, batch=batch, context=context, weights=draft_weights))


def fits_grid(target: ModelSpec, gpu, deployment: Deployment, weights, g, b, ctx, draft, draft_weights,
               draft_deployment) -> np.ndarray:
    """Whether the verification pass over b (g + 1) rows fits, element-wise over the broadcast
    gamma, batch and context (each distinct triple checked once)."""
    g, b, ctx = np.broadcast_arrays(g, b, ctx)
    cache, out = {}, np.empty(g.shape, dtype=bool)
    for at, key in zip(np.ndindex(g.shape), zip(g.flat, b.flat, ctx.flat)):
        if key not in cache:
            gamma, batch, context = (float(x) for x in key)
            cache[key] = verification_fit(target, gpu, deployment, rows=batch * (gamma + 1), batch=batch,
                                          context=context, weights=weights, draft=draft,
                                          draft_weights=draft_weights, draft_deployment=draft_deployment).fits
        out[at] = cache[key]
    return out
