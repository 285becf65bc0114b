"""Edge values through the CLI (issue 6): alpha 0 and 1, gamma 0 and 10^6, batch 10^9 behave;
NaN, inf and negative numbers are rejected with one line naming the option."""

from __future__ import annotations

import math

import numpy as np
import pytest

from llm_cost.speculative import sampling
from llm_cost.cli import app

from helpers import rows_of, runner


def finite(row):
    return all(not isinstance(v, float) or math.isfinite(v) for v in row.values())


def test_alpha_one_gamma_a_million_is_exact():
    (row,) = rows_of("leviathan", "--alpha", "1", "--gamma", "1000000")
    assert row["expected_tokens"] == 1_000_001 and row["ops_factor"] == 1.0 and finite(row)


def test_alpha_zero_gamma_zero():
    (row,) = rows_of("leviathan", "--alpha", "0", "--gamma", "0")
    assert row["expected_tokens"] == 1.0 and row["speedup"] == 1.0


def test_batch_a_billion_and_gamma_a_million():
    for row in rows_of("spec", "--batch", "1000000000", "--gamma", "1000000"):
        assert finite(row)
        assert 0 < row["speedup"] < 1  # deep in the compute-bound region speculation loses
        assert row["verify_bound"] == "compute"


@pytest.mark.parametrize("args,option", [
    (["spec", "--alpha", "nan"], "--alpha"), (["spec", "--alpha", "inf"], "--alpha"),
    (["spec", "--alpha", "-0.1"], "--alpha"), (["spec", "--gamma", "-1"], "--gamma"),
    (["spec", "--batch", "-1"], "--batch"), (["spec", "--c", "-0.1"], "--c"),
    (["spec", "--mfu", "nan"], "--mfu"), (["roofline", "--context", "inf"], "--context"),
    (["roofline", "--fixed-ms", "nan"], "--fixed-ms"), (["capacity", "--reserve", "nan"], "--reserve"),
    (["capacity", "--reserve", "1"], "--reserve"), (["batching", "--rate", "nan"], "--rate"),
    (["batching", "--rate", "-1"], "--rate"), (["gamma", "--alpha", "1.5"], "--alpha"),
    (["tree", "--batch", "0"], "--batch"), (["leviathan", "--alpha", "0.8", "--gamma", "-2"], "--gamma"),
])
def test_bad_numbers_are_one_line_naming_the_option(args, option):
    out = runner.invoke(app, args)
    lines = [ln for ln in out.output.splitlines() if ln.strip()]
    assert out.exit_code == 2 and len(lines) == 1, out.output
    assert option in lines[0] and "Traceback" not in out.output


def test_wrong_variant_counterexample_pinned():
    # "each wrong variant is biased whenever p != q" is false as stated: hypothesis found
    # p = (1, 0), q = (1/2, 1/2). min(p, q) = p / 2 is proportional to p, so resampling from p
    # after a rejection is unbiased; and the only token with q > p has p = 0, so "reject whenever
    # q > p" is unbiased too. llm_cost.checks.formulas states the exact conditions.
    p, q = np.array([1.0, 0.0]), np.array([0.5, 0.5])
    assert np.allclose(sampling.output_distribution(p, q, "resample_target"), p)
    assert np.allclose(sampling.output_distribution(p, q, "reject_if_draft_higher"), p)
    # exercise 4 (the lecture §15): the same rule on p = (.5, .3, .2), q = (.2, .6, .2) is off by TV 0.15
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.6, 0.2])
    wrong = sampling.output_distribution(p, q, "resample_target")
    assert np.abs(wrong - p).sum() / 2 == pytest.approx(0.15, abs=5e-3)
