"""Weight bytes in a format: BF16, group-quantized INT4/INT8 (the article's `quantized_weight_bytes`),
or the checkpoint's own formats (`checkpoint`).
"""

from __future__ import annotations

from llm_cost.catalog import as_model
from llm_cost.counts.checkpoint import checkpoint_weight_bytes
from llm_cost.counts.params import BF16_BYTES, param_counts
from llm_cost.counts.weight_parts import WeightBytes
from llm_cost.specs import BF16, ModelSpec, WeightFormat
from llm_cost.specs.weights import as_weights


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
