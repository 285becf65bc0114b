"""Golden figures of the article (the article_be08c68fca30f1c1.txt).

Every number below is printed in the article: the reference script's output block
("输出：", chapter 3.1) or the text of chapter 1.2. Tolerances are half a unit of the last
printed digit.
"""

from __future__ import annotations

import pytest

from llm_cost.catalog import load_accelerator, load_model
from llm_cost.counts import (LORA_TARGETS_ALL, LORA_TARGETS_ATTN, flops_per_token,
                             lora_params, param_counts, weight_bytes)
from llm_cost.roofline import critical_rows, ridge_point, step_time
from llm_cost.specs import INT4_G128, PRESETS

from helpers import half_unit

H100 = load_accelerator("h100-sxm")
ARTICLE = PRESETS["article"]


# (model, params B [2 dp], BF16 GB [1 dp], INT4 GB [2 dp], BF16 ms [2 dp], W4A16 ms [2 dp],
#  LoRA attn M [2 dp], LoRA all M [2 dp], LoRA share of params in % [2 dp])
OUTPUT_BLOCK = [
    ("llama-3-8b", 8.03, 16.1, 4.27, 4.79, 1.27, 13.63, 41.94, 0.52),
    ("llama-3-70b", 70.55, 141.1, 37.48, 42.12, 11.19, 65.54, 207.09, 0.29),
]


@pytest.mark.parametrize("name,params_b,bf16_gb,int4_gb,bf16_ms,w4_ms,lora_attn_m,lora_all_m,lora_pct",
                         OUTPUT_BLOCK)
def test_output_block(name, params_b, bf16_gb, int4_gb, bf16_ms, w4_ms, lora_attn_m, lora_all_m, lora_pct):
    # the article, §3.1, the script's printed output
    m = load_model(name)
    total = param_counts(m).total
    assert total / 1e9 == pytest.approx(params_b, abs=half_unit(2))
    assert weight_bytes(m).total / 1e9 == pytest.approx(bf16_gb, abs=half_unit(1))
    int4 = weight_bytes(m, INT4_G128)
    assert int4.effective_bits == 4.25  # "INT4(g128) 4.25 bit"
    assert int4.total / 1e9 == pytest.approx(int4_gb, abs=half_unit(2))
    assert step_time(m, H100, ARTICLE).step_time_s * 1e3 == pytest.approx(bf16_ms, abs=half_unit(2))
    assert step_time(m, H100, ARTICLE, weights=INT4_G128).step_time_s * 1e3 == pytest.approx(w4_ms, abs=half_unit(2))
    assert lora_params(m, 16, LORA_TARGETS_ATTN) / 1e6 == pytest.approx(lora_attn_m, abs=half_unit(2))
    all_ = lora_params(m, 16, LORA_TARGETS_ALL)
    assert all_ / 1e6 == pytest.approx(lora_all_m, abs=half_unit(2))
    assert all_ / total * 100 == pytest.approx(lora_pct, abs=half_unit(2))


def test_exact_llama3_8b_counts():
    # the article script arithmetic, done by hand: per layer 4096*4096*2 + 4096*1024*2 + 3*4096*14336
    # + 2*4096 = 218,112,000; x32 + 2*128256*4096 + 4096 = 8,030,261,248 (the Hub's safetensors total)
    p = param_counts(load_model("llama-3-8b"))
    assert p.per_layer == 218_112_000
    assert p.total == 8_030_261_248
    assert p.embedding == p.lm_head == 525_336_576


def test_chapter_1_2_time_model():
    # the article, §1.2: "8.03B 参数，BF16 权重 16.06 GB，每 token 权重 FLOPs 约 15.0 GFLOPs",
    # "两者相等在 m ≈ 316，与 ridge 295 同一量级"
    m = load_model("llama-3-8b")
    assert weight_bytes(m).total / 1e9 == pytest.approx(16.06, abs=half_unit(2))
    assert flops_per_token(m) / 1e9 == pytest.approx(15.0, abs=half_unit(1))
    assert ridge_point(H100, ARTICLE) == pytest.approx(295, abs=0.5)
    assert critical_rows(m, H100, ARTICLE) == pytest.approx(316, abs=0.5)
    # m < 316: T(m) constant (memory-bound); beyond it compute-bound
    assert step_time(m, H100, ARTICLE, rows=315).bound == "memory"
    assert step_time(m, H100, ARTICLE, rows=317).bound == "compute"
    assert step_time(m, H100, ARTICLE, rows=315).step_time_s == step_time(m, H100, ARTICLE).step_time_s


def test_chapter_2_4_sixty_percent_mfu():
    # the article, §2.4: "60% MFU 折算实际可达算力（593 TFLOPS，有效 ridge 约 177，转折 batch 约 35）"
    mfu60 = ARTICLE.with_(compute_efficiency=0.6)
    assert H100.bf16_flops_per_s * 0.6 / 1e12 == pytest.approx(593, abs=0.5)
    assert ridge_point(H100, mfu60) == pytest.approx(177, abs=0.5)
    assert ridge_point(H100, mfu60) / 5 == pytest.approx(35, abs=0.5)


def test_h100_figures_are_the_articles():
    # the article script: H100 = GPU("H100 SXM", 80e9, 3.35e12, 989e12); A100 = (80e9, 2.0e12, 312e12)
    assert (H100.memory_bytes, H100.bandwidth_bytes_per_s, H100.bf16_flops_per_s) == (80e9, 3.35e12, 989e12)
    a100 = load_accelerator("a100-80gb")
    assert (a100.memory_bytes, a100.bandwidth_bytes_per_s, a100.bf16_flops_per_s) == (80e9, 2.0e12, 312e12)


def test_keep_embeddings_bf16_option():
    # the article, quantized_weight_bytes(keep_embed_bf16=True): (n - e) * 4.25 / 8 + e * 2
    m = load_model("llama-3-8b")
    p = param_counts(m)
    e = p.embedding + p.lm_head
    kept = weight_bytes(m, INT4_G128.__class__("int4-keep", 4, 128, 16, 16, keep_embeddings_bf16=True))
    assert kept.total == pytest.approx((p.total - e) * 4.25 / 8 + e * 2, rel=1e-12)
