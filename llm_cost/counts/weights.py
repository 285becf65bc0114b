"""Weight bytes in a format: BF16, group-quantized INT4/INT8 (the article's `quantized_weight_bytes`),
or the checkpoint's own formats (`checkpoint`).
"""

from __future__ import annotations

from llm_cost.catalog import as_model
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
    if weights.checkpoint:  # the checkpoint module only for that format: most runs start without it
        from llm_cost.counts.checkpoint import checkpoint_weight_bytes

        return checkpoint_weight_bytes(model)
    counts = param_counts(model)
    per = weights.bytes_per_weight
    emb = BF16_BYTES if weights.keep_embeddings_bf16 else per
    always = (counts.num_dense_layers * counts.dense_layer + counts.num_moe_layers * counts.moe_layer_shared
              + counts.mixer_correction + counts.final_norm)  # a hybrid's recurrent mixers for its attention
    return WeightBytes(
        embedding=counts.embedding * emb,
        position_embedding=counts.position_embedding * emb,
        lm_head=counts.lm_head * emb,
        always=always * per,
        expert=counts.expert_params * per,
        num_moe_layers=counts.num_moe_layers,
        num_experts=counts.num_experts,
        effective_bits=weights.effective_bits,
    )


def tower_weight_bytes(model: ModelSpec, weights: WeightFormat = BF16) -> float:
    r"""Bytes of the vision tower and projector an engine loads beside the text model (0 without one).

    The tower is resident (it encodes every image) but no decode step reads it: it runs once per
    image, its FLOPs charged to the prefill (`counts.vision.image_cost`). So it is counted in the
    memory fit (`resident_weight_bytes`, `parallel.weight_bytes_per_gpu`), never in a pass's bytes.

    .. math:: B_{tower} = N_{vision} \cdot \max(b_{format}, 2)

    A quantized format leaves the tower at BF16, as the quantizers do (vllm-project/llm-compressor,
    examples/multimodal_vision/README.md: its recipes `ignore` "re:.*vision_tower.*" and
    "re:.*multi_modal_projector.*", "compressing these parameters offers little benefit"); the
    checkpoint format takes the tower at the checkpoint's torch_dtype (`checkpoint.checkpoint_bytes`).

    Examples
    --------
    MedGemma 27B's SigLIP tower and projector, 423,060,336 parameters (411,466,608 in its encoder
    layers, tests/test_vision_requests.py) at BF16: 0.85 GB.

    >>> from llm_cost.catalog import load_model
    >>> round(tower_weight_bytes(load_model("tests/data/configs/medgemma-27b-it.json")) / 1e9, 2)
    0.85
    """
    model = as_model(model)
    weights = as_weights(weights)
    if model.vision is None:  # text only: the towers' counts not imported (the CLI's startup)
        return 0.0
    from llm_cost.counts.vision import vision_params

    vision = vision_params(model)
    if weights.checkpoint:
        from llm_cost.counts.checkpoint import checkpoint_bytes

        return float(checkpoint_bytes(model).vision)
    return vision.total * max(weights.bytes_per_weight, BF16_BYTES)


def resident_weight_bytes(model: ModelSpec, weights: WeightFormat = BF16) -> float:
    """Weight bytes an engine holds on one GPU for the whole model: the text model's
    (`weight_bytes(...).total`) plus the vision tower's (`tower_weight_bytes`). The MTP modules are
    not counted: vLLM loads them only when it speculates with them (README, "Architectures")."""
    return weight_bytes(model, weights).total + tower_weight_bytes(model, weights)
