"""CLI: a single-value option given twice is an error naming it (issue 15, deliverable 3)."""

from __future__ import annotations

import pytest

from llm_cost.cli import app

from helpers import run, error_line


def test_request_gpu_and_model_repeat_and_a_one_value_option_still_says_so():
    """`roofline --gpu/--model/--batch` and `request --gpu/--model` repeat since issue 28 (a row each,
    models outer); `request --weights` takes one value (the next test)."""
    from tests.helpers import rows_of

    assert [r["gpu"] for r in rows_of("request", "--gpu", "h100-sxm", "--gpu", "h200")] == ["h100-sxm", "h200"]
    rows = rows_of("request", "-m", "llama-3-8b", "--model=llama-3.2-1b", "--gpu", "h100-sxm", "--gpu", "l4")
    assert [(r["model"], r["gpu"]) for r in rows] == [("llama-3-8b", "h100-sxm"), ("llama-3-8b", "l4"),
                                                      ("llama-3.2-1b", "h100-sxm"), ("llama-3.2-1b", "l4")]
    one = rows_of("request", "--model", "llama-3.2-1b", "--gpu", "l4")[0]
    assert rows[3]["ttft_s"] == one["ttft_s"] and rows[3]["tpot_s"] == one["tpot_s"]  # the same row alone


def test_request_weights_twice_short_and_long():
    assert error_line("request", "-w", "bf16", "--weights=fp8") == "Error: --weights takes one value, got bf16, fp8"


def test_table_batch_twice():
    """`table --gpu` repeats since issue 28 (one table per GPU, tests/test_cli_newcomer.py); --batch does not."""
    assert "--batch takes one value" in error_line("table", "--batch", "1", "--batch", "8")


def test_switch_twice():
    assert "--kv/--no-kv is one switch" in error_line("roofline", "--kv", "--no-kv")


def test_repeatable_options_still_repeat():
    out = run("roofline", "--rows", "1", "--rows", "257", "--format", "json")
    assert out.exit_code == 0, out.output
    assert run("model", "llama-3-8b", "llama-3-70b", "-f", "json").exit_code == 0


def test_help_twice_is_help():
    assert run("roofline", "--help", "--help").exit_code == 0


def _single_value_options():
    import typer.main

    group = typer.main.get_command(app)
    for name, cmd in group.commands.items():
        for p in cmd.params:
            if p.param_type_name == "option" and not p.multiple and not p.is_eager and not p.is_flag:
                yield name, max(p.opts, key=len)


@pytest.mark.parametrize("command,flag", list(_single_value_options()))
def test_every_single_value_option_refuses_a_second_value(command, flag):
    line = error_line(command, flag, "1", flag, "2")
    assert line.startswith(f"Error: {flag} takes one value"), line
