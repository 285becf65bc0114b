"""A MoE target beside its dense twin: the same active parameters, verification that is not free.

Verifying gamma + 1 rows per sequence touches up to gamma + 1 times as many routed experts as
decoding one (the lecture §9.3: EAGLE gets only 1.5x on Mixtral 8x7B), so a MoE's speculative
speedup falls below that of a dense model of its active size.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from llm_cost.catalog import as_model
from llm_cost.counts import param_counts
from llm_cost.speculative.batched import RooflineSpeedup, roofline_speedup
from llm_cost.specs import BF16, ModelSpec, WeightFormat
from llm_cost.catalog.arguments import check_arguments


@check_arguments()
def dense_twin(model: ModelSpec) -> ModelSpec:
    r"""A dense model with the MoE's active size: same attention, one MLP as wide as the active part.

    .. math:: d_{ff}^{twin} = \mathrm{round}\left(\frac{P_{MLP}^{active}}{L \cdot n_{matrices} \cdot d}\right)

    Its MLP width is the active MLP parameters (dense layers, shared and top-k routed experts,
    routers) spread evenly over the layers, so its active parameters match to within one
    rounding of the width (Mixtral 8x7B: 2 x 14336 + the router). A dense model is its own twin.

    Parameters
    ----------
    model : ModelSpec
        Any model; a MoE one gets a twin.

    Returns
    -------
    ModelSpec
        The dense twin (named "<name> dense twin"), or `model` itself when it is dense.

    Examples
    --------
    >>> from llm_cost.catalog import as_model
    >>> twin = dense_twin(as_model("mixtral-8x7b"))
    >>> twin.name, twin.intermediate_size, twin.moe
    ('mixtral-8x7b dense twin', 28675, None)
    >>> dense_twin(as_model("llama-3-8b")).name
    'llama-3-8b'
    """
    if model.moe is None:
        return model
    counts = param_counts(model)
    moe = model.moe
    per_moe_layer = (counts.shared_experts_per_layer + moe.experts_per_token * counts.expert_params
                     + counts.router_per_layer)
    active_mlp = counts.num_dense_layers * counts.dense_mlp_per_layer + counts.num_moe_layers * per_moe_layer
    width = round(active_mlp / (model.num_layers * model.mlp_matrices * model.hidden_size))
    return replace(model, name=f"{model.name} dense twin", intermediate_size=width, moe=None,
                   mlp_bias=False, shared_expert_intermediate_size=0, shared_expert_gate=False)


@dataclass(frozen=True)
class MoeVsDense:
    """A MoE target's speculative speedup next to its dense twin's (same active parameters).

    Attributes
    ----------
    moe, dense : RooflineSpeedup
        `roofline_speedup` of the MoE target and of its twin, same arguments.
    dense_model : ModelSpec
        The twin (`dense_twin`).

    Examples
    --------
    See `moe_vs_dense`.
    """

    moe: RooflineSpeedup
    dense: RooflineSpeedup
    dense_model: ModelSpec


@check_arguments(alpha=None, gamma=None, batch=None, c=None, context=None)  # the grids: checked once, inside
def moe_vs_dense(target, gpu, profile, *, alpha, gamma, batch=1, c=None, draft=None, draft_profile=None,
                 context=0, weights: WeightFormat = BF16, draft_weights: WeightFormat = BF16) -> MoeVsDense:
    r"""`roofline_speedup` for a MoE target and for `dense_twin(target)` with the same arguments.

    .. math:: S = E\,T(B) / (\gamma\,t_{draft}(B) + T(B(\gamma + 1))), \text{ for the MoE and its twin}

    Verifying gamma + 1 rows per sequence touches up to gamma + 1 times as many experts
    (the lecture §9.3: EAGLE gets only 1.5x on Mixtral 8x7B), so the MoE's verification is not
    free even at batch 1 and its speedup is lower.

    Parameters
    ----------
    target
        A model spec or catalog name (a dense one is compared with itself).
    gpu, profile, alpha, gamma, batch, c, draft, draft_profile, context, weights, draft_weights
        As in `roofline_speedup` (`c` the draft's cost ratio).

    Returns
    -------
    MoeVsDense
        Both results and the twin.

    Examples
    --------
    Mixtral 8x7B (article preset, alpha 0.8, gamma 4, c 0.1, batch 1): verification costs 2.80
    decode steps, so speculation barely pays, while the dense twin gets the full 2.40x.

    >>> cmp = moe_vs_dense("mixtral-8x7b", "h100-sxm", "article", alpha=0.8, gamma=4, c=0.1)
    >>> print(f"{cmp.moe.verify_over_base:.2f} {cmp.moe.speedup:.2f} {cmp.dense.speedup:.2f}")
    2.80 1.05 2.40
    """
    target = as_model(target)
    twin = dense_twin(target)
    grid = dict(alpha=alpha, gamma=gamma, batch=batch, c=c, draft=draft, draft_profile=draft_profile,
                context=context, weights=weights, draft_weights=draft_weights)
    return MoeVsDense(moe=roofline_speedup(target, gpu, profile, **grid),
                      dense=roofline_speedup(twin, gpu, profile, **grid), dense_model=twin)
