"""The vision tower's cost per image (issue 27): prompt tokens and encoder FLOPs, in `request`.

Token counts follow each processor's rule (cited in `counts.vision.image_cost`); FLOPs are 2 per
multiply-accumulate of the tower's matrices over its patches plus its attention within an image
(or a tile). Tolerances: exact integers for tokens and patches, 1e-12 relative for seconds.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import error_line, rows_of
from llm_cost.catalog import load_model
from llm_cost.counts.vision import image_cost, vision_params
from llm_cost.errors import InvalidValueError
from llm_cost.requests import request_cost

CONFIGS = Path(__file__).parent / "data" / "configs"
MEDGEMMA = str(CONFIGS / "medgemma-27b-it.json")
MINISTRAL = str(CONFIGS / "ministral-3-3b-reasoning-2512.json")
MAVERICK = str(CONFIGS / "llama-4-maverick-17b-128e-instruct.json")


def test_gemma3_image_is_256_tokens_from_4096_patches():
    """Gemma 3: every image resized to 896 px, 64 x 64 = 4096 patches of 14 px, pooled to
    mm_tokens_per_image 256. FLOPs: 2 x 4096 x (3 x 14^2 x 1152 + 411,466,608 encoder parameters)
    + 4 x 27 layers x 4096^2 x 1152 + 2 x 256 x 6,194,304 (projector)."""
    m = load_model(MEDGEMMA)
    c = image_cost(m, 1024)
    assert (c.patches, c.tokens) == (4096, 256) and image_cost(m, 300).tokens == 256
    expected = 2 * 4096 * (677_376 + 411_466_608) + 4 * 27 * 4096**2 * 1152 + 2 * 256 * 6_194_304
    assert c.encoder_flops == expected


def test_pixtral_tokens_follow_the_image_size():
    """Mistral 3: a 1024 px image is ceil(1024 / 14) = 74 patches a side, merged 2 x 2 into 37 rows
    of 37 tokens, each row closed by [IMG_BREAK] / [IMG_END]: 37 x 38 = 1406 tokens; 336 px:
    24 patches, 12 x 13 = 156."""
    m = load_model(MINISTRAL)
    assert image_cost(m, 1024).tokens == 1406 and image_cost(m, 1024).patches == 74 * 74
    assert image_cost(m, 336).tokens == 156


def test_llama4_tiles():
    """Llama 4: 336 px tiles of 24 x 24 patches + a class token (577 rows), pixel-shuffled to 144
    tokens; a 1024 px image is 4 x 4 tiles + one global tile: 17 x 577 patches, 17 x 144 tokens."""
    m = load_model(MAVERICK)
    assert (image_cost(m, 336).patches, image_cost(m, 336).tokens) == (577, 144)
    assert (image_cost(m, 1024).patches, image_cost(m, 1024).tokens) == (17 * 577, 17 * 144)


def test_request_adds_image_tokens_and_encoder_seconds():
    """Two images in a 512-token prompt of MedGemma: the text model prefills 512 + 2 x 256 = 1024
    tokens, and the TTFT adds 2 x F_enc / (F eta_f), the tower on one H100 at the lecture's 60%."""
    plain = request_cost(MEDGEMMA, "h100-sxm", "lecture", isl=1024, osl=64)
    with_images = request_cost(MEDGEMMA, "h100-sxm", "lecture", isl=512, osl=64, images=2)
    assert with_images.isl == 1024 and with_images.image_tokens == 512
    encoder = 2 * image_cost(load_model(MEDGEMMA)).encoder_flops / (989e12 * 0.6)
    assert with_images.encoder_s == pytest.approx(encoder, rel=1e-12)
    assert with_images.ttft_s == pytest.approx(plain.ttft_s + encoder, rel=1e-12)
    assert with_images.tpot_s == pytest.approx(plain.tpot_s, rel=1e-12)


def test_a_text_model_refuses_images():
    with pytest.raises(InvalidValueError, match="images: llama-3-8b has no vision tower"):
        request_cost("llama-3-8b", "h100-sxm", "lecture", isl=128, osl=8, images=1)


def test_cli_images_and_its_error_path():
    (row,) = rows_of("request", "--model", MEDGEMMA, "--images", "1", "--isl", "64", "--osl", "4")
    assert (row["image_tokens"], row["isl"]) == (256, 320) and row["encoder_s"] > 0
    assert "no vision tower" in error_line("request", "--model", "llama-3-8b", "--images", "1")
    assert "image-size must be in [1" in error_line("request", "--model", MEDGEMMA, "--images", "1",
                                                    "--image-size", "0")


def test_the_tower_counts_it_runs_are_the_ones_counted():
    """The encoder's parameters behind the FLOPs are `vision_params` (Maverick: 34 x 23,807,872)."""
    assert vision_params(load_model(MAVERICK)).encoder == 34 * 23_807_872
