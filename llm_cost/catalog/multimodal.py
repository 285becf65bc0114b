"""Multimodal wrappers: the text model of `text_config` (read by its own family) and the vision
tower + projector of `vision_config`, as transformers' modeling code builds them:

- gemma3 (Gemma3ForConditionalGeneration; MedGemma): a SigLIP tower (`siglip_vision_model`;
  SiglipVisionModel without its pooling head when `vision_use_head` is false) and
  Gemma3MultiModalProjector (mm_soft_emb_norm, mm_input_projection_weight); one image is
  `mm_tokens_per_image` soft tokens.
- mistral3 (Mistral3ForConditionalGeneration; Ministral 3, Mistral Small 3.1): a Pixtral tower
  (`pixtral`) and Mistral3MultiModalProjector (norm, patch_merger over spatial_merge_size^2
  patches, linear_1, linear_2, biased when `multimodal_projector_bias`).
- llama4 (Llama4ForConditionalGeneration): Llama4VisionModel (`llama4_vision_model`: class token,
  learned positions, pixel-shuffle adapter of projector_input_dim / projector_output_dim) and
  Llama4MultiModalProjector (vision_output_dim -> text hidden, no bias).

The wrapper's `vision_config` is required where the checkpoint ships a tower; a config that omits
it (our trimmed Llama-4-Scout copy) counts the text model only and says so (`vision` None).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llm_cost.catalog.decoder import decoder, dense_only
from llm_cost.catalog.fields import Fields

if TYPE_CHECKING:  # annotations only
    from llm_cost.specs.model_towers import VisionSpec

# vision_config.model_type -> the VisionSpec kind that counts it
TOWERS = {"siglip_vision_model": "siglip", "pixtral": "pixtral", "llama4_vision_model": "llama4"}


def vision_spec(fields: Fields, *, kind: str, **extra) -> VisionSpec:
    """The VisionSpec of a wrapper's `vision_config` (`fields`), whose model_type must be `kind`'s tower."""
    named = fields.str("model_type", "")
    if named and TOWERS.get(named) != kind:
        raise fields.error(f"key {fields.key('model_type')} {named!r} is not the {kind} tower this wrapper builds")
    if kind == "siglip" and fields.bool("vision_use_head", True):
        raise fields.error(f"key {fields.key('vision_use_head')} true (SigLIP's attention-pooling head) is not counted")
    from llm_cost.specs.model_towers import VisionSpec  # built here: not at startup
    return VisionSpec(kind=kind, hidden_size=fields.int("hidden_size"), num_layers=fields.int("num_hidden_layers"),
                      intermediate_size=fields.int("intermediate_size"), num_heads=fields.int("num_attention_heads"),
                      patch_size=fields.int("patch_size"), image_size=fields.int("image_size"),
                      num_channels=fields.int("num_channels", 3), **extra)


def _mistral3(fields: Fields) -> dict:
    text_fields = fields.sub("text_config")
    dense_only(text_fields, "mistral3")
    vision = vision_spec(fields.sub("vision_config"), kind="pixtral", merge_size=fields.int("spatial_merge_size", 2),
                         projector_bias=fields.bool("multimodal_projector_bias", True))
    if fields.get("vision_feature_layer", -1) != -1:
        raise fields.error(f"key {fields.key('vision_feature_layer')} other than -1 (several layers into linear_1) "
                           f"is not counted")
    return decoder(text_fields) | {"vision": vision}


def llama4_vision(fields: Fields) -> dict:
    """{"vision": VisionSpec} from a Llama 4 wrapper's vision_config; {} when the config omits it."""
    if not fields.has("vision_config"):
        return {}
    vision = fields.sub("vision_config")
    if vision.int("vision_output_dim") != vision.int("projector_output_dim"):
        raise vision.error(f"key {vision.key('vision_output_dim')} must equal {vision.key('projector_output_dim')} "
                           f"(the adapter's output is the projector's input)")
    return {"vision": vision_spec(vision, kind="llama4",
                                  projector_bias=vision.bool("multi_modal_projector_bias", False),
                                  adapter_input_dim=vision.int("projector_input_dim"),
                                  adapter_output_dim=vision.int("projector_output_dim"))}


def qwen_vision(fields: Fields) -> dict:
    """{"vision": VisionSpec} from a Qwen3.5 wrapper's vision_config (Qwen3-VL's tower: a Conv3d
    patch embedding over temporal_patch_size frames, num_position_embeddings learned positions,
    SigLIP-like blocks, a patch merger of spatial_merge_size^2 patches into out_hidden_size)."""
    vision = fields.sub("vision_config")
    if vision.has("deepstack_visual_indexes") and vision.int_list("deepstack_visual_indexes"):
        raise vision.error(f"key {vision.key('deepstack_visual_indexes')} (extra mergers) is not counted")
    side = vision.int("patch_size")
    positions = vision.int("num_position_embeddings")
    from llm_cost.specs.model_towers import VisionSpec  # built here: not at startup
    return {"vision": VisionSpec(kind="qwen_vl", hidden_size=vision.int("hidden_size"), num_layers=vision.int("depth"),
                                 intermediate_size=vision.int("intermediate_size"), num_heads=vision.int("num_heads"),
                                 patch_size=side, image_size=side * round(positions ** 0.5),
                                 num_channels=vision.int("in_channels", 3),
                                 merge_size=vision.int("spatial_merge_size", 2),
                                 adapter_output_dim=vision.int("out_hidden_size"),
                                 temporal_patch_size=vision.int("temporal_patch_size", 2),
                                 position_embeddings=positions)}


MULTIMODAL_FAMILIES = {"mistral3": _mistral3}  # gemma3's wrapper is beside its text model in families.py
MULTIMODAL_ARCHITECTURES = {"Gemma3ForConditionalGeneration": "gemma3",
                            "Mistral3ForConditionalGeneration": "mistral3"}
