"""`--breakdown`: a pass operator by operator (`llm_cost.parallel.breakdown`), composing to its time."""

from __future__ import annotations

import json

import pytest

from helpers import error_line, rows_of
from llm_cost.catalog import as_profile, load_accelerator, load_model
from llm_cost.parallel import deployed_pass_cost
from llm_cost.parallel.breakdown import pass_breakdown
from llm_cost.specs import BF16
from llm_cost.specs.deployment import Deployment

H100 = load_accelerator("h100-sxm")
EXACT = 1e-12  # sums of the same terms in another order: rounding only

CASES = [  # (model, profile, deployment, rows, batch, context)
    ("llama-3-8b", "article", Deployment(), 1, 1, 0),  # the article's 4.79 ms decode
    ("llama-3.1-8b", "lecture", Deployment(), 257, 1, 1024),  # the lecture's 7.76 ms, compute-bound
    ("llama-3-70b", "measured", Deployment(tp=4, pp=2), 32, 32, 500),  # dense, tp and pp
    ("mixtral-8x7b", "measured", Deployment(tp=8, ep=8), 64, 64, 2000),  # MoE, the busiest GPU
    ("deepseek-v3", "measured", Deployment(tp=8, ep=8), 8192, 1, 0),  # MLA, shared experts, a prefill
    ("qwen3-30b-a3b", "lecture", Deployment(tp=2, overlap_comm=True), 512, 4, 100),  # collectives hidden
    ("mixtral-8x7b", "article", Deployment(tp=2), 16, 16, 0),  # MoE sharded over tp
]


def _ops(name, preset, deployment, rows, batch, context):
    model, profile = load_model(name), as_profile(preset)
    cost = deployed_pass_cost(model, H100, profile, BF16, deployment)
    step = cost.step(rows, batch, context, count_kv=profile.count_kv)
    return pass_breakdown(cost, model, H100, profile, BF16, deployment, rows=rows, batch=batch,
                          context=context), step


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}")
def test_breakdown_composes_to_the_pass_time(case):
    """The operators' time_s sum to the step's step_time_s; their memory and compute sides to the step's
    memory_time_s and compute_time_s; their bytes to the bytes the GPU reads."""
    ops, step = _ops(*case)
    own = [o for o in ops if o.bound not in ("communication", "fixed")]
    assert sum(o.time_s for o in ops) == pytest.approx(step.step_time_s, rel=EXACT)
    assert sum(o.memory_time_s for o in own) == pytest.approx(step.memory_time_s, rel=EXACT)
    assert sum(o.compute_time_s for o in own) == pytest.approx(step.compute_time_s, rel=EXACT)
    assert sum(o.bytes for o in own) == pytest.approx(step.weight_bytes_read + step.kv_bytes, rel=EXACT)
    assert all(o.time_s >= 0 for o in ops)
    if case[2].ep == 1:  # under ep the routed experts' FLOPs are the busiest GPU's, above the mean
        assert sum(o.flops for o in own) == pytest.approx(step.flops, rel=EXACT)


def test_article_decode_by_operator():
    """Llama-3-8B on an H100 at peak (the article §1.2's 4.79 ms): 32 layers of MLP, 3 x 4096 x 14336
    parameters each, are 11.27 GB = 3.3655 ms of it; the input table and the LM head, 2 x 128256 x 4096,
    2.10 GB (the article reads both)."""
    ops, step = _ops("llama-3-8b", "article", Deployment(), 1, 1, 0)
    by = {o.operator: o for o in ops}
    assert round(step.step_time_s * 1e3, 2) == 4.79
    assert by["MLP"].bytes == 32 * 3 * 4096 * 14336 * 2
    assert by["MLP"].time_s == pytest.approx(32 * 3 * 4096 * 14336 * 2 / 3.35e12, rel=EXACT)
    assert by["embedding and LM head"].bytes == 2 * 128256 * 4096 * 2
    assert {o.bound for o in ops} == {"memory"} and {o.source for o in ops} == {"datasheet"}
    assert "attention" not in by  # the article reads no K/V


def test_expert_parallel_breakdown_names_the_collectives():
    """Mixtral TP8/EP8: the attention all-reduce, the MoE dispatch and combine (no all-reduce after the
    MoE layers), and the busiest GPU's whole expert per layer."""
    ops, _ = _ops("mixtral-8x7b", "article", Deployment(tp=8, ep=8), 1, 1, 0)
    names = [o.operator for o in ops]
    assert "all-to-all dispatch" in names and "all-to-all combine" in names and "all-reduce after MLP" not in names
    routed = next(o for o in ops if o.operator == "routed experts")
    assert routed.bytes == pytest.approx(32 * 3 * 4096 * 14336 * 2, rel=EXACT)


def test_cli_roofline_breakdown_sums_to_the_roofline_row():
    args = ("--model", "llama-3-70b", "--tp", "4", "--preset", "measured", "--batch", "8", "--context", "2000")
    (plain,) = rows_of("roofline", *args)
    rows = rows_of("roofline", *args, "--breakdown")
    total = rows[-1]
    assert total["operator"] == "total" and total["time_s"] == pytest.approx(plain["step_time_s"], rel=EXACT)
    assert sum(r["time_s"] for r in rows[:-1]) == pytest.approx(plain["step_time_s"], rel=EXACT)
    assert {r["source"] for r in rows[:-1]} == {"fitted", "datasheet"}


def test_cli_request_breakdown_sums_to_ttft_and_tpot():
    args = ("--model", "llama-3-8b", "--isl", "1000", "--osl", "50", "--batch", "4", "--prefill-chunk", "256")
    (plain,) = rows_of("request", *args)
    rows = rows_of("request", *args, "--breakdown")
    totals = {r["pass"]: r["time_s"] for r in rows if r["operator"] == "total"}
    assert totals["prefill (4 passes)"] == pytest.approx(plain["ttft_s"], rel=EXACT)
    assert totals["first decode, ctx 1000"] == pytest.approx(plain["tpot_first_s"], rel=EXACT)
    assert totals["last decode, ctx 1048"] == pytest.approx(plain["tpot_last_s"], rel=EXACT)


def test_cli_request_breakdown_refuses_speculation():
    line = error_line("request", "--breakdown", "--spec-alpha", "0.8")
    assert "--breakdown shows plain passes" in line


def test_breakdown_of_several_models_and_gpus_is_one_json_document():
    """`request --breakdown` with --model or --gpu repeated: a table each, but JSON and CSV one document
    whose rows name their model and GPU (it printed one document per GPU, which no parser reads)."""
    import json

    from helpers import run

    out = run("request", "-m", "llama-3-8b", "-m", "llama-3.2-1b", "-g", "h100-sxm", "-g", "l4", "--breakdown",
              "-f", "json")
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)
    assert [k for k in dict.fromkeys((r["model"], r["gpu"]) for r in rows)] == [
        ("llama-3-8b", "h100-sxm"), ("llama-3-8b", "l4"), ("llama-3.2-1b", "h100-sxm"), ("llama-3.2-1b", "l4")]
    alone = json.loads(run("request", "-m", "llama-3.2-1b", "-g", "l4", "--breakdown", "-f", "json").stdout)
    assert [r for r in rows if (r["model"], r["gpu"]) == ("llama-3.2-1b", "l4")] == alone
    tables = run("request", "-g", "h100-sxm", "-g", "l4", "--breakdown").stdout
    assert tables.count("Request passes:") == 2


@pytest.mark.parametrize("args", [["roofline", "--breakdown"], ["request", "--breakdown"],
                                  ["request", "--breakdown", "--batch", "1", "--batch", "8"]])
def test_breakdown_at_80_columns_is_one_line_per_operator(args):
    """Issue 28.4 audit: at 80 columns an operator ("norms and element-wise") or a pass ("decode, first
    step (context 1024)") folded over two lines, and request's constant batch, ISL and OSL left one
    figure per stacked table; every row is now one line in each stacked table."""
    from typer.testing import CliRunner

    from llm_cost.cli import app

    rows = json.loads(CliRunner().invoke(app, [*args, "--format", "json"]).stdout)
    text = CliRunner().invoke(app, args, env={"COLUMNS": "80"}).stdout
    body = [[c.strip() for c in ln.strip("│").split("│")] for ln in text.splitlines() if ln.startswith("│")]
    assert max(len(ln) for ln in text.splitlines()) <= 80, text
    assert body and all(cells[0] for cells in body), text  # no continuation line
    assert len(body) % len(rows) == 0 and len(body) // len(rows) <= 4, text  # at most four stacked tables
