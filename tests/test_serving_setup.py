"""Issue 24.4: `batching`'s library half, `serving.setup.serving_setup` (named parameters, errors
naming them), and the command that only parses, calls it and renders."""

from __future__ import annotations

import pytest

from llm_cost.catalog import load_accelerator, load_model
from llm_cost.errors import LlmCostError
from llm_cost.serving.setup import SCHEDULER_RESERVATION, serving_setup
from llm_cost.specs import PRESETS

TARGET, DRAFT, GPU = load_model("llama-3.1-8b"), load_model("llama-3.2-1b"), load_accelerator("h100-sxm")
LECTURE = PRESETS["lecture"]


@pytest.mark.parametrize("scheduler", sorted(SCHEDULER_RESERVATION))
def test_each_scheduler_takes_its_default_reservation(scheduler):
    cfg = serving_setup(TARGET, GPU, LECTURE, scheduler=scheduler).config
    assert cfg.reservation == SCHEDULER_RESERVATION[scheduler]
    assert cfg.scheduler == ("request" if scheduler == "request" else "iteration")


def test_a_draft_model_costs_its_own_pass_and_takes_k_v_room():
    plain = serving_setup(TARGET, GPU, LECTURE, spec_gamma=4, spec_alpha=0.8, c=0.05)
    drafted = serving_setup(TARGET, GPU, LECTURE, spec_gamma=4, spec_alpha=0.8, draft=DRAFT)
    assert plain.draft is None and plain.config.spec.draft_cost is None and plain.config.spec.c == 0.05
    assert drafted.config.spec.draft_cost is not None
    assert drafted.replica.kv_capacity_tokens == drafted.draft.kv_tokens < plain.replica.kv_capacity_tokens
    given = serving_setup(TARGET, GPU, LECTURE, spec_gamma=4, spec_alpha=0.8, draft=DRAFT, kv_tokens=1000)
    assert given.replica.kv_capacity_tokens == 1000  # kv_tokens given wins


def test_bursty_acceptance_sets_alpha_to_its_stationary_rate():
    from llm_cost.speculative.rounds import BurstyAcceptance

    chain = BurstyAcceptance(0.9, 0.3, 0.1, 0.2)
    spec = serving_setup(TARGET, GPU, LECTURE, spec_gamma=3, spec_acceptance=chain).config.spec
    assert spec.alpha == chain.stationary_alpha and spec.bursty is chain


@pytest.mark.parametrize("settings, names", [
    ({"spec_gamma": 4}, ("spec_gamma", "spec_alpha")),
    ({"c": 0.1}, ("c", "spec_gamma")),
    ({"spec_gamma": 4, "spec_alpha": 0.8, "c": 0.1, "draft": DRAFT}, ("c", "draft")),
    ({"scheduler": "none", "reservation": "paged"}, ("scheduler", "reservation")),
    ({"scheduler": "fifo"}, ("scheduler",)),
])
def test_errors_name_the_parameters_not_flags(settings, names):
    with pytest.raises(LlmCostError) as err:
        serving_setup(TARGET, GPU, LECTURE, **settings)
    assert "--" not in str(err.value)
    assert set(names) <= set(err.value.params) and all(n in str(err.value) for n in names)


def test_the_cli_writes_the_parameters_as_its_flags():
    from typer.testing import CliRunner

    from cli import app

    out = CliRunner().invoke(app, ["batching", "--rate", "1", "--requests", "20", "--c", "0.1"])
    assert out.exit_code != 0 and "--c and --draft need --spec-gamma and --spec-alpha" in out.output
