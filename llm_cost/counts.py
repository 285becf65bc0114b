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
    r"""A model's parameters by component (counts, not bytes). Per-layer fields are one layer.

    .. math:: N_{total} = L_{dense} N_{dense\,layer} + L_{moe} N_{moe\,layer}
              + N_{emb} + N_{pos} + N_{head} + N_{final\,norm}

    Attributes
    ----------
    embedding, position_embedding, lm_head, final_norm
        Input token table (vocab x d), learned position table (GPT-2/3; else 0), LM head (0 when
        tied to the embedding) and final norm gains, in parameters (integers >= 0).
    attention_per_layer, norms_per_layer, dense_mlp_per_layer
        One layer's attention projections (with their biases and MLA's inner norms), its norm
        gains (and biases: 2 d for a pre-norm layer, 4 d for Gemma's four) and a dense MLP.
    qk_norms_per_layer, sinks_per_layer
        One layer's q_norm / k_norm gains (Qwen3, Gemma 3: 2 head_dim; OLMo 2: q_dim + kv_dim)
        and attention sinks (gpt-oss: one per head), in parameters.
    expert_params, expert_bias_params, shared_experts_per_layer, router_per_layer
        One routed expert of one MoE layer (biases included), of which biases (gpt-oss:
        2 ff + d), a MoE layer's shared experts and its router (with its bias, one per expert).
    num_layers, num_moe_layers, num_experts, experts_per_token
        Layer counts (num_moe_layers <= num_layers) and the routing: experts per MoE layer and the
        top-k each token is sent to (0 for a dense model).

    Norm gains, biases and sinks stay in `gemm_active`, as they did before they had fields of
    their own: the article's FLOPs are 2 per non-lookup parameter, and these are under 0.1% of
    any model here (Llama-3-8B: 266,240 of 8.03B), so every published FLOP figure is unchanged.

    Examples
    --------
    Llama-3-8B, the Hub's safetensors total (the article, §3.1: 8.03B):

    >>> from llm_cost.catalog import load_model
    >>> p = param_counts(load_model("llama-3-8b"))
    >>> p.total, p.per_layer, p.embedding == p.lm_head == 525_336_576
    (8030261248, 218112000, True)
    """

    embedding: int  # input token table
    position_embedding: int  # learned position table (GPT-2/3), else 0
    lm_head: int  # 0 when tied to the embedding
    final_norm: int
    attention_per_layer: int  # projections, their biases, MLA's inner norms
    norms_per_layer: int
    dense_mlp_per_layer: int  # in dense layers (all layers of a dense model)
    expert_params: int  # one routed expert of one MoE layer, its biases included
    shared_experts_per_layer: int
    router_per_layer: int  # its weight and its bias (one per expert), if any
    num_layers: int
    num_moe_layers: int
    num_experts: int
    experts_per_token: int
    qk_norms_per_layer: int = 0  # q_norm and k_norm gains (Qwen3, Gemma 3, OLMo 2)
    sinks_per_layer: int = 0  # attention sinks, one per head (gpt-oss)
    expert_bias_params: int = 0  # of expert_params, the biases (gpt-oss)

    @property
    def attention_block_per_layer(self) -> int:
        """One layer's attention with everything it owns: projections, q/k norms and sinks."""
        return self.attention_per_layer + self.qk_norms_per_layer + self.sinks_per_layer

    @property
    def num_dense_layers(self) -> int:
        """Layers with a dense MLP: num_layers - num_moe_layers."""
        return self.num_layers - self.num_moe_layers

    @property
    def dense_layer(self) -> int:
        """Parameters of one dense layer (attention block + MLP + norms)."""
        return self.attention_block_per_layer + self.dense_mlp_per_layer + self.norms_per_layer

    @property
    def moe_layer_shared(self) -> int:
        """Parameters of one MoE layer that every token uses (all but the routed experts)."""
        return (self.attention_block_per_layer + self.norms_per_layer + self.shared_experts_per_layer
                + self.router_per_layer)

    @property
    def moe_layer(self) -> int:
        """Parameters of one MoE layer, all routed experts included."""
        return self.moe_layer_shared + self.num_experts * self.expert_params

    @property
    def per_layer(self) -> int:
        """Parameters of a dense layer if the model has one (DeepSeek's first), else of a MoE layer."""
        return self.dense_layer if self.num_dense_layers else self.moe_layer

    @property
    def total(self) -> int:
        """Every parameter: all layers, the embedding tables, the LM head and the final norm."""
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
        """Active parameters a token multiplies (FLOPs = 2 x this): active less the lookups.

        Norm gains, biases, q/k norms and attention sinks stay in it (the class docstring says why).
        """
        return self.active - self.lookup


def param_counts(model: ModelSpec) -> ParamCounts:
    r"""Count every parameter of `model` by component.

    Dense per layer (the article, `param_count`): attention d*q + 2*d*kv + q*d, SwiGLU 3*d*ff
    (GELU: 2*d*ff), 2 RMSNorm gains (LayerNorm: gains and biases); total = layers + embedding +
    LM head + final norm. MoE and MLA shapes follow the DeepSeek-V3 and Mixtral Hub configs and
    modeling code.

    .. math:: N_{layer} = d\,q + 2\,d\,kv + q\,d + 3\,d\,ff + 2\,d

    Parameters
    ----------
    model : ModelSpec
        The model (a spec; load one with `llm_cost.catalog.load_model`).

    Returns
    -------
    ParamCounts
        Exact integer counts by component, with `total`, `active` and `gemm_active`.

    Examples
    --------
    Llama-3-8B (the article, §3.1): per layer 4096*4096*2 + 4096*1024*2 + 3*4096*14336 + 2*4096
    = 218,112,000; x 32 + 2 * 128256 * 4096 + 4096 = 8,030,261,248.

    >>> from llm_cost.catalog import load_model
    >>> p = param_counts(load_model("llama-3-8b"))
    >>> p.per_layer, p.total
    (218112000, 8030261248)

    DeepSeek-V3 (MoE and MLA): 671B in all, 37.6B active per token.

    >>> ds = param_counts(load_model("deepseek-v3"))
    >>> round(ds.total / 1e9, 2), round(ds.active / 1e9, 1)
    (671.03, 37.6)
    """
    d = model.hidden_size
    norm_width = 2 if model.norm_kind == "layer" else 1  # LayerNorm: gain and bias
    moe = model.moe
    mlp_matrices = model.mlp_matrices
    dense_mlp = mlp_matrices * d * model.intermediate_size
    if model.mlp_bias:
        dense_mlp += (mlp_matrices - 1) * model.intermediate_size + d
    ff = moe.expert_intermediate_size if moe else 0
    expert_bias = 2 * ff + d if moe and moe.expert_bias else 0  # gate_up (2 ff) and down (d) biases
    expert = 3 * d * ff + expert_bias
    return ParamCounts(
        embedding=model.vocab_size * d,
        position_embedding=model.learned_positions * d,
        lm_head=0 if model.tie_word_embeddings else model.vocab_size * d,
        final_norm=norm_width * d,
        attention_per_layer=_attention_params(model),
        norms_per_layer=model.layer_norms * norm_width * d,
        dense_mlp_per_layer=dense_mlp,
        expert_params=expert,
        shared_experts_per_layer=moe.num_shared_experts * expert if moe else 0,
        router_per_layer=(moe.num_experts * d + (moe.num_experts if moe.router_bias else 0)) if moe else 0,
        num_layers=model.num_layers,
        num_moe_layers=model.num_moe_layers,
        num_experts=moe.num_experts if moe else 0,
        experts_per_token=moe.experts_per_token if moe else 0,
        qk_norms_per_layer=_qk_norm_params(model),
        sinks_per_layer=model.num_heads if model.attention_sinks else 0,
        expert_bias_params=expert_bias,
    )


def _qk_norm_params(model: ModelSpec) -> int:
    """q_norm + k_norm gains of one layer: 2 head_dim (shared by the heads) or q_dim + kv_dim."""
    if model.qk_norm == "head":
        return 2 * model.head_dim
    if model.qk_norm == "full":
        return model.q_dim + model.kv_dim
    return 0  # none, or weightless (Llama 4's L2 norm)


def _attention_params(model: ModelSpec) -> int:
    """Attention parameters of one layer: MHA/GQA projections and biases, or MLA's."""
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
    r"""FLOPs one query row spends per cached token, all layers: QK^T and AV, 2 FLOPs per MAC.

    MHA/GQA: 4 * heads * head_dim per layer (the article: 4 * hidden * ctx * layers).
    MLA, computed without weight absorption: 2 * heads * (qk_head_dim + v_head_dim).

    .. math:: F_{attn} = 4\,h\,d_{head}\,L \quad\text{(MLA: } 2\,h\,(d_{qk} + d_v)\,L)

    Parameters
    ----------
    model : ModelSpec
        The model (a spec).

    Returns
    -------
    int
        FLOPs per (query row, cached token) pair, summed over the layers.

    Examples
    --------
    Llama-3-8B: 4 x 32 heads x 128 x 32 layers.

    >>> from llm_cost.catalog import load_model
    >>> attention_flops_per_context_token(load_model("llama-3-8b"))
    524288
    """
    if model.mla is None:
        per_layer = 4 * model.num_heads * model.head_dim
    else:
        per_layer = 2 * model.num_heads * (model.mla.qk_head_dim + model.mla.v_head_dim)
    return per_layer * model.num_layers


def flops_per_token(model: ModelSpec, context: float = 0) -> float:
    r"""Forward FLOPs for one token that attends to `context` cached tokens.

    2 * (active params less lookups) + attention term (the article, `forward_flops_per_token`:
    the input embedding is a lookup; a tied table doubles as the LM head and counts).

    .. math:: F = 2\,N_{gemm\,active} + F_{attn}\,\cdot\,\mathit{context}

    Parameters
    ----------
    model : ModelSpec
        The model (a spec).
    context : float, optional
        Cached tokens the token attends to, in [0, inf) (default 0).

    Returns
    -------
    float
        FLOPs (2 per multiply-accumulate).

    Examples
    --------
    The article, §1.2: Llama-3-8B spends about 15.0 GFLOPs per token on its weights.

    >>> from llm_cost.catalog import load_model
    >>> round(flops_per_token(load_model("llama-3-8b")) / 1e9, 1)
    15.0
    """
    check_number("context", context, low=0)
    return 2 * param_counts(model).gemm_active + attention_flops_per_context_token(model) * context


def kv_bytes_per_token(model: ModelSpec, bytes_per_element: float = BF16_BYTES) -> float:
    r"""KV cache bytes one token adds, all layers.

    MHA/GQA: 2 (K and V) * layers * kv_heads * head_dim * bytes (the article).
    MLA: layers * (kv_lora_rank + qk_rope_head_dim) * bytes (DeepSeek-V3: 576 per layer).

    .. math:: b_{KV} = 2\,L\,h_{kv}\,d_{head}\,b \quad\text{(MLA: } L\,(r_{kv} + d_{rope})\,b)

    Parameters
    ----------
    model : ModelSpec
        The model (a spec).
    bytes_per_element : float, optional
        Bytes of one cached element, in (0, inf): 2 for BF16 (default), 1 for FP8, 0.5 for 4 bits.

    Returns
    -------
    float
        Bytes per token of context.

    Examples
    --------
    GPT-3 13B, the lecture §2.3: 2 x 40 x 40 x 128 x 2 = 819,200 bytes ("819.2 KB"); DeepSeek-V3's
    MLA cache: 61 x 576 x 2 = 70,272 bytes.

    >>> from llm_cost.catalog import load_model
    >>> kv_bytes_per_token(load_model("gpt-3-13b"))
    819200
    >>> kv_bytes_per_token(load_model("deepseek-v3"))
    70272
    """
    check_number("kv bytes per element", bytes_per_element, low=0, low_open=True)
    if model.mla is not None:
        width = model.mla.kv_lora_rank + model.mla.qk_rope_head_dim
        return model.num_layers * width * bytes_per_element
    return 2 * model.num_layers * model.num_kv_heads * model.head_dim * bytes_per_element


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
    model's own checkpoint format (`llm_cost.checkpoint.checkpoint_weight_bytes`).

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
    if weights.checkpoint:
        from llm_cost.checkpoint import checkpoint_weight_bytes  # it counts on this module

        return checkpoint_weight_bytes(model)
    p = param_counts(model)
    per = weights.bytes_per_weight
    emb = BF16_BYTES if weights.keep_embeddings_bf16 else per
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
        effective_bits=weights.effective_bits,
    )


LORA_TARGETS_ATTN = ("q", "k", "v", "o")
LORA_TARGETS_ALL = ("q", "k", "v", "o", "gate", "up", "down")


def lora_params(model: ModelSpec, rank: int = 16, targets=LORA_TARGETS_ALL) -> int:
    r"""LoRA adapter parameters: rank * (d_in + d_out) per targeted matrix per layer (the article).

    Targets: q, k, v, o (GQA/MHA attention), gate, up, down (MLP; a plain GELU MLP has up and
    down only). In MoE layers each routed and shared expert gets its own adapter.

    .. math:: N_{LoRA} = \sum_{layers} \sum_{W \in targets} r\,(d_{in}(W) + d_{out}(W))

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
        """Adapter parameters of one MLP of width `ff` in one layer (a dense MLP or one expert)."""
        shapes = {"gate": (d, ff), "up": (d, ff), "down": (ff, d)}
        return sum(rank * sum(shapes[t]) for t in targets if t in shapes)

    attn = sum(rank * sum(attention[t]) for t in targets if t in attention)
    total = attn * model.num_layers + mlp(model.intermediate_size) * model.num_dense_layers
    if model.moe is not None:
        experts = model.moe.num_experts + model.moe.num_shared_experts
        total += experts * mlp(model.moe.expert_intermediate_size) * model.num_moe_layers
    return total
