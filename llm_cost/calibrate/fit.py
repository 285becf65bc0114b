"""Fit a profile's knobs to measured points: least squares of log(predicted / measured), bounded.

    minimise  sum_i log(predicted_i(knobs) / value_i)^2   over the free knobs, each in its bounds

(`scipy.optimize.least_squares`, trust-region reflective; `x` the free knobs' values in the
optimiser's scale). The cross-validated error is k-fold by
source (or by GPU): each group's points are predicted by a profile fitted to the other groups' only.

With `engines`, each serving engine with at least MIN_ENGINE_POINTS points gets its own fixed time per
pass, per layer and before the first token, and (when `compute_efficiency` is free) its own large-GEMM
MFU, what its prefill reaches (`ENGINE_KNOBS`, `Profile.engine_costs`), in place of the shared ones;
points of other engines are left out of that fit and predicted with the fitted engines' mean
(`Profile.for_engine`). An engine's knobs act on its own points only, so the Jacobian is sparse and its
columns are estimated a group at a time (`jac_sparsity`). An engine whose points never reach the compute
roof (gpt-fast's batch-1 decode) cannot tell its MFU: it keeps the other engines' mean, unfitted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from llm_cost.calibrate.prediction import Prediction, predict, predict_each, served_groups
from llm_cost.errors import InvalidValueError, check_choice
from llm_cost.specs.profiles import ENGINE_KNOBS, Profile

# knob -> (low, high, unit scale the optimiser sees): physical bounds, efficiencies in (0, 1]
KNOBS: dict[str, tuple[float, float, float]] = {
    "bw_efficiency": (0.05, 1.0, 1.0),
    "compute_efficiency": (0.05, 1.0, 1.0),
    "weight_only_bw_factor": (0.05, 1.0, 1.0),
    "fp8_compute_factor": (0.05, 1.0, 1.0),
    "fixed_time_s": (0.0, 0.05, 1e-3),  # per pass: seconds, seen in ms
    "fixed_time_per_layer_s": (0.0, 1e-3, 1e-6),  # per layer per pass: seen in microseconds
    "small_gemm_factor": (0.02, 1.0, 1.0),
    "gemm_half_rows": (0.0, 4096.0, 100.0),  # rows, seen in hundreds
    "gemm_half_width": (0.0, 4096.0, 100.0),  # columns per GPU, seen in hundreds
}
# Fitted unless `free` says otherwise: all but the GEMM half width, which only rows at several tensor-parallel
# degrees tell apart from the MFU (at one tp, w_h and compute_efficiency trade nearly one for one, and an
# arbitrary w_h would move every other tp's prediction); name it in `free` to fit it (`refit_measured`).
DEFAULT_FREE = tuple(knob for knob in KNOBS if knob != "gemm_half_width")
# An engine's own knobs (`Profile.engine_costs`, in ENGINE_KNOBS' order): bounds and scale as above
ENGINE_BOUNDS: dict[str, tuple[float, float, float]] = {
    "fixed_time_s": KNOBS["fixed_time_s"],
    "fixed_time_per_layer_s": KNOBS["fixed_time_per_layer_s"],
    "ttft_overhead_s": (0.0, 0.5, 1e-3),  # per request: seconds, seen in ms
    "compute_efficiency": KNOBS["compute_efficiency"],  # the engine's kernels' MFU: fitted when the shared one is free
}
ENGINE_FIXED = ("fixed_time_s", "fixed_time_per_layer_s", "ttft_overhead_s")  # always an engine's own when fitted
MIN_ENGINE_POINTS = 10  # fewer points of an engine than this: it takes the fitted engines' mean
# Where a knob's fit starts when its base value is neutral and the neutral value is a flat spot
# (the GEMM ramp does nothing while either of its two knobs is neutral).
START = {"small_gemm_factor": 0.5, "gemm_half_rows": 128.0}


@dataclass(frozen=True)
class FitResult:
    """The fitted profile, the points it was fitted to, the root mean square of log error, and the knobs
    the fit moved (`fitted`: the free knobs some point sees; the others keep the base's value)."""

    profile: Profile
    points: int
    rms_log_error: float
    fitted: tuple[str, ...] = ()


def check_free(free) -> tuple[str, ...]:
    """The free knobs' names, each one of KNOBS; at least one."""
    names = tuple(check_choice("free", knob.strip(), tuple(KNOBS)) for knob in free if knob.strip())
    if not names:
        raise InvalidValueError(f"free must name at least one knob of {', '.join(KNOBS)}", params=("free",))
    return names


def _bounded(knob: str, value: float) -> float:
    """`value` (in the optimiser's scale) as the knob's SI value, within its bounds; `knob` a shared knob
    or an engine's (`fixed_time_s@vllm`)."""
    low, high, scale = ENGINE_BOUNDS[knob.split("@")[0]] if "@" in knob else KNOBS[knob]
    return min(max(value * scale, low), high)


def profile_at(base: Profile, free, x) -> Profile:
    """`base` with the free knobs at `x`: shared knobs by name, an engine's as `knob@engine`."""
    shared = {key: _bounded(key, value) for key, value in zip(free, x) if "@" not in key}
    engines = {entry[0]: dict(zip(ENGINE_KNOBS, entry[1:])) for entry in base.engine_costs}  # a knob not free keeps base's
    moved = False
    for key, value in zip(free, x):
        if "@" in key:
            knob, name = key.split("@")
            engines[name][knob] = _bounded(key, value)
            moved = True
    prof = base.with_(**shared) if shared else base
    if moved:
        prof = prof.with_(engine_costs=tuple((engine, *(costs[key] for key in ENGINE_KNOBS))
                                             for engine, costs in engines.items()))
    return prof


def predictions(points, profile: Profile, executor=None) -> list[Prediction]:
    """`predict(p, profile)` of every point, in order; with `executor` (an `executor.TaskPool`) the served
    rows (`prediction.SERVED_KINDS`) are predicted through it and the others here: the same list bit for bit (each
    prediction depends on its point and the profile alone)."""
    if executor is None:
        return [predict(point, profile) for point in points]
    from functools import partial

    groups = served_groups(points)  # one task per served condition: its metrics share one simulation
    tasks = [tuple(points[index] for index in at) for at in groups]
    out = {index: pred for at, preds in zip(groups, executor.map(partial(predict_each, profile=profile), tasks))
           for index, pred in zip(at, preds)}
    return [out[index] if index in out else predict(point, profile) for index, point in enumerate(points)]


def _residuals(points, base: Profile, free, scaled, executor=None):
    return [math.log(pred.predicted / point.value) if pred.covered else 0.0
            for point, pred in zip(points, predictions(points, profile_at(base, free, scaled), executor))]


def fitted_engines(points) -> tuple[str, ...]:
    """The engines (not `generic`) with at least MIN_ENGINE_POINTS of `points`, in first-seen order."""
    counts: dict[str, int] = {}
    for point in points:
        counts[point.engine] = counts.get(point.engine, 0) + 1
    return tuple(engine for engine, count in counts.items() if engine != "generic" and count >= MIN_ENGINE_POINTS)


def fit_profile(points, base: Profile, free=DEFAULT_FREE, *, name: str = "calibrated",
                engines: bool = False, executor=None) -> FitResult:
    """Fit the `free` knobs of `base` to `points` (those `base` covers); the rest stay `base`'s.
    `engines`: each engine of `fitted_engines` gets its own fixed costs (module doc); `executor`: a
    `TaskPool` the served rows are predicted through (`predictions`; the same fit bit for bit).

    The base's own engine costs (`Profile.engine_costs`, the `measured` preset's) are kept: without
    `engines` they are held fixed (an engine's fixed times and MFU then stay the base's, and the shared
    knobs they replace move no point: not fitted); with it each engine fitted here starts from its
    entry and the base's other engines keep theirs, unfitted."""
    from scipy.optimize import least_squares

    free = check_free(free)
    start = {entry[0]: entry[1:] for entry in base.engine_costs}  # a base fitted per engine starts each engine there
    base = base.with_(memory_basis="usable")  # a calibrated profile counts the driver's memory
    used = [point for point in points if predict(point, base).covered]  # here: warms this process's caches before workers fork
    if not used:
        raise InvalidValueError("calibrate: no point of the file can be predicted, nothing to fit")
    names = fitted_engines(used) if engines else ()
    if names:  # the base's other engines keep their costs, held fixed
        used = [point for point in used if point.engine in names or point.engine in start]
        own = ENGINE_FIXED + tuple(knob for knob in ENGINE_BOUNDS if knob not in ENGINE_FIXED and knob in free)
        free = tuple(knob for knob in free if knob not in own) + tuple(
            f"{knob}@{engine}" for engine in names for knob in own)
        held = tuple(entry for entry in base.engine_costs if entry[0] not in names)
        base = base.with_(engine_costs=tuple((engine, *start.get(engine, (base.fixed_time_s, base.fixed_time_per_layer_s,
                                                                           1e-3, base.compute_efficiency)))
                                             for engine in names) + held)
    free = acting_knobs(used, base, free, executor)
    if not free:
        return FitResult(_finished(base, name), len(used), _rms(used, base, executor), ())
    bounds = [ENGINE_BOUNDS[knob.split("@")[0]] if "@" in knob else KNOBS[knob] for knob in free]
    lows = [lo / sc for lo, _, sc in bounds]
    highs = [hi / sc for _, hi, sc in bounds]
    x0 = [_start(base, knob) / sc for knob, (_, _, sc) in zip(free, bounds)]
    x0 = [min(max(value, lo), hi) for value, lo, hi in zip(x0, lows, highs)]
    x0 = [min(max(value, lo + 1e-3 * (hi - lo)), hi - 1e-3 * (hi - lo)) for value, lo, hi in zip(x0, lows, highs)]
    sparsity = _sparsity(used, free) if names else None
    res = least_squares(lambda scaled: _residuals(used, base, free, scaled, executor), x0, bounds=(lows, highs), jac_sparsity=sparsity,
                        method="trf", diff_step=1e-4, xtol=1e-10, ftol=1e-10, gtol=1e-10, max_nfev=400)
    profile = _finished(_unseen_as_mean(profile_at(base, free, [float(value) for value in res.x]), free), name)
    return FitResult(profile, len(used), _rms(used, profile, executor), free)


def _unseen_as_mean(profile: Profile, free) -> Profile:
    """An engine's knob the fit could not move (no point of the engine sees it: `acting_knobs`) set to the
    fitted engines' mean of it, the typical engine's, rather than left at where the fit started; a knob
    no engine could move keeps its value."""
    entries = {entry[0]: list(entry[1:]) for entry in profile.engine_costs}
    # not the base's held engines
    fitting = [engine for engine in entries if any(key.endswith(f"@{engine}") for key in free)]
    for index, knob in enumerate(ENGINE_KNOBS):
        seen = [engine for engine in fitting if f"{knob}@{engine}" in free]
        if seen and len(seen) < len(fitting):
            mean = sum(entries[engine][index] for engine in seen) / len(seen)
            for engine in fitting:
                if engine not in seen:
                    entries[engine][index] = mean
    return profile.with_(engine_costs=tuple((engine, *values) for engine, values in entries.items())) if entries \
        else profile


def _start(base: Profile, knob: str) -> float:
    """Where a knob's fit starts: the base's value (an engine's: its entry in the base's engine_costs),
    or START's for a neutral knob whose neutral value is a flat spot."""
    if "@" in knob:
        knob_name, name = knob.split("@")
        return dict(zip(ENGINE_KNOBS, next(entry[1:] for entry in base.engine_costs if entry[0] == name)))[knob_name]
    neutral = Profile("neutral")
    return START[knob] if knob in START and getattr(base, knob) == getattr(neutral, knob) else getattr(base, knob)


def _finished(profile: Profile, name: str) -> Profile:
    """The fitted profile named `name`; with engine costs, its shared fixed times and MFU are the engines'
    mean (what a profile asked for no engine, and an engine it was not fitted to, uses)."""
    if profile.engine_costs:
        mean = profile.for_engine("generic")
        profile = profile.with_(**{knob: getattr(mean, knob) for knob in ENGINE_KNOBS})
    return profile.with_(name=name)


def _sparsity(points, free):
    """Which residual (point) each knob can move: a shared knob every point, an engine's its own."""
    import numpy as np

    out = np.ones((len(points), len(free)), dtype=int)
    for column, knob in enumerate(free):
        if "@" in knob:
            engine = knob.split("@")[1]
            out[:, column] = [point.engine == engine for point in points]
    return out


def _rms(points, profile: Profile, executor=None) -> float:
    residuals = _residuals(points, profile, (), [], executor)
    return math.sqrt(sum(residual * residual for residual in residuals) / len(points))


def acting_knobs(points, base: Profile, free, executor=None) -> tuple[str, ...]:
    """The knobs of `free` that change some point's prediction (FP8's factor needs an FP8 row, the
    weight-only factor an INT4/INT8 row): a knob no point sees keeps `base`'s value, unfitted."""
    bounds = {knob: ENGINE_BOUNDS[knob.split("@")[0]] if "@" in knob else KNOBS[knob] for knob in free}
    middle = [0.5 * (bounds[knob][0] + bounds[knob][1]) / bounds[knob][2] for knob in free]  # every free knob acting
    ref = _residuals(points, base, free, middle, executor)
    acting = []
    for index, knob in enumerate(free):
        if "@" in knob and knob.split("@")[0] in ENGINE_FIXED:  # an engine's fixed times: acting by construction
            acting.append(knob)
            continue
        low, high, scale = bounds[knob]
        probe = list(middle)
        probe[index] = (low + 0.25 * (high - low)) / scale
        if any(abs(before - after) > 1e-12
               for before, after in zip(ref, _residuals(points, base, free, probe, executor))):
            acting.append(knob)
    return tuple(acting)


CV_GROUPS = {"source": lambda point: point.source, "gpu": lambda point: point.gpu_name}


def cv_groups(points, by: str = "source") -> list[str]:
    """The distinct groups of `points` a cross-validation by `by` (source or gpu) holds out in turn, in
    first-seen order; fewer than two: no cross-validation is possible."""
    group = CV_GROUPS[check_choice("by", by, tuple(CV_GROUPS))]
    return list(dict.fromkeys(group(point) for point in points))


def cross_validate(points, base: Profile, free=DEFAULT_FREE, *, by: str = "source",
                   engines: bool = False, executor=None, on_fold=None) -> list[Prediction]:
    """Each group's points predicted by a profile fitted to the other groups (k-fold by `by`: source,
    or gpu: leave one GPU out, what a user with a new GPU should expect).

    A file with one group has no held-out fold: its points are predicted by the fit to all.
    `on_fold(done, folds)`, if given, is called after each fold (a progress display).
    """
    group = CV_GROUPS[check_choice("by", by, tuple(CV_GROUPS))]
    groups = cv_groups(points, by)
    if len(groups) < 2:
        prof = fit_profile(points, base, free, engines=engines, executor=executor).profile
        return predictions(points, prof, executor)
    out: dict[str, Prediction] = {}
    for fold, held_out in enumerate(groups):
        train = [point for point in points if group(point) != held_out]
        prof = fit_profile(train, base, free, engines=engines, executor=executor).profile
        held = [point for point in points if group(point) == held_out]
        for point, pred in zip(held, predictions(held, prof, executor)):
            out[point.id] = pred
        if on_fold is not None:
            on_fold(fold + 1, len(groups))
    return [out[point.id] for point in points]
