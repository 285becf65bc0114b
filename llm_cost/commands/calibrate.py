"""`validate`: predict measured points and report the error; `calibrate`: fit a profile to them."""

from __future__ import annotations

from typing import Annotated, List, Optional

import typer

from llm_cost.commands.app import UsageError, command, emit, warn
from llm_cost.commands.options import EngineOpt, Force, Format, MaybeJobs, OutputFile, Preset, Quiet, Ray, SkipBad
from llm_cost.report.render import Column, fixed

def four_digits(value) -> str:
    """A measured or predicted figure to four significant digits, past 9,999 as a whole number
    (20,460, not 2.046e+04 beside 2,423)."""
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 1e4 else f"{value:,.4g}"


POINT_COLUMNS = [
    Column("id", "id"),
    Column("metric", "metric"),
    Column("value", "measured", four_digits),
    Column("predicted", "predicted", four_digits),
    Column("ape", "APE", fixed(3)),
    Column("covered", "covered", lambda value: "yes" if value else "no"),
    Column("reason", "reason"),
]
SUMMARY_STATS = [
    Column("n", "n"),
    Column("covered", "covered"),
    Column("mape", "MAPE", fixed(3)),
    Column("median_ape", "median APE", fixed(3)),
    Column("p90_ape", "p90 APE", fixed(3)),
]


def needed(what: str):
    """A callback for a positional argument that names what to give when it is left out ("Missing
    argument KIND: one of ..."), run first (eager) so that it is the one line a bare command prints."""
    def check(value):
        if value is None or (isinstance(value, (list, tuple)) and not value):
            raise UsageError(f"Missing argument {what}")
        return value
    return check


_GIVE_POINTS = needed("POINTS: a CSV of measured points, e.g. tests/data/measured/train.csv (in the checkout)")
Points = Annotated[Optional[str], typer.Argument(help="CSV of measured points with the columns of tests/data/measured/train.csv (in the checkout).", metavar="POINTS", callback=_GIVE_POINTS, is_eager=True, show_default=False)]
PointFiles = Annotated[Optional[List[str]], typer.Argument(help="CSV files of measured points with the columns of tests/data/measured/train.csv, in the checkout (one or more).", metavar="POINTS...", callback=_GIVE_POINTS, is_eager=True, show_default=False)]


def read_all(paths, skip_bad: bool = False) -> list:
    """The points of every file, in order (`points.read_point_files`: ids unique across the files). With
    --skip-bad a file's bad rows are named in one warning line and the rest read."""
    from llm_cost.calibrate.points import read_point_files

    return read_point_files(paths, skip_bad=skip_bad, on_bad=lambda message: warn(f"skipped {message}"))


def _summary_rows(predictions, by: str = "metric", profile: str | None = None) -> list[dict]:
    """One row per group (`metrics.summaries`); JSON and CSV rows name the profile when given."""
    from llm_cost.calibrate.metrics import summaries

    key = by.replace("-", "_")
    named = {} if profile is None else {"preset": profile}
    return [{**summary.row(key), **named} for summary in summaries(predictions, by)]


def _summary_columns(by: str) -> list[Column]:
    return [Column(by.replace("-", "_"), by.replace("-", " "))] + SUMMARY_STATS


@command("validate", epilog="Example: llm-cost validate tests/data/measured/train.csv --profile measured --summary")
def validate_cmd(
    points: Points = None,
    preset: Preset = "measured",
    summary: Annotated[bool, typer.Option("--summary", help="One row per metric (or per --by group), one for the quality A/B rows when the file mixes qualities, and one for all: n, covered, MAPE, median and p90 APE.")] = False,
    by: Annotated[Optional[str], typer.Option("--by", help="Group the summary by metric (default), source, gpu, model, batch-kind, quality or engine (implies --summary).")] = None,
    plot: Annotated[Optional[str], typer.Option("--plot", help="Also draw predicted against measured (log axes, +-10% band) to this .png or .svg file.")] = None,
    engine: EngineOpt = None,
    force: Force = False,
    skip_bad: SkipBad = False,
    row_budget_s: Annotated[Optional[float], typer.Option("--row-budget-s", help="Seconds one served row (concurrency, request rate) may take to simulate, estimated before it runs; a row past it is not covered, with the estimate (default about 70).")] = None,
    jobs: MaybeJobs = None,
    ray: Ray = None,
    quiet: Quiet = False,
    fmt: Format = "table",
) -> None:
    """Predict every row of a file of measured points and print the error of each (APE =
    |predicted / measured - 1|); a row the model cannot express is not covered, with the reason.
    Each row is served by the engine its `engine` column names (unknown: generic) unless --engine.
    Ctrl-C prints the rows predicted so far (or their summary), titled partial, says how many of all
    on stderr and exits 130.
    """
    from llm_cost.calibrate.validation import validate_points
    from llm_cost.commands import parse

    from llm_cost.calibrate.metrics import GROUPS
    from llm_cost.errors import check_choice

    if by is not None:
        by = check_choice("by", by.strip().lower(), tuple(GROUPS))
    if plot:
        from llm_cost.commands.outputs import target
        from llm_cost.report.figures import EXTENSIONS

        plot = target(plot, force=force, inputs=[points, preset], suffixes=EXTENSIONS, param="plot")
    prof = parse.profile(preset)
    pts = read_all([points], skip_bad)
    budget = None
    if row_budget_s is not None:
        from llm_cost.calibrate.points import SECONDS_PER_SERVED_STEP
        from llm_cost.errors import check_number

        check_number("row_budget_s", row_budget_s, low=0, high=86_400)
        budget = row_budget_s / SECONDS_PER_SERVED_STEP
    from llm_cost.commands.progress import SweepProgress

    with SweepProgress("predicting rows") as progress:  # each row is deterministic: any executor, the same list
        done = validate_points(pts, prof, engine=engine, steps_budget=budget, jobs=jobs, ray=ray, on_done=progress)
    preds, stopped = list(done.predictions), done.interrupted  # after Ctrl-C: the rows predicted so far, in order
    if stopped and not preds:  # after the bar is gone
        _interrupted(0, len(pts), "")
    if plot and not stopped:
        from llm_cost.report import figures

        figures.validation(preds, plot, title=f"{points}: profile {prof.name}")
    title = f"Validation of profile {prof.name} on {points}"
    if stopped:
        title += f" (partial: {len(preds)} of {len(pts)} rows)"
    if summary or by is not None:
        by = by or "metric"
        emit(_summary_rows(preds, by, prof.name), _summary_columns(by), fmt, title=title, caption=CAPTION)
    else:
        emit(_point_rows(preds, prof.name), POINT_COLUMNS, fmt, title=title, caption=CAPTION)
    if stopped:
        shown = "the summary is of those" if summary or by else "the rows printed are those"
        _interrupted(len(preds), len(pts), shown + ("; no figure drawn" if plot else ""))


CAPTION = "APE = |predicted / measured - 1|; values in each metric's unit (tok/s, ms)"


# the library parameter a not-covered reason names (`under_load.over_budget`), and the option that sets it
REASON_FLAGS = {"steps_budget": "validate --row-budget-s"}


def _point_rows(preds, profile: str) -> list[dict]:
    """One row per predicted point; JSON and CSV rows name the point's model, GPU and the profile. A
    reason's library parameter is written as the option (`REASON_FLAGS`)."""
    from llm_cost.commands.parse import flags_in

    return [{"id": prediction.point.id, "model": prediction.point.config, "gpu": prediction.point.gpu_name, "preset": profile,
             "metric": prediction.point.metric, "value": prediction.point.value, "predicted": prediction.predicted,
             "ape": prediction.ape, "covered": prediction.covered,
             "reason": flags_in(prediction.reason, REASON_FLAGS, REASON_FLAGS)} for prediction in preds]


def _interrupted(done: int, total: int, shown: str) -> None:
    """After Ctrl-C, once what finished is printed: one warning line (how many rows of all, what the
    output shows), exit 130."""
    from llm_cost.commands.app import EXIT_INTERRUPTED

    warn(f"interrupted: {done} of {total} rows predicted" + (f"; {shown}" if shown else ""))
    raise typer.Exit(EXIT_INTERRUPTED)


@command("calibrate", epilog="Example: llm-cost calibrate tests/data/measured/train.csv -o my-profile.json")
def calibrate_cmd(
    output: OutputFile,
    points: PointFiles = None,
    free: Annotated[Optional[str], typer.Option("--free", help="Knobs to fit, comma separated (default all but gemm_half_width, which needs rows at several --tp): bw_efficiency, compute_efficiency, weight_only_bw_factor, fp8_compute_factor, fixed_time_s, fixed_time_per_layer_s, small_gemm_factor, gemm_half_rows, gemm_half_width.")] = None,
    preset: Annotated[str, typer.Option("--base", help="Profile the fit starts from and whose other knobs it keeps (a preset or a profile JSON).")] = "measured",
    name: Annotated[str, typer.Option("--name", help="Name of the fitted profile.")] = "calibrated",
    cv: Annotated[bool, typer.Option("--cv/--no-cv", help="Cross-validate, k-fold by source (each source predicted by a fit to the others).")] = True,
    cv_by: Annotated[str, typer.Option("--cv-by", help="What the cross-validation leaves out: source, or gpu (leave one GPU out).")] = "source",
    engines: Annotated[bool, typer.Option("--engines/--no-engines", help="Fit each serving engine's own fixed times (per pass, per layer, before the first token) and, when compute_efficiency is free, its own MFU, where it has 10 points or more. Without it the base's per-engine costs are held fixed.")] = False,
    force: Force = False,
    skip_bad: SkipBad = False,
    jobs: MaybeJobs = None,
    ray: Ray = None,
    quiet: Quiet = False,
    fmt: Format = "table",
) -> None:
    """Fit a profile's knobs to measured points (least squares of log error, each knob bounded),
    print each fitted value, the in-sample and the cross-validated error, and write the profile.
    Warns when there are fewer than POINTS_PER_KNOB points per fitted knob, or one source (or GPU, with
    --cv-by gpu) so that no cross-validation is possible, or when the fit's in-sample MAPE is worse than
    its base's; a knob no point moves is marked not fitted. A base's per-engine costs (measured's) are
    kept: held fixed, or with --engines fitted further for the engines with 10 points or more.
    A run past a second shows its progress on stderr (a terminal only; --quiet: never); Ctrl-C during
    the cross-validation keeps the fit, writes it and says the errors are in-sample only; Ctrl-C during
    the fit writes nothing, says so on stderr and exits 130.
    """
    from llm_cost.calibrate.calibration import calibrate_profile
    from llm_cost.commands import parse
    from llm_cost.commands.outputs import target
    from llm_cost.commands.progress import SweepProgress

    output = str(target(output, force=force, inputs=[*points, preset]))  # before the fit, not after it
    base = parse.profile(preset, option="base")
    with SweepProgress("calibrating", quiet=quiet) as progress:
        done = calibrate_profile(points, base, free.split(",") if free else None, name=name, cv=cv, cv_by=cv_by,
                                 engines=engines, output=output, skip_bad=skip_bad,
                                 on_bad=lambda message: warn(f"skipped {message}"), jobs=jobs, ray=ray,
                                 on_progress=progress)
    if not done.finished:  # after the bar is gone
        from llm_cost.commands.app import EXIT_INTERRUPTED

        warn(f"interrupted: the fit did not finish; nothing written to {output}")
        raise typer.Exit(EXIT_INTERRUPTED)
    _warn(done)
    result = done.result
    emit(_knob_rows(result, (done.fitted, done.held, done.start)), KNOB_COLUMNS, fmt,
         title=f"Profile {name}: {_count(len(result.fitted), 'knob')} fitted to {_count(result.points, 'point')} "
               f"of {', '.join(points)} (written to {output})",
         caption=_cv_caption(cv, done.cv_by, done.groups, interrupted=done.cv_interrupted))


def _warn(done) -> None:
    """The warnings of a `calibration.Calibration`, worded with the options that act on them."""
    if done.cv_interrupted:
        warn("interrupted: the cross-validation did not finish; the fit to every point is written, its "
             "errors in-sample only")
    if done.few_points:
        _warn_few_points(done.result.points, len(done.result.fitted))
    if done.worse_than_base:
        _warn_worse_than_base(done.fitted, done.start)
    if done.held_per_engine:
        _warn_held_per_engine(done.held_per_engine, done.base)
    if done.one_group is not None:
        warn(f"one {done.cv_by} ({done.one_group}) in the points: no cross-validation possible (it needs two), "
             f"the errors shown are in-sample only")


KNOB_COLUMNS = [Column("knob", "knob"), Column("value", "value (SI)", lambda value: f"{value:.6g}"),
                Column("fitted", "fitted", lambda value: "" if value is None else ("yes" if value else "no (base)"))]


def _count(count: int, what: str) -> str:
    return f"{count} {what}{'' if count == 1 else 's'}"


def _warn_few_points(points: int, knobs: int) -> None:
    """The warning when the fit had fewer than `calibration.POINTS_PER_KNOB` points per knob it moved."""
    from llm_cost.calibrate.calibration import POINTS_PER_KNOB

    warn(f"{_count(points, 'point')} for {_count(knobs, 'fitted knob')}, fewer than "
         f"{POINTS_PER_KNOB} per knob ({POINTS_PER_KNOB * knobs}): the fit may follow the points' noise; "
         f"fit fewer knobs with --free or add points")


def _warn_held_per_engine(held, base) -> None:
    """The warning when --free names knobs the base sets per engine (`Profile.engine_costs`), which stay
    the base's without --engines (each engine's entry replaces the shared knob)."""
    warn(f"{', '.join(held)}: the base {base.name} sets {'it' if len(held) == 1 else 'them'} per engine "
         f"({', '.join(base.engines)}), held fixed: not fitted; --engines fits each engine's")


def _warn_worse_than_base(fitted, base) -> None:
    """The warning when the fitted profile's in-sample MAPE exceeds its base's on the same points by more
    than `calibration.MAPE_SLACK` (relative): the fit minimises the log error, not MAPE, so a near tie is
    not one; the table's "base" rows print both figures whatever they are."""
    warn(f"the fitted profile's in-sample MAPE ({fitted.mape:.3f}) is worse than its {base.name}'s "
         f"({base.mape:.3f}) on these points: the base predicts them better; keep it, or compare "
         f"with llm-cost validate --profile")


def _knob_rows(result, summaries) -> list[dict]:
    """One row per shared knob (fitted: the fit moved it; else it keeps the base's value), one per engine
    knob, and the error rows of each summary."""
    from llm_cost.calibrate.fit import KNOBS
    from llm_cost.specs.profiles import ENGINE_KNOBS

    moved = set(result.fitted)
    rows = [{"knob": knob, "value": getattr(result.profile, knob),
             "fitted": knob in moved or any(name.startswith(f"{knob}@") for name in moved)} for knob in KNOBS]
    rows += [{"knob": f"{knob}@{entry[0]}", "value": value, "fitted": f"{knob}@{entry[0]}" in moved}
             for entry in result.profile.engine_costs for knob, value in zip(ENGINE_KNOBS, entry[1:])]
    for summary in summaries:
        if summary is not None:
            rows.append({"knob": f"{summary.name}: median APE", "value": summary.median_ape, "fitted": None})
            rows.append({"knob": f"{summary.name}: MAPE", "value": summary.mape, "fitted": None})
            rows.append({"knob": f"{summary.name}: p90 APE", "value": summary.p90_ape, "fitted": None})
    return rows


def _cv_caption(cv: bool, by: str, groups, interrupted: bool = False) -> str:
    """What the error rows are: cross-validated k-fold, or in-sample only (and why: --no-cv, one group,
    or the cross-validation interrupted)."""
    if interrupted:
        return (f"errors in-sample only: the cross-validation by {by} was interrupted; "
                f"fitted no (base): the base's value")
    if not cv:
        return "errors in-sample only (--no-cv); fitted no (base): no point moves the knob, it keeps the base's value"
    if len(groups) < 2:
        return f"errors in-sample only: one {by}, no cross-validation possible; fitted no (base): the base's value"
    return (f"cross-validated: k-fold by {by}, each {by} predicted by a fit to the others; "
            f"fitted no (base): the base's value")
