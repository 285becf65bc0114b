"""Mamba hybrids: most layers a Mamba mixer with a fixed-size state per sequence, a few attention
layers with K/V (Falcon-H1: both in every layer), each as its modeling code defines it. The
schedule must be read from the config (`layer_types`, `attn_layer_indices`, the periods,
Nemotron-H's pattern); a hybrid whose schedule cannot be read is refused, never counted as
all-attention.

- granitemoehybrid (Granite 4.0-H; Granite 4.0's dense sizes, all attention), bamba (Bamba-9B) and
  nemotron_h (Nemotron-H, Nemotron Nano 2): Mamba-2 hybrids; jamba: a Mamba-1 hybrid; falcon_h1:
  attention and Mamba-2 side by side in every layer. Each adapter says what its layers hold.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llm_cost.catalog.decoder import decoder, moe_spec
from llm_cost.catalog.fields import Fields
from llm_cost.catalog.gpt_families import with_keys
from llm_cost.catalog.windows import window_fields

if TYPE_CHECKING:  # annotations only
    from llm_cost.specs.model_towers import RecurrentSpec

MAMBA_LAYER_NAMES = {"mamba": "recurrent", "attention": "full"}  # GraniteMoeHybrid's layer_types


def _mamba2(fields: Fields) -> RecurrentSpec:
    """The Mamba2Mixer of Bamba / GraniteMoeHybrid keys (`mamba_*`), checked against mamba_expand.
    `mamba_d_head` "auto" is mamba_expand x hidden_size / mamba_n_heads (BambaConfig)."""
    heads = fields.int("mamba_n_heads")
    if fields.get("mamba_d_head", None) == "auto":
        head_dim = fields.int("mamba_expand", 2) * fields.int("hidden_size") // heads
    else:
        head_dim = fields.int("mamba_d_head")
    from llm_cost.specs.model_towers import RecurrentSpec  # built here: not at startup
    spec = RecurrentSpec("mamba2", num_heads=heads, head_dim=head_dim,
                         state_dim=fields.int("mamba_d_state"), num_groups=fields.int("mamba_n_groups", 1),
                         conv_kernel=fields.int("mamba_d_conv", 4), conv_bias=fields.bool("mamba_conv_bias", True),
                         proj_bias=fields.bool("mamba_proj_bias", False))
    expand = fields.int("mamba_expand", 2)
    if spec.inner_dim != expand * fields.int("hidden_size"):
        raise fields.error(f"keys {fields.key('mamba_n_heads')} x {fields.key('mamba_d_head')} ({spec.inner_dim}) "
                           f"must equal {fields.key('mamba_expand')} x {fields.key('hidden_size')} "
                           f"({expand * fields.int('hidden_size')})")
    return spec


def _granitemoehybrid(fields: Fields) -> dict:
    """GraniteMoeHybridForCausalLM (Granite 4.0-H): each layer a Mamba-2 mixer or attention
    (`layer_types` of "mamba" / "attention", required), then a shared MLP of
    shared_intermediate_size (input_linear 2 x, output_linear) and, with num_local_experts > 0,
    routed experts of intermediate_size behind a router without bias."""
    layers = fields.int("num_hidden_layers")
    if not fields.has("layer_types"):
        raise fields.error(f"a hybrid needs its layer schedule: no {fields.key('layer_types')}")
    names = fields.str_list("layer_types")
    if len(names) != layers or set(names) - set(MAMBA_LAYER_NAMES):
        raise fields.error(f"key {fields.key('layer_types')} must name 'mamba' or 'attention' "
                           f"for each of {layers} layers")
    kinds = [MAMBA_LAYER_NAMES[name] for name in names]
    shared = fields.int("shared_intermediate_size")
    experts = fields.int("num_local_experts", 0, minimum=0)
    base = with_keys(fields, layer_types=None,
                     intermediate_size=shared if not experts else fields.int("intermediate_size"))
    spec = decoder(base, tied=True, windows=lambda config, num_layers: window_fields(config, kinds))
    if "recurrent" in kinds:  # Granite 4.0's dense models (micro, 1b, 350m) ship as this class, all attention
        spec |= {"recurrent": _mamba2(fields)}
    if not experts:
        return spec
    moe = moe_spec(fields, experts="num_local_experts", width="intermediate_size", is_moe=[True] * layers,
                   layout_key="num_local_experts", shared=1)
    return spec | {"moe": moe, "shared_expert_intermediate_size": shared}


def _bamba(fields: Fields) -> dict:
    """BambaForCausalLM (Bamba-9B): attention at the layers `attn_layer_indices` names (required:
    BambaConfig would make every layer Mamba without it, and the schedule is not guessed), a Mamba-2
    mixer elsewhere; every layer then a dense SwiGLU MLP of intermediate_size, two RMSNorms;
    untied embeddings by default (BambaConfig, configuration_bamba.py)."""
    layers = fields.int("num_hidden_layers")
    if not fields.has("attn_layer_indices"):
        raise fields.error(f"a hybrid needs its layer schedule: no {fields.key('attn_layer_indices')}")
    attention = set(fields.int_list("attn_layer_indices", maximum=layers - 1))
    kinds = ["full" if layer in attention else "recurrent" for layer in range(layers)]
    base = with_keys(fields, sliding_window=None)
    return (decoder(base, windows=lambda config, num_layers: window_fields(config, kinds))
            | {"recurrent": _mamba2(fields)})


def _falcon_h1(fields: Fields) -> dict:
    """FalconH1ForCausalLM (Falcon-H1): every layer runs GQA attention (head_dim as stated) and a
    Mamba-2 mixer side by side on one RMSNorm's output (their outputs summed), then a SwiGLU MLP
    behind a second norm; untied embeddings by default (FalconH1Config). The mixer's inner width is
    `mamba_d_ssm` (required; mamba_expand x hidden_size when null), `mamba_d_head` "auto" = d_ssm / heads; its
    gated RMSNorm only with `mamba_rms_norm` (default false). The muP multipliers are scalars. Biases
    (attention_bias, mlp_bias, mamba_proj_bias, projectors_bias) and mamba_use_mlp false are refused:
    not counted."""
    for key in ("attention_bias", "mlp_bias", "mamba_proj_bias", "projectors_bias"):
        if fields.bool(key, False):
            raise fields.error(f"key {fields.key(key)} true is not counted")
    if not fields.bool("mamba_use_mlp", True):
        raise fields.error(f"key {fields.key('mamba_use_mlp')} false (layers without an MLP) is not counted")
    if fields.has("attn_layer_indices"):
        raise fields.error(f"key {fields.key('attn_layer_indices')}: Falcon-H1 layers all attend, "
                           f"a schedule is not counted")
    heads = fields.int("mamba_n_heads")
    if "mamba_d_ssm" not in fields.data:  # FalconH1Config's default (1024) fits no released size: required
        raise fields.error(f"missing key {fields.key('mamba_d_ssm')} "
                           f"(the Mamba inner width; null: mamba_expand x hidden)")
    d_ssm = (fields.int("mamba_d_ssm") if fields.has("mamba_d_ssm")
             else fields.int("mamba_expand", 2) * fields.int("hidden_size"))
    head_dim = d_ssm // heads if fields.get("mamba_d_head", "auto") == "auto" else fields.int("mamba_d_head")
    if heads * head_dim != d_ssm:
        raise fields.error(f"keys {fields.key('mamba_n_heads')} x {fields.key('mamba_d_head')} ({heads * head_dim}) "
                           f"must equal {fields.key('mamba_d_ssm')} ({d_ssm})")
    from llm_cost.specs.model_towers import RecurrentSpec  # built here: not at startup
    mamba = RecurrentSpec("mamba2", num_heads=heads, head_dim=head_dim, state_dim=fields.int("mamba_d_state"),
                          num_groups=fields.int("mamba_n_groups", 1), conv_kernel=fields.int("mamba_d_conv", 4),
                          conv_bias=fields.bool("mamba_conv_bias", True),
                          gated_norm=fields.bool("mamba_rms_norm", False))
    spec = decoder(with_keys(fields, sliding_window=None), windows=lambda config, num_layers: {})
    return spec | {"recurrent": mamba, "parallel_mixers": True}


# Nemotron-H's block letters (hybrid_override_pattern) and names (layers_block_type)
NEMOTRON_BLOCKS = {"M": "recurrent", "*": "full", "-": "mlp", "mamba": "recurrent", "attention": "full",
                   "mlp": "mlp"}


def _nemotron_h(fields: Fields) -> dict:
    """NemotronHForCausalLM (Nemotron-H, Nemotron Nano 2): each block ONE sublayer behind an RMSNorm,
    a Mamba-2 mixer ("M"), GQA attention ("*") or a squared-ReLU MLP of up_proj / down_proj ("-"),
    from `hybrid_override_pattern` (or `layers_block_type`), required; untied embeddings by default.
    The Mamba keys as NemotronHConfig names them (mamba_num_heads, mamba_head_dim, ssm_state_size,
    n_groups, conv_kernel, use_conv_bias, use_bias), with the exported spellings mamba_state_dim and
    mamba_num_groups accepted; MoE blocks ("E") are not counted."""
    layers = fields.int("num_hidden_layers")
    if fields.has("hybrid_override_pattern"):
        key, blocks = "hybrid_override_pattern", list(fields.str("hybrid_override_pattern"))
    elif fields.has("layers_block_type"):
        key, blocks = "layers_block_type", fields.str_list("layers_block_type")
    else:
        raise fields.error(f"a hybrid needs its layer schedule: no {fields.key('hybrid_override_pattern')} "
                           f"or {fields.key('layers_block_type')}")
    unknown = sorted(set(blocks) - set(NEMOTRON_BLOCKS))
    if unknown or len(blocks) != layers:
        raise fields.error(f"key {fields.key(key)} must name one of M, *, - (mamba, attention, mlp) for each of "
                           f"{layers} layers" + (f"; {unknown} not counted" if unknown else ""))
    kinds = [NEMOTRON_BLOCKS[block] for block in blocks]

    state_key = ("ssm_state_size" if fields.has("ssm_state_size") or not fields.has("mamba_state_dim")
                 else "mamba_state_dim")
    groups_key = "n_groups" if fields.has("n_groups") or not fields.has("mamba_num_groups") else "mamba_num_groups"
    from llm_cost.specs.model_towers import RecurrentSpec  # built here: not at startup
    mamba = RecurrentSpec("mamba2", num_heads=fields.int("mamba_num_heads"), head_dim=fields.int("mamba_head_dim"),
                          state_dim=fields.int(state_key), num_groups=fields.int(groups_key, 8),
                          conv_kernel=fields.int("conv_kernel", 4), conv_bias=fields.bool("use_conv_bias", True),
                          proj_bias=fields.bool("use_bias", False) or fields.bool("mamba_proj_bias", False))
    spec = decoder(with_keys(fields, sliding_window=None),
                   windows=lambda config, num_layers: window_fields(config, kinds))
    return spec | {"recurrent": mamba, "single_sublayer_blocks": True, "layer_norms": 1, "mlp_kind": "plain"}


def _jamba(fields: Fields) -> dict:
    """JambaForCausalLM: attention where i % attn_layer_period == attn_layer_offset, a Mamba-1
    mixer (JambaMambaMixer, with its dt / B / C layernorms) elsewhere; experts of intermediate_size
    where i % expert_layer_period == expert_layer_offset (a router without bias), a dense MLP
    elsewhere. Both periods are required: the schedule is not guessed."""
    layers = fields.int("num_hidden_layers")
    for key in ("attn_layer_period", "attn_layer_offset"):
        if not fields.has(key):
            raise fields.error(f"a hybrid needs its layer schedule: no {fields.key(key)}")
    period = fields.int("attn_layer_period")
    offset = fields.int("attn_layer_offset", minimum=0, maximum=period - 1)  # JambaConfig checks it too
    kinds = ["full" if layer % period == offset else "recurrent" for layer in range(layers)]
    hidden = fields.int("hidden_size")
    inner = fields.int("mamba_expand", 2) * hidden
    dt_rank = fields.get("mamba_dt_rank", "auto")
    dt_rank = -(-hidden // 16) if dt_rank == "auto" else fields.int("mamba_dt_rank")
    from llm_cost.specs.model_towers import RecurrentSpec  # built here: not at startup
    mamba = RecurrentSpec("mamba1", num_heads=1, head_dim=inner, state_dim=fields.int("mamba_d_state", 16),
                          conv_kernel=fields.int("mamba_d_conv", 4), conv_bias=fields.bool("mamba_conv_bias", True),
                          proj_bias=fields.bool("mamba_proj_bias", False), dt_rank=dt_rank)
    spec = decoder(fields, windows=lambda config, num_layers: window_fields(config, kinds)) | {"recurrent": mamba}
    if not fields.has("num_experts") or fields.int("num_experts") == 1:
        return spec
    e_period = fields.int("expert_layer_period", 2)
    e_offset = fields.int("expert_layer_offset", 1, minimum=0, maximum=e_period - 1)
    moe = moe_spec(fields, experts="num_experts", width="intermediate_size",
                   is_moe=[layer % e_period == e_offset for layer in range(layers)], layout_key="expert_layer_period")
    return spec | {"moe": moe}


MAMBA_FAMILIES = {"granitemoehybrid": _granitemoehybrid, "nemotron_h": _nemotron_h, "jamba": _jamba,
                  "bamba": _bamba, "falcon_h1": _falcon_h1}
MAMBA_ARCHITECTURES = {"GraniteMoeHybridForCausalLM": "granitemoehybrid", "NemotronHForCausalLM": "nemotron_h",
                       "JambaForCausalLM": "jamba", "BambaForCausalLM": "bamba",
                       "FalconH1ForCausalLM": "falcon_h1"}
