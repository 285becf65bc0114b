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
    """Whether the verification pass over `b` (`g` + 1) rows fits, element-wise over the broadcast
    gamma `g`, batch `b` and context (each distinct triple checked once)."""
    g, b, ctx = np.broadcast_arrays(g, b, ctx)
    cache, out = {}, np.empty(g.shape, dtype=bool)
    for at, key in zip(np.ndindex(g.shape), zip(g.flat, b.flat, ctx.flat)):
        if key not in cache:
            gamma, batch, context = (float(value) for value in key)
            cache[key] = verification_fit(target, gpu, deployment, rows=batch * (gamma + 1), batch=batch,
                                          context=context, weights=weights, draft=draft,
                                          draft_weights=draft_weights, draft_deployment=draft_deployment).fits
        out[at] = cache[key]
    return out


def mtp_memory(model: ModelSpec, weights: WeightFormat, deployment: Deployment, *, context: int) -> tuple[float, float]:
    r"""(weight bytes, K/V bytes per sequence of `context` tokens) one GPU holds for the model's MTP
    modules when it speculates with them; (0, 0) without MTP.

    vLLM loads the MTP layers only under an MTP speculative config (so no other fit counts them,
    README "Architectures"); then each module's own weights (`counts.mtp.mtp_params(...).own`: its
    block and projection, the embedding and head shared with the model) are split over tp like a
    layer of the model (its experts over ep), on one stage, and its attention keeps a K/V cache of
    its own for every token of the sequence:

    .. math:: W = L_{mtp}\,(W_{block}/tp + N_{proj}\,b/tp),\quad KV = L_{mtp}\,B_{KV,layer}(n)\,s_{kv}

    Examples
    --------
    DeepSeek-V3 on one GPU, BF16: 11.6 B of its own x 2 bytes, 23.2 GB; one MLA layer's K/V,
    576 x 2 bytes a token.

    >>> from llm_cost.catalog import load_model
    >>> w, kv = mtp_memory(load_model("deepseek-v3"), BF16, SINGLE_GPU, context=1000)
    >>> round(w / 1e9, 1), kv
    (23.2, 1152000.0)
    """
    model = as_model(model)
    if not model.mtp_layers:
        return 0.0, 0.0
    from llm_cost.counts import kv_bytes, weight_bytes
    from llm_cost.counts.mtp import mtp_module, mtp_params
    from llm_cost.parallel import weight_bytes_per_gpu
    from llm_cost.parallel.shard import kv_bytes_per_token_per_gpu

    module = mtp_module(model)  # one layer: a pipeline stage of its own (stage share 1)
    tables = weight_bytes(module, weights)
    shared = (tables.embedding + tables.position_embedding + tables.lm_head) / deployment.attention_tp
    projection = mtp_params(model).projection * weights.bytes_per_weight / deployment.attention_tp
    own = weight_bytes_per_gpu(module, weights, deployment) - shared + projection
    kv = kv_bytes_per_token_per_gpu(module, kv_bytes(module, context, deployment.kv_bytes_per_element), deployment)
    return model.mtp_layers * own, model.mtp_layers * kv
