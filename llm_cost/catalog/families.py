"""The architecture families: what each `model_type` leaves implicit, one adapter each.

Every adapter starts from `decoder.decoder` (the keys all families share: widths, heads, vocabulary,
tied embeddings, biases) and states what its family adds, following Hugging Face transformers'
`configuration_*.py` / `modeling_*.py`:

- llama, mistral, phi3 (fused qkv_proj and gate_up_proj: the same count as split matrices):
  SwiGLU, RMSNorm, no biases unless `attention_bias` / `mlp_bias`; mixtral adds
  `num_local_experts`.
- qwen2: q/k/v biases without a key for them; qwen3: q_norm / k_norm of head_dim each;
  qwen3_moe: `num_experts`, `moe_intermediate_size`, `decoder_sparse_step`, `mlp_only_layers`;
  qwen2_moe: Qwen2's biases and Qwen3-MoE's layout, plus one shared expert of
  `shared_expert_intermediate_size` behind a hidden -> 1 `shared_expert_gate`.
- gemma (Gemma 1): GeGLU, RMSNorm, two norms per layer, tied embeddings, `head_dim` required.
- gemma2, gemma3_text: four norms per layer, embeddings tied unless the config says otherwise,
  GeGLU (gated, three matrices); Gemma 3 adds q/k norms. Soft-capping and the embedding scale
  are arithmetic, not parameters.
- olmo2: post-norms only (two per layer) and q/k norms over all heads (q_dim and kv_dim).
- gpt_oss: biases on q, k, v, o, on every expert and on the router; one attention sink per head.
- llama4 (the multimodal wrapper: its `text_config` and its `vision_config` tower, `multimodal`)
  and llama4_text: a shared expert beside the routed ones, `interleave_moe_layer_step`,
  dense layers of `intermediate_size_mlp`, weightless q/k norms, no-RoPE layers.
- deepseek_v2, deepseek_v3 and kimi_k2 (DeepSeek-V3's architecture): MLA, shared experts,
  `first_k_dense_replace` dense layers, the routing bias of `topk_method: noaux_tc`, MTP layers.
- gpt2, gpt3, gptj, gpt_neox, phi, falcon: the GPT-style families (`gpt_families`).
- smollm3, mimo, internlm2, granite, cohere, cohere2: Llama with a twist (`llama_variants`).
- granitemoe, deepseek (v1), glm4_moe: MoE with dense first layers, shared experts, MTP (`moe_families`).
- gemma3, mistral3: multimodal wrappers, text model + vision tower (`multimodal`).
- qwen3_next, qwen3_5_moe, qwen3_5, minimax_m1 (`hybrid_families`) and the Mamba hybrids granitemoehybrid,
  nemotron_h, jamba, bamba, falcon_h1 (`mamba_families`): hybrids whose recurrent layers keep a
  state per sequence.
- qwen3, gemma2, gemma3_text, gpt_oss: `head_dim` defaults as their config classes set it (128,
  256, 256, 64); qwen3_moe requires it (its config class has none; issue 29).

The keys every family shares are read in `decoder`.
"""

from __future__ import annotations

from typing import Callable

from llm_cost.catalog.decoder import decoder, dense_only, layer_list, moe_spec
from llm_cost.catalog.fields import Fields
from llm_cost.catalog.gpt_families import GPT_ARCHITECTURES, GPT_FAMILIES
from llm_cost.catalog.hybrid_families import HYBRID_ARCHITECTURES, HYBRID_FAMILIES
from llm_cost.catalog.llama_variants import LLAMA_VARIANT_ARCHITECTURES, LLAMA_VARIANTS
from llm_cost.catalog.moe_families import MOE_ARCHITECTURES, MOE_FAMILIES
from llm_cost.catalog.multimodal import MULTIMODAL_ARCHITECTURES, MULTIMODAL_FAMILIES, llama4_vision, vision_spec
from llm_cost.catalog.windows import every_layer, gemma2_window, gemma3_window, qwen_window, window_fields


def _qwen_moe_layers(fields: Fields, layers: int) -> tuple[list[bool], str]:
    """Qwen2/3-MoE: layer i is MoE unless in mlp_only_layers or off decoder_sparse_step; the key
    that placed the dense layers, for messages."""
    step = fields.int("decoder_sparse_step", 1)
    dense = set(layer_list(fields, "mlp_only_layers", layers))
    is_moe = [layer not in dense and (layer + 1) % step == 0 for layer in range(layers)]
    return is_moe, "decoder_sparse_step" if step > 1 else "mlp_only_layers"


# ---- the families -------------------------------------------------------------------------

def _llama(fields: Fields) -> dict:
    dense_only(fields, "llama")
    return decoder(fields)


def _mistral(fields: Fields) -> dict:
    dense_only(fields, "mistral")
    return decoder(fields, windows=every_layer)


def _mixtral(fields: Fields) -> dict:
    spec = decoder(fields, windows=every_layer)  # experts of intermediate_size, no dense layers
    return spec | {"moe": moe_spec(fields, experts="num_local_experts", width="intermediate_size",
                                   is_moe=[True] * spec["num_layers"], layout_key="num_local_experts")}


def _phi3(fields: Fields) -> dict:
    dense_only(fields, "phi3")
    return decoder(fields, windows=every_layer)


def _qwen2(fields: Fields) -> dict:
    dense_only(fields, "qwen2")
    return decoder(fields, qkv_bias=True, windows=qwen_window)


def _qwen3(fields: Fields) -> dict:
    """Qwen3Config: head_dim defaults to 128 (configuration_qwen3.py), not hidden_size / heads."""
    dense_only(fields, "qwen3")
    return decoder(fields, windows=qwen_window, head_dim=128) | {"qk_norm": "head"}


def require_head_dim(fields: Fields, family: str, released: int) -> None:
    """Refuse a config without head_dim where the family's fallback (hidden_size / heads) is not
    what its checkpoints use: Qwen3MoeConfig declares no head_dim (configuration_qwen3_moe.py) and
    Qwen3MoeAttention falls back to hidden_size / heads, 64 for Qwen3-30B-A3B, whose weights are
    128 wide: counting either silently would be a guess."""
    if not fields.has("head_dim"):
        raise fields.error(f"missing key {fields.key('head_dim')} ({family} checkpoints use {released}; "
                           f"transformers' fallback hidden_size / num_attention_heads would not load them)")


def _qwen3_moe(fields: Fields) -> dict:
    """Qwen3MoeDecoderLayer: a MoE MLP unless the layer is in mlp_only_layers or off the step."""
    require_head_dim(fields, "qwen3_moe", 128)
    spec = decoder(fields, windows=qwen_window) | {"qk_norm": "head"}
    is_moe, layout_key = _qwen_moe_layers(fields, spec["num_layers"])
    return spec | {"moe": moe_spec(fields, experts="num_experts", width="moe_intermediate_size", is_moe=is_moe,
                                   layout_key=layout_key)}


def _qwen2_moe(fields: Fields) -> dict:
    """Qwen2MoeSparseMoeBlock: q/k/v biases (as Qwen2); routed experts of moe_intermediate_size, a
    router without bias, and ONE shared expert of shared_expert_intermediate_size whose output a
    hidden -> 1 shared_expert_gate (no bias) scales; dense layers (mlp_only_layers, off
    decoder_sparse_step) of intermediate_size."""
    spec = decoder(fields, qkv_bias=True, windows=qwen_window)
    is_moe, layout_key = _qwen_moe_layers(fields, spec["num_layers"])
    moe = moe_spec(fields, experts="num_experts", width="moe_intermediate_size", is_moe=is_moe,
                   layout_key=layout_key, shared=1)
    return spec | {"moe": moe, "shared_expert_gate": True,
                   "shared_expert_intermediate_size": fields.int("shared_expert_intermediate_size")}


def _gemma(fields: Fields) -> dict:
    """GemmaForCausalLM (Gemma 1): GeGLU (gated, three matrices), RMSNorm, two norms per layer,
    embeddings tied unless the config says otherwise. head_dim is required: GemmaConfig's default
    is 256, not hidden_size / num_attention_heads (gemma-7b: 3072 / 16 = 192)."""
    dense_only(fields, "gemma")
    if not fields.has("head_dim"):
        raise fields.error(f"missing key {fields.key('head_dim')} (Gemma's default is 256, not hidden_size / heads)")
    return decoder(fields, tied=True)


def _gemma2(fields: Fields) -> dict:
    """Gemma2Config: head_dim defaults to 256 (configuration_gemma2.py)."""
    dense_only(fields, "gemma2")
    return decoder(fields, tied=True, windows=gemma2_window, head_dim=256) | {"layer_norms": 4}


def _gemma3(fields: Fields) -> dict:
    """Gemma3TextConfig: head_dim defaults to 256 (configuration_gemma3.py); max_position_embeddings
    is the context already scaled by its linear rope factor, as vLLM reads it (`context_length`)."""
    dense_only(fields, "gemma3_text")
    return decoder(fields, tied=True, windows=gemma3_window, head_dim=256,
                   stated_context=True) | {"layer_norms": 4, "qk_norm": "head"}


def _olmo2(fields: Fields) -> dict:
    dense_only(fields, "olmo2")
    return decoder(fields) | {"qk_norm": "full"}  # post_attention + post_feedforward norms: still two


def _gpt_oss(fields: Fields) -> dict:
    """GptOssDecoderLayer: biased attention with sinks; every layer MoE with biased experts."""
    spec = decoder(fields, attention_bias=True, head_dim=64) | {"attention_sinks": True}  # GptOssConfig: 64
    return spec | {"moe": moe_spec(fields, experts="num_local_experts", width="intermediate_size",
                                   is_moe=[True] * spec["num_layers"], layout_key="num_local_experts",
                                   router_bias=True, expert_bias=True)}


def _llama4(fields: Fields) -> dict:
    """Llama4ForConditionalGeneration: the text model of `text_config` and, where the config has
    one, the vision tower of `vision_config` (`multimodal.llama4_vision`)."""
    return _llama4_text(fields.sub("text_config")) | llama4_vision(fields)


def _llama4_text(fields: Fields) -> dict:
    """Llama4TextModel: MoE layers (routed + one shared expert) at `moe_layers`, else dense MLPs
    of `intermediate_size_mlp`; chunked attention on the RoPE layers, global on the no-RoPE ones."""
    layers = fields.int("num_hidden_layers")
    # Llama4TextConfig: no_rope_layers[i] = 1 where layer i uses RoPE; by default every 4th does not
    rope = fields.int_list("no_rope_layers", []) or [
        int((layer + 1) % fields.int("no_rope_layer_interval", 4) != 0) for layer in range(layers)]
    if len(rope) != layers or set(rope) - {0, 1}:
        raise fields.error(f"key {fields.key('no_rope_layers')} must hold a 0 or 1 for each of {layers} layers")

    def chunked_on_rope_layers(config: Fields, num_layers: int) -> dict:
        return window_fields(config, ["chunked" if uses_rope else "full" for uses_rope in rope])

    spec = decoder(fields, windows=chunked_on_rope_layers if fields.has("attention_chunk_size") else None)
    step = fields.int("interleave_moe_layer_step", 1)
    explicit = fields.has("moe_layers")
    moe_at = set(layer_list(fields, "moe_layers", layers)) if explicit else set(range(step - 1, layers, step))
    moe = moe_spec(fields, experts="num_local_experts", width="intermediate_size", shared=1,
                   is_moe=[layer in moe_at for layer in range(layers)],
                   layout_key="moe_layers" if explicit else "interleave_moe_layer_step")
    if moe.first_dense_layers or moe.dense_layers:  # dense layers are wider than the experts
        spec["intermediate_size"] = fields.int("intermediate_size_mlp")
    return spec | {"moe": moe, "nope_layers": tuple(layer for layer, uses_rope in enumerate(rope) if not uses_rope),
                   "qk_norm": "weightless" if fields.bool("use_qk_norm", False) else "none"}


def _deepseek(fields: Fields, *, routing_default: str) -> dict:
    """DeepseekV2/V3: MLA; MoE from layer first_k_dense_replace on, every moe_layer_freq-th."""
    spec = decoder(fields)
    layers = spec["num_layers"]
    from llm_cost.specs.model_parts import MLASpec  # built here: not at startup
    mla = MLASpec(kv_lora_rank=fields.int("kv_lora_rank"), qk_nope_head_dim=fields.int("qk_nope_head_dim"),
                  qk_rope_head_dim=fields.int("qk_rope_head_dim"), v_head_dim=fields.int("v_head_dim"),
                  q_lora_rank=fields.int("q_lora_rank", 0, minimum=0))
    spec["mla"] = mla
    if not any(fields.has(key) for key in ("n_routed_experts", "moe_intermediate_size", "num_experts_per_tok")):
        return spec
    first = fields.int("first_k_dense_replace", 0, minimum=0, maximum=layers)
    freq = fields.int("moe_layer_freq", 1)
    # noaux_tc routing adds e_score_correction_bias, one per routed expert (DeepSeek-V3 §2.1.2)
    bias = fields.str("topk_method", routing_default) == "noaux_tc"
    moe = moe_spec(fields, experts="n_routed_experts", width="moe_intermediate_size",
                   is_moe=[layer >= first and layer % freq == 0 for layer in range(layers)],
                   layout_key="first_k_dense_replace" if freq == 1 else "moe_layer_freq",
                   shared=fields.int("n_shared_experts", 0, minimum=0), router_bias=bias)
    return spec | {"moe": moe}


def _deepseek_v2(fields: Fields) -> dict:
    return _deepseek(fields, routing_default="greedy")


def _deepseek_v3(fields: Fields) -> dict:
    """DeepSeek-V3, and Kimi K2 (model_type kimi_k2, architectures DeepseekV3ForCausalLM); each MTP
    module stores its own embed_tokens and shared_head.head (README_WEIGHTS.md)."""
    return _deepseek(fields, routing_default="noaux_tc") | {"mtp_stores_tables": True}



def _gemma3_wrapper(fields: Fields) -> dict:
    """Gemma 3's multimodal wrapper: the gemma3_text decoder of `text_config` and its SigLIP tower."""
    text = _gemma3(fields.sub("text_config"))
    vision = vision_spec(fields.sub("vision_config"), kind="siglip",
                         tokens_per_image=fields.int("mm_tokens_per_image", 256))
    return text | {"vision": vision}


FAMILIES: dict[str, Callable[[Fields], dict]] = {
    "llama": _llama, "mistral": _mistral, "mixtral": _mixtral, "phi3": _phi3,
    "qwen2": _qwen2, "qwen2_moe": _qwen2_moe, "qwen3": _qwen3, "qwen3_moe": _qwen3_moe,
    "gemma": _gemma, "gemma2": _gemma2, "gemma3_text": _gemma3, "gemma3": _gemma3_wrapper,
    "olmo2": _olmo2, "gpt_oss": _gpt_oss,
    "llama4": _llama4, "llama4_text": _llama4_text,
    "deepseek_v2": _deepseek_v2, "deepseek_v3": _deepseek_v3, "kimi_k2": _deepseek_v3,
    **GPT_FAMILIES, **LLAMA_VARIANTS, **MOE_FAMILIES, **MULTIMODAL_FAMILIES,
    **HYBRID_FAMILIES,
}
SUPPORTED_MODEL_TYPES = tuple(FAMILIES)
# `architectures` class names -> the family that reads them (transformers' and vLLM's names)
ARCHITECTURES = {
    "LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral", "MixtralForCausalLM": "mixtral",
    "Phi3ForCausalLM": "phi3", "Qwen2ForCausalLM": "qwen2", "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3_moe", "Qwen2MoeForCausalLM": "qwen2_moe",
    "GemmaForCausalLM": "gemma", "Gemma2ForCausalLM": "gemma2", "Gemma3ForCausalLM": "gemma3_text",
    "Olmo2ForCausalLM": "olmo2", "GptOssForCausalLM": "gpt_oss",
    "Llama4ForConditionalGeneration": "llama4", "Llama4ForCausalLM": "llama4_text",
    "DeepseekV2ForCausalLM": "deepseek_v2", "DeepseekV3ForCausalLM": "deepseek_v3",
    **GPT_ARCHITECTURES, **LLAMA_VARIANT_ARCHITECTURES, **MOE_ARCHITECTURES, **MULTIMODAL_ARCHITECTURES,
    **HYBRID_ARCHITECTURES,
}


