"""The `llm-cost` command line: parse options, call the library, render rows.

Thin by design: every number comes from `llm_cost`; this file only names options, turns
library errors into one line and a non-zero exit, and picks the output format. Heavy imports
(numpy, matplotlib, hypothesis) happen inside the commands that need them.
"""

from __future__ import annotations

import functools
import sys
from typing import Annotated, List, Optional

import typer
from typer.core import TyperGroup

from llm_cost import __version__
from llm_cost.errors import LlmCostError
from llm_cost.render import FORMATS, Column, fixed

try:  # typer >= 0.26 vendors click
    from typer._click.exceptions import ClickException
except ImportError:  # pragma: no cover - older typer depends on click
    from click.exceptions import ClickException

EXIT_BAD_INPUT = 2


class OneLineErrors(TyperGroup):
    """Usage errors (a bad number, an unknown option) as one line on stderr, exit 2, no usage dump."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except ClickException as err:
            if type(err).__name__ == "NoArgsIsHelpError":  # bare `llm-cost`: the help, not an error
                typer.echo(err.format_message())
                sys.exit(0)
            typer.echo(f"Error: {err.format_message()}", err=True)
            sys.exit(err.exit_code)
        except typer.Abort:
            typer.echo("Aborted.", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


app = typer.Typer(
    cls=OneLineErrors,
    name="llm-cost",
    help="What LLM inference costs on an accelerator: roofline time, bytes, capacity, "
         "batching and speculative decoding. SI inside; GB = 1e9 bytes.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

# ---- shared options -------------------------------------------------------------------------

Format = Annotated[str, typer.Option("--format", "-f", help="Output: table, json or csv.")]
ModelOpt = Annotated[str, typer.Option("--model", "-m", help="Catalog name or path to a config.json.")]
GpuOpt = Annotated[str, typer.Option("--gpu", "-g", help="Catalog name or path to a datasheet JSON.")]
Preset = Annotated[str, typer.Option(help="Efficiency profile: article, lecture or lecture-draft.")]
Mfu = Annotated[Optional[float], typer.Option("--mfu", help="Compute efficiency in (0, 1], overrides the preset.")]
BwEff = Annotated[Optional[float], typer.Option("--bw-eff", help="Bandwidth efficiency in (0, 1], overrides the preset.")]
FixedMs = Annotated[Optional[float], typer.Option("--fixed-ms", help="Fixed time per forward pass in ms, overrides the preset.")]
ReadEmb = Annotated[Optional[bool], typer.Option("--read-embedding/--no-read-embedding",
                                                 help="Count the input embedding table as read.")]
KvOpt = Annotated[Optional[bool], typer.Option("--kv/--no-kv", help="Count KV reads and attention FLOPs.")]
Weights = Annotated[str, typer.Option("--weights", "-w", help="Weight format: bf16, w4a16 (int4 g128), int8, fp8.")]


def command(*names, **kwargs):
    """Register a command whose library errors become one line on stderr and exit code 2."""

    def decorate(fn):
        @functools.wraps(fn)
        def run(*args, **kw):
            try:
                return fn(*args, **kw)
            except LlmCostError as err:
                typer.echo(f"Error: {err}", err=True)
                raise typer.Exit(EXIT_BAD_INPUT) from None

        return app.command(*names, **kwargs)(run)

    return decorate


def emit(rows, columns, fmt: str, **kwargs) -> None:
    from llm_cost.options import choose
    from llm_cost.render import render

    render(rows, columns, choose("--format", fmt, FORMATS), **kwargs)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"llm-cost {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """What LLM inference costs on an accelerator. SI inside; GB = 1e9 bytes."""


# ---- model ----------------------------------------------------------------------------------

MODEL_COLUMNS = [
    Column("name", "model"),
    Column("params_total", "params (B)", fixed(2, 1e9)),
    Column("params_active", "active (B)", fixed(2, 1e9)),
    Column("weight_bytes_bf16", "BF16 (GB)", fixed(2, 1e9)),
    Column("bits_int4", "INT4 bits", fixed(2)),
    Column("weight_bytes_int4", "INT4 (GB)", fixed(2, 1e9)),
    Column("kv_bytes_per_token", "KV/token (KB)", fixed(1, 1e3)),
    Column("flops_per_token", "FLOPs/token (G)", fixed(2, 1e9)),
    Column("lora_params_attn", "LoRA attn (M)", fixed(2, 1e6)),
    Column("lora_params_all", "LoRA all (M)", fixed(2, 1e6)),
]


@command("model", epilog="Example: llm-cost model llama-3-8b llama-3-70b --format json")
def model_cmd(
    names: Annotated[List[str], typer.Argument(help="Catalog names or paths to config.json files.")],
    context: Annotated[int, typer.Option(help="Cached tokens each token attends to, for FLOPs/token.")] = 0,
    lora_rank: Annotated[int, typer.Option("--lora-rank", help="LoRA rank for the adapter counts.")] = 16,
    kv_bytes: Annotated[float, typer.Option("--kv-bytes", help="Bytes per KV element (2 = BF16, 1 = FP8).")] = 2.0,
    fmt: Format = "table",
) -> None:
    """Parameters, weight bytes (BF16, INT4 g128), KV bytes and FLOPs per token of models."""
    from llm_cost.catalog import load_model
    from llm_cost.report import model_row

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
    model: ModelOpt = "llama-3-8b",
    gpu: GpuOpt = "h100-sxm",
    rows: Annotated[List[int], typer.Option("--rows", "-r", help="Token rows in one forward pass (repeatable).")] = [1],  # noqa: B006
    batch: Annotated[int, typer.Option("--batch", "-b", help="Sequences the rows come from.")] = 1,
    context: Annotated[int, typer.Option(help="Cached tokens per sequence.")] = 0,
    preset: Preset = "article",
    mfu: Mfu = None,
    bw_eff: BwEff = None,
    fixed_ms: FixedMs = None,
    read_embedding: ReadEmb = None,
    kv: KvOpt = None,
    weights: Weights = "bf16",
    fmt: Format = "table",
) -> None:
    """Time of one forward pass T(m) = max(memory, compute) + fixed, for each --rows."""
    from llm_cost import options
    from llm_cost.catalog import load_accelerator, load_model
    from llm_cost.report import roofline_rows

    spec, acc = load_model(model), load_accelerator(gpu)
    prof = options.profile(preset, mfu=mfu, bw_eff=bw_eff, fixed_ms=fixed_ms,
                           read_embedding=read_embedding, kv=kv)
    fmt_w = options.weight_format(weights)
    result, caption = roofline_rows(spec, acc, prof, rows=rows, batch=batch, context=context, fmt=fmt_w)
    emit(result, ROOFLINE_COLUMNS, fmt, caption=caption,
         title=f"{spec.name} on {acc.name}, {weights}, preset {prof.name}")


# ---- catalog --------------------------------------------------------------------------------

@command("catalog", epilog="Example: llm-cost catalog --format json")
def catalog_cmd(fmt: Format = "table") -> None:
    """The models and accelerators that ship with llm-cost, by the names the options take."""
    from llm_cost.catalog import catalog_names, load_accelerator, load_model

    rows = [{"kind": "model", "name": n, "source": load_model(n).source} for n in catalog_names("models")]
    rows += [{"kind": "gpu", "name": n, "source": load_accelerator(n).source} for n in catalog_names("hardware")]
    emit(rows, [Column("kind", "kind"), Column("name", "name"), Column("source", "source")], fmt,
         title="Catalog")


# ---- invariants -----------------------------------------------------------------------------

CHECK_COLUMNS = [
    Column("invariant", "invariant"),
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

    check_number("--examples", examples, low=1, high=100_000, integer=True)
    models = [load_model(n) for n in (model or catalog_names("models"))]
    gpus = [load_accelerator(n) for n in (gpu or ["h100-sxm"])]
    from llm_cost.invariants import run_all  # hypothesis: imported only by this command

    results = run_all(models, gpus, examples=examples)
    rows = [{"invariant": r.name, "statement": r.statement, "model": r.model, "gpu": r.gpu,
             "status": "pass" if r.passed else "FAIL", "counterexample": r.counterexample}
            for r in results]
    failed = sum(not r.passed for r in results)
    emit(rows, CHECK_COLUMNS, fmt, title="Invariants",
         caption=f"{len(results) - failed} passed, {failed} failed")
    if failed:
        raise typer.Exit(1)


def main() -> None:
    """Entry point of the `llm-cost` script."""
    app()


if __name__ == "__main__":
    main()
