"""`roofline`: the time of one forward pass, T(m) = max(memory, compute) + fixed, for each --rows."""

from __future__ import annotations

from typing import Annotated, List, Optional

import typer

from llm_cost.commands.engine_option import with_engine
from llm_cost.commands.app import command, emit, note, warn_unfit
from llm_cost.commands.options import (AS_GIVEN, Batches, Breakdown, BwEff, Context, deployment_options,
                                       DeploymentArgs, ENERGY_COLUMNS, ENERGY_PRICE_COLUMN, EngineOpt, FixedMs,
                                       Format, GpusOpt, KvOpt, Mfu, ModelsOpt, Preset, ReadEmb, UsdPerKwh, Weights)
from llm_cost.report.deployment_rows import deployed_columns
from llm_cost.report.render import Column, fixed
from llm_cost.specs.profiles import ARTICLE_SETTING

ROOFLINE_COLUMNS = [
    Column("rows", "rows"),
    Column("batch", "batch"),
    Column("context", "context"),
    Column("memory_time_s", "memory (ms)", fixed(3, 1e-3)),
    Column("compute_time_s", "compute (ms)", fixed(3, 1e-3)),
    Column("fixed_time_s", "fixed (ms)", fixed(3, 1e-3)),
    Column("step_time_s", "T(m) (ms)", fixed(3, 1e-3)),
    Column("bound", "bound"),
    *ENERGY_COLUMNS,
]


def _one_ridge(captions: list[str]) -> str:
    """One pair's captions, one per batch ("ridge R FLOP/byte; compute-bound from C rows (batch b, ...)"),
    with the ridge said once: "ridge R FLOP/byte; compute-bound from C1 rows (batch 1, ...), C2 rows (...)"."""
    head, sep, _ = captions[0].partition("; compute-bound from ")
    parts = [caption[len(head + sep):].partition("; ") for caption in captions]  # (crossing, "; ", the pp note)
    if not sep or not all(caption.startswith(head + sep) for caption in captions) or len({part[1:] for part in parts}) > 1:
        return "; ".join(dict.fromkeys(captions))
    return head + sep + ", ".join(dict.fromkeys(part[0] for part in parts)) + "".join(parts[0][1:])


@command("roofline", epilog="Example: llm-cost roofline --model llama-3.1-8b --gpu h100-sxm "
                            "--preset lecture --context 1024 --rows 1 --rows 129 --rows 257")
@deployment_options
def roofline_cmd(
    model: ModelsOpt = [ARTICLE_SETTING.model],  # noqa: B006
    gpu: GpusOpt = [ARTICLE_SETTING.gpu],  # noqa: B006
    rows: Annotated[Optional[List[int]], typer.Option("--rows", "-r", help="Token rows in one forward pass (repeatable; default: --batch, one decode step).")] = None,
    batch: Batches = [1],  # noqa: B006
    context: Context = 0,
    preset: Preset = ARTICLE_SETTING.preset,
    mfu: Mfu = None,
    bw_eff: BwEff = None,
    fixed_ms: FixedMs = None,
    read_embedding: ReadEmb = None,
    kv: KvOpt = None,
    weights: Weights = "bf16",
    engine: EngineOpt = None,
    deploy: DeploymentArgs = AS_GIVEN,
    breakdown: Breakdown = False,
    usd_per_kwh: UsdPerKwh = None,
    fmt: Format = "table",
) -> None:
    """Time of one forward pass T(m) = max(memory, compute) + fixed, for each --rows; on --tp/--pp/--ep
    GPUs one GPU's share, stages x max(memory, compute) + collectives + fixed."""
    from llm_cost.commands import parse
    from llm_cost.catalog import load_accelerator, load_model
    from llm_cost.errors import check_number
    from llm_cost.report.model_rows import roofline_rows

    if usd_per_kwh is not None:
        check_number("--usd-per-kwh", usd_per_kwh, low=0, high=1e3)

    prof = parse.profile(preset, mfu=mfu, bw_eff=bw_eff, fixed_ms=fixed_ms,
                           read_embedding=read_embedding, kv=kv)
    prof = with_engine(prof, engine, fixed_ms, mfu)
    weight_format = parse.weights(weights)
    deployment = parse.deployment(deploy, prof)
    # compare in one command; a value given twice is one row, as `request` makes it
    pairs = [(load_model(model_name), load_accelerator(gpu_name)) for model_name in dict.fromkeys(model) for gpu_name in dict.fromkeys(gpu)]
    batch = list(dict.fromkeys(batch))
    if breakdown:
        from llm_cost.report.breakdown_rows import BREAKDOWN_COLUMNS, roofline_breakdown_rows

        for index, ((spec, acc), batch_size) in enumerate((pair, batch_size) for pair in pairs for batch_size in batch):
            if index:
                print()
            result, caption = roofline_breakdown_rows(spec, acc, prof, rows=rows or [batch_size], batch=batch_size, context=context,
                                                      weights=weight_format, deployment=deployment)
            emit(result, BREAKDOWN_COLUMNS, fmt, caption=caption,
                 title=f"Operators: {spec.name} on {acc.name}{deployment.label}, {weights.lower()}, preset {prof.name}")
        return
    result, captions = [], []
    for spec, acc in pairs:
        own = []
        for batch_size in batch:
            part, caption = roofline_rows(spec, acc, prof, rows=rows or [batch_size], batch=batch_size, context=context,
                                          weights=weight_format, deployment=deployment)
            result += part
            own.append(caption)
        caption = _one_ridge(own)
        captions.append(caption if len(pairs) == 1 else f"{spec.name} on {acc.name}: {caption}")
    ignored = parse.ignored_context(prof, context, "drop --no-kv" if kv is False else "add --kv (or use --preset lecture)")
    if ignored:  # after the library accepted the context
        note(ignored)
    columns = deployed_columns(ROOFLINE_COLUMNS, result, deployment)
    if usd_per_kwh is not None:
        from llm_cost.roofline.energy import add_energy_usd

        add_energy_usd(result, usd_per_kwh)
        columns = columns + [ENERGY_PRICE_COLUMN]
    if len(pairs) == 1:
        spec, acc = pairs[0]
        title = f"{spec.name} on {acc.name}{deployment.label}, {weights.lower()}, preset {prof.name}"
    else:  # one row per model, GPU and rows: the rows say which
        title = f"T(m){deployment.label}, {weights.lower()}, preset {prof.name}"
        columns = [Column("model", "model"), Column("gpu", "gpu")] + columns
    emit(result, columns, fmt, caption="; ".join(dict.fromkeys(captions)), title=title)
    warn_unfit(result, deploy.strict)
