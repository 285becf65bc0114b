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
    row = json.loads(out.stdout)[0]
    assert row["kv_context"] == 32768 and row["kv_bytes_per_sequence"] == 6_341_787_648


# ---- the time model --------------------------------------------------------------------------

def _oss():
    from llm_cost.catalog import load_accelerator
    from llm_cost.specs import PRESETS

    return load_model("gpt-oss-20b"), load_accelerator("h100-sxm"), PRESETS["lecture"]


@pytest.mark.parametrize("context", [64, 8192])
def test_decode_step_reads_windowed_kv(context):
    """gpt-oss-20b, lecture preset, batch 8 decoding one token each after `context` cached tokens.

    K/V moved: 8 x kv_bytes(context) read + 8 new tokens x 49,152 written:
    - 64: 8 x 3,145,728 + 393,216 = 25,559,040 (= 8 x 65 x 49,152: inside the window, as before);
    - 8192: 8 x 204,472,320 + 393,216 = 1,636,171,776 (all-layer would be 8 x 8,193 x 49,152
      = 3,221,618,688).
    Attention FLOPs: 4 x 64 heads x 64 = 16,384 per (row, key) pair and layer; the new row sees
    context + 1 keys in the 12 full layers and min(128, context + 1) in the 12 sliding ones:
    - 64: 8 x 16,384 x 24 x 65 = 204,472,320;
    - 8192: 8 x 16,384 x (12 x 8,193 + 12 x 128) = 8 x 16,384 x 99,852 = 13,087,801,344.
    GEMM: 8 x 2 x 3,608,307,264 = 57,732,916,224.
    """
    from llm_cost.roofline import step_time

    m, gpu, prof = _oss()
    t = step_time(m, gpu, prof, batch=8, context=context)
    kv, attn = {64: (25_559_040, 204_472_320), 8192: (1_636_171_776, 13_087_801_344)}[context]
    assert t.kv_bytes == pytest.approx(kv, rel=1e-12)
    assert t.flops == pytest.approx(57_732_916_224 + attn, rel=1e-12)


def test_prefill_pairs_stop_at_the_window():
    """gpt-oss-20b, one 512-token prompt: a full layer has 512 x 513 / 2 = 131,328 pairs; a sliding one
    128 x 129 / 2 = 8,256 for the first 128 rows and 384 x 128 = 49,152 after: 57,408. Attention
    FLOPs: 16,384 x 12 x (131,328 + 57,408) = 16,384 x 2,264,832 = 37,107,007,488. K/V written:
    512 x 49,152 = 25,165,824 (every layer writes each new row)."""
    from llm_cost.roofline import step_time

    m, gpu, prof = _oss()
    t = step_time(m, gpu, prof, rows=512, batch=1, context=0)
    assert t.kv_bytes == pytest.approx(25_165_824, rel=1e-12)
    assert t.flops == pytest.approx(512 * 2 * 3_608_307_264 + 37_107_007_488, rel=1e-12)


def test_windowed_step_broadcasts_and_step_total_agrees():
    """Arrays over context give the numbers one call per context gives; step_total = step().step_time_s."""
    np = pytest.importorskip("numpy")
    from llm_cost.roofline import PassCost, step_time

    m, gpu, prof = _oss()
    ctx = np.array([0, 64, 127, 128, 129, 8192, 131072])
    t = step_time(m, gpu, prof, batch=4, rows=20, context=ctx)
    one = [step_time(m, gpu, prof, batch=4, rows=20, context=int(c)).step_time_s for c in ctx]
    assert t.step_time_s.tolist() == pytest.approx(one, rel=1e-12)
    cost = PassCost.from_specs(m, gpu, prof)
    assert cost.step_total(np.full(ctx.shape, 20.0), 4, ctx).tolist() == t.step_time_s.tolist()


def test_windows_do_not_change_a_window_free_pass():
    """A pass that stays inside the window costs what an all-full model costs (up to rounding)."""
    from dataclasses import replace

    from llm_cost.roofline import step_time

    m, gpu, prof = _oss()
    full = replace(m, layer_types=(), sliding_window=0)
    a = step_time(m, gpu, prof, rows=32, batch=8, context=100)  # 100 + 4 <= 128
    b = step_time(full, gpu, prof, rows=32, batch=8, context=100)
    assert a.step_time_s == pytest.approx(b.step_time_s, rel=1e-12) and a.kv_bytes == pytest.approx(b.kv_bytes, rel=1e-12)
    beyond = step_time(m, gpu, prof, rows=32, batch=8, context=4096)
    assert beyond.kv_bytes < step_time(full, gpu, prof, rows=32, batch=8, context=4096).kv_bytes


@settings(max_examples=200, deadline=None)
@given(r=st.integers(1, 600), c=st.integers(0, 10_000), w=st.integers(1, 10_000))
def test_windowed_pairs_is_the_row_by_row_sum(r, c, w):
    """sum over rows i = 1..r of min(w, c + i), and causal_pairs when the window never binds."""
    from llm_cost.roofline import causal_pairs, windowed_pairs

    assert windowed_pairs(r, c, w) == sum(min(w, c + i) for i in range(1, r + 1))
    assert windowed_pairs(r, c, c + r) == causal_pairs(r, c)


def test_iteration_cost_decode_and_prefill_are_windowed():
    """IterationCost.decode_s / prefill_s are step_time's uniform passes, windows included."""
    from llm_cost.roofline import step_time
    from llm_cost.serving.replica import IterationCost

    m, gpu, prof = _oss()
    cost = IterationCost.from_roofline(m, gpu, prof)
    assert cost.decode_s(8192, batch=8) == step_time(m, gpu, prof, batch=8, context=8192).step_time_s
    assert cost.prefill_s(512) == step_time(m, gpu, prof, rows=512, batch=1).step_time_s


# ---- capacity --------------------------------------------------------------------------------

@pytest.mark.parametrize("name, weights, context, fit, all_layer", [
    ("gpt-oss-20b", "bf16", 64, 9_590, 9_590),
    ("gpt-oss-20b", "bf16", 8192, 147, 74),
    ("gemma-2-9b", "bf16", 2048, 75, 75),
    ("gemma-2-9b", "bf16", 32768, 8, 4),
    ("llama-4-scout", "int4", 4096, 18, 18),
    ("llama-4-scout", "int4", 32768, 5, 2),
])
def test_sequences_that_fit_on_an_h100(name, weights, context, fit, all_layer):
    """H100 SXM on its marketed memory, 80e9 bytes less 10%: 72e9; sequences = floor(K/V room / kv_bytes(context)).

    - gpt-oss-20b, BF16 weights 41,829,514,368: room 30,170,485,632 bytes.
      64: / 3,145,728 = 9,590.9 -> 9,590 (inside the window: as kv_tokens 613,820 // 64);
      8192: / 204,472,320 = 147.6 -> 147, where all-layer tokens give 613,820 // 8,192 = 74.
    - gemma-2-9b, BF16 weights 18,483,411,968: room 53,516,588,032.
      2048: / 704,643,072 = 75.9 -> 75 (kv_tokens 155,542 // 2,048 = 75);
      32768: / 6,341,787,648 = 8.4 -> 8, all-layer 155,542 // 32,768 = 4.
    - llama-4-scout, INT4 g128 weights 57,252,738,720 (BF16 does not fit): room 14,747,261,280.
      4096: / 805,306,368 = 18.3 -> 18 (kv_tokens 75,008 // 4,096 = 18);
      32768: / 2,818,572,288 = 5.2 -> 5, all-layer 75,008 // 32,768 = 2.
    """
    from llm_cost.catalog import load_accelerator
    from llm_cost.serving.capacity import kv_capacity, sequences_that_fit
    from llm_cost.specs import weight_format
    from llm_cost.specs.deployment import Deployment

    m, h100, w = load_model(name), load_accelerator("h100-sxm"), weight_format(weights)
    marketed = Deployment(memory_basis="marketed")  # the library's default is the usable memory
    assert sequences_that_fit(m, h100, context, weights=w, deployment=marketed) == fit
    assert kv_capacity(m, h100, weights=w, deployment=marketed).kv_tokens // context == all_layer


@pytest.mark.parametrize("name", WINDOWLESS)
def test_sequences_that_fit_without_windows_is_kv_tokens_over_context(name):
    from llm_cost.catalog import load_accelerator
    from llm_cost.serving.capacity import kv_capacity, sequences_that_fit
    from llm_cost.serving.policies import requests_that_fit

    m, gpu = load_model(name), load_accelerator("h200")
    cap = kv_capacity(m, gpu)
    for n in (1, 4096, 32768):
        assert sequences_that_fit(m, gpu, n) == (requests_that_fit(cap.kv_tokens, n) if cap.fits else 0)


def test_cost_table_counts_windowed_sequences():
    """gpt-oss-20b at 32,768 tokens: 12 x 32,768 + 12 x 128 = 394,752 layer-tokens x 2,048
    = 808,452,096 bytes a sequence; 30,170,485,632 / 808,452,096 = 37.3 -> 37 sequences in BF16
    (all-layer tokens would give 613,820 // 32,768 = 18). Each sequence's decode step also holds
    872,192 bytes of activations (804,352 of them its FP32 logits over 201,088 tokens), which at 64
    tokens (3,145,728 bytes of K/V) matters: 30,170,485,632 // 4,017,920 = 7,508, not the K/V's 9,590."""
    from llm_cost.catalog import load_accelerator
    from llm_cost.report.cost_table import cost_row

    row = cost_row(load_model("gpt-oss-20b"), load_accelerator("h100-sxm"), contexts=(64, 32768))
    assert row["kv_bytes_per_sequence_at_32768"] == 808_452_096
    assert row["max_batch_bf16_at_32768"] == 37 and row["max_batch_bf16_at_64"] == 7_508


# ---- a windowed replica is served by the general loop ----------------------------------------

@pytest.mark.parametrize("name, gpu", [("gpt-oss-20b", "h200"), ("gemma-2-9b", "h100-sxm"), ("gemma-2-9b", "h200")])
def test_replica_from_specs_takes_windowed_models(name, gpu):
    # issue 24.2: from_specs no longer refuses a windowed model (a leftover of the removed simulator's
    # counters): its cost keeps the windows and serve runs it in the general loop, which caps each layer
    from llm_cost.serving import poisson_workload, serve
    from llm_cost.serving.replica import Replica

    replica = Replica.from_specs(name, gpu, "lecture")
    assert replica.cost.kv_windows
    r = serve(poisson_workload(12, 2.0, seed=0), replica)
    assert r.path == "general" and r.finished == 12


def test_a_hand_built_windowed_replica_takes_the_general_loop():
    # the step-level paths count every layer's K/V: a windowed cost is not on their allow-lists, so
    # serve runs it in the general loop (which caps each layer at its window); request-level refuses it
    from llm_cost.catalog import load_accelerator
    from llm_cost.errors import InvalidValueError
    from llm_cost.serving import ServeConfig, poisson_workload, serve
    from llm_cost.serving.replica import IterationCost, Replica
    from llm_cost.specs import PRESETS

    cost = IterationCost.from_roofline(load_model("gpt-oss-20b"), load_accelerator("h200"), PRESETS["lecture"])
    replica, wl = Replica(cost, 10_000, 2048, "gpt-oss-20b by hand"), poisson_workload(10, 1.0)
    r = serve(wl, replica)
    assert r.path == "general" and r.finished == 10
    with pytest.raises(InvalidValueError, match="scheduler request"):
        serve(wl, replica, ServeConfig(scheduler="request", reservation="max_len", max_batch=8))


def test_batching_cli_runs_a_windowed_model_through_the_serving_engine():
    """The plain simulator does not cap K/V at a window (the library refuses above); `batching` sends a
    windowed model to the serving engine, which caps each layer at its window (issue 10)."""
    import json

    from typer.testing import CliRunner

    from llm_cost.cli import app

    out = CliRunner().invoke(app, ["batching", "--model", "gpt-oss-20b", "--gpu", "h200", "--rate", "1", "-n", "10",
                                   "--format", "json"])
    assert out.exit_code == 0, out.output
    (row,) = json.loads(out.stdout)
    assert row["finished"] == 10


def test_flops_per_token_attends_within_the_window():
    """gpt-oss-20b, one token after 8,192 cached: 16,384 FLOPs per key and layer (4 x 64 heads x 64),
    12 full layers x 8,192 keys + 12 sliding x 128 = 99,840 keys: 1,635,778,560 attention FLOPs beside
    2 x 3,608,307,264 = 7,216,614,528 GEMM FLOPs. At 64 cached every layer sees all 64 (as before)."""
    from llm_cost.counts import attention_flops_per_context_token, flops_per_token

    m = load_model("gpt-oss-20b")
    assert flops_per_token(m, 8192) == 7_216_614_528 + 1_635_778_560
    assert flops_per_token(m, 64) == 7_216_614_528 + attention_flops_per_context_token(m) * 64


def test_roofline_speedup_broadcasts_over_context_with_windows():
    """roofline_speedup (PassCost.step_total with arrays) on gpt-oss-20b: one array call over context
    gives what one call per context gives, inside and beyond the 128-token window."""
    np = pytest.importorskip("numpy")
    from llm_cost.speculative import roofline_speedup

    m, gpu, prof = _oss()
    ctx = [64, 8192, 131072]
    arr = roofline_speedup(m, gpu, prof, alpha=0.8, gamma=4, batch=64, context=np.array(ctx), c=0.1).speedup
    one = [float(roofline_speedup(m, gpu, prof, alpha=0.8, gamma=4, batch=64, context=n, c=0.1).speedup)
           for n in ctx]
    assert arr.tolist() == pytest.approx(one, rel=1e-12)


@pytest.mark.parametrize("name", WINDOWED)
@pytest.mark.parametrize("context", [1, 127, 128, 4096, 8192, 32768, 131072])
def test_sequences_that_fit_is_tight(name, context):
    """n sequences fit beside the weights, n + 1 do not (H200, BF16 when it fits, else INT4)."""
    from llm_cost.catalog import load_accelerator
    from llm_cost.serving.capacity import kv_capacity, sequences_that_fit
    from llm_cost.specs import BF16, INT4_G128

    m, gpu = load_model(name), load_accelerator("h200")
    w = BF16 if kv_capacity(m, gpu).fits else INT4_G128
    room = kv_capacity(m, gpu, weights=w).kv_bytes_available
    n = sequences_that_fit(m, gpu, context, weights=w)
    assert n * kv_bytes(m, context) <= room < (n + 1) * kv_bytes(m, context) or room == 0
