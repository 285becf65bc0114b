"""CLI: readable labels and messages (issue 15, deliverable 7)."""

from __future__ import annotations

import re

from helpers import ORCA, rows_of, run, error_line


def _text(*args) -> str:
    out = run(*args)
    assert out.exit_code == 0, out.output
    return " ".join(out.output.split())  # the caption may wrap


def test_capacity_shortfall_header():
    text = _text("capacity")
    assert "shortfall (GB)" in text and "short (GB)" not in text


def test_capacity_caption_names_each_term():
    text = _text("capacity", *ORCA, "--prompt", "272", "--max-gen", "512", "--gen", "64.5")
    assert "at max len 2048" in text
    assert "at prompt+max_gen 272 prompt + 512 declared = 784" in text
    assert "272 prompt + 64.5 generated = 336.5" in text


def test_spec_step_headers():
    text = _text("spec")
    assert "T(B(g+1))" not in text
    assert "decode step (ms)" in text and "verify step (ms)" in text
    assert "verify step: over B (gamma + 1) rows" in text


def test_gamma_capped_yes_no():
    text = _text("gamma", "--alpha", "0.8", "--c", "0", "--c", "0.1", "--gamma-max", "16")
    assert "False" not in text and "True" not in text
    assert " yes │" in text and " no │" in text


def test_check_shows_each_statement():
    rows = rows_of("check", "--model", "llama-3.2-1b", "--examples", "1")
    text = _text("check", "--model", "llama-3.2-1b", "--examples", "1")  # wide: the statement is a column
    assert "statement" in text and all(r["statement"] in text for r in rows)


def test_check_at_80_columns_is_one_line_per_invariant():
    """Issue 28.4: at 80 columns `check` folded each statement into a card of three to five lines; the
    statements now stand under the table, one (wrapped) line each, and every table row is one line.
    Wide enough, the statement stays a column."""
    from typer.testing import CliRunner

    from llm_cost.cli import app

    args = ["check", "--model", "llama-3.2-1b", "--examples", "1"]
    names = [r["invariant"] for r in rows_of(*args)]
    narrow = CliRunner().invoke(app, args, env={"COLUMNS": "80"}).stdout
    body = [ln for ln in narrow.splitlines() if ln.startswith("│")]
    assert len(body) == len(names) and all(ln.split("│")[1].strip() in names for ln in body), narrow
    assert max(len(ln) for ln in narrow.splitlines()) <= 80 and "What each invariant states:" in narrow
    assert all(f"{r['invariant']}: {r['statement']}" in " ".join(narrow.split()) for r in rows_of(*args))
    wide = CliRunner().invoke(app, args, env={"COLUMNS": "200"}).stdout
    assert "statement" in wide and "What each invariant states:" not in wide
    assert len([ln for ln in wide.splitlines() if ln.startswith("│")]) == len(names)


def test_kv_per_token_in_bytes_everywhere():
    model = _text("model", "llama-3-8b")
    assert "KV/token (bytes)" in model and "131,072" in model and "(KB)" not in model
    capacity = _text("capacity", "--model", "llama-3-8b", "--gpu", "h100-sxm")
    assert "KV/token (bytes)" in capacity and "131,072" in capacity
    assert "KV cache per token, BF16 (bytes)" in _text("table") and "131,072" in _text("table")


def test_batching_without_rate_or_slo_says_what_to_give():
    # the library's refusal (`BatchingRequest`, under its field names), its names written as batching's flags:
    # every way to run it (the CLI once had its own copy, naming two of the four)
    line = error_line("batching")
    assert "not both" not in line
    assert "give --rate R" in line and "--slo-ms T" in line and "--trace" in line and "--concurrency N" in line
    assert not re.search(r"(?<![\w-])(rates|slo_s|trace|concurrency)(?![\w-])", line), line  # each a flag


def test_batching_with_rate_and_slo_still_not_both():
    assert "not both" in error_line("batching", "--rate", "1", "--slo-ms", "45")


def test_batching_counts_requests_with_thousands_separators():
    """Issue 28 audit: `batching` printed "finished 20000" and "2000 requests" beside "200,000 requests"."""
    for args in (["batching", "--rate", "5", "-n", "1500"], ["batching", "--scheduler", "request", "--rate", "5", "-n", "1500"]):
        text = _text(*args)
        assert "1,500 requests" in text and "1500" not in text, text
        assert rows_of(*args)[0]["finished"] == 1500
    text = _text("waste", "--rate", "5", "-n", "1500")
    assert "1,500 requests" in text and "1500" not in text, text


def test_help_at_80_columns_cuts_no_word():
    """Issue 28.4 audit: `--trace`'s help (one 76-character token) was cut mid-word at 80 columns
    ("output_to" / "kens"); every word of every option's help stands whole in --help at 80."""
    import re

    import typer
    from typer.testing import CliRunner

    from llm_cost.cli import app

    group = typer.main.get_command(app)
    for name, command in sorted(group.commands.items()):
        text = CliRunner().invoke(app, [name, "--help"], env={"COLUMNS": "80"}).output
        shown = set(re.sub(r"(?<=\w)-\s+", "-", text).split())  # a line may end at a hyphen, as prose does
        words = {w for p in command.params for w in (getattr(p, "help", None) or "").split()}
        assert words <= shown, (name, sorted(words - shown)[:5])
