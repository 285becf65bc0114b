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


def _granitemoe(fields: Fields) -> dict:
    spec = decoder(fields)
    return spec | {"moe": moe_spec(fields, experts="num_local_experts", width="intermediate_size",
                                   is_moe=[True] * spec["num_layers"], layout_key="num_local_experts")}


def first_dense_moe(fields: Fields, spec: dict, *, router_bias: bool) -> dict:
    """DeepSeek's layout: layer i is MoE when i >= first_k_dense_replace and i % moe_layer_freq == 0,
    with n_shared_experts beside the routed ones."""
    layers = spec["num_layers"]
    first = fields.int("first_k_dense_replace", 0, minimum=0, maximum=layers)
    freq = fields.int("moe_layer_freq", 1)
    return {"moe": moe_spec(fields, experts="n_routed_experts", width="moe_intermediate_size",
                            is_moe=[layer >= first and layer % freq == 0 for layer in range(layers)],
                            layout_key="first_k_dense_replace" if freq == 1 else "moe_layer_freq",
                            shared=fields.int("n_shared_experts", 0, minimum=0), router_bias=router_bias)}


def _deepseek_v1(fields: Fields) -> dict:
    spec = decoder(fields)
    return spec | first_dense_moe(fields, spec, router_bias=False)


def _glm4_moe(fields: Fields) -> dict:
    bias = fields.bool("attention_bias", False)
    spec = decoder(with_keys(fields, attention_bias=False), qkv_bias=bias)
    routing = fields.str("topk_method", "noaux_tc")  # Glm4MoeTopkRouter always has e_score_correction_bias
    return spec | first_dense_moe(fields, spec, router_bias=routing == "noaux_tc") | {
        "qk_norm": "head" if fields.bool("use_qk_norm", False) else "none", "mtp_stores_tables": True}


MOE_FAMILIES = {"granitemoe": _granitemoe, "deepseek": _deepseek_v1, "glm4_moe": _glm4_moe}
MOE_ARCHITECTURES = {"GraniteMoeForCausalLM": "granitemoe", "DeepseekForCausalLM": "deepseek",
                     "Glm4MoeForCausalLM": "glm4_moe"}
