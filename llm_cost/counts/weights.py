"""Weight bytes in a format: BF16, group-quantized INT4/INT8 (the article's `quantized_weight_bytes`),
or the checkpoint's own formats (`checkpoint`).
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.catalog import as_model
from llm_cost.counts.params import BF16_BYTES, param_counts
from llm_cost.specs import BF16, ModelSpec, WeightFormat
from llm_cost.specs.weights import as_weights


@dataclass(frozen=True)
class WeightBytes:
    r"""Weight bytes by how a forward pass reads them, in a given format.

    .. math:: B_{total} = B_{emb} + B_{pos} + B_{head} + B_{always} + L_{moe}\,E\,B_{expert}

    Attributes
    ----------
    embedding, position_embedding, lm_head
        Bytes of the input table (a lookup unless tied), the learned position table and the LM
        head (0 when tied).
    always
        Bytes every pass reads: all layers' attention, norms, dense MLPs, shared experts and routers,
        and the final norm.
    expert
        Bytes of one routed expert of one MoE layer (0 for a dense model).
    num_moe_layers, num_experts
        MoE layers and routed experts per MoE layer.
    effective_bits
        Bits per weight of the format, scales and zeros included (BF16 16, INT4 g128 4.25).

    Examples
    --------
    >>> from llm_cost.catalog import load_model
    >>> round(weight_bytes(load_model("llama-3-8b")).total / 1e9, 2)
    16.06
    """

    embedding: float  # input table (a lookup unless tied)
    position_embedding: float
    lm_head: float
    always: float  # every layer's shared part: attention, norms, dense MLPs, shared experts, routers
    expert: float  # one routed expert of one MoE layer
    num_moe_layers: int
    num_experts: int
    effective_bits: float

    @property
    def total(self) -> float:
        """All weight bytes: tables, LM head, the always-read part and every routed expert."""
        return (self.embedding + self.position_embedding + self.lm_head + self.always
                + self.num_moe_layers * self.num_experts * self.expert)


def weight_bytes(model: ModelSpec, weights: WeightFormat = BF16) -> WeightBytes:
    r"""Bytes of every weight in format `weights` (the article, `quantized_weight_bytes`).

    Quantized: params * (bits + (scale_bits + zero_bits) / group_size) / 8, with the embedding
    tables (input, LM head, positions) at BF16 when `weights.keep_embeddings_bf16`. A checkpoint
    format (`weights.checkpoint`, `llm_cost.specs.CHECKPOINT`) takes each component's bytes from the
    model's own checkpoint format (`llm_cost.counts.checkpoint.checkpoint_weight_bytes`).

    .. math:: B = N \cdot (b + (b_{scale} + b_{zero}) / g) / 8

    Parameters
    ----------
    model : ModelSpec
        The model (a spec).
    weights : WeightFormat, optional
        Weight format (default BF16; `llm_cost.specs.INT4_G128` is the article's INT4 g128;
        `llm_cost.specs.CHECKPOINT` the model's own).

    Returns
    -------
    WeightBytes
        Bytes (GB = 1e9 bytes) by component, `total` and the format's effective bits.

    Examples
    --------
    The article, §3.1: Llama-3-8B is 16.06 GB in BF16; INT4(g128) is 4 + 32 / 128 = 4.25 bits
    and 4.27 GB.

    >>> from llm_cost.catalog import load_model
    >>> from llm_cost.specs import INT4_G128
    >>> m = load_model("llama-3-8b")
    >>> round(weight_bytes(m).total / 1e9, 2)
    16.06
    >>> w = weight_bytes(m, INT4_G128)
    >>> w.effective_bits, round(w.total / 1e9, 2)
    (4.25, 4.27)
    """


    model = as_model(model)
    weights = as_weights(weights)  # a format or its name ("int4")
    if weights.checkpoint:
        from llm_cost.counts.checkpoint import checkpoint_weight_bytes  # it counts on this module

        return checkpoint_weight_bytes(model)
    p = param_counts(model)
    per = weights.bytes_per_weight
    emb = BF16_BYTES if weights.keep_embeddings_bf16 else per
    always = (p.num_dense_layers * p.dense_layer + p.num_moe_layers * p.moe_layer_shared
              + p.mixer_correction + p.final_norm)  # a hybrid's recurrent mixers for its attention
    return WeightBytes(
        embedding=p.embedding * emb,
        position_embedding=p.position_embedding * emb,
        lm_head=p.lm_head * emb,
        always=always * per,
        expert=p.expert_params * per,
        num_moe_layers=p.num_moe_layers,
        num_experts=p.num_experts,
        effective_bits=weights.effective_bits,
    )
