"""`check`: the property suite against catalog entries or a user's own files."""

from __future__ import annotations

from typing import Annotated, List, Optional

import typer

from llm_cost.commands.app import command, emit
from llm_cost.commands.options import Format
from llm_cost.report.render import Column
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


@command("check", epilog="Example: llm-cost check --model ./my-model/config.json --gpu h100-sxm --examples 200")
def check_cmd(
    model: Annotated[Optional[List[str]], typer.Option("--model", "-m", help="Catalog name or config.json path (repeatable; default: the whole catalog).")] = None,
    gpu: Annotated[Optional[List[str]], typer.Option("--gpu", "-g", help="Catalog name or datasheet path (repeatable; default: h100-sxm).")] = None,
    examples: Annotated[int, typer.Option(help="Hypothesis examples per invariant and pair.")] = 50,
    fmt: Format = "table",
) -> None:
    """Run the property suite against catalog entries or your own files; exit 1 on a failure."""
    from llm_cost.catalog import catalog_names, load_accelerator, load_model
    from llm_cost.errors import check_number

    check_number("examples", examples, low=1, high=100_000, integer=True)
    models = [load_model(n) for n in (model or catalog_names("models"))]
    gpus = [load_accelerator(n) for n in (gpu or [ARTICLE_SETTING.gpu])]
    from llm_cost.checks.runner import run_all  # hypothesis: imported only by this command

    results = run_all(models, gpus, examples=examples)
    rows = [{"invariant": r.name, "statement": r.statement, "model": r.model, "gpu": r.gpu,
             "status": "pass" if r.passed else "FAIL", "counterexample": r.counterexample}
            for r in results]
    failed = sum(not r.passed for r in results)
    emit(rows, CHECK_COLUMNS, fmt, title="Invariants",
         caption=f"{len(results) - failed} passed, {failed} failed")
    if failed:
        raise typer.Exit(1)
