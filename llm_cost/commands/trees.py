"""`tree`: token trees, tau from a draft's top-k hit rates, and the speedup of verifying them.

Apart from `speculative.py` so that `spec` does not load the tree model (its defaults, the
lecture's weak draft, are evaluated when the command is defined). `c` is the draft's cost per tree
level over a target step (--c).
"""

from __future__ import annotations



from llm_cost.commands.engine_option import with_engine
from llm_cost.commands.app import command, emit, note, warn_unfit
from llm_cost.commands.options import (AS_GIVEN, Batches, Context, DEFAULT, deployment_options, DeploymentArgs,
                                       DraftC, EngineOpt, Format, GpuOpt, Hits, ModelOpt, Preset, Weights, Widths)
from llm_cost.report.deployment_rows import deployed_columns
from llm_cost.report.render import Column, fixed
from llm_cost.speculative.trees import LEVEL_COST, WEAK_DRAFT


@command("tree", epilog="Example: llm-cost tree --widths 1,1,1,1 --widths 4,2,2,1 --widths 8,4,2,1 "
                        "--hits 1:0.44,2:0.64,4:0.79,8:0.91 --batch 1 --batch 32")
@deployment_options
def tree_cmd(
    widths: Widths = ["4,2,2,1"],  # noqa: B006
    hits: Hits = WEAK_DRAFT.text,
    batch: Batches = [1],  # noqa: B006
    c: DraftC = LEVEL_COST,
    model: ModelOpt = DEFAULT.model,
    gpu: GpuOpt = DEFAULT.gpu,
    preset: Preset = DEFAULT.preset,
    context: Context = 1024,
    weights: Weights = "bf16",
    deploy: DeploymentArgs = AS_GIVEN,
    engine: EngineOpt = None,
    fmt: Format = "table",
) -> None:
    """Token trees: nodes, tau from top-k hit rates, and the speedup at each batch vs a chain.

    --c is one draft level's cost over a target step (one draft pass per level: a round costs depth x c x T(B) plus the verification).

    Defaults: Llama-3-8B on an H100 SXM under `measured`, as every command, at context 1024; the
    lecture's example (demo 05, §10) names its own: --model llama-3.1-8b --preset lecture.
    """
    from llm_cost.commands import parse
    from llm_cost.catalog import load_accelerator, load_model
    from llm_cost.report.speculative_rows import tree_rows

    spec, acc = load_model(model), load_accelerator(gpu)
    prof = with_engine(parse.profile(preset), engine)
    deployment = parse.deployment(deploy, prof)
    rows = tree_rows(spec, acc, prof, widths_list=[parse.widths(given) for given in widths],
                     hits=parse.hits(hits), batches=batch, c=c, context=context,
                     weights=parse.weights(weights), deployment=deployment)
    ignored = parse.ignored_context(prof, context, "use --preset lecture or measured (the default)")
    if ignored:  # after the library accepted the context
        note(ignored)
    emit(rows, deployed_columns([
        Column("widths", "widths"), Column("batch", "batch"), Column("nodes", "nodes"),
        Column("verify_rows", "verify rows"), Column("tau", "tau", fixed(2)),
        Column("verify_over_base", "verify/base", fixed(2)), Column("speedup", "speedup", fixed(2)),
        Column("chain_speedup", "chain (same depth)", fixed(2)),
    ], rows, deployment), fmt, title=f"Token trees: {spec.name} on {acc.name}{deployment.label}, preset {prof.name}, "
                                     f"context {context}, c {c:g} per level")
    warn_unfit(rows, deploy.strict)
