"""Windowed attention in KV (issue 10, deliverable 2): per-sequence K/V bytes, the time model, capacity.

Sliding layers keep their last `sliding_window` tokens, chunked layers (Llama 4) at most their
`attention_chunk_size` chunk; full layers keep everything. Each figure is derived by hand in its
docstring from the config (catalog entry) and checked exactly.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from llm_cost.catalog import catalog_names, load_model
from llm_cost.counts import kv_bytes, kv_bytes_per_token, layer_windows

MODELS = catalog_names("models")
WINDOWLESS = [n for n in MODELS if not layer_windows(load_model(n))]
WINDOWED = [n for n in MODELS if layer_windows(load_model(n))]


# ---- kv_bytes: golden figures, one inside and one beyond the window ------------------------------

def test_gpt_oss_20b_windowed_kv():
    """gpt-oss-20b: 24 layers alternating sliding (window 128) and full, 12 of each; 8 KV heads of 64.

    One token in one layer: 2 (K, V) x 8 x 64 x 2 bytes = 2,048; all 24 layers: 49,152.
    - 64 tokens (inside the window): every layer holds 64: 24 x 64 x 2,048 = 3,145,728 = 64 x 49,152.
    - 8192 tokens: 12 x 8,192 + 12 x 128 = 99,840 layer-tokens x 2,048 = 204,472,320
      (every layer full would be 8,192 x 49,152 = 402,653,184).
    """
    m = load_model("gpt-oss-20b")
    assert layer_windows(m) == ((128, 12),)
    assert kv_bytes_per_token(m) == 49_152
    assert kv_bytes(m, 64) == 3_145_728 == 64 * kv_bytes_per_token(m)
    assert kv_bytes(m, 8192) == 204_472_320


def test_gemma_2_9b_windowed_kv():
    """gemma-2-9b: 42 layers, 21 sliding (window 4096, layers 0, 2, 4, ...) and 21 full; 8 KV heads of 256.

    One token in one layer: 2 x 8 x 256 x 2 = 8,192 bytes; all 42 layers: 344,064.
    - 2048 tokens: 42 x 2,048 x 8,192 = 704,643,072 = 2,048 x 344,064.
    - 32768 tokens: 21 x 32,768 + 21 x 4,096 = 688,128 + 86,016 = 774,144 layer-tokens x 8,192
      = 6,341,787,648 (full would be 32,768 x 344,064 = 11,274,289,152).
    """
    m = load_model("gemma-2-9b")
    assert layer_windows(m) == ((4096, 21),)
    assert kv_bytes_per_token(m) == 344_064
    assert kv_bytes(m, 2048) == 704_643_072
    assert kv_bytes(m, 32768) == 6_341_787_648


def test_llama_4_scout_chunked_kv():
    """llama-4-scout: 48 layers, every 4th global (12 full), the other 36 chunked (8192); 8 KV heads of 128.

    One token in one layer: 2 x 8 x 128 x 2 = 4,096 bytes; all 48 layers: 196,608.
    A chunked layer is counted at min(context, 8192), the bound of its current chunk.
    - 4096 tokens: 48 x 4,096 x 4,096 = 805,306,368 = 4,096 x 196,608.
    - 32768 tokens: 12 x 32,768 + 36 x 8,192 = 393,216 + 294,912 = 688,128 layer-tokens x 4,096
      = 2,818,572,288 (full would be 32,768 x 196,608 = 6,442,450,944).
    """
    m = load_model("llama-4-scout")
    assert layer_windows(m) == ((8192, 36),)
    assert kv_bytes_per_token(m) == 196_608
    assert kv_bytes(m, 4096) == 805_306_368
    assert kv_bytes(m, 32768) == 2_818_572_288


def test_fp8_cache_halves_windowed_bytes():
    m = load_model("gpt-oss-20b")
    assert kv_bytes(m, 8192, 1) == 204_472_320 / 2


def test_kv_bytes_broadcasts_over_context():
    np = pytest.importorskip("numpy")
    m = load_model("gemma-2-9b")
    got = kv_bytes(m, np.array([2048, 32768]))
    assert got.tolist() == [704_643_072, 6_341_787_648]


# ---- properties ------------------------------------------------------------------------------

WIDTHS = st.sampled_from([2, 1, 0.5, 4])


@pytest.mark.parametrize("name", MODELS)
@settings(max_examples=10, deadline=None)
@given(width=WIDTHS)
def test_one_token_is_the_all_layer_figure(name, width):
    """kv_bytes(model, 1) = kv_bytes_per_token(model), windows or not."""
    m = load_model(name)
    assert kv_bytes(m, 1, width) == kv_bytes_per_token(m, width)


@pytest.mark.parametrize("name", WINDOWLESS)
@settings(max_examples=25, deadline=None)
@given(n=st.integers(0, 10**7), width=WIDTHS)
def test_windowless_is_context_times_per_token(name, n, width):
    """Without windows, kv_bytes(model, n) = n x kv_bytes_per_token(model), bit for bit."""
    m = load_model(name)
    assert kv_bytes(m, n, width) == n * kv_bytes_per_token(m, width)


@pytest.mark.parametrize("name", WINDOWED)
@settings(max_examples=25, deadline=None)
@given(n=st.integers(0, 10**7))
def test_windowed_is_monotone_and_at_most_full(name, n):
    """Windows only drop K/V: n x per-token bounds it, and one more token never holds fewer bytes."""
    m = load_model(name)
    assert kv_bytes(m, n) <= kv_bytes(m, n + 1) <= (n + 1) * kv_bytes_per_token(m)


def test_catalog_has_the_windowed_models():
    assert {"gpt-oss-20b", "gemma-2-9b", "llama-4-scout"} <= set(WINDOWED)


# ---- the `model` row -------------------------------------------------------------------------

def test_model_row_states_the_windowed_figure_at_its_context():
    """gpt-oss-20b at its max_position_embeddings, 131,072 (context 0): 12 x 131,072 + 12 x 128
    = 1,574,400 layer-tokens x 2,048 = 3,224,371,200 bytes, against 131,072 x 49,152 = 6,442,450,944.
    At --context 8192: 204,472,320 (above)."""
    from llm_cost.report.model_rows import model_row

    m = load_model("gpt-oss-20b")
    row = model_row(m)
    assert row["kv_context"] == 131_072 and row["context"] == 0
    assert row["kv_bytes_per_sequence"] == 3_224_371_200
    assert row["kv_bytes_per_token"] == 49_152  # the all-layer figure stays
    at = model_row(m, context=8192)
    assert at["kv_context"] == 8192 and at["kv_bytes_per_sequence"] == 204_472_320


def test_model_row_without_windows_is_context_times_per_token():
    """llama-3-8b: 8,192 x 131,072 = 1,073,741,824 bytes at its max_position_embeddings."""
    from llm_cost.report.model_rows import model_row

    row = model_row(load_model("llama-3-8b"))
    assert row["kv_context"] == 8192 and row["kv_bytes_per_sequence"] == 1_073_741_824


def test_model_json_has_the_windowed_keys():
    import json

    from typer.testing import CliRunner

    from llm_cost.cli import app

    out = CliRunner().invoke(app, ["model", "gemma-2-9b", "--context", "32768", "--format", "json"])
    assert out.exit_code == 0, out.output
    row = json.loads(out.output)[0]
    assert row["kv_context"] == 32768 and row["kv_bytes_per_sequence"] == 6_341_787_648
