"""Counts: parameters, FLOPs per token, KV bytes per token, weight bytes, LoRA parameters.

All integer counts are exact (Python ints); bytes are floats only where a format has a
fractional width (INT4 with group scales). Sources:
- Dense counts and the article's conventions: the article (`param_count`,
  `forward_flops_per_token`, `kv_bytes_per_token`, `quantized_weight_bytes`, `lora_params`).
- MoE and MLA shapes: the DeepSeek-V3 and Mixtral Hub configs and modeling code.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.errors import InvalidValueError, check_number
from llm_cost.specs import BF16, ModelSpec, WeightFormat

BF16_BYTES = 2


@dataclass(frozen=True)
class ParamCounts:
    """A model's parameters by component (counts, not bytes). Per-layer fields are one layer."""

    embedding: int  # input token table
    position_embedding: int  # learned position table (GPT-2/3), else 0
    lm_head: int  # 0 when tied to the embedding
    final_norm: int
    attention_per_layer: int  # projections, their biases, MLA's inner norms
    norms_per_layer: int
    dense_mlp_per_layer: int  # in dense layers (all layers of a dense model)
    expert_params: int  # one routed expert of one MoE layer
    shared_experts_per_layer: int
    router_per_layer: int
    num_layers: int
    num_moe_layers: int
    num_experts: int
    experts_per_token: int

    @property
    def num_dense_layers(self) -> int:
        return self.num_layers - self.num_moe_layers

    @property
    def dense_layer(self) -> int:
        """Parameters of one dense layer (attention + MLP + norms)."""
        return self.attention_per_layer + self.dense_mlp_per_layer + self.norms_per_layer

    @property
    def moe_layer_shared(self) -> int:
        """Parameters of one MoE layer that every token uses (all but the routed experts)."""
        return (self.attention_per_layer + self.norms_per_layer + self.shared_experts_per_layer
                + self.router_per_layer)

    @property
    def moe_layer(self) -> int:
        """Parameters of one MoE layer, all routed experts included."""
        return self.moe_layer_shared + self.num_experts * self.expert_params

    @property
    def per_layer(self) -> int:
        """Parameters of the first layer (every layer of a dense model)."""
        return self.dense_layer if self.num_dense_layers else self.moe_layer

    @property
    def total(self) -> int:
        return (self.num_dense_layers * self.dense_layer + self.num_moe_layers * self.moe_layer
                + self.embedding + self.position_embedding + self.lm_head + self.final_norm)

    @property
    def active(self) -> int:
        """Parameters one token uses: total less the routed experts it is not sent to."""
        idle = self.num_moe_layers * (self.num_experts - self.experts_per_token) * self.expert_params
        return self.total - idle

    @property
    def lookup(self) -> int:
        """Parameters read by row lookup, not multiplied: input and position tables.

        A tied table is also the LM head, which is a GEMM, so it is not a lookup then.
        """
        return (self.embedding if self.lm_head else 0) + self.position_embedding

    @property
    def gemm_active(self) -> int:
        """Active parameters a token multiplies (FLOPs = 2 x this): active less the lookups."""
        return self.active - self.lookup


def param_counts(model: ModelSpec) -> ParamCounts:
    """Count every parameter of `model` by component.

    Dense per layer (the article): attention d*q + 2*d*kv + q*d, SwiGLU 3*d*ff (GELU: 2*d*ff),
    2 RMSNorm gains (LayerNorm: gains and biases); total = layers + embedding + LM head + final norm.
    """
    d = model.hidden_size
    norm_width = 2 if model.norm_kind == "layer" else 1  # LayerNorm: gain and bias
    moe = model.moe
    mlp_matrices = 3 if model.mlp_kind == "gated" else 2
    dense_mlp = mlp_matrices * d * model.intermediate_size
    if model.mlp_bias:
        dense_mlp += (mlp_matrices - 1) * model.intermediate_size + d
    expert = 3 * d * moe.expert_intermediate_size if moe else 0
    return ParamCounts(
        embedding=model.vocab_size * d,
        position_embedding=model.learned_positions * d,
        lm_head=0 if model.tie_word_embeddings else model.vocab_size * d,
        final_norm=norm_width * d,
        attention_per_layer=_attention_params(model),
        norms_per_layer=2 * norm_width * d,
        dense_mlp_per_layer=dense_mlp,
        expert_params=expert,
        shared_experts_per_layer=moe.num_shared_experts * expert if moe else 0,
        router_per_layer=(moe.num_experts * d + (moe.num_experts if moe.router_bias else 0)) if moe else 0,
        num_layers=model.num_layers,
        num_moe_layers=model.num_moe_layers,
        num_experts=moe.num_experts if moe else 0,
        experts_per_token=moe.experts_per_token if moe else 0,
    )


def _attention_params(model: ModelSpec) -> int:
    d, h = model.hidden_size, model.num_heads
    mla = model.mla
    if mla is None:
        q, kv = model.q_dim, model.kv_dim
        params = d * q + 2 * d * kv + q * d
        if model.qkv_bias:
            params += q + 2 * kv
        if model.o_bias:
            params += d
        return params
    q_out = h * mla.qk_head_dim
    if mla.q_lora_rank:  # q_a_proj, q_a_layernorm, q_b_proj
        q_params = d * mla.q_lora_rank + mla.q_lora_rank + mla.q_lora_rank * q_out
    else:
        q_params = d * q_out
    kv_a = d * (mla.kv_lora_rank + mla.qk_rope_head_dim) + mla.kv_lora_rank  # + kv_a_layernorm
    kv_b = mla.kv_lora_rank * h * (mla.qk_nope_head_dim + mla.v_head_dim)
    o = h * mla.v_head_dim * d
    return q_params + kv_a + kv_b + o


def attention_flops_per_context_token(model: ModelSpec) -> int:
    """FLOPs one query row spends per cached token, all layers: QK^T and AV, 2 FLOPs per MAC.

    MHA/GQA: 4 * heads * head_dim per layer (the article: 4 * hidden * ctx * layers).
    MLA, computed without weight absorption: 2 * heads * (qk_head_dim + v_head_dim).
    """
    if model.mla is None:
        per_layer = 4 * model.num_heads * model.head_dim
    else:
        per_layer = 2 * model.num_heads * (model.mla.qk_head_dim + model.mla.v_head_dim)
    return per_layer * model.num_layers


def flops_per_token(model: ModelSpec, context: float = 0) -> float:
    """Forward FLOPs for one token that attends to `context` cached tokens.

    2 * (active params less lookups) + attention term (the article, `forward_flops_per_token`:
    the input embedding is a lookup; a tied table doubles as the LM head and counts).
    """
    check_number("context", context, low=0)
    return 2 * param_counts(model).gemm_active + attention_flops_per_context_token(model) * context


def kv_bytes_per_token(model: ModelSpec, bytes_per_element: float = BF16_BYTES) -> float:
    """KV cache bytes one token adds, all layers.

    MHA/GQA: 2 (K and V) * layers * kv_heads * head_dim * bytes (the article).
    MLA: layers * (kv_lora_rank + qk_rope_head_dim) * bytes (DeepSeek-V3: 576 per layer).
    """
    check_number("kv bytes per element", bytes_per_element, low=0, low_open=True)
    if model.mla is not None:
        width = model.mla.kv_lora_rank + model.mla.qk_rope_head_dim
        return model.num_layers * width * bytes_per_element
    return 2 * model.num_layers * model.num_kv_heads * model.head_dim * bytes_per_element


@dataclass(frozen=True)
class WeightBytes:
    """Weight bytes by how a forward pass reads them, in a given format."""

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
        return (self.embedding + self.position_embedding + self.lm_head + self.always
                + self.num_moe_layers * self.num_experts * self.expert)


def weight_bytes(model: ModelSpec, fmt: WeightFormat = BF16) -> WeightBytes:
    """Bytes of every weight in format `fmt` (the article, `quantized_weight_bytes`).

    Quantized: params * (bits + (scale_bits + zero_bits) / group_size) / 8, with the embedding
    tables (input, LM head, positions) at BF16 when `fmt.keep_embeddings_bf16`.
    """
    p = param_counts(model)
    per = fmt.bytes_per_weight
    emb = BF16_BYTES if fmt.keep_embeddings_bf16 else per
    always = (p.num_dense_layers * p.dense_layer + p.num_moe_layers * p.moe_layer_shared
              + p.final_norm)
    return WeightBytes(
        embedding=p.embedding * emb,
        position_embedding=p.position_embedding * emb,
        lm_head=p.lm_head * emb,
        always=always * per,
        expert=p.expert_params * per,
        num_moe_layers=p.num_moe_layers,
        num_experts=p.num_experts,
        effective_bits=fmt.effective_bits,
    )


LORA_TARGETS_ATTN = ("q", "k", "v", "o")
LORA_TARGETS_ALL = ("q", "k", "v", "o", "gate", "up", "down")


def lora_params(model: ModelSpec, rank: int = 16, targets=LORA_TARGETS_ALL) -> int:
    """LoRA adapter parameters: rank * (d_in + d_out) per targeted matrix per layer (the article).

    Targets: q, k, v, o (GQA/MHA attention), gate, up, down (MLP; a plain GELU MLP has up and
    down only). In MoE layers each routed and shared expert gets its own adapter.
    """
    check_number("rank", rank, low=1, integer=True)
    if model.mla is not None and set(targets) & set(LORA_TARGETS_ATTN):
        raise InvalidValueError("LoRA targets q, k, v, o are not defined for MLA attention; "
                                "use gate, up, down")
    d, q, kv = model.hidden_size, model.q_dim, model.kv_dim
    attention = {"q": (d, q), "k": (d, kv), "v": (d, kv), "o": (q, d)}
    known = set(attention) | {"gate", "up", "down"}
    for t in targets:
        if t not in known:
            raise InvalidValueError(f"LoRA target must be one of {', '.join(LORA_TARGETS_ALL)}, got {t!r}")
    if model.mlp_kind == "plain" and "gate" in targets:
        raise InvalidValueError(f"LoRA target 'gate' does not exist in {model.name} (plain GELU MLP)")

    def mlp(ff: int) -> int:
        shapes = {"gate": (d, ff), "up": (d, ff), "down": (ff, d)}
        return sum(rank * sum(shapes[t]) for t in targets if t in shapes)

    attn = sum(rank * sum(attention[t]) for t in targets if t in attention)
    total = attn * model.num_layers + mlp(model.intermediate_size) * model.num_dense_layers
    if model.moe is not None:
        experts = model.moe.num_experts + model.moe.num_shared_experts
        total += experts * mlp(model.moe.expert_intermediate_size) * model.num_moe_layers
    return total
