"""Commands over the foundation: `model` (counts), `roofline` (T(m)), `catalog`."""

from __future__ import annotations

from typing import Annotated, List, Optional

import typer

from llm_cost.commands.app import command, emit, note
from llm_cost.commands.options import KvBytes, BwEff, FixedMs, Format, GpuOpt, KvOpt, Mfu, ModelOpt, Preset, ReadEmb, Weights
from llm_cost.report.render import Column, fixed
from llm_cost.specs.profiles import ARTICLE_SETTING

# ---- model ----------------------------------------------------------------------------------

MODEL_COLUMNS = [
    Column("name", "model"),
    Column("params_total", "params (B)", fixed(2, 1e9)),
    Column("params_active", "active (B)", fixed(2, 1e9)),
    Column("weight_bytes_bf16", "BF16 (GB)", fixed(2, 1e9)),
    Column("bits_int4", "INT4 bits", fixed(2)),
    Column("weight_bytes_int4", "INT4 (GB)", fixed(2, 1e9)),
    Column("kv_bytes_per_token", "KV/token (bytes)", fixed(0)),  # bytes, as `table` and `capacity` show it
    Column("flops_per_token", "FLOPs/token (G)", fixed(2, 1e9)),
    Column("lora_params_attn", "LoRA attn (M)", fixed(2, 1e6)),
    Column("lora_params_all", "LoRA all (M)", fixed(2, 1e6)),
]


@command("model", epilog="Example: llm-cost model llama-3-8b llama-3-70b --format json")
def model_cmd(
    names: Annotated[List[str], typer.Argument(help="Catalog names or paths to config.json files.")],
    context: Annotated[int, typer.Option(help="Cached tokens each token attends to, for FLOPs/token.")] = 0,
    lora_rank: Annotated[int, typer.Option("--lora-rank", help="LoRA rank for the adapter counts.")] = 16,
    kv_bytes: KvBytes = 2.0,
    fmt: Format = "table",
) -> None:
    """Parameters, weight bytes (BF16, INT4 g128), KV bytes and FLOPs per token of models."""
    from llm_cost.catalog import load_model
    from llm_cost.report.model_rows import model_row

    rows = [model_row(load_model(n), context=context, lora_rank=lora_rank, kv_bytes_per_element=kv_bytes)
            for n in names]
    emit(rows, MODEL_COLUMNS, fmt, title="Model counts (GB = 1e9 bytes)")

# ---- roofline -------------------------------------------------------------------------------

ROOFLINE_COLUMNS = [
    Column("rows", "rows"),
    Column("batch", "batch"),
    Column("context", "context"),
    Column("memory_time_s", "memory (ms)", fixed(3, 1e-3)),
    Column("compute_time_s", "compute (ms)", fixed(3, 1e-3)),
    Column("fixed_time_s", "fixed (ms)", fixed(3, 1e-3)),
    Column("step_time_s", "T(m) (ms)", fixed(3, 1e-3)),
    Column("bound", "bound"),
]


@command("roofline", epilog="Example: llm-cost roofline --model llama-3.1-8b --gpu h100-sxm "
                            "--preset lecture --context 1024 --rows 1 --rows 129 --rows 257")
def roofline_cmd(
    model: ModelOpt = ARTICLE_SETTING.model,
    gpu: GpuOpt = ARTICLE_SETTING.gpu,
    rows: Annotated[Optional[List[int]], typer.Option("--rows", "-r", help="Token rows in one forward pass (repeatable; default: --batch, one decode step).")] = None,
    batch: Annotated[int, typer.Option("--batch", "-b", help="Sequences the rows come from.")] = 1,
    context: Annotated[int, typer.Option(help="Cached tokens per sequence.")] = 0,
    preset: Preset = ARTICLE_SETTING.preset,
    mfu: Mfu = None,
    bw_eff: BwEff = None,
    fixed_ms: FixedMs = None,
    read_embedding: ReadEmb = None,
    kv: KvOpt = None,
    weights: Weights = "bf16",
    fmt: Format = "table",
) -> None:
    """Time of one forward pass T(m) = max(memory, compute) + fixed, for each --rows."""
    from llm_cost.commands import parse
    from llm_cost.catalog import load_accelerator, load_model
    from llm_cost.report.model_rows import roofline_rows

    spec, acc = load_model(model), load_accelerator(gpu)
    prof = parse.profile(preset, mfu=mfu, bw_eff=bw_eff, fixed_ms=fixed_ms,
                           read_embedding=read_embedding, kv=kv)
    weight_format = parse.weights(weights)
    result, caption = roofline_rows(spec, acc, prof, rows=rows or [batch], batch=batch, context=context, weights=weight_format)
    ignored = parse.ignored_context(prof, context, "drop --no-kv" if kv is False else "add --kv (or use --preset lecture)")
    if ignored:  # after the library accepted the context
        note(ignored)
    emit(result, ROOFLINE_COLUMNS, fmt, caption=caption,
         title=f"{spec.name} on {acc.name}, {weights.lower()}, preset {prof.name}")

# ---- catalog --------------------------------------------------------------------------------

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
    Column("ridge_flops_per_byte", "ridge (FLOP/byte)", fixed(0)),
    Column("source", "source"),
]


@command("catalog", epilog="Example: llm-cost catalog --format json")
def catalog_cmd(fmt: Format = "table") -> None:
    """The models (total and active parameters, context limit) and accelerators (memory,
    bandwidth, dense BF16 peak, ridge point) that ship with llm-cost, by the names the options
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
