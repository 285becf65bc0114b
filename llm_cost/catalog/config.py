"""Hugging Face style config.json -> ModelSpec, with what each architecture family leaves implicit.

By `model_type`:
- llama, mistral, qwen2, qwen3, mixtral: gated (SwiGLU) MLP, RMSNorm, RoPE, no biases unless
  `attention_bias` / `mlp_bias`; qwen2 has q/k/v biases without a key for them.
- deepseek_v3 (and deepseek_v2): MLA and MoE keys; `first_k_dense_replace` dense layers.
- gpt3, gpt2: plain GELU MLP, LayerNorm with bias, biases everywhere, learned positions,
  tied embeddings. GPT-2's own key names (n_embd, n_layer, ...) are accepted.
`head_dim` defaults to hidden_size / num_attention_heads.
"""

from __future__ import annotations

from pathlib import Path

from llm_cost.catalog.fields import Fields
from llm_cost.errors import ConfigError, LlmCostError
from llm_cost.specs import MLASpec, MoESpec, ModelSpec

LLAMA_LIKE = ("llama", "mistral", "qwen2", "qwen3", "mixtral")
DEEPSEEK = ("deepseek_v3", "deepseek_v2")
GPT_LIKE = ("gpt3", "gpt2")
SUPPORTED_MODEL_TYPES = LLAMA_LIKE + DEEPSEEK + GPT_LIKE
GPT2_KEYS = {"n_embd": "hidden_size", "n_layer": "num_hidden_layers", "n_head": "num_attention_heads",
             "n_inner": "intermediate_size", "n_positions": "max_position_embeddings"}


def model_from_config(data: dict, *, name: str, path: Path | str = "<config>") -> ModelSpec:
    """Build a ModelSpec from a Hugging Face style config dict (see the module docstring)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object at the top level")
    data = {GPT2_KEYS.get(k, k): v for k, v in data.items()}
    f = Fields(data, path)
    model_type = f.str("model_type")
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise ConfigError(f"{path}: key 'model_type' {model_type!r} is not supported; "
                          f"supported: {', '.join(SUPPORTED_MODEL_TYPES)}")
    hidden = f.int("hidden_size")
    heads = f.int("num_attention_heads")
    if not f.has("head_dim") and hidden % heads:
        raise ConfigError(f"{path}: key 'num_attention_heads' ({heads}) does not divide "
                          f"'hidden_size' ({hidden}) and no 'head_dim' is given")
    gpt = model_type in GPT_LIKE
    kv_heads = f.int("num_key_value_heads", heads)
    if heads % kv_heads:
        raise ConfigError(f"{path}: key 'num_key_value_heads' ({kv_heads}) must divide "
                          f"'num_attention_heads' ({heads})")
    attention_bias = f.bool("attention_bias", gpt)
    try:
        return ModelSpec(
            name=name,
            hidden_size=hidden,
            num_layers=f.int("num_hidden_layers"),
            num_heads=heads,
            num_kv_heads=kv_heads,
            head_dim=f.int("head_dim", hidden // heads),
            intermediate_size=f.int("intermediate_size", 4 * hidden if gpt else None),
            vocab_size=f.int("vocab_size"),
            mlp_kind="plain" if gpt else "gated",
            norm_kind="layer" if gpt else "rms",
            tie_word_embeddings=f.bool("tie_word_embeddings", gpt),
            qkv_bias=attention_bias or model_type == "qwen2",
            o_bias=attention_bias,
            mlp_bias=f.bool("mlp_bias", gpt),
            learned_positions=f.int("max_position_embeddings") if gpt else 0,
            max_position_embeddings=f.int("max_position_embeddings", 0, minimum=0),
            moe=_moe(f, model_type),
            mla=_mla(f) if model_type in DEEPSEEK else None,
            mtp_layers=f.int("num_nextn_predict_layers", 0, minimum=0),
            source=str(data.get("_source", path)),
        )
    except ConfigError:
        raise
    except LlmCostError as err:  # a spec invariant: still name the file
        raise ConfigError(f"{path}: {err}") from None


def _moe(f: Fields, model_type: str) -> MoESpec | None:
    if model_type in DEEPSEEK:
        if not f.has("n_routed_experts"):
            return None
        return MoESpec(
            num_experts=f.int("n_routed_experts"),
            experts_per_token=f.int("num_experts_per_tok"),
            expert_intermediate_size=f.int("moe_intermediate_size"),
            num_shared_experts=f.int("n_shared_experts", 0, minimum=0),
            first_dense_layers=f.int("first_k_dense_replace", 0, minimum=0),
            router_bias=model_type == "deepseek_v3",
        )
    if f.has("num_local_experts"):  # Mixtral, Qwen-MoE style
        return MoESpec(
            num_experts=f.int("num_local_experts"),
            experts_per_token=f.int("num_experts_per_tok"),
            expert_intermediate_size=f.int("intermediate_size"),
        )
    return None


def _mla(f: Fields) -> MLASpec:
    return MLASpec(
        kv_lora_rank=f.int("kv_lora_rank"),
        qk_nope_head_dim=f.int("qk_nope_head_dim"),
        qk_rope_head_dim=f.int("qk_rope_head_dim"),
        v_head_dim=f.int("v_head_dim"),
        q_lora_rank=f.int("q_lora_rank", 0, minimum=0),
    )
