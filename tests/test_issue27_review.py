"""The gaps an independent review of issue 27 found, each pinned by a test that failed before its fix.

Sources are cited per test; tolerances: exact integers for token counts and bytes, the printed
precision where a figure is printed.
"""

from __future__ import annotations

from pathlib import Path

from helpers import error_line, rows_of, run
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


def test_model_params_total_is_the_checkpoints_total_and_params_text_runs_per_token():
    """Issue 27 deliverable 3: `params_text` what runs per token, `params_total` the checkpoint's
    total. Qwen/Qwen3.5-397B-A17B: Hub total 403,397,928,944 ("403.4B") = text 396,346,350,336 +
    vision 456,010,480 + MTP 6,595,568,128 (split in test_hybrid_state.py); the table prints both
    at its 2 decimals."""
    qwen = str(CONFIGS / "qwen3.5-397b-a17b.json")
    (row,) = rows_of("model", qwen)
    assert (row["params_text"], row["params_vision"], row["params_mtp"]) == (
        396_346_350_336, 456_010_480, 6_595_568_128)
    assert row["params_total"] == 403_397_928_944 and "params_checkpoint" not in row
    table = run("model", qwen, "--format", "markdown").output
    assert "| model | text (B) | total (B) | active (B) |" in table
    assert "| qwen3.5-397b-a17b | 396.35 | 403.40 | 17.35 |" in table


def test_the_seeds_table_names_its_text_model_figure_params_text():
    """`table` prints the article's figures (DeepSeek-V3 671 B: the main model, without its 14B MTP
    module): the key is params_text, as `model` names the same figure."""
    rows = {r["model"]: r for r in rows_of("table")}
    assert "params_total" not in rows["deepseek-v3"]
    assert round(rows["deepseek-v3"]["params_text"] / 1e9) == 671
    (model_row,) = rows_of("model", "deepseek-v3")
    assert model_row["params_text"] == rows["deepseek-v3"]["params_text"]


def test_catalog_names_the_text_model_and_the_checkpoint_total_as_model_does():
    """DeepSeek-V3 README: "685B, which includes 671B of the Main Model weights and 14B of the
    Multi-Token Prediction (MTP) Module weights": catalog's params_text / params_total are model's."""
    rows = {r["name"]: r for r in rows_of("catalog") if r["kind"] == "model"}
    (model_row,) = rows_of("model", "deepseek-v3")
    assert (rows["deepseek-v3"]["params_text"], rows["deepseek-v3"]["params_total"]) == (
        model_row["params_text"], model_row["params_total"]) == (671_026_419_200, 684_489_845_504)
