"""`validate`: predict measured points and report the error; `calibrate`: fit a profile to them."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from llm_cost.commands.app import command, emit
from llm_cost.commands.options import Format, Preset
from llm_cost.commands.outputs import Force
from llm_cost.report.render import Column, fixed

POINT_COLUMNS = [
    Column("id", "id"),
    Column("metric", "metric"),
    Column("value", "measured", lambda v: f"{v:,.4g}"),
    Column("predicted", "predicted", lambda v: "-" if v is None else f"{v:,.4g}"),
    Column("ape", "APE", fixed(3)),
    Column("covered", "covered", lambda v: "yes" if v else "no"),
    Column("reason", "reason"),
]
SUMMARY_STATS = [
    Column("n", "n"),
    Column("covered", "covered"),
    Column("mape", "MAPE", fixed(3)),
    Column("median_ape", "median APE", fixed(3)),
    Column("p90_ape", "p90 APE", fixed(3)),
]
Points = Annotated[str, typer.Argument(help="CSV of measured points with the columns of shared/measured/train.csv.")]
SkipBad = Annotated[bool, typer.Option("--skip-bad", help="Predict the good rows of a file with bad ones (each bad row is named in a warning) instead of refusing it.")]


def _read(points: str, skip_bad: bool):
    """The points of the file; with --skip-bad its bad rows in one warning line, the rest read."""
    from llm_cost.calibrate.points import read_points

    return read_points(points, skip_bad=skip_bad, on_bad=lambda m: typer.echo(f"Warning: skipped {m}", err=True))


def _summary_rows(predictions, by: str = "metric") -> list[dict]:
    from llm_cost.calibrate.metrics import summaries

    key = by.replace("-", "_")
    return [s.row(key) for s in summaries(predictions, by)]


def _summary_columns(by: str) -> list[Column]:
    return [Column(by.replace("-", "_"), by.replace("-", " "))] + SUMMARY_STATS


@command("validate", epilog="Example: llm-cost validate train.csv --profile measured --summary")
def validate_cmd(
    points: Points,
    preset: Preset = "measured",
    summary: Annotated[bool, typer.Option("--summary", help="One row per metric (or per --by group), one for the quality A/B rows when the file mixes qualities, and one for all: n, covered, MAPE, median and p90 APE.")] = False,
    by: Annotated[Optional[str], typer.Option("--by", help="Group the summary by metric (default), source, gpu, model, batch-kind or quality (implies --summary).")] = None,
    plot: Annotated[Optional[str], typer.Option("--plot", help="Also draw predicted against measured (log axes, +-10% band) to this .png or .svg file.")] = None,
    force: Force = False,
    skip_bad: SkipBad = False,
    row_budget_s: Annotated[Optional[float], typer.Option("--row-budget-s", help="Seconds one served row (concurrency, request rate) may take to simulate, estimated before it runs; a row past it is not covered, with the estimate (default about 70).")] = None,
    fmt: Format = "table",
) -> None:
    """Predict every row of a file of measured points and print the error of each (APE =
    |predicted / measured - 1|); a row the model cannot express is not covered, with the reason.
    """
    from llm_cost.calibrate.prediction import predict
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
    pts = _read(points, skip_bad)
    budget = None
    if row_budget_s is not None:
        from llm_cost.calibrate.points import SECONDS_PER_SERVED_STEP
        from llm_cost.errors import check_number

        check_number("row_budget_s", row_budget_s, low=0, high=86_400)
        budget = row_budget_s / SECONDS_PER_SERVED_STEP
    preds = [predict(p, prof, steps_budget=budget) for p in pts]
    if plot:
        from llm_cost.calibrate.figure import validation_figure

        validation_figure(preds, plot, title=f"{points}: profile {prof.name}")
    caption = "APE = |predicted / measured - 1|; values in each metric's unit (tok/s, ms)"
    if summary or by is not None:
        by = by or "metric"
        emit(_summary_rows(preds, by), _summary_columns(by), fmt,
             title=f"Validation of profile {prof.name} on {points}", caption=caption)
        return
    rows = [{"id": q.point.id, "metric": q.point.metric, "value": q.point.value, "predicted": q.predicted,
             "ape": q.ape, "covered": q.covered, "reason": q.reason} for q in preds]
    emit(rows, POINT_COLUMNS, fmt, title=f"Validation of profile {prof.name} on {points}", caption=caption)


@command("calibrate", epilog="Example: llm-cost calibrate train.csv -o measured.json")
def calibrate_cmd(
    points: Points,
    output: Annotated[str, typer.Option("--output", "-o", help="Profile JSON file to write (use it with --profile FILE).")],
    free: Annotated[Optional[str], typer.Option("--free", help="Knobs to fit, comma separated (default all): bw_efficiency, compute_efficiency, weight_only_bw_factor, fp8_compute_factor, fixed_time_s, fixed_time_per_layer_s, small_gemm_factor, gemm_half_rows.")] = None,
    preset: Annotated[str, typer.Option("--base", help="Profile the fit starts from and whose other knobs it keeps (a preset or a profile JSON).")] = "measured",
    name: Annotated[str, typer.Option("--name", help="Name of the fitted profile.")] = "calibrated",
    cv: Annotated[bool, typer.Option("--cv/--no-cv", help="Cross-validate, k-fold by source (each source predicted by a fit to the others).")] = True,
    force: Force = False,
    skip_bad: SkipBad = False,
    fmt: Format = "table",
) -> None:
    """Fit a profile's knobs to measured points (least squares of log error, each knob bounded),
    print each fitted value, the in-sample and the cross-validated error, and write the profile.
    """
    from llm_cost.calibrate.fit import DEFAULT_FREE, check_free, cross_validate, fit_profile
    from llm_cost.calibrate.metrics import summarize
    from llm_cost.calibrate.prediction import predict
    from llm_cost.calibrate.profile_file import write_profile
    from llm_cost.commands import parse
    from llm_cost.commands.outputs import target

    output = str(target(output, force=force, inputs=[points, preset]))  # before the fit, not after it
    base = parse.profile(preset, option="base")
    knobs = check_free(free.split(",")) if free else DEFAULT_FREE
    pts = _read(points, skip_bad)
    result = fit_profile(pts, base, knobs, name=name)
    fitted = summarize("fit", [predict(p, result.profile) for p in pts])
    held = summarize("cross-validated", cross_validate(pts, base, knobs)) if cv else None
    calibration = {"points": points, "free": list(knobs), "in_sample": fitted.row()}
    if held:
        calibration["cross_validated"] = held.row()
    write_profile(result.profile, output, calibration=calibration)
    rows = [{"knob": k, "value": getattr(result.profile, k), "fitted": k in knobs} for k in DEFAULT_FREE]
    for s in (fitted, held):
        if s is not None:
            rows.append({"knob": f"{s.name}: median APE", "value": s.median_ape, "fitted": None})
            rows.append({"knob": f"{s.name}: MAPE", "value": s.mape, "fitted": None})
            rows.append({"knob": f"{s.name}: p90 APE", "value": s.p90_ape, "fitted": None})
    emit(rows, [Column("knob", "knob"), Column("value", "value (SI)", lambda v: f"{v:.6g}"),
                Column("fitted", "fitted", lambda v: "" if v is None else ("yes" if v else "no"))], fmt,
         title=f"Profile {name} fitted to {result.points} points of {points} (written to {output})",
         caption="cross-validated: k-fold by source, each source predicted by a fit to the others")
