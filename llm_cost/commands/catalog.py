"""`catalog`: the models and accelerators that ship, with their figures and sources."""

from __future__ import annotations

from llm_cost.commands.app import command, emit
from llm_cost.commands.options import Format
from llm_cost.report.render import Column, fixed

CATALOG_COLUMNS = [
    Column("name", "name"),
    Column("params_total", "params (B)", fixed(2, 1e9)),
    Column("params_active", "active (B)", fixed(2, 1e9)),
    Column("max_position_embeddings", "context (tokens)", fixed(0)),
    Column("source", "source"),
]
CATALOG_GPU_COLUMNS = [
    Column("name", "name"),
    Column("memory_bytes", "memory (GB)", fixed(0, 1e9)),
    Column("bandwidth_bytes_per_s", "bandwidth (TB/s)", fixed(3, 1e12)),
    Column("bf16_flops_per_s", "BF16 dense (TFLOP/s)", fixed(0, 1e12)),
    Column("fp8_flops_per_s", "FP8 dense (TFLOP/s)", fixed(0, 1e12)),
    Column("interconnect_bytes_per_s", "link (GB/s per dir.)", fixed(0, 1e9)),
    Column("ridge_flops_per_byte", "ridge (FLOP/byte)", fixed(0)),
    Column("source", "source"),
]


@command("catalog", epilog="Example: llm-cost catalog --format json")
def catalog_cmd(fmt: Format = "table") -> None:
    """The models (total and active parameters, context limit) and accelerators (memory,
    bandwidth, dense BF16 and FP8 peaks, interconnect per GPU per direction, ridge point) that ship with llm-cost, by the names the options
    take, with their sources. A table per kind; json and csv one row per entry, with its kind."""
    from llm_cost.commands.parse import choice
    from llm_cost.report.model_rows import catalog_rows
    from llm_cost.report.render import FORMATS

    rows = catalog_rows()
    if choice("fmt", fmt, FORMATS) in ("json", "csv"):
        emit(rows, [], fmt)
        return
    emit([r for r in rows if r["kind"] == "model"], CATALOG_COLUMNS, fmt, title="Catalog: models")
    if fmt.lower() == "markdown":
        print()
    emit([r for r in rows if r["kind"] == "gpu"], CATALOG_GPU_COLUMNS, fmt,
         title="Catalog: accelerators (GB = 1e9 bytes; aliases: h100 = h100-sxm, mi300 = mi300x)")
