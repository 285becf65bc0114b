"""Counts against totals published by the models' authors, and a worked answer of the scaling book."""

from __future__ import annotations

import pytest

from llm_cost.catalog import load_model
from llm_cost.counts import kv_bytes_per_token, param_counts, weight_bytes
from llm_cost.specs import ModelSpec


def test_deepseek_v3_totals():
    # DeepSeek-V3 Technical Report (arXiv 2412.19437), abstract: "671B total parameters with 37B
    # activated for each token" (the main model; the 14B MTP module is separate).
    p = param_counts(load_model("deepseek-v3"))
    assert p.total / 1e9 == pytest.approx(671, abs=0.5)
    # Our active count includes the 0.93B input-embedding table (a lookup) and gives 37.55B; without
    # that table it is 36.6B. The report's "37B" sits between the two conventions.
    assert p.active / 1e9 == pytest.approx(37, rel=0.02)
    assert (p.active - p.embedding) / 1e9 == pytest.approx(37, abs=0.5)


def test_deepseek_v3_mla_kv():
    # MLA caches kv_lora_rank + qk_rope_head_dim = 512 + 64 per layer: 61 x 576 x 2 B = 70,272 B
    assert kv_bytes_per_token(load_model("deepseek-v3")) == 70_272


def test_mixtral_totals():
    # Mistral AI, "Mixtral of experts" (arXiv 2401.04088): 46.7B total, 12.9B active per token
    p = param_counts(load_model("mixtral-8x7b"))
    assert p.total / 1e9 == pytest.approx(46.7, abs=0.05)
    assert p.active / 1e9 == pytest.approx(12.9, abs=0.05)


def test_gpt3_totals():
    # Brown et al. 2020, Table 2.1: GPT-3 13B "13.0B", GPT-3 175B "175.0B". Learned positions,
    # biases and LayerNorms included; the table rounds loosely (12.85B and 174.6B by count).
    assert param_counts(load_model("gpt-3-13b")).total / 1e9 == pytest.approx(13.0, rel=0.02)
    assert param_counts(load_model("gpt-3-175b")).total / 1e9 == pytest.approx(175.0, rel=0.01)
    # lecture §2.3: "放下 25.7 GB 的权重"
    assert weight_bytes(load_model("gpt-3-13b")).total / 1e9 == pytest.approx(25.7, abs=0.05)


def test_llama_3_2_1b_total():
    # Hub safetensors metadata of meta-llama/Llama-3.2-1B: 1,235,814,400 parameters (tied embeddings)
    assert param_counts(load_model("llama-3.2-1b")).total == 1_235_814_400


@pytest.mark.parametrize("file,total", [
    ("qwen2-7b.json", 7_615_616_512),  # Qwen/Qwen2-7B safetensors total; q/k/v biases implicit
    ("qwen2.5-0.5b.json", 494_032_768),  # Qwen/Qwen2.5-0.5B safetensors total; tied embeddings
    ("mistral-7b-v0.1.json", 7_241_732_096),  # mistralai/Mistral-7B-v0.1 safetensors total
    ("mistral-7b-instruct-v0.3.json", 7_248_023_552),  # v0.3 safetensors total; "head_dim": null
    ("deepseek-v2-lite.json", 15_706_484_224),  # DeepSeek-V2-Lite safetensors total; "q_lora_rank": null
])
def test_user_hub_configs_exact(data_dir, file, total):
    assert param_counts(load_model(str(data_dir / file))).total == total


def test_qwen2_biases_are_implicit(data_dir):
    # Qwen2's config has no attention_bias key, yet q/k/v carry biases: 3584 + 2 x 512 per layer
    m = load_model(str(data_dir / "qwen2-7b.json"))
    assert m.qkv_bias and not m.o_bias
    no_bias = ModelSpec(**{**m.__dict__, "qkv_bias": False})
    assert param_counts(m).total - param_counts(no_bias).total == 28 * (3584 + 1024)


def test_scaling_book_kv_example():
    # scaling-book, inference chapter: 8192 tokens x 40 KV heads x 128 x 40 layers x 2 bytes x 2 (K, V)
    # = 6,710,886,400 bytes
    m = ModelSpec("example", hidden_size=5120, num_layers=40, num_heads=40, num_kv_heads=40,
                  head_dim=128, intermediate_size=13824, vocab_size=32000)
    assert 8192 * kv_bytes_per_token(m) == 6_710_886_400


def test_kv_width_any_dtype():
    m = load_model("llama-3-8b")
    assert kv_bytes_per_token(m, 1) == kv_bytes_per_token(m) / 2  # FP8 cache
    assert kv_bytes_per_token(m, 0.5) == 32_768  # 4-bit cache


def test_deepseek_v2_lite_published(data_dir):
    # DeepSeek-V2 paper (arXiv 2405.04434), appendix B: DeepSeek-V2-Lite "15.7B total parameters,
    # 2.4B activated". Like DeepSeek-V3's 37B, the activated figure appears to leave out the input
    # embedding (a lookup): 2.45B that way, 2.66B with it; the paper rounds (or truncates) loosely, so
    # the tolerance is 3%. MLA without q compression (q_lora_rank null).
    m = load_model(str(data_dir / "deepseek-v2-lite.json"))
    p = param_counts(m)
    assert m.mla.q_lora_rank == 0 and m.moe.num_shared_experts == 2
    assert p.total / 1e9 == pytest.approx(15.7, abs=0.05)
    assert (p.active - p.embedding) / 1e9 == pytest.approx(2.4, rel=0.03)
    assert kv_bytes_per_token(m) == 27 * (512 + 64) * 2
