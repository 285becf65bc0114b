"""Checkpoint formats (issue 10, deliverable 3): weights as shipped, and `--weights checkpoint`.

Published figures are each checkpoint's bytes of tensors: `model.safetensors.index.json`
`metadata.total_size`, or the sum of the tensors in the shard headers (the same thing), read from
stored copies (the Hub was not reachable when these were written). Tolerance: exact bytes, except
where a docstring names the tensors we do not model. Sources of the format rules: the module
docstring of `llm_cost.counts.checkpoint`.

Symbols: H hidden, L layers, V vocabulary, E routed experts, ff expert width.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import rows_of, run
from llm_cost.catalog import load_model
from llm_cost.counts.checkpoint import CheckpointFormat, checkpoint_bytes, checkpoint_format
from llm_cost.counts import param_counts, weight_bytes
from llm_cost.errors import InvalidValueError
from llm_cost.roofline import step_time
from llm_cost.specs import BF16, CHECKPOINT, PRESETS, weight_format

CONFIGS = Path(__file__).parent / "data" / "configs"
GIB = 2**30


def shipped(file: str):
    return checkpoint_bytes(load_model(str(CONFIGS / file)))


# ---- golden: MXFP4 experts ---------------------------------------------------------------------

def test_gpt_oss_20b_as_shipped():
    """openai/gpt-oss-20b `model.safetensors.index.json`: "metadata": {"total_size": 13761264768}
    (https://huggingface.co/openai/gpt-oss-20b/blob/main/model.safetensors.index.json); the model card's
    12.8 GiB (13,761,264,768 / 2^30 = 12.816).

    Experts (MXFP4): L 24 x E 32 x (gate_up 2880 x 5760 + down 2880 x 2880) = 768 x 24,883,200
    = 19,110,297,600 weights; 16 bytes of FP4 pairs and a 1-byte E8M0 scale per 32 weights:
    19,110,297,600 x 17 / 32 = 10,152,345,600 bytes.
    The rest at BF16: 20,914,757,184 parameters - 19,110,297,600 = 1,804,459,584 (attention with
    sinks, router, norms, expert biases, embedding, LM head) x 2 = 3,608,919,168 bytes.
    total = 10,152,345,600 + 3,608,919,168 = 13,761,264,768.
    One expert: 24,883,200 x 17 / 32 + 2 x (5760 + 2880) bias = 13,219,200 + 17,280 = 13,236,480.
    """
    c = shipped("gpt-oss-20b.json")
    assert c.format == "mxfp4 experts" and c.mtp == 0
    assert c.weights.expert == 13_236_480
    assert c.total == 13_761_264_768
    assert round(c.total / GIB, 1) == 12.8


def test_gpt_oss_120b_as_shipped():
    """openai/gpt-oss-120b: 65,248,815,744 tensor bytes in its 15 safetensors files (65,248,893,184
    file bytes with the headers), from two independent inventories of the repository's files
    (https://huggingface.co/openai/gpt-oss-120b/tree/main);
    the model card's 60.8 GiB (65,248,815,744 / 2^30 = 60.768).

    Experts: L 36 x E 128 x 24,883,200 = 114,661,785,600 weights x 17 / 32 = 60,914,073,600 bytes.
    BF16: 116,829,156,672 - 114,661,785,600 = 2,167,371,072 parameters x 2 = 4,334,742,144 bytes.
    total = 60,914,073,600 + 4,334,742,144 = 65,248,815,744.
    """
    c = shipped("gpt-oss-120b.json")
    assert c.total == 65_248_815_744
    assert round(c.total / GIB, 1) == 60.8


def test_the_catalog_gpt_oss_entries_ship_the_same_bytes():
    assert checkpoint_bytes(load_model("gpt-oss-20b")).total == shipped("gpt-oss-20b.json").total
    assert checkpoint_bytes(load_model("gpt-oss-120b")).total == shipped("gpt-oss-120b.json").total


# ---- golden: FP8 128 x 128 blocks -------------------------------------------------------------

def test_deepseek_v3_as_shipped():
    """deepseek-ai/DeepSeek-V3: "Total Parameters Size: 688,574,839,360 bytes" over its 91,991
    tensors (simpx/model-inspect `README.md`, which reads the shard headers of the repository and
    lists each tensor's dtype); its 163 files are 688,586,727,753 bytes with their headers (a stored
    inventory at revision afb92e1fa402..., https://huggingface.co/deepseek-ai/DeepSeek-V3/tree/main), 11,888,393 bytes of JSON
    headers more. README_WEIGHTS.md: 671B main model + the MTP module (layer 61).

    Per MLA layer, F8_E4M3 weights and F32 scales (ceil(out/128) x ceil(in/128)):
    q_a 1536 x 7168, q_b 24576 x 1536, kv_a 576 x 7168, kv_b 32768 x 512, o 7168 x 16384
    -> 187,105,280 bytes, 12x56 + 192x12 + 5x56 + 256x4 + 56x128 = 11,448 scales.
    Dense MLP 3 x 18432 x 7168 = 396,361,728 (3 x 144 x 56 = 24,192 scales); one expert
    3 x 2048 x 7168 = 44,040,192 (3 x 16 x 56 = 2,688 scales).
    Layers: 3 dense, 58 MoE and the MTP layer (MoE), each MoE layer 256 routed + 1 shared expert:
    FP8 = 62 x 187,105,280 + 3 x 396,361,728 + 59 x 257 x 44,040,192 = 680,571,043,840 bytes;
    scales = 62 x 11,448 + 3 x 24,192 + 59 x 257 x 2,688 = 41,540,496 x 4 = 166,161,984 bytes.
    BF16: embedding and head 2 x 129280 x 7168, final norm 7168, 62 x (2 x 7168 + 1536 + 512) norms,
    59 routers 256 x 7168, MTP enorm / hnorm / head norm 3 x 7168, its embedding and head copies
    2 x 129280 x 7168 and eh_proj 2 x 7168^2 (BF16 in the listing): 3,918,786,560 x 2 = 7,837,573,120.
    F32 e_score_correction_bias: 59 x 256 = 15,104 x 4 = 60,416.
    total = 680,571,043,840 + 166,161,984 + 7,837,573,120 + 60,416 = 688,574,839,360.
    """
    c = checkpoint_bytes(load_model("deepseek-v3"))
    assert c.format == "fp8 e4m3 128x128"
    assert c.total == 688_574_839_360
    assert 688_586_727_753 - c.total == 11_888_393  # the files' JSON headers
    assert c.mtp == 15_424_227_552  # layer 61 with its embedding and head copies
    assert round(c.total / 1e9) == 689  # "~689 GB"


def test_kimi_k2_instruct_as_shipped():
    """moonshotai/Kimi-K2-Instruct: index total_size 1,029,173,256,720 bytes over 139,644 tensors
    in 61 shards (https://huggingface.co/moonshotai/Kimi-K2-Instruct/blob/main/model.safetensors.index.json;
    an independent recount of every shard header gives the same total_size). We model 139,583 tensors: the 61 more (6,832 bytes, 112 a
    tensor) are non-weight buffers by that recount, which leaves "scale/shape/RoPE buffers" out
    of its logical parameters (1,026,408,232,448 = our count).

    DeepSeek-V3's layout with 64 heads, V 163840, E 384, 1 dense layer and 60 MoE, no MTP:
    attention q_a 1536 x 7168, q_b 12288 x 1536, kv_a 576 x 7168, kv_b 16384 x 512, o 7168 x 8192
    -> 101,122,048 bytes, 6,200 scales per layer.
    FP8 = 61 x 101,122,048 + 396,361,728 + 60 x 385 x 44,040,192 = 1,023,893,241,856;
    scales (61 x 6,200 + 24,192 + 60 x 385 x 2,688) = 62,495,192 x 4 = 249,980,768;
    BF16 (2 x 163840 x 7168 + 7168 + 61 x (2 x 7168 + 2048) + 60 x 384 x 7168) = 2,514,967,552 x 2
    = 5,029,935,104; F32 bias 60 x 384 x 4 = 92,160.
    total = 1,029,173,249,888 = 1,029,173,256,720 - 6,832.
    """
    c = shipped("kimi-k2-instruct.json")
    assert c.format == "fp8 e4m3 128x128" and c.mtp == 0
    assert c.total == 1_029_173_249_888
    assert 1_029_173_256_720 - c.total == 6_832 == 61 * 112
    assert checkpoint_bytes(load_model("kimi-k2")).total == c.total


def test_fp8_block_scales_round_partial_blocks_up():
    """kv_a_proj_with_mqa (576 x 7168): 4,128,768 F8_E4M3 bytes and a (5, 56) F32 scale of 1,120
    bytes (the model-inspect listing of DeepSeek-V3): 576 / 128 = 4.5 -> 5 block rows."""
    fmt = checkpoint_format(load_model("deepseek-v3"))
    assert fmt.matrix_bytes(576, 7168) == 4_128_768 + 5 * 56 * 4
    assert fmt.matrix_bytes(1536, 7168) == 11_010_048 + 2_688  # q_a_proj, (12, 56) scales


def test_mxfp4_pads_to_whole_blocks():
    # 33 inputs take two 16-byte blocks and two scales per row
    fmt = CheckpointFormat("mxfp4 experts", 2, converted=("experts",), element_bits=4, block_cols=32,
                           scale_bytes=1, pad_cols=True)
    assert fmt.matrix_bytes(10, 33) == 10 * (2 * 16 + 2)
    assert fmt.matrix_bytes(10, 64) == 10 * 64 * 17 // 32


# ---- plain checkpoints: torch_dtype ------------------------------------------------------------

def test_olmo_2_ships_f32():
    """allenai/OLMo-2-1124-7B: torch_dtype float32, 7,298,617,344 parameters (the Hub's
    safetensors.total), so 4 bytes each: 29,194,469,376 bytes, not 2 x."""
    c = shipped("olmo-2-1124-7b.json")
    assert c.format == "fp32"
    assert c.total == 4 * 7_298_617_344 == 29_194_469_376


@pytest.mark.parametrize("name", ["llama-3-8b", "llama-3.1-405b", "mixtral-8x7b", "qwen3-30b-a3b",
                                  "gemma-2-9b", "gpt-3-13b", "llama-4-scout"])
def test_a_bf16_checkpoint_is_bf16(name):
    model = load_model(name)
    assert model.quantization is None
    assert weight_bytes(model, CHECKPOINT) == weight_bytes(model, BF16)
    assert checkpoint_bytes(model).format == "bf16"
    for profile in ("article", "lecture"):
        for rows in (1, 64, 4096):
            kw = dict(rows=rows, batch=1, context=512)
            assert (step_time(model, "h100-sxm", PRESETS[profile], weights=CHECKPOINT, **kw)
                    == step_time(model, "h100-sxm", PRESETS[profile], weights=BF16, **kw))


def test_every_catalog_checkpoint_is_counted_and_no_larger_than_bf16():
    from llm_cost.catalog import catalog_names

    for name in catalog_names("models"):
        model = load_model(name)
        c, bf16 = checkpoint_bytes(model), weight_bytes(model, BF16)
        assert c.weights == weight_bytes(model, CHECKPOINT), name
        assert c.weights.total <= bf16.total, name  # no catalog entry ships F32
        assert (c.weights.total == bf16.total) == (model.quantization is None), name
        assert (c.mtp > 0) == (model.mtp_layers > 0), name


def test_checkpoint_is_a_weight_format_by_name():
    assert weight_format("checkpoint") is CHECKPOINT and CHECKPOINT.checkpoint
    assert not any(weight_format(n).checkpoint for n in ("bf16", "w4a16", "int4", "int8", "fp8"))


def test_the_time_model_reads_the_checkpoint_components():
    """gpt-oss-20b, one row, article preset: the shared bytes (everything but the routed experts)
    plus the 4 experts the row touches in each of 24 layers.

    shared = 13,761,264,768 - 24 x 32 x 13,236,480 = 3,595,648,128; + 24 x 4 x 13,236,480
    = 4,866,350,208 bytes read, against 8,374,881,408 in BF16.
    """
    model = load_model("gpt-oss-20b")
    t = step_time(model, "h100-sxm", PRESETS["article"], weights=CHECKPOINT)
    assert t.weight_bytes_read == pytest.approx(4_866_350_208, rel=1e-12)
    assert step_time(model, "h100-sxm", PRESETS["article"]).weight_bytes_read == pytest.approx(8_374_881_408,
                                                                                               rel=1e-12)


# ---- CLI -----------------------------------------------------------------------------------------

def test_model_row_reports_the_checkpoint():
    rows = {r["name"]: r for r in rows_of("model", "gpt-oss-20b", "deepseek-v3", "llama-3-8b")}
    assert rows["gpt-oss-20b"]["checkpoint_format"] == "mxfp4 experts"
    assert rows["gpt-oss-20b"]["weight_bytes_checkpoint"] == 13_761_264_768
    assert rows["deepseek-v3"]["weight_bytes_checkpoint"] == 688_574_839_360  # MTP included, as shipped
    assert rows["llama-3-8b"]["checkpoint_format"] == "bf16"
    assert rows["llama-3-8b"]["weight_bytes_checkpoint"] == rows["llama-3-8b"]["weight_bytes_bf16"]


def test_roofline_checkpoint_on_a_bf16_model_is_bf16():
    args = ("roofline", "--model", "llama-3.1-8b", "--preset", "lecture", "--context", "1024",
            "-r", "1", "-r", "129", "-r", "257")
    bf16, ckpt = rows_of(*args, "--weights", "bf16"), rows_of(*args, "--weights", "checkpoint")
    assert [r.pop("weights") for r in bf16] == ["bf16"] * 3
    assert [r.pop("weights") for r in ckpt] == ["checkpoint"] * 3
    assert ckpt == bf16


def test_roofline_checkpoint_reads_fewer_bytes_for_gpt_oss():
    for rows in ("1", "64"):
        bf16 = rows_of("roofline", "--model", "gpt-oss-20b", "-r", rows)[0]
        ckpt = rows_of("roofline", "--model", "gpt-oss-20b", "-r", rows, "--weights", "checkpoint")[0]
        assert ckpt["weight_bytes_read"] < 0.6 * bf16["weight_bytes_read"]
        assert ckpt["step_time_s"] < bf16["step_time_s"]


def _config(tmp_path, **changes) -> Path:
    config = json.loads((CONFIGS / "llama-3.2-3b-instruct.json").read_text()) | changes
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return path


@pytest.mark.parametrize("changes,needle", [
    ({"quantization_config": {"quant_method": "gptq", "bits": 4}}, "quant_method 'gptq' is not counted"),
    ({"quantization_config": {"quant_method": "fp8"}}, "fp8 needs weight_block_size"),
    ({"quantization_config": {"quant_method": "fp8", "fmt": "e3m4", "weight_block_size": [128, 128]}},
     "fmt must be one of e4m3, e5m2"),
    ({"torch_dtype": "float8_e4m3fn"}, "torch_dtype 'float8_e4m3fn' has no known width"),
])
def test_an_uncounted_checkpoint_is_refused_in_one_line(tmp_path, changes, needle):
    path = _config(tmp_path, **changes)
    out = run("roofline", "--model", path, "--weights", "checkpoint")
    lines = [ln for ln in out.output.splitlines() if ln.strip()]
    assert out.exit_code == 2 and "Traceback" not in out.output
    assert len(lines) == 1 and lines[0].startswith("Error: --weights 'checkpoint': ") and needle in lines[0], out.output
    with pytest.raises(InvalidValueError, match=needle):
        checkpoint_bytes(load_model(str(path)))
    # the model command still counts everything else, and says the checkpoint is not counted
    (row,) = rows_of("model", path)
    assert row["weight_bytes_checkpoint"] is None and row["checkpoint_format"].endswith("(not counted)")
    assert row["weight_bytes_bf16"] == 2 * param_counts(load_model(str(path))).total


def test_an_unknown_weight_format_is_still_one_line():
    out = run("roofline", "--weights", "ckpt")
    lines = [ln for ln in out.output.splitlines() if ln.strip()]
    assert out.exit_code == 2 and len(lines) == 1
    assert "--weights must be one of bf16, fp16, w4a16, int4, int8, w8a16, fp8, w8a8, nvfp4, q8_0, q4_0, checkpoint, got 'ckpt'" in lines[0]


def test_the_cost_table_stays_bf16():
    # the article's convention: the table's DeepSeek-V3 row is BF16 / INT4 whatever its checkpoint
    rows = {r["model"]: r for r in rows_of("table")}
    ds = load_model("deepseek-v3")
    assert rows["deepseek-v3"]["weight_bytes_bf16"] == weight_bytes(ds, BF16).total == 2 * param_counts(ds).total
    assert "weight_bytes_checkpoint" not in rows["deepseek-v3"]
