"""Issue 24.4: `request` builds its decode's speculation with one library call (`speculation_from`):
the settings checked once, each refusal naming its parameters (the CLI writes them as flags), one range
for --spec-gamma in every command, and one default draft cost (the planner's)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from llm_cost.errors import InvalidValueError
from llm_cost.planner import build
from llm_cost.requests.request import DEFAULT_C, speculation_from
from llm_cost.serving.serve_config import SpecConfig

import cli


def test_none_without_an_acceptance():
    assert speculation_from() is None
    assert speculation_from(spec_gamma=7) is None


def test_tau_is_solved_at_the_gamma_given():
    # the article's alpha 0.8, gamma 4: E = 3.3616 tokens a round (seed 002, section 2.3)
    spec = speculation_from(tau=3.3616, spec_gamma=4)
    assert spec.alpha == pytest.approx(0.8, abs=1e-6) and spec.gamma == 4 and spec.c == DEFAULT_C
    assert speculation_from(spec_alpha=0.7, spec_gamma=2, c=0.3).c == 0.3


def test_one_default_draft_cost_with_the_planner():
    assert build.DEFAULT_C is DEFAULT_C == 0.1


@pytest.mark.parametrize("kwargs, params", [
    (dict(spec_alpha=0.8, tau=3.0), ("spec_alpha", "tau")),
    (dict(c=0.2), ("c", "draft", "spec_alpha", "tau")),
    (dict(draft="llama-3.2-1b"), ("c", "draft", "spec_alpha", "tau")),
    (dict(spec_alpha=0.8, c=0.2, draft="llama-3.2-1b"), ("c", "draft")),
    (dict(spec_alpha=0.8, spec_gamma=65), ("spec_gamma",)),
    (dict(spec_alpha=0.8, spec_gamma=-1), ("spec_gamma",)),
    (dict(spec_alpha=1.5), ("spec_alpha",)),
    (dict(spec_alpha=0.8, c=11.0), ("c",)),
])
def test_each_refusal_names_its_parameters(kwargs, params):
    with pytest.raises(InvalidValueError) as err:
        speculation_from(**kwargs)
    assert tuple(err.value.params) == params


def test_the_engine_and_the_request_bound_gamma_alike():
    for gamma in (64, 65):
        engine = request = None
        try:
            SpecConfig(gamma, 0.8, c=0.05)
        except InvalidValueError as err:
            engine = str(err)
        try:
            speculation_from(spec_alpha=0.8, spec_gamma=gamma)
        except InvalidValueError as err:
            request = str(err)
        assert engine == request, gamma


@pytest.mark.parametrize("args, line", [
    (["--spec-gamma", "1000", "--spec-alpha", "0.8"], "Error: --spec-gamma must be in [0, 64], got 1000"),
    (["--c", "0.2"], "Error: --c and --draft describe the drafting model of speculative decoding: give --spec-alpha "
                     "or --tau"),
])
def test_request_refuses_in_one_line(args, line):
    result = CliRunner().invoke(cli.app, ["request", "--model", "llama-3.1-8b", "--gpu", "h100", *args])
    assert result.exit_code == 2 and result.output.strip().splitlines() == [line]
