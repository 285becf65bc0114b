r"""A multimodal checkpoint's vision tower and projector, counted; the tokens and FLOPs of an image.

One function per tower (`VisionSpec.kind`), following transformers' modeling code. Symbols: D the
tower's width, I its MLP width, L its layers, p the patch side, C the channels, N the patches of a
full-size image, H the text model's hidden size (`d`, `i` and `h` in the code).

- siglip (modeling_siglip.py, Gemma 3): patch Conv2d with bias C p^2 D + D; positions N D; per
  layer two biased LayerNorms 4 D, q/k/v/out with biases 4 (D^2 + D), fc1 / fc2 with biases
  2 D I + I + D; post_layernorm 2 D. Gemma3MultiModalProjector: mm_soft_emb_norm D and
  mm_input_projection_weight D H.
- pixtral (modeling_pixtral.py, Mistral 3): patch Conv2d without bias C p^2 D; ln_pre D; per layer
  two RMSNorms 2 D, q/k/v/o without bias 4 D^2, a gated MLP 3 D I; no positions (2-D RoPE).
  Mistral3MultiModalProjector: norm D, patch_merger s^2 D D, linear_1 D H, linear_2 H H (+ H + H
  with biases).
- llama4 (modeling_llama4.py): the unfold patch linear C p^2 D (no bias); class_embedding D;
  positional_embedding_vlm (N + 1) D; layernorm_pre and layernorm_post 2 D each; per layer two
  LayerNorms 4 D, q/k/v/o with biases 4 (D^2 + D), fc1 / fc2 with biases 2 D I + I + D; the
  pixel-shuffle adapter fc1 I a_in and fc2 a_out^2 (no biases); Llama4MultiModalProjector a_out H.
- qwen_vl (Qwen3-VL's tower, Qwen3.5): Conv3d patch embedding with bias C t p^2 D + D over t frames;
  num_position_embeddings P learned positions P D; SigLIP's blocks (4 D + 4 (D^2 + D) + 2 D I + I + D);
  the patch merger: LayerNorm 2 D, linear_fc1 (s^2 D)^2 + s^2 D, linear_fc2 s^2 D x out + out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import math
from dataclasses import dataclass

from llm_cost.catalog import as_model
from llm_cost.specs import ModelSpec

if TYPE_CHECKING:  # annotations only
    from llm_cost.specs.model_towers import VisionSpec


@dataclass(frozen=True)
class VisionParams:
    """The vision tower's and the projector's parameters (counts)."""

    patch_embedding: int  # the patch convolution (or unfold linear), positions, class token
    encoder: int  # all encoder layers
    norms: int  # pre / post norms outside the layers
    adapter: int  # Llama 4's pixel-shuffle MLP (0 for the others)
    projector: int  # into the text model's hidden size

    @property
    def tower(self) -> int:
        """The tower without the projector."""
        return self.patch_embedding + self.encoder + self.norms + self.adapter

    @property
    def total(self) -> int:
        return self.tower + self.projector


def _siglip(tower: VisionSpec, text_hidden: int) -> VisionParams:
    """The module docstring's siglip counts; `d` the tower's width D, `i` its MLP width I."""
    d, i = tower.hidden_size, tower.intermediate_size
    layer = 4 * d + 4 * (d * d + d) + 2 * d * i + i + d
    patch = tower.num_channels * tower.patch_size ** 2 * d + d + tower.patches_per_side ** 2 * d
    return VisionParams(patch_embedding=patch, encoder=tower.num_layers * layer, norms=2 * d, adapter=0,
                        projector=d + d * text_hidden)


def _pixtral(tower: VisionSpec, text_hidden: int) -> VisionParams:
    """The module docstring's pixtral counts; `d` the tower's width D, `i` its MLP width I, `h` the text
    model's hidden size H."""
    d, i, h = tower.hidden_size, tower.intermediate_size, text_hidden
    layer = 2 * d + 4 * d * d + 3 * d * i
    projector = d + tower.merge_size ** 2 * d * d + d * h + h * h + ((h + h) if tower.projector_bias else 0)
    return VisionParams(patch_embedding=tower.num_channels * tower.patch_size ** 2 * d,
                        encoder=tower.num_layers * layer, norms=d, adapter=0, projector=projector)


def _llama4(tower: VisionSpec, text_hidden: int) -> VisionParams:
    """The module docstring's llama4 counts; `d` the tower's width D, `i` its MLP width I."""
    d, i = tower.hidden_size, tower.intermediate_size
    layer = 4 * d + 4 * (d * d + d) + 2 * d * i + i + d
    patches = tower.patches_per_side ** 2
    projector = tower.adapter_output_dim * text_hidden + (text_hidden if tower.projector_bias else 0)
    return VisionParams(patch_embedding=tower.num_channels * tower.patch_size ** 2 * d + d + (patches + 1) * d,
                        encoder=tower.num_layers * layer, norms=4 * d,
                        adapter=i * tower.adapter_input_dim + tower.adapter_output_dim ** 2, projector=projector)


def _qwen_vl(tower: VisionSpec, text_hidden: int) -> VisionParams:
    """The module docstring's qwen_vl counts; `d` the tower's width D, `i` its MLP width I."""
    d, i = tower.hidden_size, tower.intermediate_size
    layer = 4 * d + 4 * (d * d + d) + 2 * d * i + i + d
    merged = tower.merge_size ** 2 * d
    patch = tower.num_channels * tower.temporal_patch_size * tower.patch_size ** 2 * d + d
    projector = 2 * d + merged * merged + merged + merged * tower.adapter_output_dim + tower.adapter_output_dim
    return VisionParams(patch_embedding=patch + (tower.position_embeddings or tower.patches_per_side ** 2) * d,
                        encoder=tower.num_layers * layer, norms=0, adapter=0, projector=projector)


TOWER_COUNTS = {"siglip": _siglip, "pixtral": _pixtral, "llama4": _llama4, "qwen_vl": _qwen_vl}


def vision_params(model: ModelSpec) -> VisionParams | None:
    r"""Count the vision tower and projector of a multimodal model (None for a text-only one).

    .. math:: N_{vision} = N_{patch} + L\,N_{layer} + N_{norms} + N_{adapter} + N_{projector}

    The per-tower formulas are the module docstring's; `params_vision` in `model` rows is `.total`.

    Parameters
    ----------
    model : ModelSpec
        The model (a spec).

    Returns
    -------
    VisionParams or None
        Exact integer counts by part.

    Examples
    --------
    Llama-4-Maverick's tower and projector: 872,932,416 (tests/test_hub_configs_2025.py derives it).

    >>> from llm_cost.catalog import load_model
    >>> vision_params(load_model("llama-3-8b")) is None
    True
    """
    model = as_model(model)
    if model.vision is None:
        return None
    return TOWER_COUNTS[model.vision.kind](model.vision, model.hidden_size)


@dataclass(frozen=True)
class ImageCost:
    """What one image costs the model: the patches its tower encodes, the soft tokens it adds to
    the prompt, and the tower's FLOPs (2 per multiply-accumulate)."""

    patches: int  # rows the tower runs (all tiles, class tokens included)
    tokens: int  # soft tokens in the text model's prompt
    encoder_flops: float


def image_cost(model: ModelSpec, image_size_px: int | None = None) -> ImageCost:
    r"""Patches, prompt tokens and encoder FLOPs of one square image of `image_size_px` pixels a side.

    - siglip (Gemma 3): the image is resized to image_size: N = (image_size / p)^2 patches, pooled
      to `tokens_per_image` soft tokens (256) whatever its size (pan-and-scan crops not counted).
    - pixtral (Mistral 3): s = ceil(px / p) patches a side (at most image_size / p), merged s/m a
      side; tokens = rows x (cols + 1), an [IMG_BREAK] / [IMG_END] after each row.
    - llama4: tiles of image_size: t = min(ceil(px / image_size), 4)^2 (the processor's 16 tiles at
      most), plus one global tile when t > 1;
      each tile N = (image_size / p)^2 patches + a class token, pixel-shuffled to N / 4 tokens
      (ratio 0.5; the tile markers not counted).
    - qwen_vl (Qwen3.5): s = ceil(px' / (p m)) x m patches a side (one temporal patch: the image is
      its two frames), px' the side resized into the processor's 256 to 4096 px; tokens = s^2 / m^2.

    .. math:: F = 2\,N\,(C p^2 D + N_{layers}) + 4\,L\,N_{tile}^2\,D\,\cdot\mathit{tiles} + 2\,T\,(N_{adapter} + N_{proj})

    with N_layers the encoder's parameters (all its layers' matrices), N_tile the patches one
    attention sees (a tile), T the tokens out.

    Parameters
    ----------
    model : ModelSpec
        A multimodal model (its `vision` set).
    image_size_px : int, optional
        The image's side in pixels, >= 1; None: the tower's own image_size.

    Returns
    -------
    ImageCost

    Raises
    ------
    InvalidValueError
        For a text-only model, or a side out of range.

    Examples
    --------
    Gemma 3 (MedGemma 27B): 4096 patches, 256 tokens, whatever the image's size.

    >>> from llm_cost.catalog import load_model
    >>> c = image_cost(load_model("tests/data/configs/medgemma-27b-it.json"), 1024)
    >>> c.patches, c.tokens
    (4096, 256)
    """
    from llm_cost.errors import InvalidValueError, check_number

    model = as_model(model)
    tower = model.vision
    if tower is None:
        raise InvalidValueError(f"images: {model.name} has no vision tower (its config has no vision_config)",
                                params=("images",))
    px = tower.image_size if image_size_px is None else image_size_px
    check_number("image_size", px, low=1, high=1e5, integer=True)
    side, tiles = _patch_grid(tower, int(px))
    per_tile = side * side + (1 if tower.kind == "llama4" else 0)
    patches = tiles * per_tile
    if tower.kind == "siglip":
        tokens = tower.tokens_per_image or (side // 4) ** 2
    elif tower.kind == "pixtral":
        rows = side // tower.merge_size
        tokens = rows * (rows + 1)
    elif tower.kind == "llama4":
        tokens = tiles * (side * side // 4)
    else:
        tokens = side * side // tower.merge_size ** 2
    params = vision_params(model)
    patch_macs = tower.num_channels * tower.temporal_patch_size * tower.patch_size ** 2 * tower.hidden_size
    flops = (2.0 * patches * (patch_macs + params.encoder)
             + 4.0 * tower.num_layers * tiles * per_tile ** 2 * tower.hidden_size
             + 2.0 * tokens * (params.adapter + params.projector))
    return ImageCost(patches=patches, tokens=tokens, encoder_flops=flops)


# The processors' size limits; no config.json states them, so these are the shipped processors':
# - Llama 4 (transformers, image_processing_llama4_fast.py, Llama4ImageProcessorFast): max_patches 16
#   tiles, the image downsampled onto the largest canvas that fits them (4 x 4 for a square image).
# - Qwen3.5 / Qwen3-VL (Qwen/Qwen3.5-2B-Base preprocessor_config.json, Qwen2VLImageProcessorFast):
#   "size": {"shortest_edge": 65536, "longest_edge": 16777216}, a pixel count the image is resized
#   into (smart_resize): a square image is 256 to 4096 px a side.
LLAMA4_MAX_TILES = 16
QWEN_VL_MIN_PIXELS, QWEN_VL_MAX_PIXELS = 65_536, 16_777_216


def _patch_grid(tower: VisionSpec, px: int) -> tuple[int, int]:
    """(patches a side of one tile, tiles) of a px-wide image for `tower` (`image_cost`), the
    image first resized as its processor does (pixtral: at most image_size; llama4: at most
    LLAMA4_MAX_TILES tiles; qwen_vl: QWEN_VL_MIN_PIXELS to QWEN_VL_MAX_PIXELS pixels)."""
    full = tower.patches_per_side
    if tower.kind == "siglip":
        return full, 1
    if tower.kind == "pixtral":
        return min(-(-px // tower.patch_size), full) // tower.merge_size * tower.merge_size or tower.merge_size, 1
    if tower.kind == "llama4":
        tiles = min(-(-px // tower.image_size), math.isqrt(LLAMA4_MAX_TILES)) ** 2
        return full, tiles + 1 if tiles > 1 else 1
    unit = tower.patch_size * tower.merge_size
    px = min(max(px, math.isqrt(QWEN_VL_MIN_PIXELS)), math.isqrt(QWEN_VL_MAX_PIXELS))
    return -(-px // unit) * tower.merge_size, 1
