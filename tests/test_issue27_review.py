"""The gaps an independent review of issue 27 found, each pinned by a test that failed before its fix.

Sources are cited per test; tolerances: exact integers for token counts and bytes, the printed
precision where a figure is printed.
"""

from __future__ import annotations

from pathlib import Path

from helpers import error_line, rows_of
from llm_cost.catalog import load_model

CONFIGS = Path(__file__).parent / "data" / "configs"
MEDGEMMA = str(CONFIGS / "medgemma-27b-it.json")


def test_gemma3_context_is_max_position_embeddings_not_times_its_rope_factor():
    """vllm-project/vllm, vllm/config/model.py `_get_and_verify_max_len` skips the rope factor for
    every model_type containing "gemma3" ("Gemma3's max_model_len (128K) is already scaled by RoPE
    scaling"): MedGemma-27B's max_position_embeddings 131,072 with rope_scaling linear factor 8 is a
    128K context, not 1,048,576."""
    assert load_model(MEDGEMMA).max_position_embeddings == 131_072
    row = rows_of("capacity", "-m", MEDGEMMA, "-g", "h200")[0]
    assert row["max_len"] == 131_072
    assert "at most the model's context of 131072" in error_line(
        "request", "-m", MEDGEMMA, "-g", "h200", "--isl", "500000")
