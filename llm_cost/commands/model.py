"""`model`: parameters, weight bytes (BF16, INT4 g128), KV bytes and FLOPs per token of models."""

from __future__ import annotations

from typing import Annotated, List, Optional

import typer

from llm_cost.commands.app import command, emit
from llm_cost.commands.startup_options import DEFAULT, Context, Format, KvBytes  # not options: startup
from llm_cost.report.render import Column, fixed

MODEL_COLUMNS = [
    Column("name", "model"),
    Column("params_text", "text (B)", fixed(2, 1e9)),  # what runs per token
    Column("params_total", "total (B)", fixed(2, 1e9)),  # the checkpoint: + vision tower, MTP modules
    Column("params_active", "active (B)", fixed(2, 1e9)),
    Column("weight_bytes_bf16", "BF16 (GB)", fixed(2, 1e9)),
    Column("bits_int4", "INT4 bits", fixed(2)),
    Column("weight_bytes_int4", "INT4 (GB)", fixed(2, 1e9)),
    Column("kv_bytes_per_token", "KV/token (bytes)", fixed(0)),  # bytes, as `table` and `capacity` show it
    Column("state_bytes_per_sequence", "state/seq (MB)", fixed(2, 1e6)),  # a hybrid's recurrent layers
    Column("flops_per_token", "FLOPs/token (G)", fixed(2, 1e9)),
    Column("lora_params_attn", "LoRA attn (M)", fixed(2, 1e6)),
    Column("lora_params_all", "LoRA all (M)", fixed(2, 1e6)),
]


@command("model", epilog="Example: llm-cost model llama-3-8b llama-3-70b --format json")
def model_cmd(
    names: Annotated[Optional[List[str]], typer.Argument(
        help=f"Catalog names or paths to config.json files (default {DEFAULT.model}, every command's model).")] = None,
    context: Context = 0,
    lora_rank: Annotated[int, typer.Option("--lora-rank", help="LoRA rank for the adapter counts.")] = 16,
    kv_bytes: KvBytes = 2.0,
    fmt: Format = "table",
) -> None:
    """Parameters, weight bytes (BF16, INT4 g128), KV bytes and FLOPs per token of models."""
    from llm_cost.catalog import load_model
    from llm_cost.report.model_rows import model_row

    rows = [model_row(load_model(name), context=context, lora_rank=lora_rank, kv_bytes_per_element=kv_bytes)
            for name in names or [DEFAULT.model]]
    emit(rows, MODEL_COLUMNS, fmt, title="Model counts (GB = 1e9 bytes)")
