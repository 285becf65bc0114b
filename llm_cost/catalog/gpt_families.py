"""The GPT-style families: LayerNorm with bias, a plain GELU MLP, biases, often attention and MLP in
parallel off one norm, following Hugging Face transformers' `configuration_*.py` / `modeling_*.py`:

- gpt3, gpt2: plain GELU MLP, LayerNorm with bias, biases everywhere, learned positions, tied
  embeddings; GPT-2's own key names (n_embd, n_layer, ...) are accepted.
- gptj: GPT-2's key names, rotary, ONE LayerNorm per layer (parallel attention and MLP), no
  attention biases, a biased MLP, an untied LM head with a bias.
- gpt_neox (Pythia, GPT-NeoX-20B): two LayerNorms, biases on the fused qkv, dense and MLP,
  rotary, an untied embed_out without bias.
- phi (phi-2): one LayerNorm per layer, biases on q/k/v, dense, fc1 / fc2 and the untied LM head.
- falcon: multi-query (one KV head) or `num_kv_heads` with `new_decoder_architecture`, one or two
  LayerNorms per layer, `bias`, `ffn_hidden_size`, tied embeddings; the custom-code spellings
  n_embed and n_head_kv are accepted.
"""

from __future__ import annotations

from llm_cost.catalog.decoder import decoder, dense_only
from llm_cost.catalog.fields import Fields


def with_keys(fields: Fields, **values) -> Fields:
    """The config with `values` in place of its keys: a family's own key read as a shared one."""
    return Fields({**fields.data, **values}, fields.path, fields.prefix)


def gelu_width(fields: Fields, key: str = "intermediate_size") -> dict:
    """The plain GELU MLP's width from `key`, 4 x hidden_size when absent or null (GPT-2's n_inner,
    GPT-J's n_inner, Falcon's ffn_hidden_size), as the intermediate_size `decoder` reads."""
    return {"intermediate_size": fields.get(key, 4 * fields.int("hidden_size"))}


def biased_head(fields: Fields, family: str) -> dict:
    """An untied LM head with a bias (GPT-J, Phi-2); a config that ties it is refused."""
    if fields.bool("tie_word_embeddings", False):
        raise fields.error(f"key {fields.key('tie_word_embeddings')} is true, but {family}'s lm_head has a bias "
                           f"of its own, which a tied head cannot share")
    return {"tie_word_embeddings": False, "lm_head_bias": True}


def _gpt(fields: Fields) -> dict:
    """GPT-2/3: learned positions, LayerNorm, biases everywhere, tied embeddings, 4x GELU MLP."""
    dense_only(fields, "gpt")
    spec = decoder(with_keys(fields, **gelu_width(fields)), tied=True, attention_bias=True)
    return spec | {"mlp_kind": "plain", "norm_kind": "layer", "mlp_bias": fields.bool("mlp_bias", True),
                   "learned_positions": fields.int("max_position_embeddings")}


def _gptj(fields: Fields) -> dict:
    """GPTJForCausalLM: attention and MLP in parallel off ONE LayerNorm (ln_1); q/k/v/out_proj
    without bias, fc_in / fc_out with, a GELU MLP of n_inner (null: 4 n_embd); rotary positions
    (rotary_dim), no learned table; an untied lm_head with a bias; final ln_f."""
    dense_only(fields, "gptj")
    spec = decoder(with_keys(fields, **gelu_width(fields)))
    return spec | {"mlp_kind": "plain", "norm_kind": "layer", "layer_norms": 1, "qkv_bias": False,
                   "o_bias": False, "mlp_bias": True, **biased_head(fields, "gptj")}


def _gpt_neox(fields: Fields) -> dict:
    """GPTNeoXForCausalLM (Pythia, GPT-NeoX-20B): input and post-attention LayerNorms, fused
    query_key_value and dense with biases (attention_bias, default true), a biased GELU MLP of
    intermediate_size, rotary positions on rotary_pct of each head, an untied embed_out without
    bias. use_parallel_residual changes the wiring, not the count."""
    dense_only(fields, "gpt_neox")
    spec = decoder(fields, attention_bias=True)
    return spec | {"mlp_kind": "plain", "norm_kind": "layer", "mlp_bias": True}


def _phi(fields: Fields) -> dict:
    """PhiForCausalLM (phi-1, phi-1.5, phi-2): attention and MLP in parallel off ONE LayerNorm;
    q/k/v_proj and dense with biases, fc1 / fc2 with biases (a GELU MLP of intermediate_size),
    partial rotary positions, final_layernorm, an untied lm_head with a bias."""
    dense_only(fields, "phi")
    if fields.bool("qk_layernorm", False):
        raise fields.error(f"key {fields.key('qk_layernorm')} true (LayerNorms of head_dim on q and k) "
                           f"is not supported")
    spec = decoder(fields)
    return spec | {"mlp_kind": "plain", "norm_kind": "layer", "layer_norms": 1, "qkv_bias": True,
                   "o_bias": True, "mlp_bias": True, **biased_head(fields, "phi")}


def _falcon(fields: Fields) -> dict:
    """FalconForCausalLM (configuration_falcon.py / modeling_falcon.py). query_key_value holds
    num_kv_heads K and V heads with new_decoder_architecture (num_kv_heads defaults to
    num_attention_heads), else one with multi_query (default true; num_kv_heads is then
    ignored, as FalconAttention ignores it), else num_attention_heads;
    head_dim is hidden / heads. Norms: two LayerNorms without parallel_attn; with it (default
    true) num_ln_in_parallel_attn of them (ln_attn and ln_mlp; 2 by default with the new
    architecture, else 1: input_layernorm). `bias` (default false) puts biases on every linear;
    a GELU MLP of ffn_hidden_size (4 x hidden); tied embeddings; ALiBi adds no parameter."""
    dense_only(fields, "falcon")
    if fields.has("num_key_value_heads"):
        raise fields.error(f"key {fields.key('num_key_value_heads')} is not Falcon's: its KV heads come from "
                           f"{fields.key('num_kv_heads')} or {fields.key('multi_query')}")
    heads = fields.int("num_attention_heads")
    new = fields.bool("new_decoder_architecture", False)
    if new:
        kv = fields.int("num_kv_heads", heads)
        if heads % kv:
            raise fields.error(f"key {fields.key('num_kv_heads')} ({kv}) must divide "
                               f"{fields.key('num_attention_heads')} ({heads})")
    elif fields.bool("multi_query", True):
        kv = 1  # num_kv_heads is ignored (falcon-7b's config says 71: FalconConfig's default)
    else:
        kv = heads  # query_key_value is 3 x hidden
        if fields.int("num_kv_heads", heads) != heads:
            raise fields.error(f"key {fields.key('num_kv_heads')} ({fields.int('num_kv_heads')}) needs "
                               f"{fields.key('new_decoder_architecture')} true; without it and without "
                               f"{fields.key('multi_query')} every head has its K and V ({heads})")
    parallel_norms = fields.int("num_ln_in_parallel_attn", 2 if new else 1, maximum=2)
    bias = fields.bool("bias", False)
    spec = decoder(with_keys(fields, num_key_value_heads=kv, **gelu_width(fields, "ffn_hidden_size")), tied=True)
    return spec | {"mlp_kind": "plain", "norm_kind": "layer", "qkv_bias": bias, "o_bias": bias,
                   "mlp_bias": bias, "layer_norms": parallel_norms if fields.bool("parallel_attn", True) else 2}


GPT_FAMILIES = {"gpt3": _gpt, "gpt2": _gpt, "gptj": _gptj, "gpt_neox": _gpt_neox, "phi": _phi, "falcon": _falcon}
# `architectures` class names -> the family that reads them (transformers' names)
GPT_ARCHITECTURES = {"GPT2LMHeadModel": "gpt2", "GPTJForCausalLM": "gptj", "GPTNeoXForCausalLM": "gpt_neox",
                     "PhiForCausalLM": "phi", "FalconForCausalLM": "falcon"}
