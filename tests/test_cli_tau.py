"""`--tau` on `spec` and `alpha_from_tau` (issue 15, deliverable 6)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

import llm_cost as lc
from llm_cost.errors import InvalidValueError
from llm_cost.speculative import alpha_from_tau, expected_tokens

from helpers import rows_of, run, error_line


def test_article_alpha_from_its_tau():
    assert alpha_from_tau(expected_tokens(0.8, 4), 4) == pytest.approx(0.8, abs=1e-12)


def test_ends():
    assert alpha_from_tau(1, 4) == 0.0 and alpha_from_tau(5, 4) == 1.0


def test_arrays_broadcast():
    got = alpha_from_tau(np.array([2.0, 3.0]), np.array([[3], [5]]))
    assert got.shape == (2, 2)
    assert np.allclose(expected_tokens(got, np.array([[3], [5]])), [2.0, 3.0])


@given(st.floats(0, 1), st.integers(1, 64))
def test_inverts_expected_tokens(alpha, gamma):
    tau = expected_tokens(alpha, gamma)
    assert expected_tokens(alpha_from_tau(tau, gamma), gamma) == pytest.approx(tau, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("tau,gamma,match", [(0.5, 4, r"tau must be in \[1, gamma \+ 1\] = \[1, 5\]"),
                                             (6, 4, "got 6"), (2, 0, "only at gamma >= 1"),
                                             (float("nan"), 4, "tau must be a finite number")])
def test_bad_tau(tau, gamma, match):
    with pytest.raises(InvalidValueError, match=match):
        alpha_from_tau(tau, gamma)


def test_exported():
    assert lc.alpha_from_tau is alpha_from_tau


def test_spec_tau_gives_the_alpha_rows():
    by_tau = rows_of("spec", "--tau", "3.3616", "--gamma", "4", "--batch", "64")
    by_alpha = rows_of("spec", "--alpha", "0.8", "--gamma", "4", "--batch", "64")
    assert [r["alpha"] for r in by_tau] == pytest.approx([0.8, 0.8], abs=1e-9)
    assert [r["speedup"] for r in by_tau] == pytest.approx([r["speedup"] for r in by_alpha], rel=1e-9)
    assert all(r["tau"] == 3.3616 for r in by_tau)


def test_spec_tau_per_gamma():
    rows = rows_of("spec", "--tau", "3.2", "--gamma", "3", "--gamma", "4")
    alphas = {r["gamma"]: r["alpha"] for r in rows}
    assert alphas[3] > alphas[4]  # fewer drafts: the same tau needs a higher alpha
    assert all(r["expected_tokens"] == pytest.approx(3.2) for r in rows)


def test_spec_tau_printed_beside_alpha():
    out = run("spec", "--tau", "3.2", "--gamma", "4")
    assert out.exit_code == 0, out.output
    assert "tau 3.2 at gamma 4: alpha 0.7747" in " ".join(out.output.split())
    header = next(ln for ln in out.output.splitlines() if "alpha" in ln and "tau" in ln)
    assert header.index("alpha") < header.index("tau") < header.index("gamma")


def test_spec_tau_and_alpha_exclude_each_other():
    assert "--alpha and --tau exclude each other" in error_line("spec", "--tau", "3", "--alpha", "0.8")


def test_spec_tau_out_of_range():
    assert "--tau must be in [1, --gamma + 1] = [1, 5] at --gamma 4" in error_line("spec", "--tau", "6")


def test_spec_tau_at_gamma_zero():
    assert "--tau gives alpha only at --gamma >= 1" in error_line("spec", "--tau", "2", "--gamma", "0")
