"""One memory basis per profile (issue 11): every fit and every KV capacity counts the same memory.

The two documents' presets count the marketed figure (the lecture §2.3: 40e9 bytes for the A100
40GB, 12,564 KV tokens for GPT-3 13B with 10% held back; the article's 80 GB H100), the `measured`
preset the memory the driver reports (`usable_memory_bytes`: 81,559 MiB on an H100);
`--usable-memory` / `--marketed-memory` override it on every command that fits or counts capacity.
Also: the deployment options declared once and present on every command that takes them, and
`plot` drawing one GPU's passes of a deployment.
"""

from __future__ import annotations

import pytest

from llm_cost.catalog import load_accelerator, load_model
from llm_cost.commands.options import DEPLOYMENT_OPTIONS
from llm_cost.errors import LlmCostError
from llm_cost.parallel import deployed_step_time, step_fit
from llm_cost.report.series import roofline_series, spec_vs_batch
from llm_cost.roofline import step_time
from llm_cost.serving.capacity import kv_capacity
from llm_cost.specs import PRESETS, Profile
from llm_cost.specs.deployment import Deployment
from helpers import error_line, rows_of, run

H100 = load_accelerator("h100-sxm")
L8 = load_model("llama-3-8b")
MARKETED, USABLE = 80e9 * 0.9, 81559 * 2**20 * 0.9  # after the 10% reserve


@pytest.mark.parametrize("preset,basis,available", [
    ("article", "marketed", MARKETED), ("lecture", "marketed", MARKETED), ("measured", "usable", USABLE)])
def test_every_command_counts_the_profiles_memory(preset, basis, available):
    common = ("--model", "llama-3-8b", "--gpu", "h100-sxm", "--profile", preset)
    rows = {
        "roofline": rows_of("roofline", *common)[0],
        "spec": rows_of("spec", *common, "--alpha", "0.8", "--gamma", "4", "--batch", "8")[0],
        "request": rows_of("request", *common, "--isl", "512", "--osl", "64")[0],
        "capacity": rows_of("capacity", *common)[0],
    }
    for name, row in rows.items():
        assert (row["memory_basis"], row["memory_available_bytes"]) == (basis, pytest.approx(available)), name


@pytest.mark.parametrize("flag,basis,available", [("--usable-memory", "usable", USABLE),
                                                  ("--marketed-memory", "marketed", MARKETED)])
@pytest.mark.parametrize("preset", ["lecture", "measured"])
def test_a_flag_overrides_the_profiles_basis(flag, basis, available, preset):
    common = ("--model", "llama-3-8b", "--gpu", "h100-sxm", "--profile", preset, flag)
    for row in (rows_of("roofline", *common)[0], rows_of("capacity", *common)[0],
                rows_of("request", *common, "--isl", "512", "--osl", "64")[0]):
        assert (row["memory_basis"], row["memory_available_bytes"]) == (basis, pytest.approx(available))


def test_table_and_batching_follow_their_documents_basis():
    row = rows_of("table", "--model", "llama-3-8b")[0]
    assert (row["memory_basis"], row["memory_bytes"]) == ("marketed", 80e9)  # the article's 80 GB
    usable = rows_of("table", "--model", "llama-3-8b", "--usable-memory")[0]
    assert usable["memory_basis"] == "usable" and usable["max_batch_bf16_at_4096"] > row["max_batch_bf16_at_4096"]
    lecture = rows_of("batching", "--rate", "1", "--requests", "50", "--profile", "lecture")[0]
    measured = rows_of("batching", "--rate", "1", "--requests", "50")[0]  # the default profile
    assert lecture["memory_basis"] == "marketed" and measured["memory_basis"] == "usable"


def test_the_fit_and_the_capacity_share_one_memory_figure():
    """Under one profile a pass's fit and the KV capacity start from the same bytes (the fit adds the
    pass's workspace, the capacity leaves activations to the reserve)."""
    for preset in ("lecture", "measured"):
        d = Deployment(tp=2).following(PRESETS[preset])
        fit = step_fit(L8, H100, d, batch=1)
        cap = kv_capacity(L8, H100, deployment=d)
        assert fit.available_bytes == cap.usable_bytes and fit.memory_basis == cap.memory_basis


def test_library_defaults_and_refusals():
    # one default (issue 28 review): the usable memory, as the CLI's default preset; the lecture §2.3 asks
    marketed = Deployment(memory_basis="marketed")
    assert kv_capacity("gpt-3-13b", "a100-40gb", reserve=0.1, deployment=marketed).kv_tokens == 12_564
    assert kv_capacity("gpt-3-13b", "a100-40gb", reserve=0.1).kv_tokens == 15_805
    assert Deployment().basis == "usable" and Profile("mine").memory_basis == "usable"
    assert Deployment().following(PRESETS["measured"]).basis == "usable"
    assert Deployment(memory_basis="marketed").following(PRESETS["measured"]).basis == "marketed"
    with pytest.raises(LlmCostError, match="memory_basis must be one of"):
        Deployment(memory_basis="label")
    with pytest.raises(LlmCostError, match="profile.memory_basis must be one of"):
        Profile("p", memory_basis="driver")


def test_a_profile_file_states_its_basis(tmp_path):
    path = tmp_path / "p.json"
    path.write_text('{"name": "p", "bw_efficiency": 0.8, "memory_basis": "marketed"}')
    row = rows_of("roofline", "--profile", str(path))[0]
    assert row["memory_basis"] == "marketed"
    path.write_text('{"name": "p", "bw_efficiency": 0.8}')
    assert rows_of("roofline", "--profile", str(path))[0]["memory_basis"] == "usable"


# ---- the deployment options, declared once ------------------------------------------------------

DEPLOYMENT_FLAGS = ("--tp", "--pp", "--ep", "--gpus", "--kv-dtype", "--overlap-comm", "--usable-memory", "--strict")


@pytest.mark.parametrize("command", ["roofline", "spec", "tree", "request", "capacity", "table", "batching"])
def test_every_timing_command_takes_the_deployment_options(command):
    from typer.main import get_command

    from llm_cost.cli import app

    click_cmd = get_command(app).commands[command]
    opts = [o for p in click_cmd.params for o in p.opts]
    for flag in DEPLOYMENT_FLAGS:
        assert opts.count(flag) == 1, (command, flag)
    assert set(DEPLOYMENT_OPTIONS) <= {p.name for p in click_cmd.params}


def test_the_deployment_options_are_declared_in_one_place():
    from pathlib import Path

    import llm_cost.commands as commands

    folder = Path(commands.__file__).parent
    declaring = sorted(p.name for p in folder.glob("*.py") if '"--overlap-comm' in p.read_text(encoding="utf-8"))
    assert declaring == ["options.py"]


# ---- plot: one GPU's passes on a deployment -----------------------------------------------------

def test_plot_series_on_a_deployment():
    one = roofline_series(L8, H100, PRESETS["article"], batches=[1])
    same = roofline_series(L8, H100, PRESETS["article"], batches=[1], deployment=Deployment())
    two = roofline_series(L8, H100, PRESETS["article"], batches=[1], deployment=Deployment(tp=2))
    assert (one[0].time_s == same[0].time_s).all()  # one GPU: step_time itself
    assert one[0].time_s[0] == step_time(L8, H100, PRESETS["article"], rows=1).step_time_s
    assert two[0].time_s[0] == deployed_step_time(L8, H100, PRESETS["article"], Deployment(tp=2), rows=1).step_time_s
    assert two[0].time_s[0] < one[0].time_s[0]
    kw = dict(alphas=[0.8], gammas=[4], cs=[0.1], marks=[1, 64], batch_max=256)
    assert spec_vs_batch(L8, H100, [PRESETS["article"]], **kw, deployment=Deployment(tp=2))[0].speedup.shape


@pytest.mark.parametrize("kind", ["roofline", "spec-vs-batch", "tree", "batching"])
def test_plot_takes_the_deployment_options(kind, tmp_path):
    out = run("plot", kind, "--tp", "2", "--kv-dtype", "fp8", "-o", tmp_path / f"{kind}.png")
    assert out.exit_code == 0, out.output
    assert (tmp_path / f"{kind}.png").stat().st_size > 1000


def test_plot_refuses_a_deployment_option_a_figure_does_not_use(tmp_path):
    line = error_line("plot", "gamma", "--tp", "2", "-o", tmp_path / "g.png")
    assert "--tp does not apply to plot gamma" in line
