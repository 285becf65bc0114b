"""`catalog`: the models and accelerators that ship, with their figures and sources."""

from __future__ import annotations

from typing import Annotated

import typer

from llm_cost.commands.app import command, emit
from llm_cost.commands.options import Format
from llm_cost.report.render import Column, fixed

CATALOG_COLUMNS = [
    Column("name", "name"),
    Column("params_text", "text (B)", fixed(2, 1e9)),  # what runs per token, as `model` names it
    Column("params_total", "total (B)", fixed(2, 1e9)),  # the checkpoint's: + vision tower, MTP modules
    Column("params_active", "active (B)", fixed(2, 1e9)),
    Column("max_position_embeddings", "context (tokens)", fixed(0)),
]
CATALOG_GPU_COLUMNS = [
    Column("name", "name"),
    Column("memory_bytes", "memory (GB)", fixed(0, 1e9)),
    Column("bandwidth_bytes_per_s", "bandwidth (TB/s)", fixed(3, 1e12)),
    Column("bf16_flops_per_s", "BF16 dense (TFLOP/s)", fixed(0, 1e12)),
    Column("fp8_flops_per_s", "FP8 dense (TFLOP/s)", fixed(0, 1e12)),
    Column("interconnect_bytes_per_s", "link (GB/s per dir.)", fixed(0, 1e9)),
    Column("ridge_flops_per_byte", "ridge (FLOP/byte)", fixed(0)),
]
SOURCE_COLUMNS = [Column("name", "name"), Column("source", "source")]


@command("catalog", epilog="Example: llm-cost catalog --format json")
def catalog_cmd(
    fmt: Format = "table",
    sources: Annotated[bool, typer.Option("--sources", help="Print where each entry's figures come from "
                                                            "(a table of names and sources).")] = False,
) -> None:
    """The models (total and active parameters, context limit) and accelerators (memory,
    bandwidth, dense BF16 and FP8 peaks, interconnect per GPU per direction, ridge point) that ship with llm-cost, by the names the options
    take; --sources (or json, csv) with their sources. A table per kind; json and csv one row per entry, with its kind."""
    from llm_cost.commands.parse import choice
    from llm_cost.report.render import FORMATS, print_notes

    from llm_cost.report.model_rows import catalog_rows

    rows = catalog_rows()
    if choice("fmt", fmt, FORMATS) in ("json", "csv"):
        emit(rows, [], fmt)
        return
    models, gpus = ([row for row in rows if row["kind"] == kind] for kind in ("model", "gpu"))
    if sources and fmt.lower() == "table":  # prose wrapped at words: a URL is never cut, it may run long
        for kind, entries in (("model's config", models), ("accelerator's figures", gpus)):
            print_notes([f"Catalog: where each {kind} comes from"])
            print_notes([f"{row['name']}: {row['source']}" for row in entries], hang="    ")
            print()
        return
    if sources:  # markdown: a table of its own, so the figures above stay narrow
        emit(models, SOURCE_COLUMNS, fmt, title="Catalog: where each model's config comes from")
        _gap(fmt)
        emit(gpus, SOURCE_COLUMNS, fmt, title="Catalog: where each accelerator's figures come from")
        return
    emit(models, CATALOG_COLUMNS, fmt, title="Catalog: models")
    _gap(fmt)
    emit(gpus, CATALOG_GPU_COLUMNS, fmt,
         title="Catalog: accelerators (GB = 1e9 bytes; aliases: h100 = h100-sxm, mi300 = mi300x)")
    _gap(fmt)
    print_notes(["Sources of every figure: llm-cost catalog --sources (or --format json)."])


def _gap(fmt: str) -> None:
    if fmt.lower() == "markdown":
        print()
