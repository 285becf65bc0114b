"""CLI: forgiving names (issue 15, deliverable 2): case, accelerator aliases, "did you mean"."""

from __future__ import annotations

import json

import pytest

from llm_cost.catalog import catalog_names, load_accelerator, load_model
from llm_cost.catalog.paths import ALIASES
from llm_cost.errors import UnknownNameError, check_choice

from helpers import run, rows_of, error_line


def test_catalog_entries_are_lower_case():  # what the lookup's fast path relies on
    for kind in ("models", "hardware"):
        assert all(n == n.casefold() for n in catalog_names(kind))


@pytest.mark.parametrize("gpu", ["H100", "h100", "H100-SXM", "h100-80gb", "h100sxm"])
def test_gpu_h100_spellings(gpu):
    assert rows_of("roofline", "--gpu", gpu) == rows_of("roofline", "--gpu", "h100-sxm")


@pytest.mark.parametrize("alias,entry", [("mi300", "mi300x"), ("a100-40", "a100-40gb"), ("a100-80", "a100-80gb"),
                                         ("H200", "h200"), ("h200-sxm", "h200"), ("B200-SXM", "b200")])
def test_gpu_aliases(alias, entry):
    assert load_accelerator(alias).name == load_accelerator(entry).name


def test_aliases_name_catalog_entries():
    names = set(catalog_names("hardware"))
    for targets in ALIASES["hardware"].values():
        assert set(targets) <= names


def test_a100_is_ambiguous():
    line = error_line("capacity", "--gpu", "a100")
    assert line == "Error: gpu 'a100' is ambiguous: did you mean a100-40gb or a100-80gb?"


def test_model_name_any_case_keeps_the_entry_name():
    assert load_model("LLAMA-3-8B").name == "llama-3-8b"
    assert rows_of("model", "Llama-3-8B")[0]["name"] == "llama-3-8b"


def test_unknown_model_did_you_mean():
    line = error_line("model", "llama3-8b")
    assert line.startswith("Error: unknown model 'llama3-8b'; did you mean llama-3-8b")
    assert "(known: deepseek-v2-lite" in line


def test_unknown_gpu_did_you_mean():
    line = error_line("roofline", "--gpu", "h10")
    assert "unknown gpu 'h10'; did you mean h100-pcie, h100-sxm" in line


def test_unknown_name_with_nothing_near_lists_the_known():
    assert "unknown gpu 'zzz'; known: a100-40gb" in error_line("roofline", "--gpu", "zzz")


def test_library_unknown_name_did_you_mean():
    with pytest.raises(UnknownNameError, match="did you mean llama-3-8b"):
        load_model("llama-3-8")


def test_format_any_case():
    assert json.loads(run("roofline", "-f", "JSON").stdout) == rows_of("roofline")
    assert run("roofline", "-f", "Csv").output == run("roofline", "-f", "csv").output


def test_format_did_you_mean():
    assert "did you mean json?" in error_line("roofline", "-f", "jsn")


def test_preset_any_case():
    assert rows_of("roofline", "--preset", "Lecture") == rows_of("roofline", "--preset", "lecture")


def test_preset_did_you_mean():
    assert "got 'lectur'; did you mean lecture or lecture-draft?" in error_line("roofline", "--preset", "lectur")


def test_weights_any_case():
    assert rows_of("roofline", "-w", "FP8") == rows_of("roofline", "-w", "fp8")


def test_weights_did_you_mean():
    assert "did you mean w4a16" in error_line("roofline", "-w", "w4a1")


def test_title_shows_the_canonical_names():
    out = run("roofline", "-w", "FP8", "--preset", "LECTURE")
    assert "fp8, preset lecture" in out.output


def test_check_choice_returns_the_allowed_spelling():
    assert check_choice("fmt", "JSON", ("table", "json")) == "json"
    with pytest.raises(UnknownNameError, match="must be one of table, json, got 'xml'$"):
        check_choice("fmt", "xml", ("table", "json"))


def test_paths_still_work(data_dir, tmp_path):
    from llm_cost.catalog.paths import catalog_dir

    assert rows_of("model", str(data_dir / "qwen2-7b.json"))[0]["params_total"] == 7_615_616_512
    sheet = tmp_path / "H100.json"  # a path whose stem is an alias is still that file
    sheet.write_text((catalog_dir("hardware") / "h200.json").read_text(encoding="utf-8"), encoding="utf-8")
    (by_path,), (by_name,) = rows_of("roofline", "--gpu", str(sheet)), rows_of("roofline", "--gpu", "h200")
    assert (by_path.pop("gpu"), by_name.pop("gpu")) == (str(sheet), "h200")  # what --gpu took, to give it again
    assert by_path == by_name


def test_command_and_option_names_any_case():
    assert rows_of("Roofline", "--GPU", "h100") == rows_of("roofline", "--gpu", "h100-sxm")


def test_option_twice_in_two_cases_is_still_twice():
    # roofline and request --gpu and --model repeat (issue 28); request --weights does not
    line = error_line("request", "--weights", "bf16", "--WEIGHTS=fp8")
    assert line == "Error: --weights takes one value, got bf16, fp8"
