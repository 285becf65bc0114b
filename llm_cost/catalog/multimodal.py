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

from llm_cost.catalog.decoder import decoder, dense_only
from llm_cost.catalog.fields import Fields
from llm_cost.specs import VisionSpec

# vision_config.model_type -> the VisionSpec kind that counts it
TOWERS = {"siglip_vision_model": "siglip", "pixtral": "pixtral", "llama4_vision_model": "llama4"}


def vision_spec(f: Fields, *, kind: str, **extra) -> VisionSpec:
    """The VisionSpec of a wrapper's `vision_config` (`f`), whose model_type must be `kind`'s tower."""
    named = f.str("model_type", "")
    if named and TOWERS.get(named) != kind:
        raise f.error(f"key {f.key('model_type')} {named!r} is not the {kind} tower this wrapper builds")
    if kind == "siglip" and f.bool("vision_use_head", True):
        raise f.error(f"key {f.key('vision_use_head')} true (SigLIP's attention-pooling head) is not counted")
    return VisionSpec(kind=kind, hidden_size=f.int("hidden_size"), num_layers=f.int("num_hidden_layers"),
                      intermediate_size=f.int("intermediate_size"), num_heads=f.int("num_attention_heads"),
                      patch_size=f.int("patch_size"), image_size=f.int("image_size"),
                      num_channels=f.int("num_channels", 3), **extra)


def _mistral3(f: Fields) -> dict:
    t = f.sub("text_config")
    dense_only(t, "mistral3")
    vision = vision_spec(f.sub("vision_config"), kind="pixtral", merge_size=f.int("spatial_merge_size", 2),
                         projector_bias=f.bool("multimodal_projector_bias", True))
    if f.get("vision_feature_layer", -1) != -1:
        raise f.error(f"key {f.key('vision_feature_layer')} other than -1 (several layers into linear_1) "
                      f"is not counted")
    return decoder(t) | {"vision": vision}


def llama4_vision(f: Fields) -> dict:
    """{"vision": VisionSpec} from a Llama 4 wrapper's vision_config; {} when the config omits it."""
    if not f.has("vision_config"):
        return {}
    v = f.sub("vision_config")
    if v.int("vision_output_dim") != v.int("projector_output_dim"):
        raise v.error(f"key {v.key('vision_output_dim')} must equal {v.key('projector_output_dim')} "
                      f"(the adapter's output is the projector's input)")
    return {"vision": vision_spec(v, kind="llama4", projector_bias=v.bool("multi_modal_projector_bias", False),
                                  adapter_input_dim=v.int("projector_input_dim"),
                                  adapter_output_dim=v.int("projector_output_dim"))}


def qwen_vision(f: Fields) -> dict:
    """{"vision": VisionSpec} from a Qwen3.5 wrapper's vision_config (Qwen3-VL's tower: a Conv3d
    patch embedding over temporal_patch_size frames, num_position_embeddings learned positions,
    SigLIP-like blocks, a patch merger of spatial_merge_size^2 patches into out_hidden_size)."""
    v = f.sub("vision_config")
    if v.has("deepstack_visual_indexes") and v.int_list("deepstack_visual_indexes"):
        raise v.error(f"key {v.key('deepstack_visual_indexes')} (extra mergers) is not counted")
    side = v.int("patch_size")
    positions = v.int("num_position_embeddings")
    return {"vision": VisionSpec(kind="qwen_vl", hidden_size=v.int("hidden_size"), num_layers=v.int("depth"),
                                 intermediate_size=v.int("intermediate_size"), num_heads=v.int("num_heads"),
                                 patch_size=side, image_size=side * round(positions ** 0.5),
                                 num_channels=v.int("in_channels", 3), merge_size=v.int("spatial_merge_size", 2),
                                 adapter_output_dim=v.int("out_hidden_size"),
                                 temporal_patch_size=v.int("temporal_patch_size", 2), position_embeddings=positions)}


MULTIMODAL_FAMILIES = {"mistral3": _mistral3}  # gemma3's wrapper is beside its text model in families.py
MULTIMODAL_ARCHITECTURES = {"Gemma3ForConditionalGeneration": "gemma3",
                            "Mistral3ForConditionalGeneration": "mistral3"}
