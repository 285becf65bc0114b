"""`roofline`: the time of one forward pass, T(m) = max(memory, compute) + fixed, for each --rows."""

from __future__ import annotations

from typing import Annotated, List, Optional

import typer

from llm_cost.commands.engine_option import EngineOpt, with_engine
from llm_cost.commands.app import command, emit, note, warn_unfit
from llm_cost.commands.options import (AS_GIVEN, BwEff, deployment_options, DeploymentArgs, FixedMs, Format, GpuOpt,
                                       KvOpt, Mfu, ModelOpt, Preset, ReadEmb, Weights)
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
]


@command("roofline", epilog="Example: llm-cost roofline --model llama-3.1-8b --gpu h100-sxm "
                            "--preset lecture --context 1024 --rows 1 --rows 129 --rows 257")
@deployment_options
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
    engine: EngineOpt = None,
    deploy: DeploymentArgs = AS_GIVEN,
    breakdown: Annotated[bool, typer.Option("--breakdown", help="One row per operator of each pass (bytes, FLOPs, time, bound, source) and how they sum to T(m).")] = False,
    fmt: Format = "table",
) -> None:
    """Time of one forward pass T(m) = max(memory, compute) + fixed, for each --rows; on --tp/--pp/--ep
    GPUs one GPU's share, stages x max(memory, compute) + collectives + fixed."""
    from llm_cost.commands import parse
    from llm_cost.catalog import load_accelerator, load_model
    from llm_cost.report.model_rows import roofline_rows

    spec, acc = load_model(model), load_accelerator(gpu)
    prof = parse.profile(preset, mfu=mfu, bw_eff=bw_eff, fixed_ms=fixed_ms,
                           read_embedding=read_embedding, kv=kv)
    prof = with_engine(prof, engine, fixed_ms)
    weight_format = parse.weights(weights)
    deployment = parse.deployment(deploy, prof)
    title = f"{spec.name} on {acc.name}{deployment.label}, {weights.lower()}, preset {prof.name}"
    if breakdown:
        from llm_cost.report.breakdown_rows import BREAKDOWN_COLUMNS, roofline_breakdown_rows

        result, caption = roofline_breakdown_rows(spec, acc, prof, rows=rows or [batch], batch=batch, context=context,
                                                  weights=weight_format, deployment=deployment)
        emit(result, BREAKDOWN_COLUMNS, fmt, caption=caption, title=f"Operators: {title}")
        return
    result, caption = roofline_rows(spec, acc, prof, rows=rows or [batch], batch=batch, context=context,
                                    weights=weight_format, deployment=deployment)
    ignored = parse.ignored_context(prof, context, "drop --no-kv" if kv is False else "add --kv (or use --preset lecture)")
    if ignored:  # after the library accepted the context
        note(ignored)
    emit(result, deployed_columns(ROOFLINE_COLUMNS, result, deployment), fmt, caption=caption, title=title)
    warn_unfit(result, deploy.strict)
