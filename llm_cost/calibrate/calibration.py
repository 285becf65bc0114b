"""`calibrate_profile(points, base)`: a profile fitted to measured points, cross-validated and written (issue 24.4,
the library half of `llm-cost calibrate`).

The fit to every point (`fit.fit_profile`), then one fit per held-out group (`fit.cross_validate`, k-fold
by source or by GPU) when there are two groups or more, the fit's and the base's in-sample errors
(`metrics.summarize`), and the profile written with its calibration record (`profile_file.write_profile`).
What was done comes back as one `Calibration`, with what deserves a warning as facts (`few_points`,
`worse_than_base`, `held_per_engine`, `one_group`, `cv_interrupted`) for the caller to word.

Ctrl-C during the fit writes nothing (`Calibration.finished` False); during the cross-validation it keeps
the fit, writes it and says so (`cv_interrupted`: its errors are in-sample only).
"""

from __future__ import annotations

from dataclasses import dataclass

POINTS_PER_KNOB = 10  # fewer points than this per fitted knob: the fit may follow the points' noise
MAPE_SLACK = 0.05  # the fit's in-sample MAPE past (1 + this) x its base's: worse than the base


@dataclass(frozen=True)
class Calibration:
    """What `calibrate_profile` did.

    Attributes
    ----------
    base, knobs, cv, cv_by, groups, folds
        The base `Profile`, the knobs asked free, whether to cross-validate, by what, the groups of the
        points by it and the folds run (0: none).
    finished
        False when Ctrl-C stopped the fit: nothing else is set, nothing written.
    result
        The `fit.FitResult` of the fit to every point.
    fitted, held, start
        `metrics.Summary` of the fit in sample, cross-validated (None: not run or interrupted), and of
        the base in sample.
    cv_interrupted
        Ctrl-C stopped the cross-validation (the fit is written, its errors in-sample only).
    few_points
        Fewer than `POINTS_PER_KNOB` points per knob the fit moved.
    worse_than_base
        The fit's in-sample MAPE past (1 + `MAPE_SLACK`) x the base's.
    held_per_engine
        Knobs asked free that the base sets per engine, held fixed without `engines`.
    one_group
        The one group, when cross-validation was asked and is not possible (None otherwise).

    Examples
    --------
    Three points of one source: the fit runs, cross-validation cannot (one group), and three points are
    too few for a knob:

    >>> from llm_cost.calibrate import Point
    >>> from llm_cost.specs.profiles import PRESETS
    >>> pts = [Point(f"b{batch}", "demo", "A", "llama-3-8b", "h100-sxm", "bf16", 0, "bf16", 1, 1, 1, batch,
    ...              "static", 128, 128, "decode_tok_per_s_per_user", value)
    ...        for batch, value in ((1, 88.0), (8, 85.0), (32, 78.0))]
    >>> done = calibrate_profile(pts, PRESETS["measured"], ["bw_efficiency"], jobs=1)
    >>> type(done).__name__, done.knobs, done.groups, done.one_group, done.few_points, done.start.n
    ('Calibration', ('bw_efficiency',), ('demo',), 'demo', True, 3)
    """

    base: object
    knobs: tuple[str, ...]
    cv: bool
    cv_by: str
    groups: tuple[str, ...]
    folds: int
    finished: bool = True
    result: object = None
    fitted: object = None
    held: object = None
    start: object = None
    cv_interrupted: bool = False
    few_points: bool = False
    worse_than_base: bool = False
    held_per_engine: tuple[str, ...] = ()
    one_group: str | None = None


def calibrate_profile(points, base, free=None, *, name: str = "calibrated", cv: bool = True,
                      cv_by: str = "source", engines: bool = False, output=None, skip_bad: bool = False, on_bad=None,
                      jobs: int | None = None, ray: str | None = None, on_progress=None) -> Calibration:
    """Fit `base`'s `free` knobs (None: `fit.DEFAULT_FREE`) to `points`, cross-validate by `cv_by` (module
    doc) and write the profile, named `name`, to `output` (None: not written) with its calibration record.
    `engines`: fit each engine's own costs where it has the points. `on_progress(done, total)` after the
    fit and after each fold.

    Parameters
    ----------
    points : list of Point, or of CSV paths
        The measured points, or the files to read them from once the knobs are checked
        (`points.read_point_files`, with `skip_bad` and `on_bad`; the record names the files).
    base : Profile or str
        The profile the fit starts from (or a preset's name); its other knobs are kept.
    free : sequence of str, optional
        The knobs to fit (`fit.KNOBS`; a text: comma-separated).
    name, cv, cv_by, engines, output, skip_bad, on_bad, jobs, ray, on_progress
        As above; `jobs` and `ray` the executor's (`executor.TaskPool`).

    Returns
    -------
    Calibration
        The fit, its errors and what deserves a warning.

    Examples
    --------
    Four measured decode speeds of Llama-3-8B on one H100 (tokens/s per user at batch 1 to 64), about 15%
    below the `measured` profile's; the memory-bound efficiency fitted to them:

    >>> from llm_cost.calibrate import Point
    >>> from llm_cost.specs.profiles import PRESETS
    >>> pts = [Point(f"b{batch}", "demo", "A", "llama-3-8b", "h100-sxm", "bf16", 0, "bf16", 1, 1, 1, batch,
    ...              "static", 128, 128, "decode_tok_per_s_per_user", value)
    ...        for batch, value in ((1, 88.0), (8, 85.0), (32, 78.0), (64, 71.0))]
    >>> done = calibrate_profile(pts, PRESETS["measured"], ["bw_efficiency"], jobs=1)  # one source: no folds
    >>> done.finished, done.result.fitted, done.one_group, done.folds, done.held
    (True, ('bw_efficiency',), 'demo', 0, None)
    >>> round(done.start.mape, 3), round(done.fitted.mape, 3), round(done.result.profile.bw_efficiency, 3)
    (0.165, 0.017, 0.629)
    """
    from llm_cost.calibrate.fit import CV_GROUPS, DEFAULT_FREE, check_free, cv_groups, fit_profile, predictions
    from llm_cost.calibrate.metrics import summarize
    from llm_cost.errors import check_choice
    from llm_cost.executor import TaskPool

    points, base, free = checked_inputs(points, base, free)
    knobs = check_free(free) if free else DEFAULT_FREE
    cv_by = check_choice("cv_by", str(cv_by).strip().lower(), tuple(CV_GROUPS))
    from llm_cost.calibrate.points import Point, read_point_files

    point_files = [str(path) for path in points if not isinstance(path, Point)]
    if point_files:  # files read, points given as Points kept beside them (files' ids unique across files)
        points = [point for point in points if isinstance(point, Point)] + list(
            read_point_files(point_files, skip_bad=skip_bad, on_bad=on_bad))
    groups = tuple(cv_groups(points, cv_by))
    folds = len(groups) if cv and len(groups) > 1 else 0
    out = Calibration(base, tuple(knobs), bool(cv), cv_by, groups, folds)
    progress = on_progress or (lambda done, total: None)
    with TaskPool(jobs, ray=ray) as pool:
        try:  # the served rows through the pool: the same fit as jobs 1, bit for bit
            result = fit_profile(points, base, knobs, name=name, engines=engines, executor=pool)
            progress(1, 1 + folds)  # the fit to every point, then one fit per held-out fold
            held, cut = _held_out(points, base, knobs, cv_by, engines, folds, progress, pool)
            fitted = summarize("fit", predictions(points, result.profile, pool))
            start = summarize(f"base {base.name}", predictions(points, base, pool))
        except KeyboardInterrupt:  # Ctrl-C before the fit's errors are known (the cross-validation's: _held_out)
            return _replace(out, finished=False)
    from llm_cost.specs.profiles import ENGINE_KNOBS

    moved = len(result.fitted)
    out = _replace(out, result=result, fitted=fitted, held=held, start=start, cv_interrupted=cut,
                   few_points=bool(moved) and result.points < POINTS_PER_KNOB * moved,
                   worse_than_base=fitted.mape > start.mape * (1.0 + MAPE_SLACK),
                   held_per_engine=tuple(knob for knob in knobs if knob in ENGINE_KNOBS)
                   if free and base.engine_costs and not engines else (),
                   one_group=groups[0] if cv and len(groups) < 2 else None)
    if output is not None:
        _write(out, output, point_files)
    return out


def checked_inputs(points, base, free) -> tuple[list, object, list | None]:
    """(points, base, free) as `calibrate_profile` reads them, or an error naming the parameter: `points` a
    list (a generator read once, here; one path alone is one file), each a `Point` or a CSV path; `base` a
    `Profile` or a preset's name; `free` knob names (a text: comma-separated), None for the default.

    >>> pts, base, free = checked_inputs("train.csv", "lecture", "bw_efficiency, compute_efficiency")
    >>> pts, base.name, free
    (['train.csv'], 'lecture', ['bw_efficiency', ' compute_efficiency'])
    >>> checked_inputs(3, "lecture", None)
    Traceback (most recent call last):
    ...
    llm_cost.errors.InvalidValueError: points must be a list of Points or CSV paths, got 3
    """
    import os

    from llm_cost.calibrate.points import Point
    from llm_cost.catalog.arguments import default_rules
    from llm_cost.errors import InvalidValueError, short_repr

    if isinstance(points, (str, os.PathLike)):
        points = [points]
    if not hasattr(points, "__iter__"):
        raise InvalidValueError(f"points must be a list of Points or CSV paths, got {short_repr(points)}",
                                params=("points",))
    points = list(points)
    for point in points:
        if not isinstance(point, (Point, str, os.PathLike)):
            raise InvalidValueError(f"points must be Points or CSV paths, got {short_repr(point)}", params=("points",))
    base = default_rules()["profile"].check("base", base)  # a Profile, or a preset's name loaded
    if free is not None:
        free = free.split(",") if isinstance(free, str) else free
        if not hasattr(free, "__iter__") or not all(isinstance(knob, str) for knob in free):
            raise InvalidValueError(f"free must be knob names, got {short_repr(free)}", params=("free",))
        free = list(free)
    return points, base, free


def _replace(out: Calibration, **changes) -> Calibration:
    from dataclasses import replace

    return replace(out, **changes)


def _held_out(points, base, knobs, cv_by: str, engines: bool, folds: int, progress, executor=None) -> tuple:
    """(the cross-validated summary, whether Ctrl-C cut it): (None, False) without folds; an interrupt
    skips it, keeping the fit to every point."""
    if not folds:
        return None, False
    from llm_cost.calibrate.fit import cross_validate
    from llm_cost.calibrate.metrics import summarize

    try:
        return summarize(f"cross-validated by {cv_by}", cross_validate(
            points, base, knobs, by=cv_by, engines=engines, executor=executor,
            on_fold=lambda done, total: progress(1 + done, 1 + total))), False
    except KeyboardInterrupt:
        return None, True


def _write(out: Calibration, output, point_files) -> None:
    """The fitted profile to `output`, with its calibration record (the files, knobs, errors)."""
    from llm_cost.calibrate.profile_file import write_profile

    result = out.result
    calibration = {"points": list(point_files), "free": list(out.knobs), "fitted": list(result.fitted),
                   "engines": result.profile.engines, "in_sample": out.fitted.row(), "base_in_sample": out.start.row()}
    if out.held:
        calibration["cross_validated"] = out.held.row()
    write_profile(result.profile, str(output), calibration=calibration)
