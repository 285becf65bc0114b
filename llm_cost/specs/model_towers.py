"""The parts of a hybrid or multimodal model spec: the recurrent mixer of a hybrid's linear-attention
or Mamba layers (RecurrentSpec) and a multimodal checkpoint's vision tower (VisionSpec)."""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.errors import InvalidValueError, check_number

from llm_cost.specs.validate import check_fields, positive_int

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
    gated_norm : bool, optional
        Mamba-2's gated RMSNorm over the inner width before out_proj (default True; Falcon-H1
        without `mamba_rms_norm` has none).

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
    gated_norm: bool = True

    def __post_init__(self) -> None:
        if self.kind not in RECURRENT_KINDS:
            raise InvalidValueError(f"recurrent.kind must be one of {', '.join(RECURRENT_KINDS)}, got {self.kind!r}")
        for name in ("num_heads", "head_dim", "state_dim"):
            positive_int("recurrent", name, getattr(self, name))
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
        check_fields(self, "vision.")
        if self.kind not in VISION_KINDS:
            raise InvalidValueError(f"vision.kind must be one of {', '.join(VISION_KINDS)}, got {self.kind!r}")
        for name in ("hidden_size", "num_layers", "intermediate_size", "num_heads", "patch_size", "image_size",
                     "num_channels", "merge_size"):
            positive_int("vision", name, getattr(self, name))
        positive_int("vision", "temporal_patch_size", self.temporal_patch_size)
        for name in ("adapter_input_dim", "adapter_output_dim", "tokens_per_image", "position_embeddings"):
            check_number(f"vision.{name}", getattr(self, name), low=0, integer=True)

    @property
    def patches_per_side(self) -> int:
        """Patches along one side of a full-size image: image_size // patch_size."""
        return self.image_size // self.patch_size
