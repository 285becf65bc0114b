"""LoRA adapter parameters: rank x (d_in + d_out) per targeted matrix per layer (the article, `lora_params`).
"""

from __future__ import annotations

from llm_cost.catalog import as_model
from llm_cost.errors import InvalidValueError, check_number
from llm_cost.specs import ModelSpec
from llm_cost.catalog.arguments import Choice, Many, Number, check_arguments


LORA_TARGETS_ATTN = ("q", "k", "v", "o")
LORA_TARGETS_ALL = ("q", "k", "v", "o", "gate", "up", "down")


LORA_RANK = 16  # the article's rank (§3.1)


@check_arguments(rank=Number(1, 1e6, integer=True), targets=Many(Choice("q", "k", "v", "o", "gate", "up", "down")))
def lora_params(model: ModelSpec, rank: int = LORA_RANK, targets=LORA_TARGETS_ALL) -> int:
    r"""LoRA adapter parameters: rank * (d_in + d_out) per targeted matrix per layer (the article).

    Targets: q, k, v, o (GQA/MHA attention), gate, up, down (MLP; a plain GELU MLP has up and
    down only). In MoE layers each routed and shared expert gets its own adapter.

    .. math:: N_{LoRA} = \sum_{layers} \sum_{W \in targets} r\,(d_{in}(W) + d_{out}(W))

    In the code `d` is the hidden size.

    Parameters
    ----------
    model : ModelSpec
        The model (a spec); MLA models take MLP targets only.
    rank : int, optional
        Adapter rank r, a whole number >= 1 (default 16).
    targets : sequence of str, optional
        Matrices to adapt: `LORA_TARGETS_ALL` (default) or `LORA_TARGETS_ATTN`, or any subset of
        q, k, v, o, gate, up, down.

    Returns
    -------
    int
        Adapter parameters (counts).

    Examples
    --------
    The article, §3.1: Llama-3-8B at rank 16 has 13.63M attention-only and 41.94M all-target
    adapter parameters.

    >>> from llm_cost.catalog import load_model
    >>> m = load_model("llama-3-8b")
    >>> round(lora_params(m, 16, LORA_TARGETS_ATTN) / 1e6, 2), round(lora_params(m, 16) / 1e6, 2)
    (13.63, 41.94)
    """


    model = as_model(model)
    check_number("rank", rank, low=1, integer=True)
    if model.recurrent is not None or model.single_sublayer_blocks:
        raise InvalidValueError(f"LoRA of {model.name} is not counted: its layers are not all attention + MLP "
                                f"({model.num_recurrent_layers} of {model.num_layers} are recurrent)")
    if model.mla is not None and set(targets) & set(LORA_TARGETS_ATTN):
        raise InvalidValueError("LoRA targets q, k, v, o are not defined for MLA attention; "
                                "use gate, up, down")
    d, q_dim, kv = model.hidden_size, model.q_dim, model.kv_dim
    attention = {"q": (d, q_dim), "k": (d, kv), "v": (d, kv), "o": (q_dim, d)}
    known = set(attention) | {"gate", "up", "down"}
    for target in targets:
        if target not in known:
            raise InvalidValueError(f"LoRA target must be one of {', '.join(LORA_TARGETS_ALL)}, got {target!r}")
    if "gate" in targets and "gate" not in model.mlp_projections:
        raise InvalidValueError(f"LoRA target 'gate' does not exist in {model.name} (plain GELU MLP)")

    def mlp(ff: int) -> int:
        """Adapter parameters of one MLP of width `ff` in one layer (a dense MLP or one expert)."""
        shapes = {"gate": (d, ff), "up": (d, ff), "down": (ff, d)}
        return sum(rank * sum(shapes[target]) for target in targets if target in shapes)

    attn = sum(rank * sum(attention[target]) for target in targets if target in attention)
    total = attn * model.num_layers + mlp(model.intermediate_size) * model.num_dense_layers
    if model.moe is not None:
        routed = model.moe.num_experts * mlp(model.moe.expert_intermediate_size)
        shared = model.moe.num_shared_experts * mlp(model.shared_expert_width)  # Qwen2-MoE's is wider
        total += (routed + shared) * model.num_moe_layers
    return total
