"""Dense families that are Llama with a twist, each as its transformers `configuration_*.py` /
`modeling_*.py` (or the checkpoint's own remote code) defines it:

- smollm3: Llama's layer; `no_rope_layers[i] = 0` marks a layer without RoPE (every 4th in
  SmolLM3-3B); embeddings tied unless the config says otherwise (SmolLM3Config).
- mimo: Qwen2's layer (q/k/v biases, no o_proj bias, whatever `attention_bias` says) plus
  `num_nextn_predict_layers` MTP layers (MiMoMTPLayers: token_layernorm, hidden_layernorm,
  input_proj 2d -> d without bias, a Qwen2 block, final_layernorm), sharing the model's embedding
  and LM head.
- internlm2: fused `wqkv` and `wo` (biases when `bias`, default true in InternLM2Config), w1/w3/w2
  without biases, two RMSNorms; the count is Llama's.
- granite: Llama's layer with Granite's multipliers (scalars, not parameters); tied embeddings by
  default (GraniteConfig).
- cohere (Command-R, Aya 23): attention and MLP in parallel off ONE LayerNorm without bias per
  layer (CohereLayerNorm: a gain only), tied embeddings (CohereConfig default), `logit_scale` a
  scalar; `use_qk_norm` adds LayerNorm gains over (heads, head_dim) on q and (kv heads, head_dim) on k.
- cohere2 (Command R7B, Tiny Aya): Cohere's parallel block without q/k norms, and sliding-window
  layers: from `layer_types`, else every `sliding_window_pattern`-th layer (default 4) global, the
  others sliding (Cohere2Config); the global layers use no RoPE (Cohere2Attention applies it on
  sliding layers only). head_dim is hidden_size / num_attention_heads whatever the config says
  (Cohere2Config sets it so).
"""

from __future__ import annotations

from llm_cost.catalog.decoder import decoder, dense_only
from llm_cost.catalog.fields import Fields
from llm_cost.catalog.gpt_families import with_keys
from llm_cost.catalog.windows import qwen_window, window_fields


def rope_flags_to_nope(fields: Fields, key: str, layers: int) -> tuple[int, ...]:
    """Layers without RoPE from a per-layer 0/1 list where 1 = RoPE (SmolLM3's, Llama 4's
    `no_rope_layers`); () when the key is absent."""
    if not fields.has(key):
        return ()
    flags = fields.int_list(key, maximum=1)
    if len(flags) != layers:
        raise fields.error(f"key {fields.key(key)} must hold a 0 or 1 for each of {layers} layers, got {len(flags)}")
    return tuple(layer for layer, uses_rope in enumerate(flags) if not uses_rope)


def _smollm3(fields: Fields) -> dict:
    dense_only(fields, "smollm3")
    spec = decoder(fields, tied=True, windows=qwen_window)
    return spec | {"nope_layers": rope_flags_to_nope(fields, "no_rope_layers", spec["num_layers"])}


def _mimo(fields: Fields) -> dict:
    dense_only(fields, "mimo")
    return decoder(with_keys(fields, attention_bias=False), qkv_bias=True, windows=qwen_window)


def _internlm2(fields: Fields) -> dict:
    dense_only(fields, "internlm2")
    if fields.has("attention_bias"):
        raise fields.error(f"key {fields.key('attention_bias')} is not InternLM2's: "
                           f"its biases come from {fields.key('bias')}")
    return decoder(with_keys(fields, attention_bias=fields.bool("bias", True)))


def _granite(fields: Fields) -> dict:
    dense_only(fields, "granite")
    return decoder(fields, tied=True)


def _cohere(fields: Fields) -> dict:
    dense_only(fields, "cohere")
    return decoder(fields, tied=True) | {"layer_norms": 1,
                                         "qk_norm": "full" if fields.bool("use_qk_norm", False) else "none"}


def _cohere2_window(fields: Fields, layers: int) -> dict:
    """Cohere2Config without `layer_types`: every `sliding_window_pattern`-th layer (4 unless stated)
    is global, the others slide."""
    pattern = fields.int("sliding_window_pattern", 4)
    return window_fields(fields, ["sliding" if (layer + 1) % pattern else "full" for layer in range(layers)])


def _cohere2(fields: Fields) -> dict:
    dense_only(fields, "cohere2")
    if fields.bool("use_qk_norm", False):
        raise fields.error(f"key {fields.key('use_qk_norm')} true is not Cohere 2's (Cohere2Attention has no q/k norm)")
    hidden, heads = fields.int("hidden_size"), fields.int("num_attention_heads")
    if fields.has("head_dim") and fields.int("head_dim") * heads != hidden:
        raise fields.error(f"key {fields.key('head_dim')} ({fields.int('head_dim')}) must be "
                           f"{fields.key('hidden_size')} / {fields.key('num_attention_heads')} ({hidden} / {heads}): "
                           f"Cohere2Config sets it so")
    spec = decoder(with_keys(fields, head_dim=None), tied=True, windows=_cohere2_window)
    kinds = spec.get("layer_types", ("full",) * spec["num_layers"])
    return spec | {"layer_norms": 1, "nope_layers": tuple(layer for layer, kind in enumerate(kinds) if kind == "full")}


LLAMA_VARIANTS = {"smollm3": _smollm3, "mimo": _mimo, "internlm2": _internlm2, "granite": _granite,
                  "cohere": _cohere, "cohere2": _cohere2}
LLAMA_VARIANT_ARCHITECTURES = {"SmolLM3ForCausalLM": "smollm3", "MiMoForCausalLM": "mimo",
                               "InternLM2ForCausalLM": "internlm2", "GraniteForCausalLM": "granite",
                               "CohereForCausalLM": "cohere", "Cohere2ForCausalLM": "cohere2"}
