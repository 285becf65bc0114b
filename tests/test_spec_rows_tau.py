"""Issue 24.4: `spec` hands --tau to the library (`spec_rows(taus=...)`), which solves alpha per gamma and
writes the whole caption; the command no longer loops over gammas or cuts the library's caption apart."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from llm_cost.catalog import load_accelerator, load_model
from llm_cost.errors import InvalidValueError
from llm_cost.report.speculative_rows import grid_rows, spec_rows
from llm_cost.specs import BF16, preset
from llm_cost.speculative.tau import alpha_from_tau

import cli

TARGET, GPU, ARTICLE = load_model("llama-3-8b"), load_accelerator("h100-sxm"), preset("article")


def test_taus_are_solved_per_gamma_and_carried_by_each_row():
    rows, caption = spec_rows(TARGET, GPU, ARTICLE, taus=[2.9, 2.5], gammas=[2, 4], batches=[1, 64], weights=BF16)
    for gamma in (2, 4):  # the same rows as the grid of the alphas each tau gives at that gamma
        alphas = [float(alpha_from_tau(tau, gamma)) for tau in (2.9, 2.5)]
        expected, _, _, _ = grid_rows(TARGET, GPU, ARTICLE, alphas=alphas, gammas=[gamma], batches=[1, 64],
                                      weights=BF16)
        assert [row for row in rows if row["gamma"] == gamma] == [
            {**row, "tau": (2.9, 2.5)[alphas.index(row["alpha"])]} for row in expected]
    assert caption.startswith("alpha from tau (E tokens = tau): tau 2.9 at gamma 2: alpha ")
    assert caption.count("Best gamma searched") == 1
    # the article's alpha 0.8 at gamma 4 gives E = 3.3616 tokens a round (seed 002, section 2.3), and back
    rows, caption = spec_rows(TARGET, GPU, ARTICLE, taus=[3.3616], gammas=[4], batches=[1], weights=BF16)
    assert all(row["alpha"] == pytest.approx(0.8, abs=1e-6) for row in rows)
    assert "tau 3.3616 at gamma 4: alpha 0.8000" in caption


def test_without_taus_the_default_acceptance():
    rows, caption = spec_rows(TARGET, GPU, ARTICLE, gammas=[4], batches=[1], weights=BF16)
    assert {row["alpha"] for row in rows} == {0.8} and "tau" not in rows[0]
    assert caption.startswith("decode step: one target pass over B rows; verify step: over B (gamma + 1) rows. ")


def test_alphas_and_taus_exclude_each_other():
    with pytest.raises(InvalidValueError) as err:
        spec_rows(TARGET, GPU, ARTICLE, alphas=[0.8], taus=[3.0], gammas=[4], batches=[1], weights=BF16)
    assert err.value.params == ("alphas", "taus")
    result = CliRunner().invoke(cli.app, ["spec", "--alpha", "0.8", "--tau", "3"])
    assert result.exit_code == 2 and result.output.strip() == (
        "Error: --alpha and --tau exclude each other: give the acceptance rates or the mean accepted lengths they "
        "are solved from")
