"""`check`: the property suite against catalog entries or a user's own files."""

from __future__ import annotations

from typing import Annotated

import typer

from llm_cost.commands.app import command, emit, interrupted
from llm_cost.commands.options import Format, MaybeGpus, MaybeModels, Quiet
from llm_cost.report.render import Column, fixed
from llm_cost.specs.profiles import ARTICLE_SETTING

# ---- invariants -----------------------------------------------------------------------------

CHECK_COLUMNS = [
    Column("invariant", "invariant"),
    Column("statement", "statement"),
    Column("model", "model"),
    Column("gpu", "gpu"),
    Column("status", "status"),
    Column("counterexample", "counterexample"),
]
SUMMARY_COLUMNS = [
    Column("invariant", "invariant"),
    Column("statement", "statement"),
    Column("pairs", "pairs", fixed(0)),
    Column("passed", "passed", fixed(0)),
    Column("failed", "failed", fixed(0)),
]


@command("check", epilog="Example: llm-cost check --model ./my-model/config.json --gpu h100-sxm --examples 200")
def check_cmd(
    model: MaybeModels = None,
    gpu: MaybeGpus = None,
    examples: Annotated[int, typer.Option(help="Hypothesis examples per invariant and pair.")] = 50,
    every: Annotated[bool, typer.Option("--all", help="A row per invariant and (model, gpu) pair, not one per "
                                                      "invariant (json and csv always print every pair).")] = False,
    quiet: Quiet = False,
    fmt: Format = "table",
) -> None:
    """Run the property suite against catalog entries or your own files; exit 1 on a failure.
    Ctrl-C prints the checks that finished, says how many of all, and exits 130."""
    from llm_cost.catalog import catalog_names, load_accelerator, load_model
    from llm_cost.errors import check_number

    check_number("examples", examples, low=1, high=100_000, integer=True)
    models = [load_model(name) for name in (model or catalog_names("models"))]
    gpus = [load_accelerator(name) for name in (gpu or [ARTICLE_SETTING.gpu])]
    from llm_cost.checks.runner import run_all  # hypothesis: imported only by this command

    from llm_cost.commands.progress import SweepProgress
    from llm_cost.executor import Interrupted

    stopped = None
    with SweepProgress("checking invariants") as progress:
        try:
            results = run_all(models, gpus, examples=examples, progress=progress)
        except Interrupted as stop:
            stopped, results = stop, [stop.done[index] for index in sorted(stop.done)]
    rows = [{"invariant": result.name, "statement": result.statement, "model": result.model, "gpu": result.gpu, "gpu_name": result.gpu_name,
             "status": "pass" if result.passed else "FAIL", "counterexample": result.counterexample}
            for result in results]
    failed = sum(not result.passed for result in results)
    caption = f"{len(results) - failed} passed, {failed} failed"
    if stopped is not None and not results:
        interrupted(0, stopped.total, "checks")
    if every or fmt.lower() in ("json", "csv"):
        emit(rows, CHECK_COLUMNS, fmt, title="Invariants", caption=caption)
    else:
        _emit_summary(_summary(rows), fmt, caption)
        if failed:
            emit([row for row in rows if row["status"] != "pass"], CHECK_COLUMNS, fmt, title="Failures")
    if stopped is not None:
        interrupted(len(results), stopped.total, "checks")
    if failed:
        raise typer.Exit(1)


def _emit_summary(summary: list[dict], fmt: str, caption: str) -> None:
    """The one-row-per-invariant table; on a screen too narrow for a statement on one line (80
    columns), the statements leave the table for a list under it, so that no row folds into a card
    of three or four lines (issue 28.4)."""
    from llm_cost.report.render import print_notes, screen_width

    title = "Invariants (one row each; --all for every pair)"
    # one line per row: the two text columns, three counts of up to 6 digits, the borders and padding
    needed = max(len(row["invariant"]) + len(row["statement"]) for row in summary) + 3 * 6 + 16 if summary else 0
    if fmt.lower() != "table" or needed <= screen_width():
        emit(summary, SUMMARY_COLUMNS, fmt, title=title, caption=caption)
        return
    emit(summary, [column for column in SUMMARY_COLUMNS if column.key != "statement"], fmt, title=title, caption=caption)
    print_notes(["What each invariant states:"] + [f"{row['invariant']}: {row['statement']}" for row in summary], hang="  ")


def _summary(rows: list[dict]) -> list[dict]:
    """One row per invariant: how many (model, gpu) pairs it ran on, passed and failed."""
    out: dict[str, dict] = {}
    for row in rows:
        line = out.setdefault(row["invariant"], {"invariant": row["invariant"], "statement": row["statement"],
                                               "pairs": 0, "passed": 0, "failed": 0})
        line["pairs"] += 1
        line["passed" if row["status"] == "pass" else "failed"] += 1
    return list(out.values())
