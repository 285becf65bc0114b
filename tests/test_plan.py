"""`llm-cost plan` (issue 14): the search, its frontier, disaggregated pools, and its numbers being
`request`'s.

Sources: the time model is `request`'s (tests/test_requests*.py pin its figures); Llama-3-70B's
70.55 B parameters (141.1 GB in BF16) are the article's §3.1 figure; the H100 SXM's usable memory is
its datasheet's (hardware/h100-sxm.json: 81,559 MiB from nvidia-smi).
"""

from __future__ import annotations

import json
import shlex

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import error_line, rows_of, run

REL = 1e-9  # the closed-form sum over contexts against request's element-wise sum: rounding only


def plan_rows(*args):
    return rows_of("plan", *args)


def request_of(row, key="request_args"):
    return rows_of("request", *shlex.split(row[key]))[0]


# --- the closed-form sum over the decode's contexts -------------------------------------------

lines = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(m0=lines, m1=lines, c0=lines, c1=lines, n=st.integers(min_value=1, max_value=400))
def test_sum_of_max_is_the_sum(m0, m1, c0, c1, n):
    from llm_cost.requests.phases import sum_of_max

    j = np.arange(n)
    step = (n - 1) or 1
    dense = np.maximum(m0 + (m1 - m0) * j / step, c0 + (c1 - c0) * j / step).sum()
    assert float(sum_of_max(m0, m1, c0, c1, n)) == pytest.approx(dense, rel=1e-9, abs=1e-12)


def test_sum_of_max_crossing_by_hand():
    from llm_cost.requests.phases import sum_of_max

    # M = 10 - j, C = j over j = 0..10: max is 10,9,8,7,6,5,6,7,8,9,10 -> 85
    assert float(sum_of_max(10.0, 0.0, 0.0, 10.0, 11)) == pytest.approx(85.0)


# --- same numbers as `request`, every row ----------------------------------------------------

PLANS = {
    "draft c": ["--model", "llama-3-70b", "--gpu", "h100-sxm", "--gpu", "a100-80gb", "--gpus", "8", "--isl", "2048",
                "--osl", "128", "--ttft-ms", "1000", "--tpot-ms", "30", "--spec-alpha", "0.7", "--preset", "lecture"],
    "draft model": ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "2", "--isl", "1024", "--osl", "64",
                    "--spec-alpha", "0.8", "--draft", "llama-3.2-1b", "--max-gamma", "4", "--preset", "lecture"],
    "mtp": ["--model", "deepseek-v3", "--gpu", "h200", "--gpus", "8", "--isl", "1024", "--osl", "32",
            "--weights", "fp8", "--kv-dtype", "bf16", "--batch", "1", "--batch", "64", "--preset", "article"],
    "windowed": ["--model", "gemma-2-9b", "--gpu", "l40s", "--gpus", "2", "--isl", "6000", "--osl", "40",
                 "--batch", "1", "--batch", "8", "--preset", "lecture"],
    "priced": ["--model", "llama-3-8b", "--gpu", "l4", "--gpu", "h100-sxm", "--gpus", "4", "--isl", "512", "--osl",
               "128", "--usd-per-gpu-hour", "l4=0.8", "--usd-per-gpu-hour", "h100-sxm=2.5", "--preset", "lecture"],
}


@pytest.mark.parametrize("name", sorted(PLANS))
def test_every_row_is_requests_numbers(name):
    rows = plan_rows(*PLANS[name])
    assert rows, name
    if name == "mtp":
        assert {r["speculation"] for r in rows} <= {"none", "mtp"} and any(r["speculation"] == "mtp" for r in rows)
    for r in rows:
        got = request_of(r)
        assert got["ttft_s"] == pytest.approx(r["ttft_s"], rel=REL), r["request_args"]
        assert got["tpot_s"] == pytest.approx(r["tpot_s"], rel=REL), r["request_args"]
        assert got["output_tokens_per_s_per_gpu"] == pytest.approx(r["output_tokens_per_s_per_gpu"], rel=REL)
        assert got["fits"] and r["meets_slo"]
        if r["usd_per_million_output_tokens"] is not None:
            price = {"l4": 0.8, "h100-sxm": 2.5}[r["gpu"]]
            again = rows_of("request", *shlex.split(r["request_args"]), "--usd-per-gpu-hour", price)[0]
            assert again["usd_per_million_output_tokens"] == pytest.approx(r["usd_per_million_output_tokens"], rel=REL)


def test_priced_frontier_is_cheapest_first():
    rows = plan_rows(*PLANS["priced"])
    usd = [r["usd_per_million_output_tokens"] for r in rows]
    fast = [r["output_tokens_per_s_per_user"] for r in rows]
    assert usd == sorted(usd) and fast == sorted(fast)  # a Pareto frontier: dearer only when faster


# --- a plan whose only fitting configuration is known by hand --------------------------------

def test_only_fitting_configuration_by_hand():
    # Llama-3-70B in BF16 (70.55 B parameters, 141.1 GB: the article §3.1) on H100 SXMs with
    # the lecture preset counts the marketed 80 GB: less the 10% reserve, 72 GB per GPU:
    #   tp 1: 141.1 GB of weights alone                                   -> does not fit
    #   tp 2, batch 512: 70.55 GB + 512 x 1280 tokens x 327,680 B / 2 (K/V) = 70.55 + 107.4 GB -> no
    #   tp 2, batch 1: 70.55 GB + 0.21 GB K/V + < 1 GB of activations       -> fits
    args = ["--model", "llama-3-70b", "--gpu", "h100-sxm", "--gpus", "2", "--tp", "1", "--tp", "2", "--pp", "1",
            "--weights", "bf16", "--kv-dtype", "bf16", "--batch", "1", "--batch", "512", "--isl", "1024",
            "--osl", "256", "--preset", "lecture"]
    rows = plan_rows(*args)
    assert [(r["tp"], r["batch"], r["weights"], r["kv_dtype"], r["speculation"]) for r in rows] == \
        [(2, 1, "bf16", "bf16", "none")]
    r = rows[0]
    assert 70.55e9 < r["memory_needed_bytes"] < 70.55e9 + 0.21e9 + 1e9 < r["memory_available_bytes"]
    assert r["memory_available_bytes"] == pytest.approx(80e9 * 0.9)
    assert "--marketed-memory" in r["request_args"]
    usable = plan_rows(*args, "--usable-memory")[0]  # 85.52 GB the driver reports, less the reserve
    assert usable["memory_available_bytes"] == pytest.approx(85520809984 * 0.9)
    assert "--usable-memory" in usable["request_args"]
    got = request_of(r)
    assert (got["ttft_s"], got["tpot_s"]) == (pytest.approx(r["ttft_s"], rel=REL), pytest.approx(r["tpot_s"], rel=REL))
    out = run("plan", *args)
    assert "searched 4 configurations: 3 do not fit" in " ".join(out.stdout.split())


# --- a target no configuration meets ----------------------------------------------------------

def test_unmeetable_target_empty_frontier_with_reasons():
    args = ["--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpus", "2", "--isl", "1024", "--osl", "64",
            "--ttft-ms", "0.01", "--tpot-ms", "0.01"]
    out = run("plan", *args, "--format", "json")
    assert out.exit_code == 0 and json.loads(out.stdout) == []
    assert "no configuration meets the target" in out.stderr
    text = " ".join(run("plan", *args).stdout.split())
    assert "0 meet it; frontier 0" in text and "miss the target (TTFT" in text
    searched = int(text.split("searched ")[1].split(" ")[0].replace(",", ""))
    not_fit = int(text.split("configurations: ")[1].split(" ")[0].replace(",", ""))
    missed = int(text.split("do not fit, ")[1].split(" ")[0].replace(",", ""))
    assert searched == not_fit + missed > 0


# --- monotonicity -----------------------------------------------------------------------------

def _grid(budget, **target):
    from llm_cost.catalog import load_accelerator, load_model
    from llm_cost.planner import SpecOption, Target, evaluate, plan, plan_space
    from llm_cost.specs import PRESETS

    space = plan_space(load_model("llama-3-70b"), [load_accelerator("h100-sxm"), load_accelerator("a100-80gb")],
                       budget, speculation=[SpecOption("draft", 0.7, (1, 2, 4), c=0.1)])
    grid = evaluate(space, PRESETS["lecture"], isl=2048, osl=128)
    return plan(grid, Target(**target))


def _dominated(point, front) -> bool:
    return any(u >= point[0] and g >= point[1] for u, g in front)


@pytest.mark.parametrize("tight, loose", [
    (dict(ttft_s=0.3, tpot_s=0.02), dict(ttft_s=0.6, tpot_s=0.02)),
    (dict(ttft_s=0.5, tpot_s=0.01), dict(ttft_s=0.5, tpot_s=0.04)),
    (dict(ttft_s=0.5, tokens_per_s_per_user=80.0), dict(ttft_s=0.5, tokens_per_s_per_user=40.0)),
    (dict(ttft_s=0.5), dict()),
])
def test_looser_target_never_shrinks_the_frontier(tight, loose):
    a, b = _grid(8, **tight), _grid(8, **loose)
    assert np.all(b.meets >= a.meets)  # every configuration meeting the tight target meets the loose one
    g = a.grid
    front_b = list(zip(g.output_tokens_per_s_per_user[b.frontier], g.output_tokens_per_s_per_gpu[b.frontier]))
    for i in a.frontier:  # and each tight frontier point is matched or beaten on the loose frontier
        assert _dominated((g.output_tokens_per_s_per_user[i], g.output_tokens_per_s_per_gpu[i]), front_b)
    assert len(b.frontier) >= 1 if len(a.frontier) else True


def test_more_gpus_never_lower_the_best_throughput():
    best_gpu, best_all = [], []
    for budget in (1, 2, 3, 4, 8, 16):
        p = _grid(budget, ttft_s=1.0, tpot_s=0.05)
        g = p.grid
        best_gpu.append(g.output_tokens_per_s_per_gpu[p.meets].max(initial=0.0))
        best_all.append(g.output_tokens_per_s[p.meets].max(initial=0.0))
    assert best_gpu == sorted(best_gpu) and best_all == sorted(best_all)
    assert best_all[-1] > best_all[0]


# --- disaggregated pools ----------------------------------------------------------------------

def test_disaggregate_pools_are_requests_numbers():
    rows = plan_rows("--model", "llama-3-70b", "--gpu", "h100-sxm", "--gpus", "8", "--isl", "2048", "--osl", "256",
                     "--ttft-ms", "1000", "--tpot-ms", "30", "--usd-per-gpu-hour", "2.5", "--disaggregate",
                     "--preset", "lecture")
    assert len(rows) == 1
    r = rows[0]
    assert r["prefill_gpus"] + r["decode_gpus"] <= 8 and r["prefill_gpus"] >= 1 and r["decode_gpus"] >= 1
    pre, dec = request_of(r, "prefill_request_args"), request_of(r, "decode_request_args")
    assert pre["ttft_s"] == pytest.approx(r["ttft_s"], rel=REL) and r["ttft_s"] <= 1.0
    assert dec["tpot_s"] == pytest.approx(r["tpot_s"], rel=REL) and r["tpot_s"] <= 0.03
    # the rate is the slower pool's: replicas x pp x B / (its time)
    p_rate = r["prefill_gpus"] // (r["prefill_tp"] * r["prefill_pp"]) * r["prefill_pp"] * r["prefill_batch"] / pre["ttft_s"]
    d_rate = r["decode_gpus"] // (r["decode_tp"] * r["decode_pp"]) * r["decode_pp"] * r["decode_batch"] / \
        (dec["tpot_s"] * 255)
    assert r["requests_per_s"] == pytest.approx(min(p_rate, d_rate), rel=1e-6) or r["requests_per_s"] < p_rate
    assert r["requests_per_s"] <= d_rate * (1 + 1e-9)
    assert r["usd_per_million_output_tokens"] == pytest.approx(
        2.5 * (r["prefill_gpus"] + r["decode_gpus"]) / 3600 / (r["requests_per_s"] * 256) * 1e6)


def test_kv_transfer_by_hand():
    # Llama-3-70B's K/V: 80 layers x 8 heads x 128 x 2 (K, V) x 2 B = 327,680 B per token; the
    # prefill replica's tp x pp GPUs each send their share: alpha + B x 2048 x 327,680 / (tp pp) / beta
    from llm_cost.catalog import load_accelerator

    gpu = load_accelerator("h100-sxm")
    r = plan_rows("--model", "llama-3-70b", "--gpu", "h100-sxm", "--gpus", "8", "--isl", "2048", "--osl", "256",
                  "--ttft-ms", "1000", "--tpot-ms", "30", "--kv-dtype", "bf16", "--disaggregate", "--preset",
                  "lecture")[0]
    per_gpu = r["prefill_batch"] * 2048 * 327_680 / (r["prefill_tp"] * r["prefill_pp"])
    assert r["kv_transfer_s"] == pytest.approx(gpu.interconnect_latency_s + per_gpu / gpu.interconnect_bytes_per_s)


# --- bad input: one line, exit 2 --------------------------------------------------------------

BASE = ["--model", "llama-3-8b", "--gpus", "2", "--isl", "512", "--osl", "64"]


@pytest.mark.parametrize("args, words", [
    (BASE + ["--gpu", "h100-sxm", "--usd-per-gpu-hour", "a100-80gb=1.5"], "not an accelerator of the search"),
    (BASE + ["--gpu", "h100-sxm", "--gpu", "l4", "--usd-per-gpu-hour", "h100-sxm=2"], "missing L4"),
    (BASE + ["--gpu", "h100-sxm", "--ttft-ms", "0"], "--ttft-ms"),
    (BASE + ["--gpu", "h100-sxm", "--tpot-ms", "0"], "--tpot-ms"),
    (BASE + ["--gpu", "h100-sxm", "--tokens-per-s-per-user", "0"], "--tokens-per-s-per-user"),
    (BASE + ["--gpu", "h100-sxm", "--tpot-ms", "20", "--tokens-per-s-per-user", "30"], "exclude each other"),
    (["--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpus", "2", "--isl", "512", "--osl", "1"], "--osl"),
    (BASE + ["--gpu", "h100-sxm", "--gpus", "0"], "--gpus"),
    (BASE + ["--gpu", "nope"], "unknown gpu"),
    (BASE + ["--gpu", "h100-sxm", "--weights", "int3"], "int3"),
    (BASE + ["--gpu", "h100-sxm", "--kv-dtype", "fp7"], "--kv-dtype"),
    (BASE + ["--gpu", "h100-sxm", "--c", "0.2"], "--spec-alpha"),
    (BASE + ["--gpu", "h100-sxm", "--spec-alpha", "1.5"], "1.5"),
    (BASE + ["--gpu", "h100-sxm", "--batch", "0"], "--batch"),
])
def test_bad_input_one_line(args, words):
    line = error_line("plan", *args)
    assert words in line, line


def test_plot_plan(tmp_path):
    path = tmp_path / "plan.png"
    out = run("plot", "plan", "-o", path, "--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpus", "2", "--isl", "512",
              "--osl", "64", "--ttft-ms", "200", "--tpot-ms", "20")
    assert out.exit_code == 0, out.output
    assert path.stat().st_size > 10_000


@pytest.mark.parametrize("model, draft", [("llama-3-70b", None), ("llama-3.1-8b", "llama-3.2-1b")])
def test_fit_is_requests_for_every_configuration(model, draft):
    # not only the frontier: the search's fit of each configuration is request_fit's (the draft's
    # weights and K/V beside the target's), so nothing is skipped or kept that `request` would not
    from llm_cost.catalog import load_accelerator, load_model
    from llm_cost.planner import SpecOption, evaluate, plan_space
    from llm_cost.requests import request_fit
    from llm_cost.specs import PRESETS

    spec = load_model(model)
    d = load_model(draft) if draft else None
    space = plan_space(spec, [load_accelerator("a100-40gb"), load_accelerator("l40s")], 4, batches=(1, 32, 256),
                       speculation=[SpecOption("draft", 0.8, (1, 3), c=None if d else 0.1, draft=d)])
    grid = evaluate(space, PRESETS["lecture"], isl=4096, osl=512)
    assert 0 < grid.fits.sum() < len(grid)
    for i in range(len(grid)):
        grp, v = space.groups[grid.group[i]], grid.variants[grid.variant[i]]
        on = grp.deployment.following(PRESETS["lecture"])  # the plan's fits count the profile's memory
        fit = request_fit(spec, grp.gpu, on, grp.weights, batch=int(grid.batch[i]), isl=4096, osl=512,
                          gamma=v.gamma, draft=v.draft)
        assert fit.fits == grid.fits[i], (grp, v, grid.batch[i])
        assert fit.needed_bytes == pytest.approx(grid.needed_bytes[i], rel=1e-12)


def test_package_names_are_its_functions():
    # a submodule imported first must not shadow a name the package exports (llm_cost.planner.disaggregate
    # is a module; its function is best_split)
    import importlib

    import llm_cost.planner.disaggregate  # noqa: F401
    plan = importlib.import_module("llm_cost.planner")
    for name in plan.__all__:
        assert not isinstance(getattr(plan, name), type(plan)), name


@pytest.mark.parametrize("model, deployment", [
    ("llama-3.1-8b", {}),
    ("llama-3-70b", {"tp": 4, "pp": 2}),  # stages and collectives that add
    ("llama-3.2-1b", {"tp": 8, "overlap_comm": True}),  # the collectives outlast a small batch: summed directly
    ("gemma-2-9b", {}),  # the contexts cross its 4,096-token window: summed directly
    ("mixtral-8x7b", {"tp": 2, "ep": 2}),
])
def test_decode_sum_is_the_sum_over_every_context(model, deployment):
    """Issue 24.2: one decode sum for the request and the planner (`requests.phases.decode_sum`):
    closed-form where a pass is linear in its context, else direct, equal to T summed over every
    context either way; and `request_cost`'s decode is that sum."""
    import numpy as np

    from llm_cost.parallel import deployed_pass_cost
    from llm_cost.requests import request_cost
    from llm_cost.requests.phases import decode_sum
    from llm_cost.specs import BF16
    from llm_cost.specs.deployment import Deployment

    dep = Deployment(**deployment)
    cost = deployed_pass_cost(model, "h100-sxm", "lecture", BF16, dep)
    rows, batch = np.array([[8.0, 64.0], [40.0, 320.0]]), np.array([8.0, 64.0])  # r = 1 and 5 rows per sequence
    direct = cost.step(rows[..., None], batch[..., None], 3800 + np.arange(700.0)).step_time_s.sum(axis=-1)
    assert np.allclose(decode_sum(cost, rows, batch, 3800, 700), direct, rtol=1e-11, atol=0)
    r = request_cost(model, "h100-sxm", "lecture", batch=8, isl=3800, osl=701, deployment=dep)
    assert r.phases.decode_s == pytest.approx(float(direct[0, 0]), rel=1e-11)


def test_plan_without_a_target_says_so_and_counts_what_fits():
    """Issue 28 audit: `plan` with no target said "0 miss the target (TTFT 0, TPOT or tok/s/user 0)";
    it now says every configuration that fits is kept, and which options set a target."""
    text = " ".join(run("plan", "--gpus", "2", "--batch", "1", "--batch", "8").stdout.split())
    assert "miss the target" not in text and "(no target: --ttft-ms, --tpot-ms or --tokens-per-s-per-user" in text
    searched = int(text.split("searched ")[1].split(" ")[0].replace(",", ""))
    not_fit = int(text.split("configurations: ")[1].split(" ")[0].replace(",", ""))
    fit = int(text.split("do not fit, ")[1].split(" ")[0].replace(",", ""))
    assert searched == not_fit + fit and fit > 0


def test_the_planner_times_the_prefill_with_the_request_s_helper(monkeypatch):
    # Issue 24.2: the static-batch request is `requests.phases` (`prefill_s` for TTFT, `decode_sum`
    # for the decode), called by the planner, not re-derived: every group's TTFT comes through it.
    from llm_cost.catalog import load_accelerator, load_model
    from llm_cost.planner import evaluate, plan_space
    from llm_cost.planner import search
    from llm_cost.specs import PRESETS

    calls = []
    real = search.prefill_s

    def counted(cost, batch, isl, chunk, count_kv):
        calls.append(isl)
        return real(cost, batch, isl, chunk, count_kv)
    monkeypatch.setattr(search, "prefill_s", counted)
    space = plan_space(load_model("llama-3.1-8b"), [load_accelerator("h100-sxm")], 4)
    grid = evaluate(space, PRESETS["lecture"], isl=512, osl=64)
    assert calls == [512] * len(space.groups) and np.isfinite(grid.ttft_s).all()


def test_plan_s_search_is_a_library_function_the_command_calls():
    # Issue 24.4: `planner.plan_grid` checks a plan's inputs and evaluates its space; the library's
    # `plan_run.plan_search` loads the names and calls it, `commands/plan_build` parses (milliseconds) and calls
    # that, and the library's errors name parameters, not flags.
    import ast
    from pathlib import Path

    import llm_cost as lc
    from llm_cost.commands import plan_build
    from llm_cost.errors import InvalidValueError
    from llm_cost.planner import plan_grid, plan_run
    from llm_cost.planner.space import SpecOption

    def imported(module):
        source = ast.parse(Path(module.__file__).read_text())
        return {a.name for n in ast.walk(source) if isinstance(n, ast.ImportFrom) for a in n.names}
    assert {"plan_search"} <= imported(plan_build) and {"plan_grid"} <= imported(plan_run)
    assert not (imported(plan_build) | imported(plan_run)) & {"plan_space", "evaluate", "SpecOption", "check_alpha"}
    model, gpu = lc.load_model("llama-3-8b"), lc.load_accelerator("h100-sxm")
    grid = plan_grid("llama-3-8b", ["h100-sxm"], 2, isl=512, osl=64, profile=lc.PRESETS["lecture"], spec_alpha=0.8,
                     max_gamma=2)
    space = lc.plan_space(model, [gpu], 2, speculation=[SpecOption("draft", 0.8, (1, 2), c=0.1)])
    same = lc.evaluate(space, lc.PRESETS["lecture"], isl=512, osl=64)
    assert np.array_equal(grid.ttft_s, same.ttft_s) and np.array_equal(grid.tpot_s, same.tpot_s)
    for kwargs, params in [(dict(spec_alpha=0.8, c=0.1, draft="llama-3.2-1b"), ("c", "draft")),
                           (dict(c=0.1), ("c", "draft", "spec_alpha")), (dict(spec_alpha=0.8, max_gamma=99), ("max_gamma",))]:
        with pytest.raises(InvalidValueError) as err:
            plan_grid(model, [gpu], 2, isl=512, osl=64, profile=lc.PRESETS["lecture"], **kwargs)
        assert err.value.params == params and "--" not in str(err.value)
