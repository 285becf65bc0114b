"""`spec` and `tree` on deployments: one GPU's share of each pass, the fit of the verification pass,
the best-gamma search leaving out what does not fit, and one GPU exactly as before."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from llm_cost.parallel import deployed_step_time, step_fit
from llm_cost.report.deployment_rows import DEPLOYMENT_KEYS
from llm_cost.specs.deployment import Deployment
from llm_cost.speculative import RooflineSpeedup, best_gamma, roofline_speedup, tree_speedup
from llm_cost.speculative.fit import verification_fit
from llm_cost.speculative.trees import WEAK_DRAFT
from helpers import error_line, rows_of, run

ARTICLE = ("llama-3-8b", "h100-sxm", "article")
LECTURE = ("llama-3.1-8b", "h100-sxm", "lecture")


def _same(a, b) -> None:
    """Every field equal bit for bit (NaN nowhere)."""
    for f in fields(RooflineSpeedup):
        x, y = np.asarray(getattr(a, f.name)), np.asarray(getattr(b, f.name))
        assert x.shape == y.shape and np.array_equal(x, y), f.name


# ---- one GPU: exactly today's numbers ----------------------------------------------------------

@pytest.mark.parametrize("kw", [
    dict(alpha=0.8, gamma=4, c=0.1, batch=[1, 64, 128, 256]),
    dict(alpha=[0.6, 0.8], gamma=[[1], [4], [8]], c=0.05, batch=[1, 32], context=1024),
])
def test_tp1_equals_the_default_call(kw):
    _same(roofline_speedup(*ARTICLE, **kw), roofline_speedup(*ARTICLE, deployment=Deployment(), **kw))
    _same(roofline_speedup(*LECTURE, **kw), roofline_speedup(*LECTURE, deployment=Deployment(), **kw))


def test_tp1_with_a_draft_model_equals_the_default_call():
    kw = dict(alpha=0.8, gamma=4, context=1024, draft="llama-3.2-1b", draft_profile="lecture-draft",
              batch=[1, 16, 512])
    _same(roofline_speedup(*LECTURE, **kw), roofline_speedup(*LECTURE, deployment=Deployment(), **kw))


def test_tp1_tree_equals_the_default_call():
    kw = dict(widths=(4, 2, 2, 1), hits=WEAK_DRAFT, batch=[1, 32], context=1024)
    a, b = tree_speedup(*LECTURE, **kw), tree_speedup(*LECTURE, deployment=Deployment(), **kw)
    for name in ("base_s", "verify_s", "draft_round_s", "speedup"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


@settings(max_examples=60, deadline=None)
@given(alpha=st.floats(0, 1), gamma=st.integers(0, 16), batch=st.integers(1, 4096),
       c=st.floats(0, 1), context=st.integers(0, 8192))
def test_property_tp1_speedup_is_the_default(alpha, gamma, batch, c, context):
    kw = dict(alpha=alpha, gamma=gamma, batch=batch, c=c, context=context)
    for setting in (ARTICLE, LECTURE):
        plain = roofline_speedup(*setting, **kw)
        deployed = roofline_speedup(*setting, deployment=Deployment(), **kw)
        assert deployed.speedup == plain.speedup and deployed.round_s == plain.round_s


def test_spec_rows_at_tp1_keep_every_number():
    args = ("spec", "--batch", 1, "--batch", 64, "--batch", 256, "--gamma", 2, "--gamma", 4)
    plain, single = rows_of(*args), rows_of(*args, "--tp", 1)
    assert plain == single
    r = roofline_speedup(*ARTICLE, alpha=0.8, gamma=4, c=0.1, batch=64)
    row = next(x for x in plain if x["batch"] == 64 and x["gamma"] == 4 and x["mfu"] == 1.0)
    assert row["speedup"] == r.speedup and row["round_s"] == r.round_s and row["tokens_per_s"] == r.tokens_per_s
    assert set(DEPLOYMENT_KEYS) <= set(row) and row["comm_time_s"] == 0.0 and row["gpus"] == 1


# ---- tp 4: one GPU's share -------------------------------------------------------------------

def test_tp4_decode_and_verify_steps_are_the_deployed_step_time():
    d = Deployment(tp=4)
    r = roofline_speedup("llama-3-70b", "h100-sxm", "lecture", alpha=0.8, gamma=4, c=0.1, batch=[1, 64],
                         context=4096, deployment=d)
    for i, b in enumerate((1, 64)):
        base = deployed_step_time("llama-3-70b", "h100-sxm", "lecture", d, rows=b, batch=b, context=4096)
        verify = deployed_step_time("llama-3-70b", "h100-sxm", "lecture", d, rows=5 * b, batch=b, context=4096)
        assert r.base_s[i] == pytest.approx(base.step_time_s, rel=1e-12)
        assert r.verify_s[i] == pytest.approx(verify.step_time_s, rel=1e-12)
        assert base.comm_time_s > 0


def test_tp4_tree_verify_step_is_the_deployed_step_time():
    d = Deployment(tp=4)
    t = tree_speedup("llama-3-70b", "h100-sxm", "lecture", widths=(4, 2, 2, 1), hits=WEAK_DRAFT, batch=[1, 8],
                     context=1024, deployment=d)
    for i, b in enumerate((1, 8)):
        want = deployed_step_time("llama-3-70b", "h100-sxm", "lecture", d, rows=45 * b, batch=b, context=1024)
        assert t.verify_s[i] == pytest.approx(want.step_time_s, rel=1e-12)


def test_the_draft_runs_on_the_same_tp():
    d = Deployment(tp=4)
    kw = dict(alpha=0.8, gamma=4, context=1024, draft="llama-3.2-1b", draft_profile="lecture-draft")
    r = roofline_speedup("llama-3.1-70b", "h100-sxm", "lecture", deployment=d, **kw)
    own = deployed_step_time("llama-3.2-1b", "h100-sxm", "lecture-draft", d, rows=1, batch=1, context=1024)
    assert r.draft_s == pytest.approx(own.step_time_s, rel=1e-12)


def test_kv_dtype_reaches_the_time():
    kw = dict(alpha=0.8, gamma=4, c=0.1, batch=64, context=4096)
    bf16 = roofline_speedup(*LECTURE, **kw)
    fp8 = roofline_speedup(*LECTURE, deployment=Deployment(kv_dtype="fp8"), **kw)
    assert fp8.base_s < bf16.base_s


def test_spec_rows_on_tp4_carry_the_verification_comm_and_fit():
    rows = rows_of("spec", "--model", "llama-3-70b", "--tp", "4", "--batch", 1, "--batch", 64, "--context", 4096,
                   "--preset", "lecture", "--mfu", 1)
    for r in rows:
        assert set(DEPLOYMENT_KEYS) <= set(r) and r["fits"] and r["tp"] == 4 and r["gpus"] == 4
        want = deployed_step_time("llama-3-70b", "h100-sxm", "lecture", Deployment(tp=4), rows=5 * r["batch"],
                                  batch=r["batch"], context=4096)
        assert r["comm_time_s"] == pytest.approx(want.comm_time_s, rel=1e-12)
        fit = step_fit("llama-3-70b", "h100-sxm", Deployment(tp=4), rows=5 * r["batch"], batch=r["batch"],
                       context=4096)
        assert r["memory_needed_bytes"] == fit.needed_bytes
        assert r["tokens_per_s"] == pytest.approx(r["batch"] * r["expected_tokens"] / r["round_s"], rel=1e-12)
        assert r["tokens_per_s_per_gpu"] == pytest.approx(r["tokens_per_s"] / 4, rel=1e-12)


# ---- fit, never silent -----------------------------------------------------------------------

def test_spec_70b_on_one_h100_warns_and_strict_exits_2():
    out = run("spec", "--model", "llama-3-70b", "--format", "json")
    assert out.exit_code == 0, out.output
    assert "does not fit" in out.stderr and "141.1 GB" in out.stderr
    assert all(r["fits"] is False for r in rows_of("spec", "--model", "llama-3-70b"))
    strict = run("spec", "--model", "llama-3-70b", "--strict", "--format", "json")
    assert strict.exit_code == 2 and "does not fit" in strict.stderr


def test_spec_70b_on_four_h100s_fits_without_a_warning():
    out = run("spec", "--model", "llama-3-70b", "--tp", 4, "--strict", "--format", "json")
    assert out.exit_code == 0, out.output
    assert "Warning" not in out.stderr


def test_table_shows_fits_only_when_something_does_not_fit_and_comm_only_on_more_gpus():
    one = run("spec").stdout
    assert "fits" not in one and "comm (ms)" not in one
    big = run("spec", "--model", "llama-3-70b").stdout
    assert "fits" in big and "NO" in big and "comm (ms)" not in big
    tp4 = run("spec", "--model", "llama-3-70b", "--tp", 4).stdout
    assert "comm (ms)" in tp4 and "GB/GPU" in tp4 and "fits" not in tp4
    tree = run("tree", "--model", "llama-3-70b", "--tp", 4).stdout
    assert "comm (ms)" in tree and "fits" not in tree


def test_tree_70b_on_one_h100_warns_and_strict_exits_2():
    out = run("tree", "--model", "llama-3-70b", "--format", "json")
    assert out.exit_code == 0 and "does not fit" in out.stderr
    assert run("tree", "--model", "llama-3-70b", "--strict").exit_code == 2
    rows = rows_of("tree", "--model", "llama-3-70b", "--tp", 4, "--batch", 1, "--batch", 32)
    assert all(set(DEPLOYMENT_KEYS) <= set(r) and r["fits"] for r in rows)
    assert all(r["comm_time_s"] > 0 for r in rows)


def test_tree_rows_at_tp1_keep_every_number():
    args = ("tree", "--widths", "4,2,2,1", "--widths", "1,1,1,1", "--batch", 1, "--batch", 32)
    assert rows_of(*args) == rows_of(*args, "--tp", 1, "--kv-dtype", "bf16")


@pytest.mark.parametrize("cmd", ["spec", "tree"])
def test_bad_deployments_are_one_line(cmd):
    assert error_line(cmd, "--model", "llama-3-8b", "--tp", 3) == (
        "Error: --tp must divide the model's 32 attention heads, got 3")
    assert "--ep" in error_line(cmd, "--model", "llama-3-8b", "--ep", 2)
    assert "--kv-dtype" in error_line(cmd, "--kv-dtype", "fp7")
    assert "--gpus" in error_line(cmd, "--tp", 4, "--gpus", 2)


# ---- the best-gamma search skips what does not fit --------------------------------------------

USABLE = Deployment(memory_basis="usable")  # 81,559 MiB: the figures below are on the driver's memory


def test_best_gamma_skips_unfit_gammas_and_counts_them():
    kw = dict(alpha=0.9, c=0.01, batch=64, context=7240, deployment=USABLE)
    best = best_gamma(*ARTICLE, **kw)
    every = best_gamma(*ARTICLE, skip_unfit=False, **kw)
    assert (int(best.gamma), best.gamma_skipped_unfit) == (2, 14) and every.gamma == 4
    assert verification_fit("llama-3-8b", "h100-sxm", USABLE, rows=64 * 3, batch=64, context=7240).fits
    assert not verification_fit("llama-3-8b", "h100-sxm", USABLE, rows=64 * 4, batch=64, context=7240).fits
    # arrays: one count per cell; where even plain decoding does not fit nothing is left out
    arr = best_gamma(*ARTICLE, alpha=0.9, c=0.01, batch=[1, 64, 256], context=7240, deployment=USABLE)
    assert arr.gamma_skipped_unfit.tolist() == [0, 14, 0] and arr.gamma[1] == 2


def test_best_gamma_everything_fitting_is_unchanged():
    kw = dict(alpha=[0.6, 0.8, 0.9], c=0.1, batch=[1, 64, 256])
    best, every = best_gamma(*ARTICLE, **kw), best_gamma(*ARTICLE, skip_unfit=False, **kw)
    _same(best, every)
    assert not best.gamma_skipped_unfit.any()


def test_spec_says_how_many_gammas_it_skipped():
    args = ("spec", "--alpha", 0.9, "--c", 0.01, "--gamma", 2, "--batch", 64, "--context", 7240, "--usable-memory")
    rows = rows_of(*args)
    assert [(r["gamma_opt"], r["gamma_skipped_unfit"]) for r in rows] == [(2, 14), (2, 14)]
    assert all(r["fits"] for r in rows)
    out = run(*args, "--format", "json")
    assert out.exit_code == 0 and "skipped 14 gammas that do not fit" in out.stderr
    assert "left out: above 2 at batch 64" in " ".join(run(*args).stdout.split())
    assert run(*args, "--strict").exit_code == 0  # every printed row fits; the search's skips are said
