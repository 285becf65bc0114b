"""The parts of a model spec: mixture-of-experts layers, latent attention, a checkpoint's quantization."""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.errors import InvalidValueError, check_number


def _positive_int(owner: str, name: str, value) -> None:
    check_number(f"{owner}.{name}", value, low=1, integer=True)


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
        for name in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            _positive_int("mla", name, getattr(self, name))
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


# The recurrent mixers counted (`llm_cost.counts.recurrent`): Gated DeltaNet (Qwen3-Next, Qwen3.5),
# lightning attention (MiniMax-M1), Mamba-2 (Bamba, Granite 4.0-H, Nemotron-H), Mamba-1 (Jamba).
RECURRENT_KINDS = ("gated_deltanet", "lightning", "mamba2", "mamba1")


@dataclass(frozen=True)
class RecurrentSpec:
    """A layer mixer that keeps a fixed-size state per sequence instead of a K/V cache.

    The state of one layer and one sequence, in elements, is its recurrent state plus the short
    convolution's last kernel - 1 inputs:

        recurrent = num_heads x head_dim x state_dim
        conv      = conv_dim x (conv_kernel - 1)

    - gated_deltanet: num_heads = value heads, head_dim = value head dim, state_dim = key head dim,
      num_groups = key heads; conv_dim = 2 num_groups state_dim + num_heads head_dim.
    - lightning: num_heads heads of head_dim, state_dim = head_dim (a d x d matrix per head), no conv.
    - mamba2: num_heads SSM heads of head_dim, state_dim = d_state, num_groups = n_groups;
      conv_dim = num_heads head_dim + 2 num_groups state_dim.
    - mamba1: num_heads 1, head_dim = d_inner, state_dim = d_state; conv_dim = d_inner; dt_rank.

    Parameters
    ----------
    kind : str
        One of RECURRENT_KINDS.
    num_heads, head_dim, state_dim : int
        As above, each >= 1.
    num_groups : int, optional
        Key heads (Gated DeltaNet) or B/C groups (Mamba-2), >= 0 (default 0).
    conv_kernel : int, optional
        The short causal convolution's width, >= 0 (0: none, lightning).
    conv_bias, proj_bias : bool, optional
        Biases on the convolution and on the in/out projections (default False).
    dt_rank : int, optional
        Mamba-1's time-step rank, >= 0 (default 0).

    Raises
    ------
    InvalidValueError
        Naming the field, on any value out of range.

    Examples
    --------
    One Gated DeltaNet layer of Qwen3-Next: 32 value heads x 128 x 128 key dim, a kernel-4 conv
    over 2 x 16 x 128 + 32 x 128 = 8192 channels:

    >>> r = RecurrentSpec("gated_deltanet", 32, 128, 128, num_groups=16, conv_kernel=4)
    >>> r.recurrent_elements, r.conv_dim, r.conv_elements
    (524288, 8192, 24576)
    """

    kind: str
    num_heads: int
    head_dim: int
    state_dim: int
    num_groups: int = 0
    conv_kernel: int = 0
    conv_bias: bool = False
    proj_bias: bool = False
    dt_rank: int = 0

    def __post_init__(self) -> None:
        if self.kind not in RECURRENT_KINDS:
            raise InvalidValueError(f"recurrent.kind must be one of {', '.join(RECURRENT_KINDS)}, got {self.kind!r}")
        for name in ("num_heads", "head_dim", "state_dim"):
            _positive_int("recurrent", name, getattr(self, name))
        for name in ("num_groups", "conv_kernel", "dt_rank"):
            check_number(f"recurrent.{name}", getattr(self, name), low=0, integer=True)

    @property
    def inner_dim(self) -> int:
        """Width of the values / the SSM's inner stream: num_heads x head_dim."""
        return self.num_heads * self.head_dim

    @property
    def conv_dim(self) -> int:
        """Channels of the short convolution (0 without one)."""
        if not self.conv_kernel:
            return 0
        if self.kind == "gated_deltanet":
            return 2 * self.num_groups * self.state_dim + self.inner_dim
        if self.kind == "mamba2":
            return self.inner_dim + 2 * self.num_groups * self.state_dim
        return self.inner_dim  # mamba1

    @property
    def recurrent_elements(self) -> int:
        """The recurrent state of one layer and sequence: num_heads x head_dim x state_dim."""
        return self.num_heads * self.head_dim * self.state_dim

    @property
    def conv_elements(self) -> int:
        """The convolution's state: conv_dim x (conv_kernel - 1) (0 without one)."""
        return self.conv_dim * max(self.conv_kernel - 1, 0)

    @property
    def state_elements(self) -> int:
        """All the state one layer keeps per sequence: recurrent + conv (elements)."""
        return self.recurrent_elements + self.conv_elements


VISION_KINDS = ("siglip", "pixtral", "llama4", "qwen_vl")  # the vision towers counted (`counts.vision`)


@dataclass(frozen=True)
class VisionSpec:
    """A multimodal checkpoint's vision tower and projector, from its `vision_config`.

    `kind` names the tower's layout (`llm_cost.counts.vision` counts each): "siglip" (Gemma 3:
    learned positions, biased LayerNorm encoder, GELU MLP), "pixtral" (Mistral 3: RMSNorm encoder
    with a gated MLP, 2-D RoPE, a patch merger), "llama4" (Llama 4: a class token, learned
    positions, a pixel-shuffle adapter). The projector maps the tower's output to the text model's
    hidden_size.

        patches per image side = image_size / patch_size

    Parameters
    ----------
    kind : str
        One of VISION_KINDS.
    hidden_size, num_layers, intermediate_size, num_heads, patch_size, image_size : int
        The tower's width, encoder layers, MLP width, heads, patch side and image side (pixels),
        each >= 1.
    num_channels : int, optional
        Image channels, >= 1 (default 3).
    merge_size : int, optional
        Patches merged per side before the projector (Pixtral's spatial_merge_size), >= 1 (default 1).
    projector_bias : bool, optional
        Biases on the projector's linears (default False).
    adapter_input_dim, adapter_output_dim : int, optional
        Llama 4's pixel-shuffle MLP (projector_input_dim, projector_output_dim = vision_output_dim),
        >= 0 (0 for the other kinds).
    tokens_per_image : int, optional
        Soft tokens one image becomes in the text model (Gemma 3's mm_tokens_per_image), >= 0;
        0: from the image size (`counts.vision.image_tokens`).
    temporal_patch_size, position_embeddings : int, optional
        Qwen-VL's frames per patch (>= 1, default 1) and learned positions (>= 0; 0: the
        full-size image's patches).

    Raises
    ------
    InvalidValueError
        Naming the field, on any value out of range.

    Examples
    --------
    >>> VisionSpec("siglip", 1152, 27, 4304, 16, 14, 896).patches_per_side
    64
    >>> VisionSpec("clip", 1152, 27, 4304, 16, 14, 896)
    Traceback (most recent call last):
    ...
    llm_cost.errors.InvalidValueError: vision.kind must be one of siglip, pixtral, llama4, qwen_vl, got 'clip'
    """

    kind: str
    hidden_size: int
    num_layers: int
    intermediate_size: int
    num_heads: int
    patch_size: int
    image_size: int
    num_channels: int = 3
    merge_size: int = 1
    projector_bias: bool = False
    adapter_input_dim: int = 0
    adapter_output_dim: int = 0
    tokens_per_image: int = 0
    temporal_patch_size: int = 1  # frames per patch (Qwen-VL's Conv3d: 2)
    position_embeddings: int = 0  # learned positions; 0: patches_per_side^2 (where the tower has them)

    def __post_init__(self) -> None:
        if self.kind not in VISION_KINDS:
            raise InvalidValueError(f"vision.kind must be one of {', '.join(VISION_KINDS)}, got {self.kind!r}")
        for name in ("hidden_size", "num_layers", "intermediate_size", "num_heads", "patch_size", "image_size",
                     "num_channels", "merge_size"):
            _positive_int("vision", name, getattr(self, name))
        _positive_int("vision", "temporal_patch_size", self.temporal_patch_size)
        for name in ("adapter_input_dim", "adapter_output_dim", "tokens_per_image", "position_embeddings"):
            check_number(f"vision.{name}", getattr(self, name), low=0, integer=True)

    @property
    def patches_per_side(self) -> int:
        """Patches along one side of a full-size image: image_size // patch_size."""
        return self.image_size // self.patch_size


def _layer_indices(field: str, indices, *, low: int = 0, high: int | None = None) -> None:
    """Layer indices: a tuple of distinct whole numbers in [low, high), ascending."""
    if not isinstance(indices, tuple):
        raise InvalidValueError(f"{field} must be a tuple of layer indices")
    for i in indices:
        check_number(field, i, low=low, high=None if high is None else high - 1, integer=True)
    if list(indices) != sorted(set(indices)):
        raise InvalidValueError(f"{field} must be distinct and ascending, got {indices}")
