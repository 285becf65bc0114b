"""CLI: no knob that silently does nothing (issue 15, deliverable 8)."""

from __future__ import annotations

import json

import pytest

from helpers import run


def _note_lines(out) -> list[str]:
    assert out.exit_code == 0, out.output
    return [ln for ln in out.stderr.splitlines() if ln.strip()]


def test_roofline_context_without_kv_says_so():
    out = run("roofline", "--context", "4096", "--batch", "64", "--rows", "64", "-f", "json")
    notes = _note_lines(out)
    assert len(notes) == 1 and notes[0].startswith("Note: --context 4096 changes nothing here")
    assert "preset article" in notes[0] and "add --kv" in notes[0]
    assert json.loads(out.stdout)[0]["kv_bytes"] == 0  # stdout stays the rows alone


def test_roofline_context_with_kv_is_quiet_and_counts():
    out = run("roofline", "--context", "4096", "--batch", "64", "--rows", "64", "--kv", "-f", "json")
    assert _note_lines(out) == []
    assert json.loads(out.stdout)[0]["kv_bytes"] > 0


def test_roofline_no_kv_note_says_drop_it():
    notes = _note_lines(run("roofline", "--preset", "lecture", "--no-kv", "--context", "100"))
    assert "(--no-kv); drop --no-kv to count them" in notes[0]


@pytest.mark.parametrize("args", [["roofline"], ["roofline", "--preset", "lecture", "--context", "1024"],
                                  ["spec"], ["tree"], ["spec", "--preset", "lecture", "--context", "1024"]])
def test_no_note_when_nothing_is_ignored(args):
    assert _note_lines(run(*args)) == []


def test_spec_context_under_article_says_so():
    notes = _note_lines(run("spec", "--context", "1024"))
    assert len(notes) == 1 and "--context 1024 changes nothing" in notes[0] and "--preset lecture" in notes[0]


def test_tree_context_under_article_says_so():
    notes = _note_lines(run("tree", "--preset", "article"))
    assert len(notes) == 1 and "--context 1024 changes nothing" in notes[0]


@pytest.mark.parametrize("args,preset", [
    (["roofline"], "article"), (["roofline", "--preset", "lecture"], "lecture"),
    (["spec", "--preset", "Lecture"], "lecture"), (["tree"], "measured"), (["capacity"], "measured"),
    (["table"], "article"), (["batching", "--rate", "2", "--requests", "50"], "measured"),
    (["waste", "--rate", "1", "--requests", "50"], "measured"), (["tree", "--preset", "lecture"], "lecture"),
])
def test_title_names_the_preset(args, preset):
    out = run(*args)
    assert out.exit_code == 0, out.output
    assert f"preset {preset}" in out.stdout.splitlines()[0]


def test_roofline_says_each_ridge_once():
    """Issue 28 audit: `roofline --gpu A --gpu B --batch 1 --batch 64` repeated "llama-3-8b on H100 SXM:
    ridge 295.2 FLOP/byte" for every batch; each pair's ridge is said once, its crossings listed."""
    text = " ".join(run("roofline", "--gpu", "h100-sxm", "--gpu", "l4", "--batch", "1", "--batch", "64").stdout.split())
    assert text.count("ridge 295.2 FLOP/byte") == 1 and text.count("ridge 403.3 FLOP/byte") == 1, text
    assert "(batch 1, context 0), 315.9 rows (batch 64, context 0)" in text
    one = " ".join(run("roofline", "--batch", "1", "--batch", "64", "--tp", "2", "--pp", "2").stdout.split())
    assert one.count("ridge ") == 1 and one.count("T(m) crosses 2") == 1, one
