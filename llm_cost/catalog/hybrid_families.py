"""Hybrid families: most layers keep a fixed-size recurrent state (linear attention or Mamba) and a
few keep K/V, each as its modeling code defines it. The schedule of recurrent and attention layers
must be read from the config (`layer_types`, or the family's own key); a hybrid whose schedule
cannot be read is refused, never counted as all-attention.

- qwen3_next (Qwen3NextForCausalLM): Gated DeltaNet layers (`linear_*` keys) and, every
  `full_attention_interval`-th layer, gated attention (q_proj doubled for the output gate, q/k norms
  of head_dim); Qwen2-MoE's experts (routed, one shared expert of shared_expert_intermediate_size
  behind a hidden -> 1 gate). The Hub checkpoint also ships one MTP layer that no config key names.
  How that is known: vLLM's Qwen3NextMultiTokenPredictor (qwen3_next_mtp.py) loads `mtp.fc`
  (2H -> H, no bias), `mtp.pre_fc_norm_embedding`, `mtp.pre_fc_norm_hidden`, `mtp.layers.*` (a
  Qwen3NextDecoderLayer) and `mtp.norm`, `getattr(config, "num_nextn_predict_layers", 1)` of them;
  and the Hub total of Qwen3-Next-80B-A3B (81,324,862,720) exceeds that of Qwen3-Coder-Next, the same
  text model without it (79,674,391,296), by exactly one such module with the model's embedding and
  head shared (tests/test_hybrid_state.py). Counted as 1 unless the key says otherwise.
- qwen3_5_moe (Qwen3_5MoeForConditionalGeneration): the same text model in `text_config`, with
  `layer_types`, `attn_output_gate` and `mtp_num_hidden_layers` stated (`mtp_use_dedicated_embeddings`
  false: shared tables) and a Qwen3-VL style vision tower in `vision_config` (`multimodal.qwen_vision`).
- qwen3_5 (Qwen3_5ForConditionalGeneration): Qwen3.5's dense sizes, the same text model with a
  dense MLP in every layer, and the same tower.
- minimax_m1 (MiniMaxM1ForCausalLM): lightning attention where `attn_type_list` is 0, softmax GQA
  attention where it is 1; every layer MoE (router without bias).
- the Mamba hybrids (granitemoehybrid, bamba, nemotron_h, jamba, falcon_h1): `mamba_families`,
  joined in the registry at the bottom.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llm_cost.catalog.decoder import decoder, layer_list, moe_spec
from llm_cost.catalog.fields import Fields
from llm_cost.catalog.gpt_families import with_keys
from llm_cost.catalog.mamba_families import MAMBA_ARCHITECTURES, MAMBA_FAMILIES
from llm_cost.catalog.multimodal import qwen_vision
from llm_cost.catalog.windows import window_fields

if TYPE_CHECKING:  # annotations only
    from llm_cost.specs.model_towers import RecurrentSpec


def _gated_deltanet(fields: Fields) -> RecurrentSpec:
    from llm_cost.specs.model_towers import RecurrentSpec  # built here: not at startup
    return RecurrentSpec("gated_deltanet", num_heads=fields.int("linear_num_value_heads"),
                         head_dim=fields.int("linear_value_head_dim"), state_dim=fields.int("linear_key_head_dim"),
                         num_groups=fields.int("linear_num_key_heads"),
                         conv_kernel=fields.int("linear_conv_kernel_dim"))


def _interval_schedule(fields: Fields, layers: int) -> dict:
    """Qwen3-Next without `layer_types`: every full_attention_interval-th layer attends, the others
    are Gated DeltaNet; without that key either, the schedule is unknown and the config refused."""
    if not fields.has("full_attention_interval"):
        raise fields.error(f"a hybrid needs its layer schedule: no {fields.key('layer_types')} and no "
                           f"{fields.key('full_attention_interval')}")
    step = fields.int("full_attention_interval")
    return window_fields(fields, ["full" if (layer + 1) % step == 0 else "recurrent" for layer in range(layers)])


def _gated_deltanet_text(fields: Fields, *, mtp_key: str, tied: bool = False) -> dict:
    """Qwen3-Next's / Qwen3.5's text model without its MLPs: the layer schedule, Gated DeltaNet
    mixers, gated attention with q/k norms of head_dim, `mtp_key` MTP layers (1 unless stated)."""
    spec = decoder(fields, tied=tied, windows=_interval_schedule)
    if "recurrent" not in spec.get("layer_types", ()):
        raise fields.error(f"key {fields.key('layer_types')} names no linear_attention layer: "
                           f"not a Gated DeltaNet hybrid")
    return spec | {"qk_norm": "head", "recurrent": _gated_deltanet(fields),
                   "attention_output_gate": fields.bool("attn_output_gate", True),
                   "mtp_layers": fields.int(mtp_key, 1, minimum=0)}


def _qwen3_next_text(fields: Fields, *, mtp_key: str) -> dict:
    spec = _gated_deltanet_text(fields, mtp_key=mtp_key)
    layers = spec["num_layers"]
    step = fields.int("decoder_sparse_step", 1)
    dense = set(layer_list(fields, "mlp_only_layers", layers))
    moe = moe_spec(fields, experts="num_experts", width="moe_intermediate_size",
                   is_moe=[layer not in dense and (layer + 1) % step == 0 for layer in range(layers)],
                   layout_key="decoder_sparse_step" if step > 1 else "mlp_only_layers", shared=1)
    return spec | {"moe": moe, "shared_expert_gate": True,
                   "shared_expert_intermediate_size": fields.int("shared_expert_intermediate_size")}


def _qwen3_next(fields: Fields) -> dict:
    return _qwen3_next_text(fields, mtp_key="num_nextn_predict_layers")


def _qwen3_5_moe(fields: Fields) -> dict:
    text_fields = fields.sub("text_config")
    if text_fields.bool("mtp_use_dedicated_embeddings", False):
        raise text_fields.error(f"key {text_fields.key('mtp_use_dedicated_embeddings')} true "
                                f"(an MTP embedding of its own) is not counted")
    if not text_fields.has("intermediate_size"):  # every layer MoE: no dense MLP, its width unused
        if (text_fields.has("mlp_only_layers") and text_fields.int_list("mlp_only_layers")
                or text_fields.int("decoder_sparse_step", 1) > 1):
            raise text_fields.error(f"missing key {text_fields.key('intermediate_size')} (the dense layers' width)")
        text_fields = with_keys(text_fields, intermediate_size=text_fields.int("moe_intermediate_size"))
    text = _qwen3_next_text(with_keys(text_fields, num_nextn_predict_layers=None), mtp_key="mtp_num_hidden_layers")
    return text | qwen_vision(fields)


def _qwen3_5(fields: Fields) -> dict:
    """Qwen3_5ForConditionalGeneration (Qwen3.5 dense: 0.8B to 27B): Qwen3.5-MoE's text model with
    a dense SwiGLU MLP of intermediate_size in every layer (Qwen3_5TextConfig has no experts), its
    Qwen3-VL tower in `vision_config`."""
    text_fields = fields.sub("text_config")
    if text_fields.bool("mtp_use_dedicated_embeddings", False):
        raise text_fields.error(f"key {text_fields.key('mtp_use_dedicated_embeddings')} true "
                                f"(an MTP embedding of its own) is not counted")
    if text_fields.has("num_experts"):
        raise text_fields.error(f"key {text_fields.key('num_experts')} names experts: "
                                f"a qwen3_5_moe config, not qwen3_5")
    text = _gated_deltanet_text(with_keys(text_fields, num_nextn_predict_layers=None), mtp_key="mtp_num_hidden_layers",
                                tied=fields.bool("tie_word_embeddings", False))
    return text | qwen_vision(fields)


def _minimax_m1(fields: Fields) -> dict:
    layers = fields.int("num_hidden_layers")
    kinds = fields.int_list("attn_type_list", maximum=1)  # required: the schedule is not guessed
    if len(kinds) != layers:
        raise fields.error(f"key {fields.key('attn_type_list')} has {len(kinds)} entries, "
                           f"{fields.key('num_hidden_layers')} is {layers}")

    def schedule(config: Fields, num_layers: int) -> dict:
        return window_fields(config, ["full" if attends else "recurrent" for attends in kinds])

    spec = decoder(with_keys(fields, sliding_window=None), windows=schedule)
    if fields.int("shared_intermediate_size", 0, minimum=0):
        raise fields.error(f"key {fields.key('shared_intermediate_size')} > 0 (a shared expert) is not counted")
    moe = moe_spec(fields, experts="num_local_experts", width="intermediate_size", is_moe=[True] * layers,
                   layout_key="num_local_experts")
    heads, head_dim = spec["num_heads"], spec["head_dim"]
    from llm_cost.specs.model_towers import RecurrentSpec  # built here: not at startup
    return spec | {"moe": moe, "recurrent": RecurrentSpec("lightning", num_heads=heads, head_dim=head_dim,
                                                          state_dim=head_dim)}


HYBRID_FAMILIES = {"qwen3_next": _qwen3_next, "qwen3_5_moe": _qwen3_5_moe, "qwen3_5": _qwen3_5,
                   "minimax_m1": _minimax_m1, **MAMBA_FAMILIES}
HYBRID_ARCHITECTURES = {"Qwen3NextForCausalLM": "qwen3_next", "Qwen3_5MoeForConditionalGeneration": "qwen3_5_moe",
                        "Qwen3_5ForConditionalGeneration": "qwen3_5", "MiniMaxM1ForCausalLM": "minimax_m1",
                        **MAMBA_ARCHITECTURES}
