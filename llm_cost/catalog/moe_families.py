"""MoE families with dense first layers, shared experts or MTP layers, each as its transformers
`configuration_*.py` / `modeling_*.py` (or the checkpoint's own remote code) defines it:

- granitemoe: every layer MoE; ParallelExperts `input_linear` (gate and up, 2 x intermediate_size)
  and `output_linear` per expert; a router without bias (GraniteMoeTopKGating); attention biases
  when `attention_bias`; Granite's multipliers are scalars.
- deepseek (DeepSeek-MoE v1, remote code `modeling_deepseek.py`): Llama attention (no MLA), MoE
  from `first_k_dense_replace` on, every `moe_layer_freq`-th layer; `n_shared_experts` of
  `moe_intermediate_size` (one DeepseekMLP of n_shared x moe_intermediate_size: the same count), a
  router without bias (MoEGate, softmax scoring).
- glm4_moe (GLM-4.5, -Air): q/k/v biases when `attention_bias` (o_proj never has one), q/k norms
  of head_dim when `use_qk_norm`, partial RoPE (no parameter), dense first layers, routed +
  shared experts with the `noaux_tc` correction bias, and `num_nextn_predict_layers` MTP layers in
  DeepSeek-V3's layout (eh_proj, enorm, hnorm, shared_head.norm, and their own embed_tokens and
  shared_head.head copies).
"""

from __future__ import annotations

from llm_cost.catalog.decoder import decoder, moe_spec
from llm_cost.catalog.fields import Fields
from llm_cost.catalog.gpt_families import with_keys


def _granitemoe(f: Fields) -> dict:
    spec = decoder(f)
    return spec | {"moe": moe_spec(f, experts="num_local_experts", width="intermediate_size",
                                   is_moe=[True] * spec["num_layers"], layout_key="num_local_experts")}


def first_dense_moe(f: Fields, spec: dict, *, router_bias: bool) -> dict:
    """DeepSeek's layout: layer i is MoE when i >= first_k_dense_replace and i % moe_layer_freq == 0,
    with n_shared_experts beside the routed ones."""
    layers = spec["num_layers"]
    first = f.int("first_k_dense_replace", 0, minimum=0, maximum=layers)
    freq = f.int("moe_layer_freq", 1)
    return {"moe": moe_spec(f, experts="n_routed_experts", width="moe_intermediate_size",
                            is_moe=[i >= first and i % freq == 0 for i in range(layers)],
                            layout_key="first_k_dense_replace" if freq == 1 else "moe_layer_freq",
                            shared=f.int("n_shared_experts", 0, minimum=0), router_bias=router_bias)}


def _deepseek_v1(f: Fields) -> dict:
    spec = decoder(f)
    return spec | first_dense_moe(f, spec, router_bias=False)


def _glm4_moe(f: Fields) -> dict:
    bias = f.bool("attention_bias", False)
    spec = decoder(with_keys(f, attention_bias=False), qkv_bias=bias)
    routing = f.str("topk_method", "noaux_tc")  # Glm4MoeTopkRouter always has e_score_correction_bias
    return spec | first_dense_moe(f, spec, router_bias=routing == "noaux_tc") | {
        "qk_norm": "head" if f.bool("use_qk_norm", False) else "none", "mtp_stores_tables": True}


MOE_FAMILIES = {"granitemoe": _granitemoe, "deepseek": _deepseek_v1, "glm4_moe": _glm4_moe}
MOE_ARCHITECTURES = {"GraniteMoeForCausalLM": "granitemoe", "DeepseekForCausalLM": "deepseek",
                     "Glm4MoeForCausalLM": "glm4_moe"}
