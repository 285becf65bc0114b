"""The model spec: a decoder-only transformer in the Hugging Face config's terms.

Frozen dataclasses; every `__post_init__` rejects a bad value naming the field
(`model.hidden_size must be in [1, inf), got 0`). Nothing here computes costs: that is
`llm_cost.counts` (parameters, bytes, FLOPs) and `llm_cost.roofline` (time).
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.errors import InvalidValueError, check_number

MLP_KINDS = ("gated", "plain")  # gated: SwiGLU gate/up/down; plain: GELU up/down (GPT-2/3)
NORM_KINDS = ("rms", "layer")  # rms: a gain vector; layer: gain and bias


def _positive_int(owner: str, name: str, value) -> None:
    check_number(f"{owner}.{name}", value, low=1, integer=True)


@dataclass(frozen=True)
class MoESpec:
    """Mixture-of-experts layers (Mixtral, DeepSeek-V3).

    Layers `first_dense_layers` .. end are MoE layers; the first ones keep a dense MLP of
    the model's `intermediate_size` (DeepSeek-V3's `first_k_dense_replace = 3`).
    """

    num_experts: int  # routed experts per MoE layer
    experts_per_token: int  # top-k
    expert_intermediate_size: int
    num_shared_experts: int = 0
    first_dense_layers: int = 0
    router_bias: bool = False  # DeepSeek-V3's e_score_correction_bias (one per expert)

    def __post_init__(self) -> None:
        _positive_int("moe", "num_experts", self.num_experts)
        _positive_int("moe", "experts_per_token", self.experts_per_token)
        _positive_int("moe", "expert_intermediate_size", self.expert_intermediate_size)
        check_number("moe.num_shared_experts", self.num_shared_experts, low=0, integer=True)
        check_number("moe.first_dense_layers", self.first_dense_layers, low=0, integer=True)
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

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InvalidValueError("model.name must be a non-empty string")
        for name in ("hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_dim",
                     "intermediate_size", "vocab_size"):
            _positive_int("model", name, getattr(self, name))
        for name in ("learned_positions", "max_position_embeddings", "mtp_layers"):
            check_number(f"model.{name}", getattr(self, name), low=0, integer=True)
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
    def mlp_matrices(self) -> int:
        """Weight matrices of one MLP: 3 for a gated MLP (gate, up, down), 2 for a plain one."""
        return 3 if self.mlp_kind == "gated" else 2

    @property
    def is_moe(self) -> bool:
        return self.moe is not None

    @property
    def num_moe_layers(self) -> int:
        return 0 if self.moe is None else self.num_layers - self.moe.first_dense_layers

    @property
    def num_dense_layers(self) -> int:
        return self.num_layers - self.num_moe_layers
