"""`catalog` shows each accelerator's figures; README documents the datasheet (issue 15, deliverable 9)."""

from __future__ import annotations

import csv
import io
import dataclasses
import json
import re
from pathlib import Path

from llm_cost.catalog import accelerator_from_datasheet, load_accelerator

from helpers import README, run




def test_catalog_json_has_each_gpus_figures():
    rows = {r["name"]: r for r in json.loads(run("catalog", "-f", "json").stdout)}
    h100 = rows["h100-sxm"]
    assert (h100["memory_bytes"], h100["bandwidth_bytes_per_s"], h100["bf16_flops_per_s"]) == (80e9, 3.35e12, 989e12)
    assert round(h100["ridge_flops_per_byte"]) == 295
    assert rows["llama-3-8b"]["memory_bytes"] is None


def test_catalog_csv_has_one_header_for_both_kinds():
    rows = list(csv.DictReader(io.StringIO(run("catalog", "-f", "csv").stdout)))
    assert {r["kind"] for r in rows} == {"model", "gpu"}
    assert float(next(r for r in rows if r["name"] == "h200")["memory_bytes"]) == 141e9


def test_catalog_table_shows_gpu_figures():
    out = run("catalog")
    assert out.exit_code == 0, out.output
    assert "Catalog: models" in out.stdout and "Catalog: accelerators" in out.stdout
    for header in ("memory (GB)", "bandwidth (TB/s)", "BF16 dense (TFLOP/s)", "FP8 dense (TFLOP/s)",
                   "link (GB/s per dir.)", "ridge (FLOP/byte)"):
        assert header in out.stdout
    line = next(ln for ln in out.stdout.splitlines() if "│ h100-sxm" in ln)
    # NVLink 4: 900 GB/s both directions, 450 per direction; FP8 1,979 dense
    assert re.search(r"│\s+80 │\s+3\.350 │\s+989 │\s+1,979 │\s+450 │\s+295 │", line), line
    a100 = next(ln for ln in out.stdout.splitlines() if "│ a100-80gb" in ln)
    assert re.search(r"│\s+312 │\s+- │\s+300 │", a100), a100  # no FP8 tensor cores: a dash


def test_readme_datasheet_example_is_the_h100s():
    section = README.read_text(encoding="utf-8").split("## Your own accelerator: the datasheet", 1)[1]
    (text,) = re.findall(r"```json\n(.*?)```", section.split("\n## ", 1)[0], re.S)
    acc = accelerator_from_datasheet(json.loads(text))
    ref = load_accelerator("h100-sxm")
    assert acc == dataclasses.replace(ref, source=acc.source, key="")  # every figure, the interconnect included
