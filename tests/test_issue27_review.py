"""The gaps an independent review of issue 27 found, each pinned by a test that failed before its fix.

Sources are cited per test; tolerances: exact integers for token counts and bytes, the printed
precision where a figure is printed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

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


def test_the_vision_tower_is_resident_but_not_read_by_a_decode():
    """An engine loads a multimodal checkpoint's tower: MedGemma-27B's SigLIP tower and projector,
    423,060,336 parameters (patch embedding 5,397,120 + encoder 411,466,608 + norms 2,304 +
    projector 6,194,304, counted in tests/test_vision_requests.py) at BF16, 846,120,672 B, join the
    text model's 54,018,692,608 B in the fit (capacity, request) and in a tp group 1/tp each; a
    decode pass still reads the text model's bytes only (the tower runs once per image, its FLOPs in
    the prefill)."""
    from llm_cost.catalog import load_accelerator
    from llm_cost.counts import weight_bytes
    from llm_cost.counts.weights import resident_weight_bytes, tower_weight_bytes
    from llm_cost.parallel import weight_bytes_per_gpu
    from llm_cost.roofline import step_time
    from llm_cost.serving.replica import Replica
    from llm_cost.specs import PRESETS
    from llm_cost.serving.capacity import kv_capacity
    from llm_cost.specs.deployment import SINGLE_GPU, Deployment

    m = load_model(MEDGEMMA)
    tower, text = 423_060_336 * 2, 54_018_692_608
    assert tower_weight_bytes(m) == tower == 846_120_672 and weight_bytes(m).total == text
    assert tower_weight_bytes(m, "int4") == tower  # quantizers leave the tower at BF16
    assert resident_weight_bytes(m) == text + tower
    cap = rows_of("capacity", "-m", MEDGEMMA, "-g", "h200")[0]
    assert cap["weight_bytes"] == cap["weight_bytes_per_gpu"] == text + tower
    req = rows_of("request", "-m", MEDGEMMA, "-g", "h200", "--images", "2")[0]
    assert req["weight_bytes_per_gpu"] == text + tower
    # tp 2: half of each (MedGemma's 16 K/V heads split, nothing replicated)
    assert weight_bytes_per_gpu(m, "bf16", Deployment(tp=2)) == pytest.approx((text + tower) / 2, rel=1e-12)
    h200 = load_accelerator("h200")
    assert step_time(m, h200, PRESETS["article"], rows=1).weight_bytes_read == text
    # the serving engine's replica holds as many K/V tokens as capacity says, the tower's bytes less
    replica = Replica.from_specs(m, h200, PRESETS["lecture"])
    held = kv_capacity(m, h200, deployment=SINGLE_GPU.following(PRESETS["lecture"]))
    assert replica.kv_capacity_tokens == held.kv_tokens
    assert held.kv_tokens == int((held.usable_bytes - text - tower) // held.kv_bytes_per_token)


def test_a_checkpoint_formats_tower_is_at_its_torch_dtype():
    """`capacity -w checkpoint` on Qwen3.5-4B (chandra): the tower's 333,514,240 parameters
    (test_hub_configs_2025_part2.py) at its BF16 torch_dtype, 667,028,480 B, on top of the text."""
    from llm_cost.counts import weight_bytes

    path = str(CONFIGS / "qwen3.5-4b-chandra.json")
    m = load_model(path)
    row = rows_of("capacity", "-m", path, "-w", "checkpoint")[0]
    assert row["weight_bytes"] == weight_bytes(m, "checkpoint").total + 333_514_240 * 2


def test_selective_counts_a_hybrids_recurrent_state():
    """Bamba-9B (ibm-ai-platform/Bamba-9B config): 29 Mamba-2 layers x 1,073,920 state elements x 2 B =
    62,287,360 B per sequence (test_hub_configs_2025_part2.py), read and written back once a pass:
    the lecture's figure 5 (4 requests) moves 4 x 2 x 62,287,360 = 498,298,880 B of state beside
    its 11 cached + new tokens x 12,288 B of K/V; a pure-attention model moves none."""
    from llm_cost.serving.selective import FIGURE5, selective_ledger

    bamba = str(CONFIGS / "bamba-9b.json")
    x = selective_ledger(FIGURE5, model=bamba)
    assert x.state_bytes == 4 * 2 * 62_287_360 == 498_298_880
    assert x.kv_bytes == 12_288 * (4 + 2 + 2 + 3)
    assert selective_ledger(FIGURE5, model="llama-3-8b").state_bytes == 0
    rows = {r["quantity"]: r for r in rows_of("selective", "-m", bamba)}
    assert rows["recurrent state read and written (GB)"]["selective"] == 498_298_880
    assert "recurrent state read and written (GB)" not in {r["quantity"] for r in rows_of("selective", "-m", "llama-3-8b")}


def test_image_size_that_changes_nothing_says_so():
    """--image-size without --images (or on a text-only model) is a note on stderr, as every ignored
    option of this CLI is; with --images it counts and is quiet."""
    out = run("request", "-m", MEDGEMMA, "--image-size", "512", "-f", "json")
    assert out.exit_code == 0 and out.stderr.strip() == (
        "Note: --image-size 512 changes nothing here: no --images given; add --images N to count N images "
        "per prompt")
    out = run("request", "-m", "llama-3-8b", "--image-size", "512", "-f", "json")
    assert out.exit_code == 0 and "llama-3-8b has no vision tower" in out.stderr
    out = run("request", "-m", MEDGEMMA, "--images", "1", "--image-size", "512", "-f", "json")
    assert out.exit_code == 0 and out.stderr.strip() == ""
    assert "--image-size must be in [1, 100000], got 0" in error_line("request", "-m", MEDGEMMA,
                                                                      "--image-size", "0")


def test_image_size_follows_the_processors_limits():
    """Qwen3.5's processor (Qwen/Qwen3.5-2B-Base preprocessor_config.json: size shortest_edge 65,536,
    longest_edge 16,777,216 pixels) resizes a square image into 256..4096 px a side: 100,000 px is
    4096 px, 4096 / 32 = 128 merged tokens a side, 16,384 tokens (not 9.77 M); 100 px is 256 px,
    8 x 8 = 64 tokens. Llama 4 (Llama4ImageProcessorFast max_patches 16): at most 4 x 4 tiles + the
    global one, 17 x 144 tokens, whatever the size past 4 x 336 px."""
    from llm_cost.counts.vision import image_cost

    qwen = load_model(str(CONFIGS / "qwen3.5-397b-a17b.json"))
    assert image_cost(qwen, 100_000).tokens == 128 * 128 == 16_384
    assert image_cost(qwen, 4096).tokens == 16_384 and image_cost(qwen, 1024).tokens == 32 * 32
    assert image_cost(qwen, 100).tokens == 64
    maverick = load_model(str(CONFIGS / "llama-4-maverick-17b-128e-instruct.json"))
    assert image_cost(maverick, 100_000).tokens == image_cost(maverick, 1344).tokens == 17 * 144
    assert image_cost(maverick, 1345).patches == 17 * 577


def test_a_dense_family_with_mamba_layer_types_is_refused_naming_the_key(tmp_path):
    """A qwen3 config whose layer_types are all "mamba": one line naming the key and the families
    that have a recurrent mixer, not the spec's internal invariant."""
    from helpers import edited_config

    path = edited_config(tmp_path, "qwen3-8b.json", layer_types=["mamba"] * 36)
    line = error_line("model", path)
    assert "key 'layer_types' names 36 of 36 layers linear_attention or mamba, but qwen3 has no recurrent mixer" in line
    assert "bamba" in line and "model.recurrent" not in line


def test_speculating_with_mtp_loads_its_layers():
    """The MTP modules are resident only when they speculate (vLLM loads them only under an MTP
    speculative config): the plan's MTP variant of a configuration needs exactly the module's own
    weights (block + projection: `counts.mtp.mtp_params(...).own`, DeepSeek-V3 11.6 B) and its
    layer's K/V more than the plain variant; no other fit counts them."""
    from llm_cost.catalog import load_accelerator
    from llm_cost.counts.mtp import mtp_params
    from llm_cost.planner.search import evaluate
    from llm_cost.planner.space import SpecOption, plan_space
    from llm_cost.speculative.fit import mtp_memory
    from llm_cost.specs import BF16, PRESETS
    from llm_cost.specs.deployment import SINGLE_GPU

    ds = load_model("deepseek-v3")
    w, kv = mtp_memory(ds, BF16, SINGLE_GPU, context=1000)
    assert w == mtp_params(ds).own * 2 and kv == 576 * 2 * 1000  # one MLA layer's latent + rope key
    assert mtp_memory(load_model("llama-3-8b"), BF16, SINGLE_GPU, context=1000) == (0.0, 0.0)
    space = plan_space(ds, [load_accelerator("h200")], 8, tps=(8,), pps=(1,), weights=("fp8",), kv_dtypes=("bf16",),
                       batches=(1, 8), speculation=(SpecOption("mtp", 0.85, (1,)),))
    grid = evaluate(space, PRESETS["article"], isl=1024, osl=32)
    plain = [i for i in range(len(grid)) if grid.variants[grid.variant[i]].kind == "none"]
    assert plain
    for i in plain:
        j = next(k for k in range(len(grid)) if grid.group[k] == grid.group[i] and grid.batch[k] == grid.batch[i]
                 and grid.variants[grid.variant[k]].kind == "mtp")
        dep = space.groups[grid.group[i]].deployment.following(PRESETS["article"])
        w, kv = mtp_memory(ds, space.groups[grid.group[i]].weights, dep, context=1024 + 32 - 1)
        extra = grid.needed_bytes[j] - grid.needed_bytes[i]
        workspace = extra - w - grid.batch[i] * kv  # the verification pass's 2 rows per sequence
        assert w > 1e9 and 0 <= workspace < 1e-3 * w
