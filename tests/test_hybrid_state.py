"""Hybrid models (issue 27): layers that keep a fixed-size recurrent state instead of K/V.

Goldens: each hybrid config counted to the parameter against its Hub total (source in each test),
every part apart; the state of one Gated DeltaNet, one lightning-attention and one Mamba-2 layer by
hand; a hybrid's capacity at 128k context against a pure-attention model of the same width; the
state read and written in the step time; the refusals that keep a hybrid from being counted as
all-attention. Tolerance: exact integers (bytes and parameters).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from llm_cost.catalog import load_accelerator, load_model
from llm_cost.counts import flops_per_token, kv_bytes, kv_bytes_per_token, param_counts
from llm_cost.counts.mtp import mtp_params
from llm_cost.counts.parts import checkpoint_params
from llm_cost.counts.recurrent import recurrent_flops_per_token, state_bytes_per_sequence
from llm_cost.errors import ConfigError, LlmCostError
from llm_cost.roofline import step_time
from llm_cost.serving.capacity import sequences_that_fit
from llm_cost.specs import preset
from llm_cost.specs.deployment import Deployment

from helpers import CONFIGS, edited_config as edited, load_config as load  # noqa: E402


# ---- counted to the parameter --------------------------------------------------------------------

def test_qwen3_next_80b_a3b_gated_deltanet_and_its_unnamed_mtp():
    """Qwen/Qwen3-Next-80B-A3B-Thinking: Hub safetensors.total 81,324,862,720 (public tables of Hub
    totals, Instruct and Thinking alike); Qwen/Qwen3-Coder-Next, the same text model without the MTP
    layer, 79,674,391,296. Card: "80B total, 3B activated".

    H 2048, L 48 (every 4th full attention: 12; 36 Gated DeltaNet), 512 experts of 512, k 10, one
    shared expert of 512 behind a 2048 -> 1 gate, V 151936, untied.
    Gated attention: q_proj 2048 x (16 x 256 x 2) = 16,777,216 (query + output gate), k/v
    2 x 2048 x 512 = 2,097,152, o_proj 4096 x 2048 = 8,388,608, q/k norms 512: 27,263,488.
    Gated DeltaNet (nk 16, dk 128, nv 32, dv 128, K 4): in_proj_qkvz 2048 x (2 x 2048 + 2 x 4096)
    = 25,165,824, in_proj_ba 2048 x 64 = 131,072, conv1d 8192 x 4 = 32,768, dt_bias + A_log 64,
    norm 128, out_proj 4096 x 2048 = 8,388,608: 33,718,464.
    MoE: 512 x 3 x 2048 x 512 = 1,610,612,736 + shared 3,145,728 + 2,048 + router 1,048,576;
    norms 4,096. Attention layer 1,642,076,672; DeltaNet layer 1,648,531,648.
    text = 12 x 1,642,076,672 + 36 x 1,648,531,648 + 2 x 311,164,928 + 2,048 = 79,674,391,296.
    MTP (no config key: the checkpoint's mtp.* tensors, one full-attention MoE layer + mtp.norm +
    mtp.fc 2 x 2048^2 + two pre-fc norms, shared tables): 1,650,471,424. checkpoint 81,324,862,720.
    """
    m = load("qwen3-next-80b-a3b-thinking.json")
    p, c = param_counts(m), checkpoint_params(m)
    assert m.num_recurrent_layers == 36 and m.mtp_layers == 1 and not m.mtp_stores_tables
    assert p.attention_block_per_layer == 27_263_488 and p.recurrent_per_layer == 33_718_464
    assert p.moe_layer == 1_642_076_672
    assert c.text == 79_674_391_296
    assert c.mtp == mtp_params(m).own == 1_650_471_424
    assert c.total == 81_324_862_720
    assert round((p.active - p.embedding - p.lm_head) / 1e9) == 3  # the card's "3B activated"


def test_qwen3_5_397b_a17b_parts():
    """Qwen/Qwen3.5-397B-A17B: Hub total 403,397,928,944 ("403.4B"), split by a public record of
    its index: text 396,346,350,336, vision 456,010,480, MTP 6,595,568,128.

    Text as Qwen3-Next (H 4096, L 60: 15 gated attention of 32 x 256 heads, 45 DeltaNet of nk 16 x 128,
    nv 64 x 128; 512 experts of 1024, k 10, shared 1024; V 248320, untied).
    Vision (Qwen3-VL's tower: Dv 1152, Iv 4304, 27 blocks, patch 16 over 2 frames, 2304 positions):
    Conv3d 3 x 2 x 16^2 x 1152 + 1152 = 1,770,624, positions 2304 x 1152 = 2,654,208,
    27 x 15,239,504 = 411,466,608, merger 2 x 1152 + 4608^2 + 4608 + 4608 x 4096 + 4096 = 40,119,040.
    MTP (mtp_num_hidden_layers 1, shared tables): one attention MoE layer 6,562,001,408 + norm 4,096
    + fc 2 x 4096^2 + two norms 8,192 = 6,595,568,128.
    """
    c = checkpoint_params(load("qwen3.5-397b-a17b.json"))
    assert (c.text, c.vision, c.mtp) == (396_346_350_336, 456_010_480, 6_595_568_128)
    assert c.total == 403_397_928_944


def test_minimax_m1_lightning_attention():
    """MiniMaxAI/MiniMax-M1-40k and -80k (one config): Hub total 456,089,655,296 (a public table of
    Hub totals); card "456 billion parameters ... 45.9 billion parameters activated per token".

    H 6144, L 80 (attn_type_list: 10 softmax, 70 lightning), 64 heads x 128, 8 KV heads, 32 experts
    of 9216, k 2, V 200064, untied. Softmax attention 6144 x 8192 + 2 x 6144 x 1024 + 8192 x 6144
    = 113,246,208; lightning qkv_proj 6144 x 3 x 8192 + output_gate 6144 x 8192 + norm 8192
    + out_proj 8192 x 6144 = 251,666,432; experts 32 x 3 x 6144 x 9216 = 5,435,817,984, router 196,608,
    norms 12,288. total = 10 x 5,549,273,088 + 70 x 5,687,693,312 + 2 x 1,229,193,216 + 6,144.
    Active (ours, both tables): 48,403,306,496. The card's 45.9B is that count less both tables
    (the input embedding and the LM head, 1,229,193,216 each = V H = 200,064 x 6,144):
    48,403,306,496 - 2 x 1,229,193,216 = 45,944,920,064, "45.9 billion" at its one decimal.
    """
    m = load("minimax-m1.json")
    p = param_counts(m)
    assert m.num_recurrent_layers == 70 and m.recurrent.kind == "lightning"
    assert p.recurrent_per_layer == 251_666_432 and p.attention_block_per_layer == 113_246_208
    assert checkpoint_params(m).total == p.total == 456_089_655_296
    assert p.active == 48_403_306_496 and p.embedding == p.lm_head == 200_064 * 6_144 == 1_229_193_216
    assert p.active - p.embedding - p.lm_head == 45_944_920_064
    assert round((p.active - p.embedding - p.lm_head) / 1e9, 1) == 45.9  # the card's figure


def test_granite_4_0_h_tiny_mamba2_moe():
    """ibm-granite/granite-4.0-h-tiny: card "7B total parameters, 1B activated parameters" (IBM's
    Granite 4.0 docs); the exact total, the Hub's for its -base (same shapes), is checked in
    test_hub_configs_2025_part2.py. Config: a subset of keys, transcribed from a public test
    fixture of the published config.json (tests/data/configs/README.md); the keys it leaves out take
    GraniteMoeHybridConfig's defaults (mamba_conv_bias true, mamba_proj_bias false, attention_bias
    false).

    H 1536, L 40 (4 attention, 36 Mamba-2), 12 heads x 128, 4 KV heads, 64 experts of 512, k 6,
    shared MLP 1024, V 100352, tied.
    Mamba-2 (48 heads x 64, d_state 128, 1 group, K 4): in_proj 1536 x (2 x 3072 + 2 x 128 + 48)
    = 9,904,128; conv1d 3328 x 4 + 3328 = 16,640; dt_bias, A_log, D 144; gated norm 3,072;
    out_proj 3072 x 1536 = 4,718,592: 14,642,576. Attention 2 x 1536^2 + 2 x 1536 x 512 = 6,291,456.
    Each layer's MLPs: 64 x 3 x 1536 x 512 = 150,994,944, router 98,304, shared 3 x 1536 x 1024
    = 4,718,592, norms 3,072. Attention layer 162,106,368; Mamba layer 170,457,488.
    total = 4 x 162,106,368 + 36 x 170,457,488 + V H 154,140,672 + 1,536 = 6,939,037,248.
    """
    m = load("granite-4.0-h-tiny.json")
    p = param_counts(m)
    assert m.num_recurrent_layers == 36 and m.num_attention_layers == 4
    assert p.recurrent_per_layer == 1536 * 6448 + 3328 * 4 + 3328 + 3 * 48 + 3072 + 3072 * 1536 == 14_642_576
    assert p.total == 6_939_037_248
    assert round(p.total / 1e9) == 7 and round((p.active - p.embedding) / 1e9) == 1


# ---- the state of one layer, by hand -----------------------------------------------------------

def test_state_of_one_gated_deltanet_layer():
    """Qwen3-Next: 32 value heads x dv 128 x dk 128 = 524,288 elements of recurrent state, and the
    conv's last 3 inputs over 2 x 16 x 128 + 32 x 128 = 8,192 channels = 24,576: 548,864 elements,
    1,097,728 bytes in BF16 per layer and sequence; x 36 layers = 39,518,208."""
    m = load("qwen3-next-80b-a3b-thinking.json")
    assert m.recurrent.state_elements == 32 * 128 * 128 + 8192 * 3 == 548_864
    assert state_bytes_per_sequence(m) == 36 * 548_864 * 2 == 39_518_208
    assert state_bytes_per_sequence(m, 4) == 2 * 39_518_208  # an FP32 state


def test_state_of_one_mamba2_layer():
    """Granite-4.0-H-Tiny: SSM state 48 heads x 64 x d_state 128 = 393,216; conv state
    (3072 + 2 x 128) x (4 - 1) = 9,984: 403,200 elements, 806,400 bytes per layer; x 36 = 29,030,400."""
    m = load("granite-4.0-h-tiny.json")
    assert m.recurrent.recurrent_elements == 393_216 and m.recurrent.conv_elements == 9_984
    assert state_bytes_per_sequence(m) == 36 * 403_200 * 2 == 29_030_400


def test_state_of_one_lightning_layer():
    """MiniMax-M1: a 128 x 128 matrix per head, 64 heads, no convolution: 1,048,576 elements,
    2 MiB a layer; x 70 = 146,800,640 bytes per sequence."""
    m = load("minimax-m1.json")
    assert m.recurrent.state_elements == 64 * 128 * 128 and m.recurrent.conv_elements == 0
    assert state_bytes_per_sequence(m) == 70 * 2**21 == 146_800_640


def test_kv_per_token_counts_the_attention_layers_only():
    """K/V per token: Qwen3-Next 2 x 12 x 2 x 256 x 2 = 24,576 (not 98,304 for 48 layers); MiniMax-M1
    2 x 10 x 8 x 128 x 2 = 40,960; Granite-4.0-H-Tiny 2 x 4 x 4 x 128 x 2 = 8,192."""
    assert kv_bytes_per_token(load("qwen3-next-80b-a3b-thinking.json")) == 24_576
    assert kv_bytes_per_token(load("minimax-m1.json")) == 40_960
    assert kv_bytes_per_token(load("granite-4.0-h-tiny.json")) == 8_192


def test_kv_bytes_per_sequence_is_per_token_plus_state():
    m = load("qwen3-next-80b-a3b-thinking.json")
    assert kv_bytes(m, 131_072) == 131_072 * 24_576 + 39_518_208 == 3_260_743_680
    assert kv_bytes(m, 0) == 39_518_208  # a sequence holds its state from its first token on


# ---- capacity and step time --------------------------------------------------------------------

def pure_attention(m):
    """The same model with every layer full attention (its mixers replaced, its width kept)."""
    return replace(m, name=f"{m.name} all-attention", layer_types=(), recurrent=None)


def test_hybrid_capacity_at_128k_against_pure_attention_of_the_same_width():
    """Qwen3-Next in BF16 on one MI300X (192 GB, 10% held back): 172.8 GB - 158.88 GB of weights =
    13,915,975,680 bytes. At 131,072 tokens a hybrid sequence holds 3,260,743,680 bytes (12 attention
    layers' K/V + 39.5 MB of state): 4 sequences; all 48 layers attending it would hold 131,072 x
    98,304 = 12,884,901,888: 1 sequence."""
    m, acc = load("qwen3-next-80b-a3b-thinking.json"), load_accelerator("mi300x")
    pure = pure_attention(m)
    assert kv_bytes(pure, 131_072) == 12_884_901_888
    marketed = Deployment(memory_basis="marketed")  # the 192 GB above (the library's default: usable)
    assert sequences_that_fit(m, acc, 131_072, deployment=marketed) == 13_915_975_680 // 3_260_743_680 == 4
    assert sequences_that_fit(pure, acc, 131_072, deployment=marketed) == 1


def test_the_step_reads_and_writes_the_state():
    """A decode step at batch 1, context 131,072 on a B200 moves the 12 attention layers' K/V of
    131,073 tokens plus the state read and written, 2 x 39,518,208 bytes: 3,300,286,464."""
    m, acc = load("qwen3-next-80b-a3b-thinking.json"), load_accelerator("b200")
    t = step_time(m, acc, preset("lecture"), rows=1, batch=1, context=131_072)
    assert t.kv_bytes == 131_073 * 24_576 + 2 * 39_518_208 == 3_300_286_464
    t8 = step_time(m, acc, preset("lecture"), rows=8, batch=8, context=131_072)
    assert t8.kv_bytes == 8 * 131_073 * 24_576 + 8 * 2 * 39_518_208


def test_the_recurrent_layers_add_their_scan_flops_per_token():
    """Per token and DeltaNet layer: the state update and readout 2 x 3 x 524,288 = 3,145,728, the
    chunked scan's within-chunk products 2 x 64 x 32 x (128 + 128) = 1,048,576, the conv 2 x 8192 x 4
    = 65,536: 4,259,840; x 36 = 153,354,240 FLOPs, in flops_per_token beside 2 x GEMM parameters."""
    m = load("qwen3-next-80b-a3b-thinking.json")
    assert recurrent_flops_per_token(m) == 36 * (3_145_728 + 1_048_576 + 65_536) == 153_354_240
    assert flops_per_token(m) == 2 * param_counts(m).gemm_active + 153_354_240
    attention = flops_per_token(m, 1000) - flops_per_token(m)
    assert attention == 1000 * 12 * 4 * 16 * 256  # only the 12 attention layers attend


# ---- refusals ----------------------------------------------------------------------------------

def test_a_hybrid_without_its_schedule_is_refused(tmp_path):
    path = edited(tmp_path, "qwen3-next-80b-a3b-thinking.json", full_attention_interval=None)
    with pytest.raises(ConfigError, match="a hybrid needs its layer schedule"):
        load_model(path)


def test_minimax_without_attn_type_list_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="missing key 'attn_type_list'"):
        load_model(edited(tmp_path, "minimax-m1.json", attn_type_list=None))


def test_granite_hybrid_without_layer_types_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="a hybrid needs its layer schedule"):
        load_model(edited(tmp_path, "granite-4.0-h-tiny.json", layer_types=None))


def test_linear_attention_layers_in_a_family_without_a_mixer_are_refused(tmp_path):
    """A Qwen3 config naming linear_attention layers is not counted as all-attention."""
    layers = ["linear_attention", "linear_attention", "linear_attention", "full_attention"] * 9
    with pytest.raises(ConfigError, match="key 'layer_types' names 27 of 36 layers linear_attention or mamba, "
                                          "but qwen3 has no recurrent mixer"):
        load_model(edited(tmp_path, "qwen3-8b.json", layer_types=layers))


def test_an_unknown_hybrid_family_names_the_nearest(tmp_path):
    path = edited(tmp_path, "qwen3-next-80b-a3b-thinking.json", model_type="qwen4_next", architectures=None)
    with pytest.raises(ConfigError, match="'qwen4_next' is not supported; nearest: qwen3_next"):
        load_model(path)


def test_replica_from_specs_takes_a_hybrid_by_default():
    # issue 24.2: no refusal left from the removed simulator; serve holds its state in the general loop
    from llm_cost.catalog import load_accelerator
    from llm_cost.serving import poisson_workload, serve
    from llm_cost.serving.replica import Replica

    replica = Replica.from_specs(load("qwen3-next-80b-a3b-thinking.json"), load_accelerator("mi300x"), "lecture")
    r = serve(poisson_workload(6, 1.0, seed=0), replica)
    assert r.path == "general" and r.finished == 6


def test_qwen3_5_checkpoint_bytes_by_part():
    """The same record of Qwen3.5-397B-A17B's index gives its tensor bytes: text 792,692,717,952,
    vision 912,020,960, MTP 13,191,136,256, total 806,795,875,168 (2,834 BF16 and 90 FP32 tensors).
    Vision and MTP are 2 bytes a parameter exactly; the text is 17,280 bytes more than 2 x
    396,346,350,336: the 90 FP32 tensors are each DeltaNet layer's A_log (64) and gated norm (128),
    45 x 192 x 2 extra bytes, which we count at torch_dtype."""
    from llm_cost.counts.checkpoint import checkpoint_bytes

    m = load("qwen3.5-397b-a17b.json")
    b = checkpoint_bytes(m)
    assert b.vision == 912_020_960 and b.mtp == 13_191_136_256
    assert 792_692_717_952 - b.weights.total == 45 * (64 + 128) * 2 == 17_280
    assert 806_795_875_168 - b.total == 17_280


def test_nemotron_nano_9b_v2_single_sublayer_blocks():
    """nvidia/NVIDIA-Nemotron-Nano-9B-v2: Hub total 8,888,227,328 (a public table of Hub totals,
    "Nemotron-Nano-9B-v2 ... 8888227328"); card "9B". Config transcribed from a public TensorRT
    export's text-model dict for that repository (revision 6533e8de...), NemotronHConfig's defaults
    for the keys it leaves out (untied, use_conv_bias true, use_bias / mlp_bias / attention_bias false).

    H 4480, 56 blocks of ONE sublayer behind one RMSNorm (M-M-M-MM-...: 27 Mamba-2, 4 attention,
    25 MLP), V 131072, untied.
    Mamba-2 (128 heads x 80, d_state 128, 8 groups, K 4): in_proj 4480 x (2 x 10240 + 2 x 8 x 128 + 128)
    = 101,498,880; conv1d 12288 x 4 + 12288 = 61,440; dt_bias, A_log, D 384; gated norm 10,240;
    out_proj 10240 x 4480 = 45,875,200: 147,446,144 (+ norm 4,480).
    Attention (40 x 128, 8 KV heads): 2 x 4480 x 5120 + 2 x 4480 x 1024 = 55,050,240 (+ 4,480).
    MLP (squared ReLU: up, down): 2 x 4480 x 15680 = 140,492,800 (+ 4,480).
    total = 27 x 147,450,624 + 4 x 55,054,720 + 25 x 140,497,280 + 2 x 131072 x 4480 + 4480
          = 8,888,227,328. K/V: 2 x 4 x 8 x 128 x 2 = 16,384 B/token; state 27 x (128 x 80 x 128
          + 12288 x 3) x 2 = 72,769,536 B per sequence.
    """
    m = load("nemotron-nano-9b-v2.json")
    p = param_counts(m)
    assert (m.num_recurrent_layers, m.num_attention_layers, m.num_mlp_blocks) == (27, 4, 25)
    assert p.recurrent_per_layer == 147_446_144
    assert checkpoint_params(m).total == p.total == 8_888_227_328
    assert kv_bytes_per_token(m) == 16_384
    assert state_bytes_per_sequence(m) == 27 * (128 * 80 * 128 + 12288 * 3) * 2 == 72_769_536
    assert flops_per_token(m, 100) - flops_per_token(m) == 100 * 4 * 4 * 40 * 128  # 4 attention blocks


def test_nemotron_without_its_pattern_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="a hybrid needs its layer schedule"):
        load_model(edited(tmp_path, "nemotron-nano-9b-v2.json", hybrid_override_pattern=None))
    with pytest.raises(ConfigError, match=r"\['E'\] not counted"):
        load_model(edited(tmp_path, "nemotron-nano-9b-v2.json", hybrid_override_pattern="ME" * 28))


def test_jamba_1_5_mini_mamba1_moe():
    """ai21labs/AI21-Jamba-1.5-Mini: card "12B active / 52B total parameters"; the exact total,
    the index's total_size / 2 B, is checked in test_hub_configs_2025_part2.py.

    H 4096, L 32: attention where i % 8 == 4 (4 layers), Mamba-1 elsewhere (28); experts where
    i % 2 == 1 (16 experts of 14336, k 2), a dense MLP of 14336 elsewhere; V 65536, untied.
    Mamba-1 (d_inner 8192, d_state 16, dt_rank 256, K 4): in_proj 4096 x 16384 = 67,108,864;
    conv1d 8192 x 4 + 8192 = 40,960; x_proj 8192 x (256 + 32) = 2,359,296; dt_proj 256 x 8192 + 8192
    = 2,105,344; A_log 8192 x 16 = 131,072; D 8,192; out_proj 8192 x 4096 = 33,554,432; dt / B / C
    layernorms 256 + 32: 105,308,448. Attention 2 x 4096^2 + 2 x 4096 x 1024 = 41,943,040.
    MLP 3 x 4096 x 14336 = 176,160,768; router 16 x 4096 = 65,536; norms 8,192.
    State per Mamba layer: 8192 x 16 + 8192 x 3 = 155,648 elements.
    """
    m = load("ai21-jamba-1.5-mini.json")
    p = param_counts(m)
    assert (m.num_recurrent_layers, m.num_attention_layers, m.num_moe_layers) == (28, 4, 16)
    assert p.recurrent_per_layer == 105_308_448
    dense_attn, moe_attn = 41_943_040 + 176_160_768 + 8_192, 41_943_040 + 16 * 176_160_768 + 65_536 + 8_192
    mamba = 105_308_448 - 41_943_040
    # layers 4, 12, 20, 28 attend and are dense (even); 16 odd MoE layers, all Mamba
    expected = 4 * dense_attn + 12 * (dense_attn + mamba) + 16 * (moe_attn + mamba) + 2 * 65536 * 4096 + 4096
    assert p.total == expected == 51_570_323_328
    assert round(p.total / 1e9) == 52 and round(p.active / 1e9) == 12
    assert m.recurrent.state_elements == 155_648
    assert state_bytes_per_sequence(m) == 28 * 155_648 * 2


@pytest.mark.parametrize("model_type", ["zamba2", "lfm2"])
def test_hybrids_without_an_adapter_are_refused_not_counted(tmp_path, model_type):
    """Zamba2, LFM2: no adapter
    yet, so refused with the nearest family named, never counted as all-attention."""
    cfg = {"model_type": model_type, "hidden_size": 2048, "num_hidden_layers": 4, "num_attention_heads": 16,
           "intermediate_size": 4096, "vocab_size": 1000, "mamba_d_state": 16}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    with pytest.raises(ConfigError, match=f"'{model_type}' is not supported; nearest: "):
        load_model(str(path))


def test_capacity_policies_hold_the_state_of_every_request():
    """`capacity`'s reservation policies: each Qwen3-Next request holds its K/V and its state,
    39,518,208 / 24,576 = 1,608 K/V tokens' worth; on an MI300X's 192 GB 547,331 tokens fit, so 272 + 64.5
    declared tokens per request give floor(547,331 / (336.5 + 1,608)) = 281 requests, not 1,626."""
    from llm_cost.counts.per_token import state_in_kv_tokens
    from llm_cost.report.serving_rows import capacity_row
    from llm_cost.serving.capacity import kv_capacity

    m, acc = load("qwen3-next-80b-a3b-thinking.json"), load_accelerator("mi300x")
    assert state_in_kv_tokens(m) == 1_608
    marketed = Deployment(memory_basis="marketed")  # the library's default: usable
    assert kv_capacity(m, acc, deployment=marketed).kv_tokens == 547_331
    row = capacity_row(m, acc, prompt=272, max_gen=64.5, deployment=marketed)
    assert row["requests_declared"] == int(547_331 // (336.5 + 1_608)) == 281
    assert row["requests_max_len"] == 547_331 // (262_144 + 1_608) == 2


def test_lora_of_a_hybrid_is_refused_not_miscounted():
    from llm_cost.counts import lora_params

    with pytest.raises(LlmCostError, match="36 of 48 are recurrent"):
        lora_params(load("qwen3-next-80b-a3b-thinking.json"))


def test_cli_model_and_spec_on_a_hybrid():
    """`model` shows K/V per token over the 12 attention layers and the state per sequence; `spec`
    runs on a MoE with a gated shared expert (its dense twin drops the shared expert's own width)."""
    from helpers import rows_of

    (row,) = rows_of("model", str(CONFIGS / "qwen3-next-80b-a3b-thinking.json"))
    assert (row["kv_bytes_per_token"], row["attention_layers"], row["recurrent_layers"]) == (24_576, 12, 36)
    assert row["state_bytes_per_sequence"] == 39_518_208
    assert (row["params_text"], row["params_mtp"], row["params_total"]) == (
        79_674_391_296, 1_650_471_424, 81_324_862_720)
    assert rows_of("spec", "--model", str(CONFIGS / "qwen3-next-80b-a3b-thinking.json"), "--alpha", "0.8",
                   "--gamma", "2", "--batch", "8")


# ---- the serving engine holds a hybrid's state (issue 27, deliverable 2) ----------------------

def _hybrid_replica(kv_tokens=None, max_len=None):
    from llm_cost.catalog import load_accelerator
    from llm_cost.serving.replica import Replica

    model = load_model(str(CONFIGS / "qwen3-next-80b-a3b-thinking.json"))
    return model, Replica.from_specs(model, load_accelerator("mi300x"), "lecture", kv_tokens=kv_tokens, max_len=max_len)


def test_engine_holds_state_per_sequence_beside_its_tokens():
    """One request of 100 + 10 tokens holds its state (state / K/V per token, in all-layer tokens)
    beside its K/V from its first token to its last: at the last launch 108 cached tokens (the engine
    holds prompt + generated - 1 at a launch, as for a pure-attention model, checked) plus the state."""
    from llm_cost.counts.per_token import state_in_kv_tokens
    from llm_cost.serving.engine import serve
    from llm_cost.serving.serve_config import ServeConfig
    from llm_cost.serving.workload import fixed_workload

    model, replica = _hybrid_replica()
    state = state_in_kv_tokens(model, 2.0)
    assert state > 1000  # Qwen3-Next: 36 DeltaNet layers' state over 12 attention layers' K/V per token
    r = serve(fixed_workload([(100, 10)]), replica, ServeConfig(reservation="none"))
    assert r.finished == 1
    assert r.kv_used_peak_tokens == pytest.approx(108 + state)
    from llm_cost.catalog import load_accelerator
    from llm_cost.serving.replica import Replica

    dense = Replica.from_specs(load_model("llama-3-8b"), load_accelerator("mi300x"), "lecture")
    # every path counts K/V held at an iteration's start: 108 (its K/V written after the last, 109)

    for fast in (True, False):
        plain = serve(fixed_workload([(100, 10)]), dense, ServeConfig(reservation="none"), fast=fast)
        assert plain.kv_used_peak_tokens == 108, plain.path


def test_engine_admits_fewer_hybrid_sequences_than_tokens_alone_allow():
    """K/V for 10 sequences of 110 tokens but room for only 2 with their state: at most 2 run at once."""
    from llm_cost.counts.per_token import state_in_kv_tokens
    from llm_cost.serving.engine import serve
    from llm_cost.serving.serve_config import ServeConfig
    from llm_cost.serving.workload import fixed_workload

    model = _hybrid_replica()[0]
    state = state_in_kv_tokens(model, 2.0)
    room = int(2 * (110 + state) + 50)  # two with state, not three; ten without
    _, replica = _hybrid_replica(kv_tokens=room, max_len=110)
    r = serve(fixed_workload([(100, 11)] * 6), replica, ServeConfig(reservation="paged"))
    assert r.finished == 6
    assert r.kv_used_peak_tokens <= room
    assert r.kv_used_peak_tokens > 110 + state  # two at once
    assert r.kv_used_peak_tokens < 3 * (110 + state) - 150
