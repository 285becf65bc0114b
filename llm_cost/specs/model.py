"""The model spec: a decoder-only transformer in the Hugging Face config's terms.

Frozen dataclasses; every `__post_init__` rejects a bad value naming the field
(`model.hidden_size must be in [1, inf), got 0`). Nothing here computes costs: that is
`llm_cost.counts` (parameters, bytes, FLOPs) and `llm_cost.roofline` (time).
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.errors import InvalidValueError, check_number

MLP_KINDS = ("gated", "plain")  # gated: SwiGLU/GeGLU gate/up/down; plain: GELU up/down (GPT-2/3)
MLP_PROJECTIONS = {"gated": ("gate", "up", "down"), "plain": ("up", "down")}  # by mlp_kind
NORM_KINDS = ("rms", "layer")  # rms: a gain vector; layer: gain and bias
# q_norm / k_norm on the queries and keys: none; "head": one gain of head_dim shared by the heads
# (Qwen3, Gemma 3); "full": gains over all heads, q_dim and kv_dim (OLMo 2); "weightless": an L2
# norm without parameters (Llama 4's use_qk_norm).
QK_NORM_KINDS = ("none", "head", "full", "weightless")
# What one layer's attention keeps of the past: all of it, the last `sliding_window` tokens, or
# the tokens of the current `attention_chunk_size` chunk (Llama 4).
ATTENTION_KINDS = ("full", "sliding", "chunked")


def _positive_int(owner: str, name: str, value) -> None:
    check_number(f"{owner}.{name}", value, low=1, integer=True)


@dataclass(frozen=True)
class MoESpec:
    """Mixture-of-experts layers (Mixtral, DeepSeek-V3, Qwen3-MoE, gpt-oss, Llama 4).

    Layers `first_dense_layers` .. end are MoE layers except those in `dense_layers`; the dense
    ones keep an MLP of the model's `intermediate_size` (DeepSeek-V3's `first_k_dense_replace = 3`,
    Qwen3-MoE's `mlp_only_layers`). An expert is a gated MLP of `expert_intermediate_size`; the
    shared ones (DeepSeek, Llama 4) run for every token beside the top-k routed ones.
    """

    num_experts: int  # routed experts per MoE layer
    experts_per_token: int  # top-k
    expert_intermediate_size: int
    num_shared_experts: int = 0  # experts every token uses, each of expert_intermediate_size
    first_dense_layers: int = 0
    router_bias: bool = False  # one per expert: gpt-oss's router bias, DeepSeek-V3's e_score_correction_bias
    # Dense layers after the first ones, 0-based (Qwen3-MoE's mlp_only_layers and
    # decoder_sparse_step, Llama 4's interleave_moe_layer_step, DeepSeek's moe_layer_freq).
    dense_layers: tuple[int, ...] = ()
    expert_bias: bool = False  # biases on each expert's projections (gpt-oss): 2 ff + d

    def __post_init__(self) -> None:
        _positive_int("moe", "num_experts", self.num_experts)
        _positive_int("moe", "experts_per_token", self.experts_per_token)
        _positive_int("moe", "expert_intermediate_size", self.expert_intermediate_size)
        check_number("moe.num_shared_experts", self.num_shared_experts, low=0, integer=True)
        check_number("moe.first_dense_layers", self.first_dense_layers, low=0, integer=True)
        _layer_indices("moe.dense_layers", self.dense_layers, low=self.first_dense_layers)
        if self.experts_per_token > self.num_experts:
            raise InvalidValueError(
                f"moe.experts_per_token must be in [1, {self.num_experts}] (num_experts), "
                f"got {self.experts_per_token}")


@dataclass(frozen=True)
class MLASpec:
    """Multi-head latent attention (DeepSeek-V2/V3): low-rank Q and a compressed KV latent.

    The KV cache holds, per token and layer, the latent (`kv_lora_rank`) plus the shared
    decoupled RoPE key (`qk_rope_head_dim`).
    """

    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    q_lora_rank: int = 0  # 0: a full-rank q_proj (DeepSeek-V2-Lite)

    def __post_init__(self) -> None:
        for name in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            _positive_int("mla", name, getattr(self, name))
        check_number("mla.q_lora_rank", self.q_lora_rank, low=0, integer=True)

    @property
    def qk_head_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim


@dataclass(frozen=True)
class QuantizationConfig:
    """A checkpoint's `quantization_config`, as read (FP8 blocks, MXFP4 experts, ...).

    Recorded only: no count or time uses it yet. `settings` holds every key but `quant_method`,
    sorted, with lists as tuples and objects as tuples of (key, value) pairs (hashable, frozen).
    """

    method: str  # quant_method: "fp8", "mxfp4", ...
    settings: tuple[tuple[str, object], ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.method, str) or not self.method:
            raise InvalidValueError("quantization.method must be a non-empty string")

    def get(self, key: str, default=None):
        """The setting `key` as read (`weight_block_size` -> (128, 128)), or `default`."""
        return dict(self.settings).get(key, default)


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer, in the Hugging Face config's terms.

    `head_dim` is explicit (the Hub's default is hidden_size / num_heads, applied by the
    loader). Attention of width `num_heads * head_dim` need not equal `hidden_size`.
    """

    name: str
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    mlp_kind: str = "gated"
    norm_kind: str = "rms"
    tie_word_embeddings: bool = False
    qkv_bias: bool = False  # biases on q, k, v (Qwen2 has them without saying so)
    o_bias: bool = False
    mlp_bias: bool = False
    learned_positions: int = 0  # rows of a learned position table (GPT-2/3), 0 for RoPE
    max_position_embeddings: int = 0  # context limit as configured; 0 when unknown
    moe: MoESpec | None = None
    mla: MLASpec | None = None
    mtp_layers: int = 0  # multi-token-prediction modules (DeepSeek-V3's num_nextn_predict_layers)
    source: str = ""  # where the numbers come from (a URL or a file path)
    layer_norms: int = 2  # norm vectors of hidden_size per layer: 2 (Llama, OLMo 2), 4 (Gemma 2/3)
    qk_norm: str = "none"  # one of QK_NORM_KINDS
    attention_sinks: bool = False  # one learned logit per head and layer (gpt-oss)
    # Per-layer attention, recorded for windowed KV (not used by any count yet): () = every
    # layer "full"; else one of ATTENTION_KINDS per layer.
    layer_types: tuple[str, ...] = ()
    sliding_window: int = 0  # tokens a "sliding" layer attends to; 0 when no layer slides
    attention_chunk_size: int = 0  # tokens per chunk of a "chunked" layer; 0 when none
    nope_layers: tuple[int, ...] = ()  # layers without rotary positions (Llama 4), 0-based
    quantization: QuantizationConfig | None = None  # the checkpoint's format, as read
    checkpoint_dtype: str = ""  # torch_dtype as read ("bfloat16", "float32"); "" when not given
    family: str = ""  # the architecture family the loader read the config as (its model_type)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InvalidValueError("model.name must be a non-empty string")
        for name in ("hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_dim",
                     "intermediate_size", "vocab_size"):
            _positive_int("model", name, getattr(self, name))
        for name in ("learned_positions", "max_position_embeddings", "mtp_layers", "sliding_window",
                     "attention_chunk_size"):
            check_number(f"model.{name}", getattr(self, name), low=0, integer=True)
        check_number("model.layer_norms", self.layer_norms, low=0, integer=True)
        if self.qk_norm not in QK_NORM_KINDS:
            raise InvalidValueError(f"model.qk_norm must be one of {', '.join(QK_NORM_KINDS)}, got {self.qk_norm!r}")
        if self.mlp_kind not in MLP_KINDS:
            raise InvalidValueError(f"model.mlp_kind must be one of {', '.join(MLP_KINDS)}, got {self.mlp_kind!r}")
        if self.norm_kind not in NORM_KINDS:
            raise InvalidValueError(f"model.norm_kind must be one of {', '.join(NORM_KINDS)}, got {self.norm_kind!r}")
        if self.num_heads % self.num_kv_heads:
            raise InvalidValueError(
                f"model.num_kv_heads ({self.num_kv_heads}) must divide num_heads ({self.num_heads})")
        if self.moe is not None and self.moe.first_dense_layers > self.num_layers:
            raise InvalidValueError(
                f"moe.first_dense_layers must be in [0, {self.num_layers}] (num_layers), "
                f"got {self.moe.first_dense_layers}")
        if self.moe is not None:
            _layer_indices("moe.dense_layers", self.moe.dense_layers, high=self.num_layers)
        _layer_indices("model.nope_layers", self.nope_layers, high=self.num_layers)
        self._check_layer_types()

    def _check_layer_types(self) -> None:
        """layer_types: empty or one known kind per layer; a window iff a layer uses it."""
        kinds = self.layer_types
        if not isinstance(kinds, tuple) or any(k not in ATTENTION_KINDS for k in kinds):
            raise InvalidValueError(f"model.layer_types must be a tuple of {', '.join(ATTENTION_KINDS)}")
        if kinds and len(kinds) != self.num_layers:
            raise InvalidValueError(f"model.layer_types must have {self.num_layers} entries (num_layers), "
                                    f"got {len(kinds)}")
        for kind, size, field in (("sliding", self.sliding_window, "sliding_window"),
                                  ("chunked", self.attention_chunk_size, "attention_chunk_size")):
            if (kind in kinds) != (size > 0):
                raise InvalidValueError(f"model.{field} ({size}) must be > 0 exactly when a layer is {kind!r}")

    @property
    def q_dim(self) -> int:
        """Width of the concatenated query heads (elements)."""
        if self.mla is not None:
            return self.num_heads * self.mla.qk_head_dim
        return self.num_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        """Width of the concatenated key (or value) heads of a GQA/MHA layer (elements)."""
        return self.num_kv_heads * self.head_dim

    @property
    def mlp_projections(self) -> tuple[str, ...]:
        """The MLP's weight matrices by name: gate, up, down (gated, SwiGLU) or up, down (plain GELU)."""
        return MLP_PROJECTIONS[self.mlp_kind]

    @property
    def mlp_matrices(self) -> int:
        """Weight matrices of one MLP: 3 for a gated MLP, 2 for a plain one."""
        return len(self.mlp_projections)

    @property
    def is_moe(self) -> bool:
        return self.moe is not None

    @property
    def num_moe_layers(self) -> int:
        if self.moe is None:
            return 0
        return self.num_layers - self.moe.first_dense_layers - len(self.moe.dense_layers)

    @property
    def num_dense_layers(self) -> int:
        return self.num_layers - self.num_moe_layers

    @property
    def attention_layer_types(self) -> tuple[str, ...]:
        """Each layer's attention kind ("full", "sliding", "chunked"), all layers spelled out."""
        return self.layer_types or ("full",) * self.num_layers


def _layer_indices(field: str, indices, *, low: int = 0, high: int | None = None) -> None:
    """Layer indices: a tuple of distinct whole numbers in [low, high), ascending."""
    if not isinstance(indices, tuple):
        raise InvalidValueError(f"{field} must be a tuple of layer indices")
    for i in indices:
        check_number(field, i, low=low, high=None if high is None else high - 1, integer=True)
    if list(indices) != sorted(set(indices)):
        raise InvalidValueError(f"{field} must be distinct and ascending, got {indices}")
