"""The architecture families: what each `model_type` leaves implicit, one adapter each.

Every adapter starts from `_decoder` (the keys all families share: widths, heads, vocabulary,
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
- llama4 (the multimodal wrapper: its `text_config`, the text model only; the vision tower is not
  counted) and llama4_text: a shared expert beside the routed ones, `interleave_moe_layer_step`,
  dense layers of `intermediate_size_mlp`, weightless q/k norms, no-RoPE layers.
- deepseek_v2, deepseek_v3 and kimi_k2 (DeepSeek-V3's architecture): MLA, shared experts,
  `first_k_dense_replace` dense layers, the routing bias of `topk_method: noaux_tc`, MTP layers.
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

from typing import Callable

from llm_cost.catalog.fields import Fields
from llm_cost.catalog.windows import _every_layer, _gemma2_window, _gemma3_window, _qwen_window, _window_fields, _windows
from llm_cost.errors import short_repr
from llm_cost.specs import MLASpec, MoESpec

# Keys that describe experts; a dense family that meets one refuses the config.
MOE_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_intermediate_size",
            "num_experts_per_tok", "experts_per_token")

# ---- what every family shares -------------------------------------------------------------

def _decoder(f: Fields, *, tied: bool = False, qkv_bias: bool = False, attention_bias: bool = False,
             windows: Callable[[Fields, int], dict] | None = None) -> dict:
    """ModelSpec fields every decoder family reads the same way, with the family's defaults.

    `tied`, `attention_bias`: the defaults of tie_word_embeddings and attention_bias;
    `qkv_bias`: q/k/v biases the family has whatever the config says (Qwen2); `windows`: the
    family's rule for which layers slide when the config has no `layer_types`.
    """
    hidden = f.int("hidden_size")
    heads = f.int("num_attention_heads")
    if not f.has("head_dim") and hidden % heads:
        raise f.error(f"key {f.key('num_attention_heads')} ({heads}) does not divide "
                      f"{f.key('hidden_size')} ({hidden}) and no {f.key('head_dim')} is given")
    kv_heads = f.int("num_key_value_heads", heads)
    if heads % kv_heads:
        raise f.error(f"key {f.key('num_key_value_heads')} ({kv_heads}) must divide "
                      f"{f.key('num_attention_heads')} ({heads})")
    layers = f.int("num_hidden_layers")
    bias = f.bool("attention_bias", attention_bias)
    return dict(
        hidden_size=hidden, num_layers=layers, num_heads=heads, num_kv_heads=kv_heads,
        head_dim=f.int("head_dim", hidden // heads),
        intermediate_size=f.int("intermediate_size"),
        vocab_size=f.int("vocab_size"),
        tie_word_embeddings=f.bool("tie_word_embeddings", tied),
        qkv_bias=bias or qkv_bias, o_bias=bias, mlp_bias=f.bool("mlp_bias", False),
        max_position_embeddings=_context(f),
        mtp_layers=f.int("num_nextn_predict_layers", 0, minimum=0),  # DeepSeek-V3's MTP modules
        **_windows(f, layers, windows),
    )


# rope_scaling types whose max_position_embeddings already states the extended context (Llama 3.1's
# llama3, Phi-3's longrope / su); the others (yarn, dynamic, linear) scale it by their factor
STATED_CONTEXT_ROPE = ("llama3", "longrope", "su", "default")


def _context(f: Fields) -> int:
    """The context a server allows (0: not stated): max_position_embeddings, times a rope_scaling
    factor for yarn (of original_max_position_embeddings), dynamic or linear scaling, vLLM's rule
    (`_get_and_verify_max_len`): Qwen2.5's YaRN factor 4 takes 32,768 to 131,072."""
    stated = f.int("max_position_embeddings", 0, minimum=0)
    rope = f.get("rope_scaling", None)
    if not stated or not isinstance(rope, dict):
        return stated
    kind = rope.get("rope_type", rope.get("type", "default"))
    if kind in STATED_CONTEXT_ROPE:
        return stated
    scaling = f.sub("rope_scaling")
    factor = scaling.number("factor", 1.0, 1e6) if scaling.has("factor") else 1.0
    base = scaling.int("original_max_position_embeddings", stated) if kind == "yarn" else stated
    return int(base * factor)


def _dense(f: Fields, family: str) -> None:
    """A dense family refuses expert keys rather than counting a MoE model as dense."""
    for key in MOE_KEYS:
        if f.has(key):
            raise f.error(f"key {f.key(key)} describes experts, but {family} is a dense family "
                          f"(a MoE model needs its MoE model_type)")


# ---- MoE ----------------------------------------------------------------------------------

def _moe(f: Fields, *, experts: str, width: str, is_moe: list[bool], layout_key: str,
         shared: int = 0, router_bias: bool = False, expert_bias: bool = False) -> MoESpec:
    """A MoESpec from the family's keys; contradictions are refused naming the key.

    `experts` / `width`: the keys of the expert count and width; `is_moe`: per layer, by the
    family's rule (`layout_key` names the key that placed the dense layers, for messages).
    """
    if not f.has(experts):
        for key in (width, "num_experts_per_tok"):
            if key in MOE_KEYS and f.has(key):
                raise f.error(f"key {f.key(key)} is given but no expert count ({f.key(experts)})")
        raise f.error(f"missing key {f.key(experts)}")
    n = f.int(experts)
    k = f.int("num_experts_per_tok")
    if k > n:
        raise f.error(f"key {f.key('num_experts_per_tok')} ({k}) exceeds {f.key(experts)} ({n})")
    if f.has("experts_per_token") and f.get("experts_per_token", None) != k:  # gpt-oss writes both
        raise f.error(f"key {f.key('experts_per_token')} ({short_repr(f.get('experts_per_token', None))}) "
                      f"contradicts {f.key('num_experts_per_tok')} ({k})")
    if not any(is_moe):
        raise f.error(f"key {f.key(layout_key)} leaves no MoE layer of {len(is_moe)}")
    first = is_moe.index(True)
    return MoESpec(num_experts=n, experts_per_token=k, expert_intermediate_size=f.int(width),
                   num_shared_experts=shared, first_dense_layers=first,
                   dense_layers=tuple(i for i in range(first, len(is_moe)) if not is_moe[i]),
                   router_bias=router_bias, expert_bias=expert_bias)


def _layer_list(f: Fields, key: str, layers: int) -> list[int]:
    """A list of layer indices, each in [0, layers)."""
    return f.int_list(key, [], maximum=layers - 1)


def _qwen_moe_layers(f: Fields, layers: int) -> tuple[list[bool], str]:
    """Qwen2/3-MoE: layer i is MoE unless in mlp_only_layers or off decoder_sparse_step; the key
    that placed the dense layers, for messages."""
    step = f.int("decoder_sparse_step", 1)
    dense = set(_layer_list(f, "mlp_only_layers", layers))
    is_moe = [i not in dense and (i + 1) % step == 0 for i in range(layers)]
    return is_moe, "decoder_sparse_step" if step > 1 else "mlp_only_layers"


# ---- what the pre-Llama families share -----------------------------------------------------

def _with(f: Fields, **values) -> Fields:
    """The config with `values` in place of its keys: a family's own key read as a shared one."""
    return Fields({**f.data, **values}, f.path, f.prefix)


def _gelu_width(f: Fields, key: str = "intermediate_size") -> dict:
    """The plain GELU MLP's width from `key`, 4 x hidden_size when absent or null (GPT-2's n_inner,
    GPT-J's n_inner, Falcon's ffn_hidden_size), as the intermediate_size `_decoder` reads."""
    return {"intermediate_size": f.get(key, 4 * f.int("hidden_size"))}


def _biased_head(f: Fields, family: str) -> dict:
    """An untied LM head with a bias (GPT-J, Phi-2); a config that ties it is refused."""
    if f.bool("tie_word_embeddings", False):
        raise f.error(f"key {f.key('tie_word_embeddings')} is true, but {family}'s lm_head has a bias "
                      f"of its own, which a tied head cannot share")
    return {"tie_word_embeddings": False, "lm_head_bias": True}


# ---- the families -------------------------------------------------------------------------

def _llama(f: Fields) -> dict:
    _dense(f, "llama")
    return _decoder(f)


def _mistral(f: Fields) -> dict:
    _dense(f, "mistral")
    return _decoder(f, windows=_every_layer)


def _mixtral(f: Fields) -> dict:
    spec = _decoder(f, windows=_every_layer)  # experts of intermediate_size, no dense layers
    return spec | {"moe": _moe(f, experts="num_local_experts", width="intermediate_size",
                               is_moe=[True] * spec["num_layers"], layout_key="num_local_experts")}


def _phi3(f: Fields) -> dict:
    _dense(f, "phi3")
    return _decoder(f, windows=_every_layer)


def _qwen2(f: Fields) -> dict:
    _dense(f, "qwen2")
    return _decoder(f, qkv_bias=True, windows=_qwen_window)


def _qwen3(f: Fields) -> dict:
    _dense(f, "qwen3")
    return _decoder(f, windows=_qwen_window) | {"qk_norm": "head"}


def _qwen3_moe(f: Fields) -> dict:
    """Qwen3MoeDecoderLayer: a MoE MLP unless the layer is in mlp_only_layers or off the step."""
    spec = _decoder(f, windows=_qwen_window) | {"qk_norm": "head"}
    is_moe, layout_key = _qwen_moe_layers(f, spec["num_layers"])
    return spec | {"moe": _moe(f, experts="num_experts", width="moe_intermediate_size", is_moe=is_moe,
                               layout_key=layout_key)}


def _qwen2_moe(f: Fields) -> dict:
    """Qwen2MoeSparseMoeBlock: q/k/v biases (as Qwen2); routed experts of moe_intermediate_size, a
    router without bias, and ONE shared expert of shared_expert_intermediate_size whose output a
    hidden -> 1 shared_expert_gate (no bias) scales; dense layers (mlp_only_layers, off
    decoder_sparse_step) of intermediate_size."""
    spec = _decoder(f, qkv_bias=True, windows=_qwen_window)
    is_moe, layout_key = _qwen_moe_layers(f, spec["num_layers"])
    moe = _moe(f, experts="num_experts", width="moe_intermediate_size", is_moe=is_moe,
               layout_key=layout_key, shared=1)
    return spec | {"moe": moe, "shared_expert_gate": True,
                   "shared_expert_intermediate_size": f.int("shared_expert_intermediate_size")}


def _gemma(f: Fields) -> dict:
    """GemmaForCausalLM (Gemma 1): GeGLU (gated, three matrices), RMSNorm, two norms per layer,
    embeddings tied unless the config says otherwise. head_dim is required: GemmaConfig's default
    is 256, not hidden_size / num_attention_heads (gemma-7b: 3072 / 16 = 192)."""
    _dense(f, "gemma")
    if not f.has("head_dim"):
        raise f.error(f"missing key {f.key('head_dim')} (Gemma's default is 256, not hidden_size / heads)")
    return _decoder(f, tied=True)


def _gemma2(f: Fields) -> dict:
    _dense(f, "gemma2")
    return _decoder(f, tied=True, windows=_gemma2_window) | {"layer_norms": 4}


def _gemma3(f: Fields) -> dict:
    _dense(f, "gemma3_text")
    return _decoder(f, tied=True, windows=_gemma3_window) | {"layer_norms": 4, "qk_norm": "head"}


def _olmo2(f: Fields) -> dict:
    _dense(f, "olmo2")
    return _decoder(f) | {"qk_norm": "full"}  # post_attention + post_feedforward norms: still two


def _gpt_oss(f: Fields) -> dict:
    """GptOssDecoderLayer: biased attention with sinks; every layer MoE with biased experts."""
    spec = _decoder(f, attention_bias=True) | {"attention_sinks": True}
    return spec | {"moe": _moe(f, experts="num_local_experts", width="intermediate_size",
                               is_moe=[True] * spec["num_layers"], layout_key="num_local_experts",
                               router_bias=True, expert_bias=True)}


def _llama4(f: Fields) -> dict:
    """Llama4ForConditionalGeneration: the text model of `text_config` (vision not counted)."""
    return _llama4_text(f.sub("text_config"))


def _llama4_text(f: Fields) -> dict:
    """Llama4TextModel: MoE layers (routed + one shared expert) at `moe_layers`, else dense MLPs
    of `intermediate_size_mlp`; chunked attention on the RoPE layers, global on the no-RoPE ones."""
    layers = f.int("num_hidden_layers")
    # Llama4TextConfig: no_rope_layers[i] = 1 where layer i uses RoPE; by default every 4th does not
    rope = f.int_list("no_rope_layers", []) or [
        int((i + 1) % f.int("no_rope_layer_interval", 4) != 0) for i in range(layers)]
    if len(rope) != layers or set(rope) - {0, 1}:
        raise f.error(f"key {f.key('no_rope_layers')} must hold a 0 or 1 for each of {layers} layers")

    def chunked_on_rope_layers(g: Fields, n: int) -> dict:
        return _window_fields(g, ["chunked" if r else "full" for r in rope])

    spec = _decoder(f, windows=chunked_on_rope_layers if f.has("attention_chunk_size") else None)
    step = f.int("interleave_moe_layer_step", 1)
    explicit = f.has("moe_layers")
    moe_at = set(_layer_list(f, "moe_layers", layers)) if explicit else set(range(step - 1, layers, step))
    moe = _moe(f, experts="num_local_experts", width="intermediate_size", shared=1,
               is_moe=[i in moe_at for i in range(layers)],
               layout_key="moe_layers" if explicit else "interleave_moe_layer_step")
    if moe.first_dense_layers or moe.dense_layers:  # dense layers are wider than the experts
        spec["intermediate_size"] = f.int("intermediate_size_mlp")
    return spec | {"moe": moe, "nope_layers": tuple(i for i, r in enumerate(rope) if not r),
                   "qk_norm": "weightless" if f.bool("use_qk_norm", False) else "none"}


def _deepseek(f: Fields, *, routing_default: str) -> dict:
    """DeepseekV2/V3: MLA; MoE from layer first_k_dense_replace on, every moe_layer_freq-th."""
    spec = _decoder(f)
    layers = spec["num_layers"]
    mla = MLASpec(kv_lora_rank=f.int("kv_lora_rank"), qk_nope_head_dim=f.int("qk_nope_head_dim"),
                  qk_rope_head_dim=f.int("qk_rope_head_dim"), v_head_dim=f.int("v_head_dim"),
                  q_lora_rank=f.int("q_lora_rank", 0, minimum=0))
    spec["mla"] = mla
    if not any(f.has(k) for k in ("n_routed_experts", "moe_intermediate_size", "num_experts_per_tok")):
        return spec
    first = f.int("first_k_dense_replace", 0, minimum=0, maximum=layers)
    freq = f.int("moe_layer_freq", 1)
    # noaux_tc routing adds e_score_correction_bias, one per routed expert (DeepSeek-V3 §2.1.2)
    bias = f.str("topk_method", routing_default) == "noaux_tc"
    moe = _moe(f, experts="n_routed_experts", width="moe_intermediate_size",
               is_moe=[i >= first and i % freq == 0 for i in range(layers)],
               layout_key="first_k_dense_replace" if freq == 1 else "moe_layer_freq",
               shared=f.int("n_shared_experts", 0, minimum=0), router_bias=bias)
    return spec | {"moe": moe}


def _deepseek_v2(f: Fields) -> dict:
    return _deepseek(f, routing_default="greedy")


def _deepseek_v3(f: Fields) -> dict:
    """DeepSeek-V3, and Kimi K2 (model_type kimi_k2, architectures DeepseekV3ForCausalLM)."""
    return _deepseek(f, routing_default="noaux_tc")


def _gpt(f: Fields) -> dict:
    """GPT-2/3: learned positions, LayerNorm, biases everywhere, tied embeddings, 4x GELU MLP."""
    _dense(f, "gpt")
    spec = _decoder(_with(f, **_gelu_width(f)), tied=True, attention_bias=True)
    return spec | {"mlp_kind": "plain", "norm_kind": "layer", "mlp_bias": f.bool("mlp_bias", True),
                   "learned_positions": f.int("max_position_embeddings")}


def _gptj(f: Fields) -> dict:
    """GPTJForCausalLM: attention and MLP in parallel off ONE LayerNorm (ln_1); q/k/v/out_proj
    without bias, fc_in / fc_out with, a GELU MLP of n_inner (null: 4 n_embd); rotary positions
    (rotary_dim), no learned table; an untied lm_head with a bias; final ln_f."""
    _dense(f, "gptj")
    spec = _decoder(_with(f, **_gelu_width(f)))
    return spec | {"mlp_kind": "plain", "norm_kind": "layer", "layer_norms": 1, "qkv_bias": False,
                   "o_bias": False, "mlp_bias": True, **_biased_head(f, "gptj")}


def _gpt_neox(f: Fields) -> dict:
    """GPTNeoXForCausalLM (Pythia, GPT-NeoX-20B): input and post-attention LayerNorms, fused
    query_key_value and dense with biases (attention_bias, default true), a biased GELU MLP of
    intermediate_size, rotary positions on rotary_pct of each head, an untied embed_out without
    bias. use_parallel_residual changes the wiring, not the count."""
    _dense(f, "gpt_neox")
    spec = _decoder(f, attention_bias=True)
    return spec | {"mlp_kind": "plain", "norm_kind": "layer", "mlp_bias": True}


def _phi(f: Fields) -> dict:
    """PhiForCausalLM (phi-1, phi-1.5, phi-2): attention and MLP in parallel off ONE LayerNorm;
    q/k/v_proj and dense with biases, fc1 / fc2 with biases (a GELU MLP of intermediate_size),
    partial rotary positions, final_layernorm, an untied lm_head with a bias."""
    _dense(f, "phi")
    if f.bool("qk_layernorm", False):
        raise f.error(f"key {f.key('qk_layernorm')} true (LayerNorms of head_dim on q and k) is not supported")
    spec = _decoder(f)
    return spec | {"mlp_kind": "plain", "norm_kind": "layer", "layer_norms": 1, "qkv_bias": True,
                   "o_bias": True, "mlp_bias": True, **_biased_head(f, "phi")}


def _falcon(f: Fields) -> dict:
    """FalconForCausalLM (configuration_falcon.py / modeling_falcon.py). query_key_value holds
    num_kv_heads K and V heads with new_decoder_architecture (num_kv_heads defaults to
    num_attention_heads), else one with multi_query (default true; num_kv_heads is then
    ignored, as FalconAttention ignores it), else num_attention_heads;
    head_dim is hidden / heads. Norms: two LayerNorms without parallel_attn; with it (default
    true) num_ln_in_parallel_attn of them (ln_attn and ln_mlp; 2 by default with the new
    architecture, else 1: input_layernorm). `bias` (default false) puts biases on every linear;
    a GELU MLP of ffn_hidden_size (4 x hidden); tied embeddings; ALiBi adds no parameter."""
    _dense(f, "falcon")
    if f.has("num_key_value_heads"):
        raise f.error(f"key {f.key('num_key_value_heads')} is not Falcon's: its KV heads come from "
                      f"{f.key('num_kv_heads')} or {f.key('multi_query')}")
    heads = f.int("num_attention_heads")
    new = f.bool("new_decoder_architecture", False)
    if new:
        kv = f.int("num_kv_heads", heads)
        if heads % kv:
            raise f.error(f"key {f.key('num_kv_heads')} ({kv}) must divide {f.key('num_attention_heads')} ({heads})")
    elif f.bool("multi_query", True):
        kv = 1  # num_kv_heads is ignored (falcon-7b's config says 71: FalconConfig's default)
    else:
        kv = heads  # query_key_value is 3 x hidden
        if f.int("num_kv_heads", heads) != heads:
            raise f.error(f"key {f.key('num_kv_heads')} ({f.int('num_kv_heads')}) needs "
                          f"{f.key('new_decoder_architecture')} true; without it and without "
                          f"{f.key('multi_query')} every head has its K and V ({heads})")
    parallel_norms = f.int("num_ln_in_parallel_attn", 2 if new else 1, maximum=2)
    bias = f.bool("bias", False)
    spec = _decoder(_with(f, num_key_value_heads=kv, **_gelu_width(f, "ffn_hidden_size")), tied=True)
    return spec | {"mlp_kind": "plain", "norm_kind": "layer", "qkv_bias": bias, "o_bias": bias,
                   "mlp_bias": bias, "layer_norms": parallel_norms if f.bool("parallel_attn", True) else 2}


FAMILIES: dict[str, Callable[[Fields], dict]] = {
    "llama": _llama, "mistral": _mistral, "mixtral": _mixtral, "phi3": _phi3,
    "qwen2": _qwen2, "qwen2_moe": _qwen2_moe, "qwen3": _qwen3, "qwen3_moe": _qwen3_moe,
    "gemma": _gemma, "gemma2": _gemma2, "gemma3_text": _gemma3, "olmo2": _olmo2, "gpt_oss": _gpt_oss,
    "llama4": _llama4, "llama4_text": _llama4_text,
    "deepseek_v2": _deepseek_v2, "deepseek_v3": _deepseek_v3, "kimi_k2": _deepseek_v3,
    "gpt3": _gpt, "gpt2": _gpt, "gptj": _gptj, "gpt_neox": _gpt_neox, "phi": _phi, "falcon": _falcon,
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
    "GPT2LMHeadModel": "gpt2", "GPTJForCausalLM": "gptj", "GPTNeoXForCausalLM": "gpt_neox",
    "PhiForCausalLM": "phi", "FalconForCausalLM": "falcon",
}


