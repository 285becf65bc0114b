"""The cost table (the article §3.2): each figure against the count it comes from, and against the
published totals (the article's output block, the DeepSeek-V3 report)."""

from __future__ import annotations

import json

import pytest

from llm_cost import speculative as speculative
from llm_cost.catalog import load_accelerator, load_model
from llm_cost.report.cost_table import DEFAULT_MODELS, MTP_KEYS, cost_row, table_rows
from llm_cost.report.cost_table_view import table_notes, table_view
from llm_cost.speculative.mtp import mtp_params, mtp_speedup, mtp_step_time
from llm_cost.counts import flops_per_token, kv_bytes_per_token, param_counts, weight_bytes
from llm_cost.errors import ConfigError, InvalidValueError
from llm_cost.serving.capacity import kv_capacity
from llm_cost.roofline import step_time
from llm_cost.specs import BF16, INT4_G128, PRESETS
from llm_cost.speculative import roofline_speedup
from llm_cost.specs.deployment import Deployment

from helpers import half_unit

H100 = load_accelerator("h100-sxm")
ARTICLE = PRESETS["article"]


@pytest.fixture(scope="module")
def rows():
    return {r["model"]: r for r in table_rows([load_model(n) for n in DEFAULT_MODELS], H100)}


# (model, params B [2 dp], BF16 GB [1 dp], INT4 GB [2 dp], BF16 ms [2 dp], W4A16 ms [2 dp])
# the article §3.1, the reference script's output block ("输出："):
#   Llama-3-8B: 8.03B  BF16 16.1 GB  INT4(g128) 4.25 bit -> 4.27 GB / decode 下界 BF16 4.79 ms  W4A16 1.27 ms
#   Llama-3-70B: 70.55B  BF16 141.1 GB  INT4(g128) 4.25 bit -> 37.48 GB / decode 下界 BF16 42.12 ms  W4A16 11.19 ms
ARTICLE_OUTPUT = [
    ("llama-3-8b", 8.03, 16.1, 4.27, 4.79, 1.27),
    ("llama-3-70b", 70.55, 141.1, 37.48, 42.12, 11.19),
]


@pytest.mark.parametrize("name,params_b,bf16_gb,int4_gb,bf16_ms,w4_ms", ARTICLE_OUTPUT)
def test_article_output_block(rows, name, params_b, bf16_gb, int4_gb, bf16_ms, w4_ms):
    r = rows[name]
    assert r["params_text"] / 1e9 == pytest.approx(params_b, abs=half_unit(2))
    assert r["weight_bytes_bf16"] / 1e9 == pytest.approx(bf16_gb, abs=half_unit(1))
    assert r["bits_int4"] == pytest.approx(4.25)
    assert r["weight_bytes_int4"] / 1e9 == pytest.approx(int4_gb, abs=half_unit(2))
    assert r["decode_step_s_bf16"] * 1e3 == pytest.approx(bf16_ms, abs=half_unit(2))
    assert r["decode_step_s_w4a16"] * 1e3 == pytest.approx(w4_ms, abs=half_unit(2))


def test_article_speculative_row(rows):
    # the article §3.1: "B=   1  peak 2.40  60%MFU 2.40  E[tokens]=3.36" (alpha 0.8, gamma 4, c 0.1)
    for name in ("llama-3-8b", "llama-3-70b"):
        assert rows[name]["spec_speedup"] == pytest.approx(2.40, abs=half_unit(2))
        assert rows[name]["spec_expected_tokens"] == pytest.approx(3.36, abs=half_unit(2))
        assert rows[name]["spec_verify_over_base"] == pytest.approx(1.0)


def test_seventy_b_does_not_fit_in_bf16(rows):
    # the article §3.1: "70B 的 BF16 decode 下界 42 ms 是'假设能放进一张卡'的数值，实际放不进"
    assert not rows["llama-3-70b"]["fits_bf16"] and rows["llama-3-70b"]["max_batch_bf16_at_4096"] == 0
    assert rows["llama-3-70b"]["fits_int4"] and rows["llama-3-8b"]["fits_bf16"]
    assert not rows["deepseek-v3"]["fits_bf16"] and not rows["deepseek-v3"]["fits_int4"]


def test_deepseek_v3_published_totals(rows):
    r = rows["deepseek-v3"]
    # DeepSeek-V3 Technical Report (arXiv 2412.19437), abstract: "671B total parameters with 37B
    # activated for each token"; our active count includes the 0.93B embedding table (37.55B)
    assert r["params_text"] / 1e9 == pytest.approx(671, abs=0.5)
    assert r["params_active"] / 1e9 == pytest.approx(37, rel=0.02)
    # MLA caches kv_lora_rank + qk_rope_head_dim = 512 + 64 per layer: 61 x 576 x 2 B
    assert r["kv_bytes_per_token"] == 70_272
    assert r["kv_bytes_per_sequence_at_4096"] == 70_272 * 4096


@pytest.mark.parametrize("name", DEFAULT_MODELS)
def test_each_figure_is_the_librarys(rows, name):
    m, r = load_model(name), rows[name]
    p = param_counts(m)
    assert (r["params_text"], r["params_active"]) == (p.total, p.active)
    assert r["weight_bytes_bf16"] == weight_bytes(m, BF16).total
    assert r["weight_bytes_int4"] == weight_bytes(m, INT4_G128).total
    assert r["kv_bytes_per_token"] == kv_bytes_per_token(m)
    assert r["kv_bytes_per_sequence_at_32768"] == kv_bytes_per_token(m) * 32768
    assert r["flops_per_token"] == flops_per_token(m)
    assert r["decode_step_s_bf16"] == step_time(m, H100, ARTICLE, rows=1).step_time_s
    assert r["decode_step_s_w4a16"] == step_time(m, H100, ARTICLE, rows=1, weights=INT4_G128).step_time_s
    spec = roofline_speedup(m, H100, ARTICLE, alpha=0.8, gamma=4, c=0.1, batch=1)
    assert r["spec_speedup"] == float(spec.speedup)
    for fmt, key in ((BF16, "bf16"), (INT4_G128, "int4")):
        cap = kv_capacity(m, H100, reserve=0.1, weights=fmt, deployment=Deployment().following(ARTICLE))
        assert r[f"fits_{key}"] == cap.fits
        for n in (4096, 32768):
            assert r[f"max_batch_{key}_at_{n}"] == (cap.kv_tokens // n if cap.fits else 0)


def test_largest_batch_by_hand(rows):
    # Llama-3-8B: 80 GB x 0.9 = 72 GB less 16.06 GB of BF16 weights, 131,072 B of KV per token
    kv_tokens = int((72e9 - weight_bytes(load_model("llama-3-8b")).total) // 131_072)
    assert rows["llama-3-8b"]["max_batch_bf16_at_4096"] == kv_tokens // 4096 == 104
    assert rows["llama-3-8b"]["max_batch_bf16_at_32768"] == kv_tokens // 32768 == 13


def test_flat_rows_share_one_key_set(rows):
    keys = [list(r) for r in rows.values()]
    assert keys[0] == keys[1] == keys[2]
    assert all(rows["llama-3-8b"][k] is None for k in MTP_KEYS)
    json.dumps(list(rows.values()))  # plain JSON types only


# ---- DeepSeek-V3's MTP draft ------------------------------------------------------------------

def test_mtp_layers_from_the_config(data_dir, tmp_path):
    # DeepSeek-V3 config.json: "num_nextn_predict_layers": 1
    assert load_model("deepseek-v3").mtp_layers == 1
    assert load_model("llama-3-8b").mtp_layers == 0
    assert load_model(str(data_dir / "qwen2-7b.json")).mtp_layers == 0
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({**json.loads((data_dir / "qwen2-7b.json").read_text()),
                               "num_nextn_predict_layers": "one"}))
    with pytest.raises(ConfigError, match="num_nextn_predict_layers"):
        load_model(str(bad))


def test_mtp_expected_tokens_as_reported(rows):
    # the article §2.5: "对应 E[tokens] = 1 + α ≈ 1.85 ~ 1.9" (DeepSeek-V3 report §5.4.3: 85-90%)
    r = rows["deepseek-v3"]
    assert (r["mtp_gamma"], r["mtp_alpha_low"], r["mtp_alpha_high"]) == (1, 0.85, 0.9)
    assert r["mtp_expected_tokens_low"] == pytest.approx(1.85, abs=half_unit(2))
    assert r["mtp_expected_tokens_high"] == pytest.approx(1.90, abs=half_unit(2))


def test_mtp_speedup_agrees_with_the_report(rows):
    # DeepSeek-V3 Technical Report §5.4.3: "1.8 times TPS"; the article §2.5: "与 c 很小时 1.9 / (c + 1)
    # 的估算一致". E / (1 + c) over the reported acceptance range brackets 1.8.
    r = rows["deepseek-v3"]
    assert r["mtp_speedup_verify_free_low"] == pytest.approx(speculative.speedup(0.85, 1, r["mtp_c"]))
    assert r["mtp_speedup_verify_free_high"] == pytest.approx(1.9 / (r["mtp_c"] + 1))
    assert r["mtp_speedup_verify_free_low"] <= 1.8 <= r["mtp_speedup_verify_free_high"]


def test_mtp_c_is_the_byte_ratio():
    # At batch 1 both steps are memory-bound (article preset): c = bytes the MTP module reads over
    # bytes the model reads. The module reads one MoE block with its top-8 experts, the 2d x d
    # projection and the norms, and the shared LM head; the model reads its active weights
    # (embedding included under the article preset).
    m = load_model("deepseek-v3")
    n = mtp_params(m)
    lm_head = m.vocab_size * m.hidden_size
    expected = (n.block_active + n.projection + lm_head) / param_counts(m).active
    s = mtp_speedup(m, H100, ARTICLE)
    assert s.c == pytest.approx(expected, rel=1e-12)
    assert s.c == pytest.approx(mtp_step_time(m, H100, ARTICLE).step_time_s / step_time(m, H100, ARTICLE).step_time_s)
    assert 0.03 < s.c < 0.06


def test_mtp_module_size():
    # DeepSeek-V3 README: "685B, which includes 671B of the Main Model weights and 14B of the
    # Multi-Token Prediction (MTP) Module weights" -- the checkpoint's MTP layer stores its own
    # copies of the embedding and the LM head. One MoE layer + 2d x d + 3 norms + both tables.
    n = mtp_params(load_model("deepseek-v3"))
    d = 7168
    assert n.projection == 2 * d * d + 2 * d
    assert n.stored / 1e9 == pytest.approx(14, abs=0.6)
    assert n.own == n.stored - 2 * 129_280 * d


def test_mtp_on_the_roofline_pays_less_at_batch_one(rows):
    # the lecture §9.3: verifying gamma + 1 tokens of a MoE touches more experts; at batch 1 the
    # two rows route to ~2x the experts, so the roofline speedup sits below E / (1 + c)
    r = rows["deepseek-v3"]
    m = load_model("deepseek-v3")
    assert r["mtp_verify_over_base"] == pytest.approx(
        step_time(m, H100, ARTICLE, rows=2).step_time_s / step_time(m, H100, ARTICLE, rows=1).step_time_s)
    assert 1.0 < r["mtp_speedup_low"] < r["mtp_speedup_high"] < r["mtp_speedup_verify_free_low"]
    assert r["spec_verify_over_base"] > 2.5 and r["spec_speedup"] < 1.0  # the generic chain: 5 rows


# ---- the view: one column per model --------------------------------------------------------------

def test_view_turns_the_rows_around(rows):
    view, columns = table_view(list(rows.values()))
    assert [h for _, h in columns] == ["", "llama-3-8b", "llama-3-70b", "deepseek-v3"]
    cells = {v["quantity"]: v for v in view}
    assert cells["weights, BF16 (GB)"]["m0"] == "16.06"
    assert cells["KV cache per token, BF16 (bytes)"]["m2"] == "70,272"
    assert cells["decode step lower bound, batch 1, W4A16 (ms)"]["m1"] == "11.19"
    assert cells["MTP draft, γ 1, α 0.85–0.90: tokens per step"] == {
        "quantity": "MTP draft, γ 1, α 0.85–0.90: tokens per step", "m0": "-", "m1": "-", "m2": "1.85–1.90"}
    assert cells["largest batch at 4K context, BF16 weights"]["m1"] == "-"
    assert any("1.8x TPS" in n for n in table_notes(list(rows.values())))


def test_mtp_note_says_which_acceptance_it_used():
    # Review defect: the note said "acceptance 85-90% ... agrees with the report" whatever
    # --mtp-alpha was. With the reported range it says so; with another it shows that one.
    ds = load_model("deepseek-v3")
    (reported,) = table_rows([ds], H100)
    (other,) = table_rows([ds], H100, mtp_alphas=[0.5])
    note = next(n for n in table_notes([reported]) if "MTP, its own draft" in n)
    assert "α 0.85–0.90 (as the report gives it" in note and "agrees" not in note
    note = next(n for n in table_notes([other]) if "MTP, its own draft" in n)
    assert "α 0.50 (as given; the report gives 85%-90%" in note and "agrees" not in note
    assert f"E / (1 + c) = {other['mtp_speedup_verify_free_low']:.2f}x" in note


def test_view_without_mtp_has_no_mtp_rows():
    only = table_rows([load_model("llama-3-8b")], H100)
    view, _ = table_view(only)
    assert not any(v["quantity"].startswith("MTP") for v in view)


def test_contexts_and_batch_follow_the_options():
    (r,) = table_rows([load_model("llama-3-8b")], H100, contexts=[8192], batch=64)
    assert "kv_bytes_per_sequence_at_8192" in r and "kv_bytes_per_sequence_at_4096" not in r
    assert r["spec_speedup"] == pytest.approx(2.38, abs=half_unit(2))  # the article: "B=  64  peak 2.38"
    view, _ = table_view([r], contexts=[8192])
    assert any(v["quantity"] == "largest batch at 8K context, INT4 weights" for v in view)


@pytest.mark.parametrize("kwargs,match", [
    (dict(alpha=1.5), "^alpha "), (dict(gamma=-1), "^gamma "), (dict(c=-0.1), "^c "), (dict(batch=0), "^batch "),
    (dict(contexts=[0]), "^contexts "), (dict(contexts=[]), "^contexts "), (dict(reserve=1.0), "^reserve "),
    (dict(mtp_alphas=[1.2]), "^mtp_alphas "), (dict(mtp_alphas=[-0.1]), "^mtp_alphas "),
])
def test_bad_input_names_the_parameter(kwargs, match):
    # the library names its parameters; the CLI writes them as its flags (tests/test_cli_table.py)
    with pytest.raises(InvalidValueError, match=match):
        cost_row(load_model("llama-3-8b"), H100, **kwargs)
    with pytest.raises(InvalidValueError):
        table_rows([], H100)


def test_speculative_row_takes_deepseek_from_its_mtp_head():
    # the article §3.2: "DeepSeek-V3 的投机一行按其技术报告的 MTP 接受率转述": the table's speculative
    # row for DeepSeek-V3 is its MTP head (gamma 1, acceptance 85-90%), not the generic draft.
    rows = table_rows([load_model(n) for n in DEFAULT_MODELS], load_accelerator("h100-sxm"))
    view, _ = table_view(rows)
    line = next(v for v in view if v["quantity"].startswith("speculative speedup"))
    assert line["m0"] == "2.40" and line["m1"] == "2.40"  # the article §2.3: 3.36 / 1.4
    ds = rows[2]
    low, high = ds["mtp_speedup_verify_free_low"], ds["mtp_speedup_verify_free_high"]
    assert line["m2"] == f"{low:.2f}–{high:.2f}*"  # the mark: its note says the MTP head drafts
    assert low <= 1.8 <= high  # the report's 1.8x TPS lies in the range
