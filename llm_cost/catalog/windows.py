"""Which layers attend to a window: from `layer_types` when the config has it, else the family's rule.

Sliding-window layers keep at most `sliding_window` tokens of K/V, chunked ones (Llama 4) attend
within `attention_chunk_size`; the rest are full. A window whose layers neither the config nor
the family states is refused.
"""

from __future__ import annotations

from typing import Callable

from llm_cost.catalog.fields import Fields
from llm_cost.errors import short_repr

# The attention kinds of Hugging Face's `layer_types`, as ModelSpec names them.
# "linear_attention" (Qwen3-Next, Qwen3.5) and "mamba" layers keep a state instead: "recurrent",
# which only a hybrid family (`hybrid_families`) gives a mixer; any other family refuses them.
HF_LAYER_TYPES = {"full_attention": "full", "sliding_attention": "sliding", "chunked_attention": "chunked",
                  "linear_attention": "recurrent", "mamba": "recurrent"}



# ---- windows ------------------------------------------------------------------------------

def windows_of(fields: Fields, layers: int, rule: Callable[[Fields, int], dict] | None) -> dict:
    """layer_types / sliding_window / attention_chunk_size: from `layer_types`, else the rule."""
    if fields.has("layer_types"):
        kinds = []
        for index, layer_type in enumerate(fields.str_list("layer_types")):
            if layer_type not in HF_LAYER_TYPES:
                raise fields.error(f"key {fields.key('layer_types')} entry {index} {layer_type!r} is not one of "
                                   f"{', '.join(HF_LAYER_TYPES)}")
            kinds.append(HF_LAYER_TYPES[layer_type])
        if len(kinds) != layers:
            raise fields.error(f"key {fields.key('layer_types')} has {len(kinds)} entries, "
                               f"{fields.key('num_hidden_layers')} is {layers}")
        return window_fields(fields, kinds)
    if rule is None:
        if fields.has("sliding_window"):
            raise fields.error(f"key {fields.key('sliding_window')} ({short_repr(fields.get('sliding_window', None))}) "
                               f"names a window but not the layers it applies to (no {fields.key('layer_types')})")
        return {}
    return rule(fields, layers)


def window_fields(fields: Fields, kinds: list[str]) -> dict:
    """The spec's window fields for per-layer kinds, each size read only where a layer uses it."""
    out: dict = {"layer_types": tuple(kinds)} if set(kinds) != {"full"} else {}
    if "sliding" in kinds:
        out["sliding_window"] = fields.int("sliding_window")
    if "chunked" in kinds:
        out["attention_chunk_size"] = fields.int("attention_chunk_size")
    return out


def every_layer(fields: Fields, layers: int) -> dict:
    """Mistral, Mixtral, Phi-3: `sliding_window`, when set, applies to every layer."""
    return window_fields(fields, ["sliding" if fields.has("sliding_window") else "full"] * layers)


def qwen_window(fields: Fields, layers: int) -> dict:
    """Qwen2/3: a window only with `use_sliding_window`, on layers from `max_window_layers` on."""
    if not fields.bool("use_sliding_window", False):
        return {}  # the Hub configs carry sliding_window 131072 (or null) with the window off
    first = fields.int("max_window_layers", minimum=0)
    return window_fields(fields, ["sliding" if layer >= first else "full" for layer in range(layers)])


def gemma2_window(fields: Fields, layers: int) -> dict:
    """Gemma 2 alternates: layers 0, 2, 4, ... slide (Gemma2Config's default layer_types)."""
    return window_fields(fields, ["sliding" if (layer + 1) % 2 else "full" for layer in range(layers)])


def gemma3_window(fields: Fields, layers: int) -> dict:
    """Gemma 3: every `sliding_window_pattern`-th layer is global, the others slide (5 : 1)."""
    window = fields.int("sliding_window")  # Gemma 3 always has local layers
    if not fields.has("sliding_window_pattern"):
        raise fields.error(f"key {fields.key('sliding_window')} ({window}) names a window but not the layers it "
                           f"applies to (no {fields.key('layer_types')} or {fields.key('sliding_window_pattern')})")
    pattern = fields.int("sliding_window_pattern")
    return window_fields(fields, ["sliding" if (layer + 1) % pattern else "full" for layer in range(layers)])


