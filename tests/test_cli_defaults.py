"""CLI: sensible defaults (issue 15, deliverable 4)."""

from __future__ import annotations

import pytest

from helpers import rows_of, run


def test_roofline_rows_default_to_the_batch():
    rows = rows_of("roofline", "--model", "llama-3-70b", "--batch", "32")
    assert [(r["rows"], r["batch"]) for r in rows] == [(32, 32)]
    assert rows == rows_of("roofline", "--model", "llama-3-70b", "--batch", "32", "--rows", "32")


def test_roofline_default_is_one_decode_step_at_batch_one():
    assert [(r["rows"], r["batch"]) for r in rows_of("roofline")] == [(1, 1)]


def test_roofline_explicit_rows_still_checked_against_the_batch():
    out = run("roofline", "--batch", "4", "--rows", "1")
    assert out.exit_code == 2 and "--rows" in out.output


@pytest.mark.parametrize("command", ["capacity", "waste", "batching", "tree"])
def test_lecture_commands_say_how_to_get_the_lecture_in_help(command):
    out = run(command, "--help")
    assert out.exit_code == 0 and "as every command" in out.output and "--preset lecture" in out.output


# One default model, GPU and profile everywhere (issue 28.1): the commands that predict a deployment
# answer with options.DEFAULT unless told otherwise; each row says which.
@pytest.mark.parametrize("args", [
    ["request"], ["capacity"], ["tree"], ["batching", "--rate", "1", "-n", "20"], ["waste", "--rate", "1", "-n", "20"],
])
def test_every_prediction_defaults_to_one_model_gpu_and_profile(args):
    from llm_cost.commands.options import DEFAULT

    (row, *_) = rows_of(*args)
    assert (row["model"], row["preset"]) == (DEFAULT.model, DEFAULT.preset)
    assert (row["gpu"], row["gpu_name"]) == (DEFAULT.gpu, "H100 SXM")  # the catalog key, then the display name


def test_the_default_is_the_articles_model_and_gpu_under_a_shipped_profile():
    from llm_cost.commands.options import DEFAULT
    from llm_cost.specs.profiles import ARTICLE_SETTING, PRESETS

    assert (DEFAULT.model, DEFAULT.gpu) == (ARTICLE_SETTING.model, ARTICLE_SETTING.gpu) and DEFAULT.preset in PRESETS


@pytest.mark.parametrize("command", ["capacity", "waste", "batching", "tree", "request", "plan"])
def test_the_defaults_come_from_one_place(command):
    import inspect
    import importlib

    from llm_cost.cli import COMMAND_MODULES
    from llm_cost.commands.options import DEFAULT

    module = importlib.import_module(f"llm_cost.commands.{COMMAND_MODULES[command]}")
    fn = getattr(module, f"{command}_cmd")
    params = inspect.signature(fn).parameters
    assert params["preset"].default == DEFAULT.preset
    for name, want in (("model", DEFAULT.model), ("gpu", DEFAULT.gpu)):
        if name in params and params[name].default is not None:
            assert params[name].default in (want, [want])


# plan answers with the same defaults (issue 28.1): the model and GPU of options.DEFAULT, request's ISL and
# OSL, one node of GPUs; a note names the ones it used, and its best row reproduces with `request`.
def test_plan_with_no_options_uses_the_defaults_and_says_which():
    from llm_cost.commands.options import DEFAULT, DEFAULT_ISL, DEFAULT_OSL, DEFAULT_PLAN_GPUS

    out = run("plan")
    assert out.exit_code == 0, out.output
    assert (f"defaults used: --model {DEFAULT.model} --gpu {DEFAULT.gpu} --gpus {DEFAULT_PLAN_GPUS} "
            f"--isl {DEFAULT_ISL} --osl {DEFAULT_OSL}") in out.stderr
    (row, *_) = rows_of("plan")
    assert (row["model"], row["gpu"], row["preset"]) == (DEFAULT.model, DEFAULT.gpu, DEFAULT.preset)
    assert row["gpus"] == DEFAULT_PLAN_GPUS


def test_plan_names_only_the_defaults_it_used():
    out = run("plan", "--model", "llama-3.2-1b", "--gpus", "2", "--batch", "8")
    assert out.exit_code == 0, out.output
    assert "defaults used: --gpu h100-sxm --isl 1024 --osl 256" in out.stderr and "--model llama-3-8b" not in out.stderr


def test_plan_defaults_are_requests():
    import inspect

    from llm_cost.commands.options import DEFAULT_ISL, DEFAULT_OSL
    from llm_cost.commands.requests import request_cmd

    params = inspect.signature(request_cmd).parameters
    assert (params["isl"].default, params["osl"].default) == ([DEFAULT_ISL], [DEFAULT_OSL])


def test_plan_default_best_row_is_its_request_line():
    import shlex

    out = run("plan")
    line = " ".join(out.stdout.split("llm-cost request ", 1)[1].split())  # the note, wrapped to the width
    (best, *_) = rows_of("plan")
    assert line == best["request_args"]
    got = rows_of("request", *shlex.split(line))[0]
    for key in ("ttft_s", "tpot_s", "output_tokens_per_s_per_gpu"):
        assert got[key] == pytest.approx(best[key], rel=1e-9), key


# Every command answers with no options (issue 28.1); the ones that need an input name it in one line.
NEEDS = {"plot": "Missing argument KIND: one of roofline", "validate": "Missing argument POINTS: a CSV",
         "calibrate": "Missing argument POINTS: a CSV", "batching": "--rate"}


def test_every_command_runs_with_no_options():
    from llm_cost.cli import COMMAND_MODULES
    from llm_cost.commands.options import DEFAULT

    for command in sorted(set(COMMAND_MODULES) - set(NEEDS) - {"check"}):  # check: tests/test_cli_screen.py
        out = run(command)
        assert out.exit_code == 0, (command, out.output)
        assert out.stdout.strip(), command
    (row,) = rows_of("model")
    assert row["name"] == DEFAULT.model


@pytest.mark.parametrize("command", sorted(NEEDS))
def test_a_command_that_needs_an_input_names_it(command):
    out = run(command)
    assert out.exit_code == 2 and NEEDS[command] in out.output, out.output


# Issue 28.3: a --help text names files a user has (the path in the checkout), never the lead's shared/.
def test_help_names_files_that_exist_in_the_checkout():
    import re
    from pathlib import Path

    from llm_cost.cli import COMMAND_MODULES

    root = Path(__file__).resolve().parent.parent
    for command in sorted(COMMAND_MODULES):
        text = " ".join(run(command, "--help").output.split())  # help wraps a path at its slashes never
        assert "shared/" not in text, command
        for path in re.findall(r"[\w.-]+(?:/[\w.-]+)+\.(?:csv|json)", text):
            if not path.startswith("./my-"):  # a file of the user's own, in an example
                assert (root / path).exists(), (command, path)


def test_plan_rows_reproduce_from_the_fields_the_table_shows():
    """Issue 28.1: a plan row's table fields copied into `request`, every other option left at its default,
    give the row's TTFT and TPOT (the defaults are the same ones)."""
    for row in rows_of("plan")[:3]:
        tp, pp = row["split"].split()[0].split("x")
        got = rows_of("request", "--gpu", row["gpu"], "--tp", tp, "--pp", pp, "--gpus", row["gpus"], "--weights",
                      row["weights"], "--kv-dtype", row["kv_dtype"], "--batch", row["batch"])[0]
        assert (got["ttft_s"], got["tpot_s"]) == pytest.approx((row["ttft_s"], row["tpot_s"]), rel=1e-9)


def test_plan_bad_input_is_one_line_without_the_defaults_note():
    out = run("plan", "--model", "nope")
    assert out.exit_code == 2 and len(out.stderr.strip().splitlines()) == 1 and "defaults used" not in out.stderr
