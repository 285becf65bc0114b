"""What every architecture family reads the same way from a config: widths, heads, vocabulary, tied
embeddings, biases, the context a server allows, and the experts of a MoE (`families`, `gpt_families`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from typing import Callable

from llm_cost.catalog.fields import Fields
from llm_cost.catalog.windows import windows_of
from llm_cost.errors import short_repr

if TYPE_CHECKING:  # annotations only
    from llm_cost.specs.model_parts import MoESpec

# Keys that describe experts; a dense family that meets one refuses the config.
MOE_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_intermediate_size",
            "num_experts_per_tok", "experts_per_token")


def decoder(fields: Fields, *, tied: bool = False, qkv_bias: bool = False, attention_bias: bool = False,
            windows: Callable[[Fields, int], dict] | None = None, head_dim: int | None = None,
            stated_context: bool = False) -> dict:
    """ModelSpec fields every decoder family reads the same way, with the family's defaults.

    `tied`, `attention_bias`: the defaults of tie_word_embeddings and attention_bias;
    `qkv_bias`: q/k/v biases the family has whatever the config says (Qwen2); `windows`: the
    family's rule for which layers slide when the config has no `layer_types`; `head_dim`: the
    family's default head_dim when the config has none (its configuration_*.py: Qwen3 128,
    Gemma 2/3 256, gpt-oss 64), None for hidden_size / num_attention_heads; `stated_context`: the
    family's max_position_embeddings already states the scaled context (`context_length`).
    """
    hidden = fields.int("hidden_size")
    heads = fields.int("num_attention_heads")
    if not fields.has("head_dim") and head_dim is None and hidden % heads:
        raise fields.error(f"key {fields.key('num_attention_heads')} ({heads}) does not divide "
                           f"{fields.key('hidden_size')} ({hidden}) and no {fields.key('head_dim')} is given")
    kv_heads = fields.int("num_key_value_heads", heads)
    if heads % kv_heads:
        raise fields.error(f"key {fields.key('num_key_value_heads')} ({kv_heads}) must divide "
                           f"{fields.key('num_attention_heads')} ({heads})")
    layers = fields.int("num_hidden_layers")
    bias = fields.bool("attention_bias", attention_bias)
    return dict(
        hidden_size=hidden, num_layers=layers, num_heads=heads, num_kv_heads=kv_heads,
        head_dim=fields.int("head_dim", hidden // heads if head_dim is None else head_dim),
        intermediate_size=fields.int("intermediate_size"),
        vocab_size=fields.int("vocab_size"),
        tie_word_embeddings=fields.bool("tie_word_embeddings", tied),
        qkv_bias=bias or qkv_bias, o_bias=bias, mlp_bias=fields.bool("mlp_bias", False),
        max_position_embeddings=context_length(fields, stated=stated_context),
        mtp_layers=fields.int("num_nextn_predict_layers", 0, minimum=0),  # DeepSeek-V3's MTP modules
        **windows_of(fields, layers, windows),
    )


# rope_scaling types whose max_position_embeddings already states the extended context (Llama 3.1's
# llama3, Phi-3's longrope / su); the others (yarn, dynamic, linear) scale it by their factor
STATED_CONTEXT_ROPE = ("llama3", "longrope", "su", "default")


def context_length(fields: Fields, *, stated: bool = False) -> int:
    """The context a server allows (0: not stated): max_position_embeddings, times a rope_scaling
    factor for yarn (of original_max_position_embeddings), dynamic or linear scaling, vLLM's rule
    (`_get_and_verify_max_len`): Qwen2.5's YaRN factor 4 takes 32,768 to 131,072.

    `stated`: the family's max_position_embeddings is already the scaled context, so no factor
    applies. vLLM skips the factor for every model_type containing "gemma3" (vllm-project/vllm,
    vllm/config/model.py, `_get_and_verify_max_len`: "Gemma3's max_model_len (128K) is already
    scaled by RoPE scaling, so we skip applying the scaling factor again"): Gemma 3 27B's 131,072
    with its linear factor 8 stays 131,072.
    """
    context = fields.int("max_position_embeddings", 0, minimum=0)
    rope = fields.get("rope_scaling", None)
    if stated or not context or not isinstance(rope, dict):
        return context
    kind = rope.get("rope_type", rope.get("type", "default"))
    if kind in STATED_CONTEXT_ROPE:
        return context
    scaling = fields.sub("rope_scaling")
    factor = scaling.number("factor", 1.0, 1e6) if scaling.has("factor") else 1.0
    base = scaling.int("original_max_position_embeddings", context) if kind == "yarn" else context
    return int(base * factor)


def dense_only(fields: Fields, family: str) -> None:
    """A dense family refuses expert keys rather than counting a MoE model as dense."""
    for key in MOE_KEYS:
        if fields.has(key):
            raise fields.error(f"key {fields.key(key)} describes experts, but {family} is a dense family "
                               f"(a MoE model needs its MoE model_type)")


# ---- MoE ----------------------------------------------------------------------------------

def moe_spec(fields: Fields, *, experts: str, width: str, is_moe: list[bool], layout_key: str,
             shared: int = 0, router_bias: bool = False, expert_bias: bool = False) -> MoESpec:
    """A MoESpec from the family's keys; contradictions are refused naming the key.

    `experts` / `width`: the keys of the expert count and width; `is_moe`: per layer, by the
    family's rule (`layout_key` names the key that placed the dense layers, for messages).
    """
    if not fields.has(experts):
        for key in (width, "num_experts_per_tok"):
            if key in MOE_KEYS and fields.has(key):
                raise fields.error(f"key {fields.key(key)} is given but no expert count ({fields.key(experts)})")
        raise fields.error(f"missing key {fields.key(experts)}")
    num_experts = fields.int(experts)
    per_token = fields.int("num_experts_per_tok")
    if per_token > num_experts:
        raise fields.error(f"key {fields.key('num_experts_per_tok')} ({per_token}) exceeds "
                           f"{fields.key(experts)} ({num_experts})")
    if fields.has("experts_per_token") and fields.get("experts_per_token", None) != per_token:  # gpt-oss writes both
        given = short_repr(fields.get("experts_per_token", None))
        raise fields.error(f"key {fields.key('experts_per_token')} ({given}) "
                           f"contradicts {fields.key('num_experts_per_tok')} ({per_token})")
    if not any(is_moe):
        raise fields.error(f"key {fields.key(layout_key)} leaves no MoE layer of {len(is_moe)}")
    first = is_moe.index(True)
    from llm_cost.specs.model_parts import MoESpec  # built here: not at startup
    return MoESpec(num_experts=num_experts, experts_per_token=per_token, expert_intermediate_size=fields.int(width),
                   num_shared_experts=shared, first_dense_layers=first,
                   dense_layers=tuple(layer for layer in range(first, len(is_moe)) if not is_moe[layer]),
                   router_bias=router_bias, expert_bias=expert_bias)


def layer_list(fields: Fields, key: str, layers: int) -> list[int]:
    """A list of layer indices, each in [0, layers)."""
    return fields.int_list(key, [], maximum=layers - 1)
