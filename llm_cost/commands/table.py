"""`table`: the series' cost table, one column per model (the article, §3.2).

`c` is the generic draft's cost coefficient, a draft step over a target step (--c).
"""

from __future__ import annotations


import typer

from llm_cost.commands.app import command
from llm_cost.commands.options import (Alpha, AS_GIVEN, Batch, Contexts, deployment_options, DeploymentArgs, DraftC,
                                       Format, Gamma, GpusOpt, Isl, ModelsOpt, MtpAlphas, Reserve, UsdPerGpuHour,
                                       UsdPerKwh)
from llm_cost.report.cost_table import (DEFAULT_ALPHA, DEFAULT_C, DEFAULT_CONTEXTS, DEFAULT_GAMMA, DEFAULT_GPU,
                                        DEFAULT_MODELS)
from llm_cost.serving.capacity import DEFAULT_RESERVE
from llm_cost.speculative.mtp import MTP_ALPHA_REPORTED



@command("table", epilog="Example: llm-cost table --format markdown; llm-cost table --model llama-3.1-8b "
                         "--model mixtral-8x7b --gpu h200 --context 8192 --format json")
@deployment_options
def table_cmd(
    model: ModelsOpt = list(DEFAULT_MODELS),  # noqa: B006
    gpu: GpusOpt = [DEFAULT_GPU],  # noqa: B006
    alpha: Alpha = DEFAULT_ALPHA,
    gamma: Gamma = DEFAULT_GAMMA,
    c: DraftC = DEFAULT_C,
    batch: Batch = 1,
    mtp_alpha: MtpAlphas = list(MTP_ALPHA_REPORTED),  # noqa: B006
    context: Contexts = list(DEFAULT_CONTEXTS),  # noqa: B006
    reserve: Reserve = DEFAULT_RESERVE,
    isl: Isl = None,
    usd_per_gpu_hour: UsdPerGpuHour = None,
    usd_per_kwh: UsdPerKwh = None,
    deploy: DeploymentArgs = AS_GIVEN,
    fmt: Format = "table",
) -> None:
    """The cost table: params, weight and KV bytes, FLOPs, decode bound, speculative speedup, fit.

    Theoretical (the article preset). Models with an MTP module (DeepSeek-V3) get their own
    draft's rows. The table (and markdown) has a column per model; json and csv print one flat row per
    model, SI values, the unit in each key.
    """
    from llm_cost.catalog import load_accelerator, load_model
    from llm_cost.report.cost_table import table_rows
    from llm_cost.report.cost_table_view import table_notes, table_view
    from llm_cost.commands.parse import choice
    from llm_cost.report.render import FORMATS_WITH_MARKDOWN, Column, print_notes, render

    fmt = choice("fmt", fmt, FORMATS_WITH_MARKDOWN)

    from llm_cost.commands import parse

    specs = [load_model(name) for name in model]
    deployment = parse.deployment(deploy, reserve=reserve)  # cost_row: the article's memory basis unless given
    every = []
    for index, acc in enumerate(load_accelerator(gpu_name) for gpu_name in gpu):  # one table per GPU: its labels are its own
        rows = table_rows(specs, acc, alpha=alpha, gamma=gamma, c=c, batch=batch, contexts=context, reserve=reserve,
                          mtp_alphas=mtp_alpha, deployment=deployment, isl=isl, usd_per_gpu_hour=usd_per_gpu_hour,
                          usd_per_kwh=usd_per_kwh)
        every += rows
        if fmt in ("json", "csv"):
            continue
        if index:
            print()
        split = deployment.label + (" (per GPU)" if deployment.label else "")
        title = f"Cost table: {acc.name}{split}, preset article: theoretical (GB = 1e9 bytes)"
        view, columns = table_view(rows, contexts=context)
        notes = table_notes(rows, split_hint="give --tp or --pp to split it")
        columns = [Column(key, header, str if key == "quantity" else _cell) for key, header in columns]
        if fmt == "markdown":
            render(view, columns, fmt, title=title, caption="\n".join(f"- {line}" for line in notes))
        else:
            render(view, columns, fmt, title=title)
            print_notes(notes)  # below the table, left-aligned (a Rich caption is centred)
    if fmt in ("json", "csv"):
        render(every, [], fmt)
    _warn(every, deploy.strict)


def _warn(rows, strict: bool) -> None:
    """What cannot run (weights that do not fit, a batch past the largest at a --context, a context past
    the model's limit: the rows' `fit_note`), every model's, in one line on stderr; --strict then exits 2.
    The table marks the figures it concerns (†, dashes, ‡ past the context limit), so the line names each model."""
    from llm_cost.commands.app import EXIT_BAD_INPUT, warn

    unfit = [row["fit_note"] for row in rows if row.get("fits") is False]
    if unfit:
        warn(f"{len(unfit)} of {len(rows)} model columns have figures that cannot run as stated "
             f"(marked in the table): " + "; ".join(unfit))
        if strict:
            raise typer.Exit(EXIT_BAD_INPUT)


def _cell(text: str) -> str:
    """Cells are text already; a function (not `str`) so that Rich right-aligns them."""
    return text
