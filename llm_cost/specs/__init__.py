"""Specs: frozen dataclasses for a model, an accelerator, an efficiency profile, a weight format.

Every quantity field carries its unit in its name; `__post_init__` rejects bad values naming
the field. Derived values are properties. Nothing here computes costs.
"""

from llm_cost.specs.hardware import Accelerator
from llm_cost.specs.model import (ATTENTION_KINDS, MLP_KINDS, NORM_KINDS, QK_NORM_KINDS, MLASpec, MoESpec,
                                  ModelSpec, QuantizationConfig)
from llm_cost.specs.profiles import PRESETS, Profile, draft_profile_for, preset
from llm_cost.specs.weights import (BF16, CHECKPOINT, FP8, INT4_G128, INT8_G128, WEIGHT_FORMATS, WeightFormat,
                                    weight_format)

__all__ = ["Accelerator", "ATTENTION_KINDS", "MLP_KINDS", "NORM_KINDS", "QK_NORM_KINDS", "MLASpec", "MoESpec",
           "ModelSpec", "QuantizationConfig", "PRESETS", "Profile",
           "draft_profile_for", "preset", "BF16", "CHECKPOINT", "FP8", "INT4_G128", "INT8_G128", "WEIGHT_FORMATS",
           "WeightFormat", "weight_format"]
