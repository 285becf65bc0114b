"""`plot`: the figures of the series as PNG or SVG files (matplotlib imported only here).

`c` is the draft's cost coefficient (a draft step over a target step: --c), as the table commands name it.
"""

from __future__ import annotations

from typing import Annotated, List, Optional

import typer

from llm_cost.commands.app import OneValueCommand, command
from llm_cost.commands.calibrate import needed
from llm_cost.commands.options import (AS_GIVEN, BwEff, CONTEXT, DEFAULT, DEFAULT_ISL, DEFAULT_OSL, DEFAULT_PLAN_GPUS,
                                       deployment_options, DeploymentArgs, DraftCs, Force,
                                       GAMMA_MAX, GAMMAS, GPU, HITS, Isl, MaxBatches, MaybeAlphas, MaybeBatches,
                                       MaybeModel, Mfus, Osl, OutputFile, PRESET, Rates, REQUESTS, RESERVE,
                                       Schedulers, SEED, SloMs, TpotMs, TtftMs, WEIGHTS, WIDTHS)

# plot's options may each be left out (the kind's command gives the default): Optional over the shared
# declarations of options.py
MaybeGpu, MaybePreset = Annotated[Optional[str], GPU], Annotated[Optional[str], PRESET]
MaybeWeights = Annotated[Optional[str], WEIGHTS]
MaybeContext, MaybeGammaMax = Annotated[Optional[int], CONTEXT], Annotated[Optional[int], GAMMA_MAX]
MaybeGammas, MaybeWidths = Annotated[Optional[List[int]], GAMMAS], Annotated[Optional[List[str]], WIDTHS]
MaybeHits, MaybeReserve = Annotated[Optional[str], HITS], Annotated[Optional[float], RESERVE]
MaybeRequests, MaybeSeed = Annotated[Optional[int], REQUESTS], Annotated[Optional[int], SEED]

KINDS = ("roofline", "spec-vs-batch", "gamma", "tree", "batching", "plan", "validation")

# The deployment options a figure of one GPU's passes takes (--gpus is the plan's budget there)
SPLIT = {"tp", "pp", "ep", "kv_dtype", "overlap_comm", "dp_attention", "usable_memory", "strict"}
# The options each kind reads; any other option given is an error rather than silently ignored.
USES = {
    "roofline": {"model", "gpu", "preset", "mfu", "bw_eff", "context", "gamma", "batch", "max_rows"} | SPLIT,
    "spec-vs-batch": {"model", "gpu", "preset", "mfu", "bw_eff", "context", "weights", "alpha", "gamma", "c",
                      "batch", "batch_max"} | SPLIT,
    "gamma": {"alpha", "c", "gamma_max"},
    "tree": {"model", "gpu", "preset", "context", "weights", "widths", "hits", "batch", "c"} | SPLIT,
    "batching": {"model", "gpu", "preset", "weights", "reserve", "scheduler", "max_batch", "rate", "requests",
                 "seed", "slo_ms", "gpus"} | SPLIT,
    "plan": {"model", "gpu", "preset", "weights", "batch", "alpha", "c", "gpus", "isl", "osl", "ttft_ms", "tpot_ms"},
    "validation": {"points", "preset"},
}
# What each kind draws beyond its table command's defaults (the article's batches, a figure's axes).
OWN_DEFAULTS = {
    "roofline": dict(gamma=[4], batch=[1, 64], max_rows=16384),
    "spec-vs-batch": dict(batch=[1, 8, 32, 64, 128, 256], batch_max=1024),  # the article's table, §2.4
    "gamma": dict(alpha=[0.6, 0.8, 0.9], c=[0.05, 0.1, 0.2], gamma_max=16),
    "tree": dict(batch=[1, 32]),  # the lecture's two batches, §10.3
    "batching": dict(scheduler=["request", "iteration"], max_batch=[8, 32], requests=500, seed=0),
    "plan": dict(model=DEFAULT.model, gpu=DEFAULT.gpu, gpus=DEFAULT_PLAN_GPUS, isl=DEFAULT_ISL, osl=DEFAULT_OSL),
    "validation": dict(),
}
# The options each kind takes from its table command, with that command's default.
FROM_COMMAND = {
    "roofline": ("roofline", "roofline_cmd", ("model", "gpu", "preset", "context")),
    "spec-vs-batch": ("speculative", "spec_cmd", ("model", "gpu", "preset", "context", "weights", "alpha", "gamma")),
    "gamma": None,
    "tree": ("trees", "tree_cmd", ("model", "gpu", "preset", "context", "weights", "hits", "c")),
    "batching": ("serving", "batching_cmd", ("model", "gpu", "preset", "weights", "reserve")),
    "plan": ("plan", "plan_cmd", ("preset",)),
    "validation": ("calibrate", "validate_cmd", ("preset",)),
}


def defaults(kind: str) -> dict:
    """The defaults of a kind: its table command's (read from that command, stated once) and its own."""
    import importlib
    import inspect

    own = dict(OWN_DEFAULTS[kind])
    source = FROM_COMMAND[kind]
    if source is None:
        return own
    module, name, keys = source
    fn = getattr(importlib.import_module(f"llm_cost.commands.{module}"), name)
    params = inspect.signature(fn).parameters
    taken = {key: params[key].default for key in keys}
    for key in ("model", "gpu"):  # a figure draws one model on one GPU: a repeatable option's one default
        if isinstance(taken.get(key), list):
            (taken[key],) = taken[key]
    if kind == "spec-vs-batch":
        from llm_cost.specs.profiles import ARTICLE_DRAFT

        taken["c"] = [ARTICLE_DRAFT.c]  # `spec --c` defaults to the article's 0.1 inside the library
        if taken["alpha"] is None:  # `spec --alpha` has none: --tau may stand in for it
            from llm_cost.report.speculative_rows import DEFAULT_ALPHAS

            taken["alpha"] = list(DEFAULT_ALPHAS)
    if kind == "tree":
        taken["c"] = [taken["c"]]
    return {**taken, **own}


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def stated_defaults() -> str:
    """The help's sentence of each kind's model, GPU and profile (and what else it draws by default), from
    `defaults`: the values a run without those options uses, never a copy of them."""
    said = {}
    for kind in ("roofline", "spec-vs-batch", "tree", "batching", "plan"):
        kind_defaults = defaults(kind)
        on = f"on up to {kind_defaults['gpus']} x {kind_defaults['gpu']}" if kind == "plan" else f"on {kind_defaults['gpu']}"
        text = f"{kind_defaults['model']} {on}, preset {kind_defaults['preset']}"
        if kind == "tree":
            text += f", context {kind_defaults['context']}"
        if kind == "batching":
            text += f", {kind_defaults['requests']} requests per rate"
        said.setdefault(text, []).append(kind)
    return "; ".join(f"{' and '.join(kinds)} {text}" for text, kinds in said.items())


class PlotCommand(OneValueCommand):
    """`plot`'s command: its help states the defaults (`stated_defaults`) when it is shown, not when the
    module is imported (each kind's defaults are read from its table command's module)."""

    def format_help(self, ctx, formatter) -> None:
        self.help = plot_cmd.__doc__.replace("DEFAULTS", stated_defaults())
        super().format_help(ctx, formatter)


@command("plot", cls=PlotCommand, epilog="Example: llm-cost plot spec-vs-batch -o spec.png; llm-cost plot roofline "
                                         "--model llama-3-70b -o roofline.svg; llm-cost plot tree --batch 1 --batch 32 "
                                         "-o tree.png")
@deployment_options
def plot_cmd(
    output: OutputFile,
    kind: Annotated[Optional[str], typer.Argument(help="roofline, spec-vs-batch, gamma, tree, batching, plan or validation.", metavar="KIND", callback=needed(f"KIND: one of {', '.join(KINDS)} (e.g. llm-cost plot roofline -o roofline.svg)"), is_eager=True, show_default=False)] = None,
    model: MaybeModel = None,
    gpu: MaybeGpu = None,
    preset: MaybePreset = None,
    mfu: Mfus = None,
    bw_eff: BwEff = None,
    context: MaybeContext = None,
    weights: MaybeWeights = None,
    alpha: MaybeAlphas = None,
    gamma: MaybeGammas = None,
    c: DraftCs = None,
    batch: MaybeBatches = None,
    batch_max: Annotated[Optional[int], typer.Option("--batch-max", help="spec-vs-batch: largest batch on the axis (extended to the largest --batch).")] = None,
    gamma_max: MaybeGammaMax = None,
    max_rows: Annotated[Optional[int], typer.Option("--max-rows", help="roofline: largest row count on the axis.")] = None,
    widths: MaybeWidths = None,
    hits: MaybeHits = None,
    scheduler: Schedulers = None,
    max_batch: MaxBatches = None,
    rate: Rates = None,
    requests: MaybeRequests = None,
    seed: MaybeSeed = None,
    reserve: MaybeReserve = None,
    slo_ms: SloMs = None,
    isl: Isl = None,
    osl: Osl = None,
    ttft_ms: TtftMs = None,
    tpot_ms: TpotMs = None,
    points: Annotated[Optional[str], typer.Option("--points", help="validation: a CSV of measurements (the columns of tests/data/measured/train.csv).")] = None,
    force: Force = False,
    deploy: DeploymentArgs = AS_GIVEN,
) -> None:
    """Draw a figure: T(m), speedup against batch or gamma, token trees, or latency against throughput.

    Each kind takes the options of its table command (roofline, spec, gamma, tree, batching, plan,
    validate) and its defaults: DEFAULTS. An option the kind does not use is an error. roofline,
    spec-vs-batch, tree and batching take the deployment options (--tp --pp --ep --kv-dtype
    --overlap-comm --usable-memory; batching also --gpus): one GPU's passes, as their commands
    print them; plan reads --gpus as the GPUs it may use. batching draws --slo-ms as a line on
    the two per-token latency panels.
    """
    from llm_cost.errors import InvalidValueError
    from llm_cost.commands.parse import choice
    from llm_cost.commands.outputs import target
    from llm_cost.report.figures import EXTENSIONS

    choice("KIND", kind, KINDS)
    values = dict(model=model, gpu=gpu, preset=preset, mfu=mfu, bw_eff=bw_eff, context=context, weights=weights,
                  alpha=alpha, gamma=gamma, c=c, batch=batch, batch_max=batch_max, gamma_max=gamma_max,
                  max_rows=max_rows, widths=widths, hits=hits, scheduler=scheduler, max_batch=max_batch, rate=rate,
                  requests=requests, seed=seed, reserve=reserve, slo_ms=slo_ms, isl=isl, osl=osl,
                  ttft_ms=ttft_ms, tpot_ms=tpot_ms, points=points)
    given = {name: value for name, value in values.items() if value is not None and not (isinstance(value, list) and not value)}
    given.update({name: value for name, value in deploy._asdict().items() if value != getattr(AS_GIVEN, name)})
    unused = sorted(set(given) - USES[kind])
    if unused:
        raise InvalidValueError(f"{_flag(unused[0])} does not apply to plot {kind}; it takes "
                                f"{', '.join(_flag(name) for name in sorted(USES[kind]))}")
    path = target(output, force=force, inputs=[points, preset, model, gpu], suffixes=EXTENSIONS)
    options = {**defaults(kind), **given, "deploy": deploy}
    draw = {"roofline": _roofline, "spec-vs-batch": _spec_vs_batch, "gamma": _gamma, "tree": _tree,
            "batching": _batching, "plan": _plan, "validation": _validation}[kind]
    written = draw(options, path)
    typer.echo(f"wrote {written}")
    from llm_cost.commands.app import warn_unfit

    warn_unfit(options.get("fits", []), deploy.strict, suffix=" (the figure assumes it does)")


def _single(options: dict, name: str):
    from llm_cost.errors import InvalidValueError

    values = options[name]
    if len(values) != 1:
        raise InvalidValueError(f"{_flag(name)} takes one value for this kind, got {len(values)}")
    return values[0]


def _specs(options: dict):
    from llm_cost.commands import parse
    from llm_cost.catalog import load_accelerator, load_model

    return load_model(options["model"]), load_accelerator(options["gpu"]), parse.profile(options["preset"], bw_eff=options.get("bw_eff"))


def _roofline(options: dict, path):
    from llm_cost.commands import parse
    from llm_cost.report import figures as plots
    from llm_cost.catalog import load_accelerator, load_model
    from llm_cost.report.series import roofline_series

    spec, acc = load_model(options["model"]), load_accelerator(options["gpu"])
    prof = parse.profile(options["preset"], mfu=_single(options, "mfu") if options.get("mfu") else None, bw_eff=options.get("bw_eff"))
    gamma = _single(options, "gamma")
    dep = parse.deployment(options["deploy"], prof)
    series = roofline_series(spec, acc, prof, gamma=gamma, batches=options["batch"], context=options["context"],
                             max_rows=options["max_rows"], deployment=dep)
    options["fits"] = [_fit(spec, acc, dep, curve.weights, batch=batch, rows=rows, context=options["context"])
                       for curve in series for batch, rows, _ in curve.points]
    return plots.roofline(series, path, gamma=gamma, title=f"T(m): {spec.name} on {acc.name}{dep.label}, preset {prof.name}, "
                                                      f"context {options['context']}")


def _spec_vs_batch(options: dict, path):
    from llm_cost.commands import parse
    from llm_cost.report import figures as plots
    from llm_cost.report.series import spec_vs_batch
    from llm_cost.report.speculative_rows import mfu_values

    spec, acc, base = _specs(options)
    profiles = [base.with_(compute_efficiency=mfu) for mfu in mfu_values(base, options.get("mfu"))]
    weight_format = parse.weights(options["weights"])
    dep = parse.deployment(options["deploy"], base)
    curves = spec_vs_batch(spec, acc, profiles, alphas=options["alpha"], gammas=options["gamma"], cs=options["c"], marks=options["batch"],
                           batch_max=options["batch_max"], context=options["context"], weights=weight_format, deployment=dep)
    options["fits"] = [_batch_axis_fit(spec, acc, dep, weight_format, int(gamma), options["context"], int(curves[0].batch[-1]))
                       for gamma in dict.fromkeys(options["gamma"])]
    return plots.spec_vs_batch(curves, path, title=f"Speculative decoding against batch: {spec.name} on {acc.name}{dep.label}, "
                                                   f"{options['weights']}, preset {options['preset']}, context {options['context']}")


def _gamma(options: dict, path):
    from llm_cost.report import figures as plots
    from llm_cost.report.series import gamma_curves

    curves = gamma_curves(alphas=options["alpha"], cs=options["c"], gamma_max=options["gamma_max"])
    return plots.gamma(curves, path, title="Speedup against draft length, verification free (Leviathan Theorem 3.8)")


def _tree(options: dict, path):
    from llm_cost.commands import parse
    from llm_cost.report import figures as plots
    from llm_cost.report.series import DEFAULT_TREES, tree_points

    spec, acc, prof = _specs(options)
    level_cost = _single(options, "c")
    widths = [parse.widths(given) for given in options["widths"]] if options.get("widths") else DEFAULT_TREES
    dep = parse.deployment(options["deploy"], prof)
    points = tree_points(spec, acc, prof, widths_list=widths, hits=parse.hits(options["hits"]), batches=options["batch"],
                         c=level_cost, context=options["context"], weights=parse.weights(options["weights"]), deployment=dep)
    options["fits"] = [_fit(spec, acc, dep, parse.weights(options["weights"]), batch=batch, rows=batch * (point.nodes + 1), context=options["context"])
                       for point in points for batch in options["batch"]]
    return plots.tree(points, path, title=f"Token trees: {spec.name} on {acc.name}{dep.label}, preset {prof.name}, context "
                                          f"{options['context']}, c {level_cost:g} per level, top-k hits {options['hits']}")


def _batching(options: dict, path):
    from llm_cost.commands import parse
    from llm_cost.report import figures as plots
    from llm_cost.catalog import load_accelerator, load_model
    from llm_cost.report.series import DEFAULT_RATES, batching_curves
    from llm_cost.errors import check_number
    from llm_cost.serving.replica import Replica
    from llm_cost.serving.workload import poisson_workload

    check_number("requests", options["requests"], low=1, high=10_000, integer=True)
    slo = parse.seconds("slo_ms", options.get("slo_ms"), positive=True)
    spec, acc = load_model(options["model"]), load_accelerator(options["gpu"])
    prof = parse.profile(options["preset"])
    replica = Replica.from_specs(spec, acc, prof, reserve=options["reserve"], weights=parse.weights(options["weights"]),
                                 deployment=parse.deployment(options["deploy"], prof, options["reserve"]))
    wl = poisson_workload(options["requests"], 1.0, seed=options["seed"])
    curves = batching_curves(wl, replica, schedulers=options["scheduler"], max_batches=options["max_batch"],
                             rates=options.get("rate") or DEFAULT_RATES)
    return plots.batching(curves, path, slo_s=slo,
                          title=f"Latency against throughput: {replica.description}, KV "
                                f"{replica.kv_capacity_tokens:,} tokens\n{options['requests']} requests per rate, "
                                f"{wl.description}, seed {options['seed']}")


def _plan(options: dict, path):
    from llm_cost.commands import parse
    from llm_cost.commands.plan_build import build, title_of
    from llm_cost.planner import plan
    from llm_cost.report import figures as plots

    spec, grid, target, _ = build(
        model=options["model"], gpu=[options["gpu"]], gpus=options["gpus"], isl=options["isl"], osl=options["osl"], ttft_ms=options.get("ttft_ms"),
        tpot_ms=options.get("tpot_ms"), tokens_per_s_per_user=None, spec_alpha=_single(options, "alpha") if options.get("alpha") else None,
        c=_single(options, "c") if options.get("c") else None, draft=None, max_gamma=8, mtp_alpha=0.85, tp=None, pp=None, max_tp=8,
        weights=[options["weights"]] if options.get("weights") else None, kv_dtype=None, batch=options.get("batch"),
        profile=parse.profile(options["preset"]))
    return plots.plan(plan(grid, target), path, title=title_of(spec, grid, target))


def _validation(options: dict, path):
    """Predicted against measured for every covered row of --points, log axes, a +-10% band."""
    from llm_cost.calibrate.points import read_points
    from llm_cost.calibrate.prediction import predict
    from llm_cost.commands import parse
    from llm_cost.errors import InvalidValueError
    from llm_cost.report import figures as plots

    if not options.get("points"):
        raise InvalidValueError("plot validation needs --points FILE.csv (the columns of train.csv)", params=("points",))
    prof = parse.profile(options["preset"])
    preds = [predict(point, prof) for point in read_points(options["points"])]
    return plots.validation(preds, path, title=f"{options['points']}: profile {prof.name}")


def _fit(model, gpu, deployment, weights, *, batch, rows, context) -> dict:
    """A drawn point's fit as a row `warn_unfit` reads: one pass of `rows` rows of `batch` sequences."""
    from llm_cost.parallel import step_fit

    fit = step_fit(model, gpu, deployment, rows=rows, batch=batch, context=context, weights=weights)
    where = f"{weights.name} at batch {batch}, {rows} rows, context {context}"
    return {"fits": fit.fits, "fit_note": f"{where}: {fit.reason}" if not fit.fits else "",
            "memory_needed_bytes": fit.needed_bytes, "memory_available_bytes": fit.available_bytes}


def _batch_axis_fit(model, gpu, deployment, weights, gamma: int, context: int, batch_max: int) -> dict:
    """Whether the whole batch axis of a spec-vs-batch curve fits: the largest batch whose verification
    pass (gamma + 1 rows a sequence) fits, against the axis's end."""
    from llm_cost.parallel import largest_batch

    limit = model.max_position_embeddings
    past = (f"context {context + gamma + 1} exceeds the model's limit of {limit} tokens"
            if limit and context + gamma + 1 > limit else "")
    most = largest_batch(model, gpu, deployment, weights=weights, tokens=context + gamma + 1, rows_per_sequence=gamma + 1)
    if most >= batch_max and not past:
        return {"fits": True, "fit_note": ""}
    where = "no batch" if not most else f"batches above {most:,}"
    short = (f"{where} of gamma {gamma} at context {context} fit {gpu.name}{deployment.label} "
             f"({weights.name}: weights, K/V and activations)" if most < batch_max else "")
    return {"fits": False, "fit_note": "; ".join(part for part in (short, past) if part)}

