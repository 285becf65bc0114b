"""The parts of a model spec: mixture-of-experts layers, latent attention, a checkpoint's quantization."""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.errors import InvalidValueError, check_number
from llm_cost.specs.validate import check_fields, layer_indices, positive_int


@dataclass(frozen=True)
class MoESpec:
    """Mixture-of-experts layers (Mixtral, DeepSeek-V3, Qwen3-MoE, gpt-oss, Llama 4).

    Layers `first_dense_layers` .. end are MoE layers except those in `dense_layers`; the dense
    ones keep an MLP of the model's `intermediate_size` (DeepSeek-V3's `first_k_dense_replace = 3`,
    Qwen3-MoE's `mlp_only_layers`). An expert is a gated MLP of `expert_intermediate_size`; the
    shared ones (DeepSeek, Llama 4) run for every token beside the top-k routed ones.

        MoE layers = num_layers - first_dense_layers - len(dense_layers)
        experts a token runs per MoE layer = experts_per_token + num_shared_experts

    Parameters
    ----------
    num_experts : int
        Routed experts per MoE layer, >= 1.
    experts_per_token : int
        Top-k routed experts per token, in [1, num_experts].
    expert_intermediate_size : int
        Hidden width of one expert's gated MLP (elements), >= 1.
    num_shared_experts : int, optional
        Experts every token uses, each of `expert_intermediate_size`, >= 0 (default 0).
    first_dense_layers : int, optional
        Leading dense layers, in [0, num_layers] (default 0).
    router_bias : bool, optional
        One bias per expert on the router (default False).
    dense_layers : tuple of int, optional
        Further dense layers, 0-based, distinct, ascending, >= first_dense_layers (default ()).
    expert_bias : bool, optional
        Biases on each expert's projections, 2 ff + d (default False).

    Raises
    ------
    InvalidValueError
        Naming the field, on any value out of range.

    Examples
    --------
    Mixtral 8x7B routes each token to 2 of 8 experts in every layer:

    >>> from llm_cost.catalog import load_model
    >>> moe = load_model("mixtral-8x7b").moe
    >>> moe.num_experts, moe.experts_per_token, moe.expert_intermediate_size
    (8, 2, 14336)
    >>> MoESpec(8, 9, 14336)
    Traceback (most recent call last):
    ...
    llm_cost.errors.InvalidValueError: moe.experts_per_token must be in [1, 8] (num_experts), got 9
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
        check_fields(self, "moe.")
        positive_int("moe", "num_experts", self.num_experts)
        positive_int("moe", "experts_per_token", self.experts_per_token)
        positive_int("moe", "expert_intermediate_size", self.expert_intermediate_size)
        check_number("moe.num_shared_experts", self.num_shared_experts, low=0, integer=True)
        check_number("moe.first_dense_layers", self.first_dense_layers, low=0, integer=True)
        layer_indices("moe.dense_layers", self.dense_layers, low=self.first_dense_layers)
        if self.experts_per_token > self.num_experts:
            raise InvalidValueError(
                f"moe.experts_per_token must be in [1, {self.num_experts}] (num_experts), "
                f"got {self.experts_per_token}")


@dataclass(frozen=True)
class MLASpec:
    """Multi-head latent attention (DeepSeek-V2/V3): low-rank Q and a compressed KV latent.

    The KV cache holds, per token and layer, the latent (`kv_lora_rank`) plus the shared
    decoupled RoPE key (`qk_rope_head_dim`).

        KV elements per token and layer = kv_lora_rank + qk_rope_head_dim
        query/key head width            = qk_nope_head_dim + qk_rope_head_dim

    Parameters
    ----------
    kv_lora_rank : int
        Width of the compressed KV latent (elements), >= 1.
    qk_nope_head_dim, qk_rope_head_dim : int
        Per-head query/key widths without and with rotary positions (elements), >= 1.
    v_head_dim : int
        Per-head value width (elements), >= 1.
    q_lora_rank : int, optional
        Rank of the low-rank query projection, >= 0; 0 is a full-rank q_proj (DeepSeek-V2-Lite).

    Raises
    ------
    InvalidValueError
        Naming the field, on any value out of range.

    Examples
    --------
    DeepSeek-V3 caches 512 + 64 = 576 elements per token and layer:

    >>> from llm_cost.catalog import load_model
    >>> mla = load_model("deepseek-v3").mla
    >>> mla.kv_lora_rank + mla.qk_rope_head_dim, mla.qk_head_dim
    (576, 192)
    >>> MLASpec(512, 128, 0, 128)
    Traceback (most recent call last):
    ...
    llm_cost.errors.InvalidValueError: mla.qk_rope_head_dim must be in [1, inf), got 0
    """

    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    q_lora_rank: int = 0  # 0: a full-rank q_proj (DeepSeek-V2-Lite)

    def __post_init__(self) -> None:
        check_fields(self, "mla.")
        for name in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            positive_int("mla", name, getattr(self, name))
        check_number("mla.q_lora_rank", self.q_lora_rank, low=0, integer=True)

    @property
    def qk_head_dim(self) -> int:
        """Per-head query/key width (elements): qk_nope_head_dim + qk_rope_head_dim (DeepSeek-V3: 192)."""
        return self.qk_nope_head_dim + self.qk_rope_head_dim


@dataclass(frozen=True)
class QuantizationConfig:
    """A checkpoint's `quantization_config`, as read (FP8 blocks, MXFP4 experts, ...).

    Recorded only: no count or time uses it yet. `settings` holds every key but `quant_method`,
    sorted, with lists as tuples and objects as tuples of (key, value) pairs (hashable, frozen).
    (No formula: the widths it implies are `llm_cost.counts.checkpoint`'s.)

    Parameters
    ----------
    method : str
        The config's `quant_method` ("fp8", "mxfp4", ...), non-empty.
    settings : tuple of (str, object), optional
        Every other key with its value, sorted by key (default ()).

    Raises
    ------
    InvalidValueError
        When `method` is not a non-empty string.

    Examples
    --------
    DeepSeek-V3 ships FP8 weights in 128 x 128 blocks:

    >>> from llm_cost.catalog import load_model
    >>> q = load_model("deepseek-v3").quantization
    >>> q.method, q.get("weight_block_size")
    ('fp8', (128, 128))
    >>> QuantizationConfig("")
    Traceback (most recent call last):
    ...
    llm_cost.errors.InvalidValueError: quantization.method must be a non-empty string
    """

    method: str  # quant_method: "fp8", "mxfp4", ...
    settings: tuple[tuple[str, object], ...] = ()

    def __post_init__(self) -> None:
        check_fields(self, "quantization.")
        if not isinstance(self.method, str) or not self.method:
            raise InvalidValueError("quantization.method must be a non-empty string")

    def get(self, key: str, default=None):
        """The setting `key` as read (`weight_block_size` -> (128, 128)), or `default`.

        Parameters
        ----------
        key : str
            A `quantization_config` key other than `quant_method`.
        default : object, optional
            Returned when the key is absent (default None).

        Returns
        -------
        object
            The value, lists as tuples and objects as tuples of (key, value) pairs.

        Examples
        --------
        >>> QuantizationConfig("fp8", (("weight_block_size", (128, 128)),)).get("weight_block_size")
        (128, 128)
        >>> QuantizationConfig("fp8").get("fmt", "e4m3")
        'e4m3'
        """
        return dict(self.settings).get(key, default)
