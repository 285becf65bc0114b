"""Fit a profile's knobs to measured points: least squares of log(predicted / measured), bounded.

    minimise  sum_i log(predicted_i(knobs) / value_i)^2   over the free knobs, each in its bounds

(`scipy.optimize.least_squares`, trust-region reflective). The cross-validated error is k-fold by
source: each source's points are predicted by a profile fitted to the other sources' only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from llm_cost.calibrate.prediction import Prediction, predict
from llm_cost.errors import InvalidValueError, check_choice
from llm_cost.specs.profiles import Profile

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
}
DEFAULT_FREE = tuple(KNOBS)
# Where a knob's fit starts when its base value is neutral and the neutral value is a flat spot
# (the GEMM ramp does nothing while either of its two knobs is neutral).
START = {"small_gemm_factor": 0.5, "gemm_half_rows": 128.0}


@dataclass(frozen=True)
class FitResult:
    """The fitted profile, the points it was fitted to, and the root mean square of log error."""

    profile: Profile
    points: int
    rms_log_error: float


def check_free(free) -> tuple[str, ...]:
    """The free knobs' names, each one of KNOBS; at least one."""
    names = tuple(check_choice("free", k.strip(), tuple(KNOBS)) for k in free if k.strip())
    if not names:
        raise InvalidValueError(f"free must name at least one knob of {', '.join(KNOBS)}", params=("free",))
    return names


def _residuals(points, base: Profile, free, x):
    prof = base.with_(**{k: min(max(v * KNOBS[k][2], KNOBS[k][0]), KNOBS[k][1]) for k, v in zip(free, x)})
    out = []
    for p in points:
        q = predict(p, prof)
        out.append(math.log(q.predicted / p.value) if q.covered else 0.0)
    return out


def fit_profile(points, base: Profile, free=DEFAULT_FREE, *, name: str = "calibrated") -> FitResult:
    """Fit the `free` knobs of `base` to `points` (those `base` covers); the rest stay `base`'s."""
    from scipy.optimize import least_squares

    free = check_free(free)
    base = base.with_(memory_basis="usable")  # a calibrated profile counts what the driver reports
    used = [p for p in points if predict(p, base).covered]
    if not used:
        raise InvalidValueError("calibrate: no point of the file can be predicted, nothing to fit")
    free = acting_knobs(used, base, free)
    if not free:
        return FitResult(base.with_(name=name), len(used), _rms(used, base))
    lows = [KNOBS[k][0] / KNOBS[k][2] for k in free]
    highs = [KNOBS[k][1] / KNOBS[k][2] for k in free]
    neutral = Profile("neutral")
    x0 = [(START[k] if k in START and getattr(base, k) == getattr(neutral, k) else getattr(base, k)) / KNOBS[k][2]
          for k in free]
    x0 = [min(max(v, lo), hi) for v, lo, hi in zip(x0, lows, highs)]
    x0 = [min(max(v, lo + 1e-3 * (hi - lo)), hi - 1e-3 * (hi - lo)) for v, lo, hi in zip(x0, lows, highs)]
    res = least_squares(lambda x: _residuals(used, base, free, x), x0, bounds=(lows, highs),
                        method="trf", diff_step=1e-4, xtol=1e-10, ftol=1e-10, gtol=1e-10, max_nfev=400)
    knobs = {k: float(min(max(v * KNOBS[k][2], KNOBS[k][0]), KNOBS[k][1])) for k, v in zip(free, res.x)}
    profile = base.with_(name=name, **knobs)
    return FitResult(profile, len(used), _rms(used, profile))


def _rms(points, profile: Profile) -> float:
    return math.sqrt(sum(r * r for r in _residuals(points, profile, (), [])) / len(points))


def acting_knobs(points, base: Profile, free) -> tuple[str, ...]:
    """The knobs of `free` that change some point's prediction (FP8's factor needs an FP8 row, the
    weight-only factor an INT4/INT8 row): a knob no point sees keeps `base`'s value, unfitted."""
    mid = base.with_(**{k: 0.5 * (KNOBS[k][0] + KNOBS[k][1]) for k in free})  # every free knob acting
    ref = _residuals(points, mid, (), [])
    acting = []
    for k in free:
        low, high, _ = KNOBS[k]
        probe = mid.with_(**{k: low + 0.25 * (high - low)})
        if any(abs(a - b) > 1e-12 for a, b in zip(ref, _residuals(points, probe, (), []))):
            acting.append(k)
    return tuple(acting)


def cross_validate(points, base: Profile, free=DEFAULT_FREE) -> list[Prediction]:
    """Each source's points predicted by a profile fitted to the other sources (k-fold by source).

    A file with one source has no held-out fold: its points are predicted by the fit to all.
    """
    sources = list(dict.fromkeys(p.source for p in points))
    if len(sources) < 2:
        prof = fit_profile(points, base, free).profile
        return [predict(p, prof) for p in points]
    out: dict[str, Prediction] = {}
    for s in sources:
        train = [p for p in points if p.source != s]
        prof = fit_profile(train, base, free).profile
        for p in points:
            if p.source == s:
                out[p.id] = predict(p, prof)
    return [out[p.id] for p in points]
