"""This year's released configs, part 2 (issue 27): each counted to the parameter, every part apart.

Published totals are the Hugging Face Hub's `safetensors.total` of the repository (logical
parameters, whatever the dtype), as recorded in public repositories that quote the Hub API's answer
(each test names where), with the model card's rounded figure beside it. A checkpoint's total counts
every tensor it ships: text model + vision tower and projector + MTP modules
(`llm_cost.counts.parts`), each counted apart. Tolerance: exact integers.

Symbols: H hidden, L layers, I intermediate, nh / nkv heads, hd head_dim, V vocabulary, E experts,
k experts per token; Dv, Iv, Lv the vision tower's width, MLP width and layers.
"""

from __future__ import annotations

from pathlib import Path

from llm_cost.catalog import load_model
from llm_cost.counts import kv_bytes_per_token, param_counts
from llm_cost.counts.checkpoint import checkpoint_bytes
from llm_cost.counts.mtp import mtp_params
from llm_cost.counts.parts import checkpoint_params
from llm_cost.counts.vision import vision_params

CONFIGS = Path(__file__).parent / "data" / "configs"


def load(file: str):
    model = load_model(str(CONFIGS / file))
    return model, param_counts(model), checkpoint_params(model)


# ---- dense variants ----------------------------------------------------------------------------

def test_smollm3_3b_nope_layers_tied():
    """HuggingFaceTB/SmolLM3-3B: Hub safetensors.total 3,075,098,624 (recorded with revision
    a07cc9a0... in public evaluation manifests, and as the index's `total_parameters`; the SmolLM3
    blog: "3.08B parameters").

    H 2048, L 36, I 11008, nh 16, nkv 4, hd 128, V 128256, tied (SmolLM3Config's default).
    attention 2048 x 2048 + 2 x 2048 x 512 + 2048 x 2048 = 10,485,760; MLP 3 x 2048 x 11008
    = 67,633,152; norms 4,096; layer 78,123,008.
    total = V H + 36 layer + H = 262,668,288 + 2,812,428,288 + 2,048 = 3,075,098,624.
    Every 4th layer has no RoPE (no_rope_layers 0): 9 layers, no parameter.
    """
    model, p, c = load("smollm3-3b.json")
    assert p.per_layer == 78_123_008 and p.lm_head == 0
    assert c.total == p.total == 3_075_098_624
    assert model.nope_layers == tuple(range(3, 36, 4))


def test_internlm2_5_7b_chat_fused_wqkv():
    """internlm/internlm2_5-7b-chat: 7,737,708,544 parameters (the Hub total recorded in a public
    model-size table, and the checkpoint's 227 BF16 tensors of 7,737,708,544 elements; LMDeploy's
    banner "7737708544 (7.7B) parameters").

    H 4096, L 32, I 14336, nh 32, nkv 8, hd 128, V 92544, untied, `bias` false.
    wqkv 4096 x (4096 + 2 x 1024) + wo 4096 x 4096 = 41,943,040; w1/w3/w2 3 x 4096 x 14336
    = 176,160,768; norms 8,192; layer 218,112,000 (Llama-3-8B's).
    total = 2 V H + 32 layer + H = 758,120,448 + 6,979,584,000 + 4,096 = 7,737,708,544.
    """
    _, p, c = load("internlm2.5-7b-chat.json")
    assert p.per_layer == 218_112_000
    assert c.total == 7_737_708_544


def test_aya_23_8b_parallel_block_one_norm():
    """CohereForAI/aya-23-8B: card "8 billion"; the exact total found is that of
    CohereForAI/aya-expanse-8b, 8,028,033,024 (a public model-size table of Hub totals), a Cohere
    model of the same shapes (H 4096, L 32, I 14336, nh 32, nkv 8, V 256000, tied).

    One CohereLayerNorm (a gain, no bias) per layer off which attention and MLP run in parallel.
    attention 4096 x 4096 + 2 x 4096 x 1024 + 4096 x 4096 = 41,943,040; MLP 3 x 4096 x 14336
    = 176,160,768; norm 4,096; layer 218,107,904.
    total = V H + 32 layer + H = 1,048,576,000 + 6,979,452,928 + 4,096 = 8,028,033,024.
    """
    model, p, c = load("aya-23-8b.json")
    assert model.layer_norms == 1 and model.tie_word_embeddings
    assert p.per_layer == 218_107_904
    assert c.total == 8_028_033_024


def test_mimo_7b_mtp_layer_counted_apart():
    """XiaomiMiMo/MiMo-7B as shipped (num_nextn_predict_layers 1): the MTP layer is named by the
    config key and MiMoMTPLayers (the repository's modeling_mimo.py): hidden_layernorm,
    token_layernorm, input_proj (2H -> H, no bias), a Qwen2 block, final_layernorm; it shares the
    model's embedding and LM head. Published: the checkpoint's model.safetensors.index.json,
    `metadata.total_size` 15,666,819,072 bytes (a public GitHub copy of the MiMo-7B Hub files,
    jj8127/mimo_kor: its README is Xiaomi's MiMo-7B card, its config.json is this file's, and
    its weight_map names the 16 `model.mtp_layers.0.*` tensors beside the 36 layers'); the
    checkpoint is BF16 (torch_dtype bfloat16), so 15,666,819,072 / 2 B = 7,833,409,536 parameters,
    the count below to the parameter (an FP32 tensor would leave bytes / 2 above the count).
    The card says "7B".

    H 4096, L 36, I 11008, nh 32, nkv 8, hd 128, V 151680, untied, q/k/v biases (Qwen2), o_proj none.
    attention 2 x 4096 x 4096 + 2 x 4096 x 1024 + 4096 + 2 x 1024 = 41,949,184; MLP 3 x 4096 x 11008
    = 135,266,304; norms 8,192; layer 177,223,680.
    text = 2 V H + 36 layer + H = 1,242,562,560 + 6,380,052,480 + 4,096 = 7,622,619,136.
    MTP = layer + final_layernorm 4,096 + input_proj 2 x 4096^2 + 2 norms 8,192 = 210,790,400.
    checkpoint = 7,833,409,536.
    """
    model, p, c = load("mimo-7b.json")
    assert p.attention_per_layer == 41_949_184 and not model.mtp_stores_tables
    assert c.text == 7_622_619_136 and c.mtp == 210_790_400 == mtp_params(model).own
    assert c.total == 7_833_409_536 == 15_666_819_072 // 2   # index total_size / BF16
    assert checkpoint_bytes(model).total == 15_666_819_072      # the index's total_size, to the byte
    assert model.mtp_layers == 1                                # num_nextn_predict_layers


# ---- MoE ---------------------------------------------------------------------------------------

def test_granite_3_1_1b_a400m_moe():
    """ibm-granite/granite-3.1-1b-a400m-instruct: 1,334,628,352 parameters (a public test that loads
    the checkpoint and asserts sum(p.numel()) == 1334628352, tied head counted once); card "1B / 400M
    active".

    H 1024, L 24, 32 experts of I 512, k 8, nh 16, nkv 8, hd 64, V 49155, tied.
    attention 1024 x 1024 + 2 x 1024 x 512 + 1024 x 1024 = 3,145,728; expert 3 x 1024 x 512
    = 1,572,864; router 32 x 1024 = 32,768; norms 2,048; layer 3,145,728 + 32 x 1,572,864 + 32,768
    + 2,048 = 53,512,192. total = V H + 24 layer + H = 50,334,720 + 1,284,292,608 + 1,024.
    """
    _, p, c = load("granite-3.1-1b-a400m-instruct.json")
    assert p.moe_layer == 53_512_192
    assert c.total == 1_334_628_352
    assert round(p.active / 1e6) == 429  # the card's "400M active" counts no embedding


def test_deepseek_moe_16b_dense_first_layer_shared_experts():
    """deepseek-ai/deepseek-moe-16b-base: 16,375,728,128 parameters, 2,828,650,496 active (benchmark
    manifests quoting the Hub: num_params 16375728128, num_params_active 2828650496, embedding
    419430400); card "16.4B".

    H 2048, L 28 (layer 0 dense, I 10944), 64 routed experts of 1408, k 6, 2 shared, MHA nh 16 x 128,
    V 102400, untied. attention 4 x 2048^2 = 16,777,216; dense layer 16,777,216 + 3 x 2048 x 10944
    + 4,096 = 84,021,248; expert 3 x 2048 x 1408 = 8,650,752; router 64 x 2048 = 131,072;
    MoE layer 16,777,216 + 4,096 + 2 x 8,650,752 + 131,072 + 64 x 8,650,752 = 587,862,016.
    total = 84,021,248 + 27 x 587,862,016 + 2 x 209,715,200 + 2048 = 16,375,728,128;
    active = total - 27 x 58 x 8,650,752 = 2,828,650,496.
    """
    _, p, c = load("deepseek-moe-16b.json")
    assert p.dense_layer == 84_021_248 and p.moe_layer == 587_862_016
    assert c.total == 16_375_728_128 and p.active == 2_828_650_496
    assert p.embedding + p.lm_head == 419_430_400


def test_glm_4_5_air_mtp_with_its_own_tables():
    """zai-org/GLM-4.5-Air: Hub safetensors.total 110,468,824,832 (public tables of Hub totals);
    PrimeIntellect/INTELLECT-3, the same architecture shipped without the MTP layer, 106,852,251,264.
    Card: "106 billion total parameters and 12 billion active".

    H 4096, L 46 (layer 0 dense, I 10944), 128 routed experts of 1408, k 8, 1 shared, nh 96, nkv 8,
    hd 128, V 151552, untied; q/k/v biases (attention_bias), o_proj none.
    attention 4096 x 12288 + 2 x 4096 x 1024 + 12288 + 2 x 1024 + 12288 x 4096 = 109,066,240;
    dense layer 109,066,240 + 3 x 4096 x 10944 + 8,192 = 243,554,304; expert 3 x 4096 x 1408
    = 17,301,504; router 128 x 4096 + 128 (e_score_correction_bias) = 524,416;
    MoE layer 109,066,240 + 8,192 + 17,301,504 + 524,416 + 128 x 17,301,504 = 2,341,492,864.
    text = 243,554,304 + 45 x 2,341,492,864 + 2 x 620,756,992 + 4096 = 106,852,251,264.
    MTP layer (DeepSeek-V3's layout, its own embed_tokens and shared_head.head): MoE layer
    + shared_head.norm 4,096 + eh_proj 2 x 4096^2 + enorm/hnorm 8,192 + 2 x 620,756,992
    = 3,616,573,568. checkpoint = 110,468,824,832.
    """
    model, p, c = load("glm-4.5-air.json")
    assert p.attention_per_layer == 109_066_240 and p.moe_layer == 2_341_492_864
    assert c.text == 106_852_251_264
    assert c.mtp == 3_616_573_568 == mtp_params(model).stored
    assert c.total == 110_468_824_832
    assert round((p.active - p.embedding - p.lm_head) / 1e9) == 12  # the card's "12 billion active"


# ---- multimodal wrappers -----------------------------------------------------------------------

def test_medgemma_27b_it_siglip_tower():
    """google/medgemma-27b-it: 27,432,406,640 parameters (Keras-Hub's medgemma_instruct_27b preset
    "params": 27432406640; google/gemma-3-27b-it, of the same shapes, reports the same Hub total).

    Text (gemma3_text): H 5376, L 62, I 21504, nh 32, nkv 16, hd 128, V 262208, tied, 4 norms, q/k norms.
    attention 5376 x 4096 + 2 x 5376 x 2048 + 4096 x 5376 = 66,060,288 + q/k norms 256
    = 66,060,544; MLP 3 x 5376 x 21504 = 346,816,512; norms 21,504; layer 412,898,560.
    text = V H + 62 layer + H = 1,409,630,208 + 25,599,710,720 + 5,376 = 27,009,346,304.
    SigLIP (Dv 1152, Iv 4304, Lv 27, patch 14, image 896: 4096 patches): patch conv
    3 x 14^2 x 1152 + 1152 = 678,528, positions 4096 x 1152 = 4,718,592; layer 4 x 1152 (2 LNs)
    + 4 (1152^2 + 1152) + 2 x 1152 x 4304 + 4304 + 1152 = 15,239,504, x 27 = 411,466,608;
    post_layernorm 2,304. Projector: mm_soft_emb_norm 1152 + 1152 x 5376 = 6,194,304.
    vision = 423,060,336; checkpoint = 27,432,406,640.
    """
    model, p, c = load("medgemma-27b-it.json")
    v = vision_params(model)
    assert p.per_layer == 412_898_560 and c.text == 27_009_346_304
    assert v.encoder == 411_466_608 and v.projector == 6_194_304 and c.vision == 423_060_336
    assert c.total == 27_432_406_640


def test_ministral_3_3b_pixtral_tower():
    """mistralai/Ministral-3-3B-Instruct-2512, of the same config as the Reasoning-2512 copy here:
    Hub safetensors.total 3,849,090,048 (quoted with its split: language 3,429,006,336, vision
    420,083,712, in a public preflight record). The Reasoning-2512 repository's total is
    4,251,743,232, exactly V H = 402,653,184 more: it stores an lm_head.weight beside the tied
    embedding, which a tied model does not use; we count the model as configured.

    Text: H 3072, L 26, I 9216, nh 32, nkv 8, hd 128, V 131072, tied.
    attention 3072 x 4096 + 2 x 3072 x 1024 + 4096 x 3072 = 31,457,280; MLP 3 x 3072 x 9216
    = 84,934,656; norms 6,144; layer 116,398,080. text = V H + 26 layer + H = 3,429,006,336.
    Pixtral (Dv 1024, Iv 4096, Lv 24, patch 14): patch conv 3 x 196 x 1024 = 602,112; ln_pre 1,024;
    layer 2 x 1024 + 4 x 1024^2 + 3 x 1024 x 4096 = 16,779,264, x 24 = 402,702,336.
    Projector: norm 1024 + patch_merger 4 x 1024 x 1024 + linear_1 1024 x 3072 + linear_2 3072 x 3072
    = 16,778,240 (no biases). vision = 420,083,712.
    """
    model, p, c = load("ministral-3-3b-reasoning-2512.json")
    assert c.text == 3_429_006_336 and c.vision == 420_083_712
    assert vision_params(model).projector == 16_778_240
    assert c.total == 3_849_090_048
    assert 4_251_743_232 - c.total == model.vocab_size * model.hidden_size


def test_llama_4_maverick_with_its_vision_tower():
    """meta-llama/Llama-4-Maverick-17B-128E-Instruct: Hub safetensors.total 401,583,781,376 (a
    public test of the checkpoint's parameterCount, and a provider's billing export quoting it);
    card "17B active, 400B total". The issue's report: the text model alone was 872 M short.

    Text: H 5120, L 48 alternating dense (I 16384) and MoE (128 experts of 8192 + 1 shared, k 1),
    nh 40, nkv 8, hd 128, V 202048, untied. text = 400,711,848,960.
    Llama4VisionModel (Dv 1408, Iv 5632, Lv 34, patch 14, image 336: 576 patches): unfold linear
    588 x 1408 = 827,904, class token 1,408, positions 577 x 1408 = 812,416; layer 4 x 1408
    + 4 (1408^2 + 1408) + 2 x 1408 x 5632 + 5632 + 1408 = 23,807,872, x 34 = 809,467,648;
    layernorm_pre / _post 5,632; pixel-shuffle adapter 5632 x 4096 + 4096 x 4096 = 39,845,888.
    Projector 4096 x 5120 = 20,971,520. vision = 871,932,416; checkpoint = 401,583,781,376.
    """
    model, p, c = load("llama-4-maverick-17b-128e-instruct.json")
    assert c.text == p.total == 400_711_848_960
    assert c.vision == 871_932_416 and vision_params(model).encoder == 34 * 23_807_872
    assert c.total == 401_583_781_376


def test_parts_sum_to_the_published_total():
    """Each part apart, and their sum the checkpoint's: text + vision + MTP."""
    for file, total in [("medgemma-27b-it.json", 27_432_406_640), ("glm-4.5-air.json", 110_468_824_832),
                        ("llama-4-maverick-17b-128e-instruct.json", 401_583_781_376)]:
        _, _, c = load(file)
        assert c.text + c.vision + c.mtp == c.total == total


def test_kv_per_token_of_the_variants():
    """K/V per token, 2 L nkv hd x 2 bytes: SmolLM3 2 x 36 x 4 x 128 x 2 = 73,728; GLM-4.5-Air
    2 x 46 x 8 x 128 x 2 = 188,416 (the MTP layer's cache is the draft's, not counted here)."""
    assert kv_bytes_per_token(load("smollm3-3b.json")[0]) == 73_728
    assert kv_bytes_per_token(load("glm-4.5-air.json")[0]) == 188_416


def test_granite_3_3_8b_instruct_multipliers_are_scalars():
    """ibm-granite/granite-3.3-8b-instruct: 8,170,864,640 parameters (public tables of Hub totals,
    "HF safetensors confirmed"; the license table of a model registry lists the same); card "8B".

    H 4096, L 40, I 12800, nh 32, nkv 8, hd 128, V 49159, tied; attention / embedding / residual
    multipliers and logits_scaling are scalars. attention 2 x 4096^2 + 2 x 4096 x 1024 = 41,943,040;
    MLP 3 x 4096 x 12800 = 157,286,400; norms 8,192; layer 199,237,632.
    total = 40 x 199,237,632 + 49159 x 4096 + 4096 = 7,969,505,280 + 201,355,264 + 4,096.
    """
    _, p, c = load("granite-3.3-8b-instruct.json")
    assert p.per_layer == 199_237_632 and p.lm_head == 0
    assert c.total == 8_170_864_640
