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
def test_seed_example_defaults_say_so_in_help(command):
    out = run(command, "--help")
    assert out.exit_code == 0 and "Defaults: the lecture's example" in out.output
