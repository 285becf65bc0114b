"""Specs: frozen dataclasses for a model, an accelerator, an efficiency profile, a weight format.

Every quantity field carries its unit in its name; `__post_init__` rejects bad values naming
the field. Derived values are properties. Nothing here computes costs. The names load lazily (a
frozen dataclass costs about a millisecond to create): `llm-cost model` builds no Accelerator or
Profile class.
"""

from llm_cost._exports import lazy_exports, names_from

_EXPORTS = {
    **names_from(".hardware", "Accelerator"),
    **names_from(".model", "ATTENTION_KINDS", "MLP_KINDS", "NORM_KINDS", "QK_NORM_KINDS", "ModelSpec"),
    **names_from(".model_parts", "MLASpec", "MoESpec", "QuantizationConfig"),
    **names_from(".model_towers", "VisionSpec"),
    **names_from(".profiles", "PRESETS", "Profile", "draft_profile_for", "preset"),
    **names_from(".weights", "as_weights", "BF16", "CHECKPOINT", "FP8", "INT4_G128", "INT8_G128", "WEIGHT_FORMATS", "WeightFormat",
                 "weight_format"),
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
