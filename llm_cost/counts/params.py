"""Parameters by component: embeddings, attention, norms, MLPs, experts, routers; total and active.

All counts are exact Python ints. Dense counts follow the article (`param_count`); MoE and MLA
shapes the DeepSeek-V3 and Mixtral Hub configs and modeling code; the other families their
Hugging Face modeling code (see `llm_cost.catalog.config`).

Symbols: `d` the hidden size, `h` the attention heads, `q` and `kv` the query and key/value
widths (heads x head_dim), `ff` an MLP's intermediate width.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.catalog import as_model
from llm_cost.counts.recurrent import recurrent_layer_params
from llm_cost.specs import ModelSpec


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
        tied to the embedding; vocab more with a bias: GPT-J, Phi-2) and final norm gains, in
        parameters (integers >= 0).
    attention_per_layer, norms_per_layer, dense_mlp_per_layer
        One layer's attention projections (with their biases and MLA's inner norms), its norm
        gains (and biases: 2 d for a pre-norm layer, 4 d for Gemma's four) and a dense MLP.
    qk_norms_per_layer, sinks_per_layer
        One layer's q_norm / k_norm gains (Qwen3, Gemma 3: 2 head_dim; OLMo 2: q_dim + kv_dim)
        and attention sinks (gpt-oss: one per head), in parameters.
    expert_params, expert_bias_params, shared_experts_per_layer, router_per_layer
        One routed expert of one MoE layer (biases included), of which biases (gpt-oss:
        2 ff + d), a MoE layer's shared experts (of their own width and with their d-wide gate
        where the model has them: Qwen2-MoE) and its router (with its bias, one per expert).
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
    # A hybrid's recurrent layers (linear attention, Mamba): their mixer replaces the attention block
    recurrent_per_layer: int = 0  # one recurrent mixer (`counts.recurrent.recurrent_layer_params`)
    num_recurrent_layers: int = 0
    # Single-sublayer blocks (Nemotron-H): mixer blocks without an MLP, MLP blocks without a mixer
    blocks_without_mlp: int = 0
    blocks_without_mixer: int = 0
    parallel_mixers: bool = False  # the recurrent mixer beside attention in every layer (Falcon-H1)

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
    def mixer_correction(self) -> int:
        """What a hybrid's layers change against attention + MLP in every layer: the recurrent
        mixers in place of the attention block, num_recurrent_layers x (recurrent_per_layer -
        attention_block_per_layer), less the MLP of each mixer-only block and the attention of each
        MLP-only block (single-sublayer blocks, Nemotron-H); with parallel_mixers (Falcon-H1) the
        mixers beside the attention, num_recurrent_layers x recurrent_per_layer; 0 otherwise."""
        single = (self.blocks_without_mlp * self.dense_mlp_per_layer
                  + self.blocks_without_mixer * self.attention_block_per_layer)
        if not self.num_recurrent_layers:
            return -single
        if self.parallel_mixers:  # beside the attention, not in its place
            return self.num_recurrent_layers * self.recurrent_per_layer
        return self.num_recurrent_layers * (self.recurrent_per_layer - self.attention_block_per_layer) - single

    @property
    def total(self) -> int:
        """Every parameter: all layers, the embedding tables, the LM head and the final norm."""
        return (self.num_dense_layers * self.dense_layer + self.num_moe_layers * self.moe_layer
                + self.mixer_correction
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

    Dense per layer (the article, `param_count`), `d` the hidden size, q and kv the query and K/V
    widths, ff the MLP's: attention d*q + 2*d*kv + q*d, SwiGLU 3*d*ff
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


    model = as_model(model)
    d = model.hidden_size
    norm_width = 2 if model.norm_kind == "layer" else 1  # LayerNorm: gain and bias
    moe = model.moe
    mlp_matrices = model.mlp_matrices
    dense_mlp = mlp_matrices * d * model.intermediate_size
    if model.mlp_bias:
        dense_mlp += (mlp_matrices - 1) * model.intermediate_size + d
    ff = moe.expert_intermediate_size if moe else 0
    expert_bias = _expert_bias(moe, d, ff)
    expert = 3 * d * ff + expert_bias
    lm_head = 0 if model.tie_word_embeddings else model.vocab_size * d
    if model.lm_head_bias:  # GPT-J, Phi-2: one per vocabulary entry (the spec keeps it untied)
        lm_head += model.vocab_size
    return ParamCounts(
        embedding=model.vocab_size * d,
        position_embedding=model.learned_positions * d,
        lm_head=lm_head,
        final_norm=norm_width * d,
        attention_per_layer=_attention_params(model),
        norms_per_layer=model.layer_norms * norm_width * d,
        dense_mlp_per_layer=dense_mlp,
        expert_params=expert,
        shared_experts_per_layer=_shared_experts_params(model),
        router_per_layer=(moe.num_experts * d + (moe.num_experts if moe.router_bias else 0)) if moe else 0,
        num_layers=model.num_layers,
        num_moe_layers=model.num_moe_layers,
        num_experts=moe.num_experts if moe else 0,
        experts_per_token=moe.experts_per_token if moe else 0,
        qk_norms_per_layer=_qk_norm_params(model),
        sinks_per_layer=model.num_heads if model.attention_sinks else 0,
        expert_bias_params=expert_bias,
        recurrent_per_layer=(recurrent_layer_params(model.recurrent, d) if model.recurrent else 0),
        num_recurrent_layers=model.num_recurrent_layers,
        blocks_without_mlp=model.num_layers - model.num_mlp_blocks if model.single_sublayer_blocks else 0,
        blocks_without_mixer=model.num_mlp_blocks, parallel_mixers=model.parallel_mixers,
    )


def _expert_bias(moe, d: int, ff: int) -> int:
    """Biases of one expert of width ff: gate_up (2 ff) and down (`d`, the hidden size) when the experts have
    them (gpt-oss)."""
    return 2 * ff + d if moe is not None and moe.expert_bias else 0


def _shared_experts_params(model: ModelSpec) -> int:
    """A MoE layer's shared experts: each a gated MLP like a routed one, of `shared_expert_width`
    (Qwen2-MoE: its own shared_expert_intermediate_size), plus the `d`-wide shared_expert_gate (`d` the
    hidden size)."""
    moe, d, ff = model.moe, model.hidden_size, model.shared_expert_width
    if moe is None or not moe.num_shared_experts:
        return 0
    expert = 3 * d * ff + _expert_bias(moe, d, ff)
    return moe.num_shared_experts * expert + (d if model.shared_expert_gate else 0)


def _qk_norm_params(model: ModelSpec) -> int:
    """q_norm + k_norm gains of one layer: 2 head_dim (shared by the heads) or q_dim + kv_dim."""
    if model.qk_norm == "head":
        return 2 * model.head_dim
    if model.qk_norm == "full":
        return model.q_dim + model.kv_dim
    return 0  # none, or weightless (Llama 4's L2 norm)


def _attention_params(model: ModelSpec) -> int:
    """Attention parameters of one layer: MHA/GQA projections and biases, or MLA's; `d` the hidden size,
    `h` the heads, `q` and kv the query and K/V widths."""
    d, h = model.hidden_size, model.num_heads
    mla = model.mla
    if mla is None:
        q, kv = model.q_dim, model.kv_dim
        params = d * q + 2 * d * kv + q * d
        if model.attention_output_gate:  # q_proj also outputs a gate of q_dim (Qwen3-Next)
            params += d * q
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
    output = h * mla.v_head_dim * d
    return q_params + kv_a + kv_b + output
