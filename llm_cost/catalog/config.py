"""Hugging Face style config.json -> ModelSpec: one adapter per architecture family.

`FAMILIES` maps each supported `model_type` to the function that reads it; `ARCHITECTURES`
maps the class names of `architectures` to a family, so that a config naming a known
architecture under another model_type still loads as that architecture, and a config whose two
keys disagree is refused. Every adapter starts from `decoder.decoder` (the keys all families share:
widths, heads, vocabulary, tied embeddings, biases) and states what its family leaves implicit,
following the family's `configuration_*.py` / `modeling_*.py` in Hugging Face transformers
(the families are listed in `llm_cost.catalog.families`, the GPT-style ones in `gpt_families`).

Windows are recorded per layer (`layer_types`, `sliding_window`, `attention_chunk_size`) from
`layer_types` when the config has it, else by the family's rule; a window whose layers neither
the config nor the family states is refused. So are MoE keys in a dense family and MoE keys that
contradict each other: nothing is counted silently as something else. `quantization_config` and
`torch_dtype` are recorded as read. `head_dim` defaults to hidden_size / num_attention_heads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import difflib
from pathlib import Path

from llm_cost.catalog.families import ARCHITECTURES, FAMILIES, SUPPORTED_MODEL_TYPES
from llm_cost.catalog.hybrid_families import HYBRID_FAMILIES
from llm_cost.catalog.mamba_families import MAMBA_FAMILIES
from llm_cost.catalog.fields import Fields
from llm_cost.errors import ConfigError, LlmCostError, short_repr
from llm_cost.specs import ModelSpec

if TYPE_CHECKING:  # annotations only
    from llm_cost.specs.model_parts import QuantizationConfig

# Other spellings of the keys the families read, renamed before any family reads them: GPT-2's and
# GPT-J's (n_embd, n_layer, ...), and the custom-code Falcon (RW) configs' n_embed and n_head_kv,
# which transformers' FalconConfig still accepts. A config that gives both spellings must agree.
KEY_ALIASES = {"n_embd": "hidden_size", "n_layer": "num_hidden_layers", "n_head": "num_attention_heads",
               "n_inner": "intermediate_size", "n_positions": "max_position_embeddings",
               "n_embed": "hidden_size", "n_head_kv": "num_kv_heads"}

def model_from_config(data: dict, *, name: str, path: Path | str = "<config>") -> ModelSpec:
    """Build a ModelSpec from a Hugging Face style config dict (see the module docstring).

    Parameters
    ----------
    data : dict
        The parsed config.json.
    name : str
        The model's name in rows and messages.
    path : Path or str, optional
        Where the config comes from: every error message starts with it.

    Returns
    -------
    ModelSpec
        The model as its family's adapter reads it; `family` names the adapter.

    Examples
    --------
    Kimi K2 is DeepSeek-V3's architecture under its own model_type:

    >>> m = model_from_config({"model_type": "kimi_k2", "hidden_size": 64, "num_attention_heads": 4,
    ...                        "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": 100,
    ...                        "kv_lora_rank": 16, "qk_nope_head_dim": 8, "qk_rope_head_dim": 8,
    ...                        "v_head_dim": 8}, name="tiny")
    >>> m.family, m.mla.kv_lora_rank, m.moe
    ('kimi_k2', 16, None)
    """
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object at the top level (data must be a dict), "
                          f"got {type(data).__name__}", params=("data",))
    data = _renamed(data, path)
    fields = Fields(data, path)
    family = _family(fields)
    try:
        spec = FAMILIES[family](fields)
        _refuse_recurrent_without_mixer(fields, family, spec)
        return ModelSpec(name=name, source=str(data.get("_source", path)), family=family,
                         quantization=_quantization(fields), checkpoint_dtype=_dtype(fields), **spec)
    except ConfigError:
        raise
    except LlmCostError as err:  # a spec invariant: still name the file
        raise ConfigError(f"{path}: {err}") from None


HYBRIDS = tuple({**HYBRID_FAMILIES, **MAMBA_FAMILIES})  # the families with a recurrent mixer


def _refuse_recurrent_without_mixer(fields: Fields, family: str, spec: dict) -> None:
    """A family without a recurrent mixer whose `layer_types` names linear_attention or mamba layers
    is refused naming the key (it is not counted as all-attention, nor with a guessed mixer)."""
    kinds = spec.get("layer_types") or ()
    if spec.get("recurrent") is None and "recurrent" in kinds:
        key = "text_config.layer_types" if fields.has("text_config") else "layer_types"
        raise fields.error(f"key '{key}' names {kinds.count('recurrent')} of {len(kinds)} layers linear_attention "
                           f"or mamba, but {family} has no recurrent mixer to count them: a hybrid needs its own "
                           f"model_type ({', '.join(HYBRIDS)})")


def _renamed(data: dict, path: Path | str) -> dict:
    """The config with KEY_ALIASES' spellings renamed (a null alias is absent); two spellings of
    one key that disagree are refused, naming both."""
    out = {name: given for name, given in data.items() if name not in KEY_ALIASES}
    spelled = {name: name for name in out}
    for alias, value in data.items():
        if alias not in KEY_ALIASES or value is None:
            continue
        key = KEY_ALIASES[alias]
        if out.get(key) is not None and out[key] != value:
            raise ConfigError(f"{path}: key '{alias}' ({short_repr(value)}) contradicts "
                              f"'{spelled[key]}' ({short_repr(out[key])})")
        out[key], spelled[key] = value, alias
    return out


# ---- which family -------------------------------------------------------------------------

def _family(fields: Fields) -> str:
    """The family to read the config as: its model_type, or the family its architectures name."""
    architectures = fields.str_list("architectures", [])
    named = sorted({ARCHITECTURES[name] for name in architectures if name in ARCHITECTURES})
    model_type = fields.str("model_type") if fields.has("model_type") or not named else None
    if model_type in FAMILIES:
        clash = [name for name in named if FAMILIES[name] is not FAMILIES[model_type]]
        if clash:
            raise fields.error(f"key 'architectures' {short_repr(architectures)} names the {clash[0]} "
                               f"architecture, but 'model_type' is {model_type!r}")
        return model_type
    if len(named) == 1:
        return named[0]  # e.g. a fine-tune's own model_type over DeepseekV3ForCausalLM
    if model_type is None:
        raise fields.error(f"key 'architectures' {short_repr(architectures)} names more than one family "
                           f"and there is no 'model_type'")
    nearest = difflib.get_close_matches(model_type, SUPPORTED_MODEL_TYPES, n=1, cutoff=0.0)
    raise fields.error(f"key 'model_type' {model_type!r} is not supported; nearest: {nearest[0]} "
                       f"(supported: {', '.join(SUPPORTED_MODEL_TYPES)})")


# ---- recorded as read ---------------------------------------------------------------------

def _quantization(fields: Fields) -> QuantizationConfig | None:
    """`quantization_config` as read: its quant_method and every other key, frozen."""
    if not fields.has("quantization_config"):
        return None
    quant = fields.sub("quantization_config")
    settings = tuple(sorted((key, _frozen(value)) for key, value in quant.data.items() if key != "quant_method"))
    from llm_cost.specs.model_parts import QuantizationConfig  # built here: not at startup
    return QuantizationConfig(method=quant.str("quant_method"), settings=settings)


def _frozen(value):
    """A JSON value made hashable: lists as tuples, objects as sorted (key, value) tuples."""
    if isinstance(value, list):
        return tuple(_frozen(item) for item in value)
    if isinstance(value, dict):
        return tuple(sorted((key, _frozen(item)) for key, item in value.items()))
    return value


def _dtype(fields: Fields) -> str:
    """The checkpoint's dtype as the config states it (`torch_dtype`, or `dtype` in newer files)."""
    key = "torch_dtype" if fields.has("torch_dtype") else "dtype"
    return fields.str(key, "") if fields.has(key) else ""
