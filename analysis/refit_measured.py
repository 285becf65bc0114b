"""Refit the shipped `measured` profile on both training files, with each engine's fixed costs, and
measure its error in sample, cross-validated by source and leaving one GPU out.

    .venv/bin/python analysis/refit_measured.py [--quick] [--out FILE.json]   # long: see README "Calibration"

The same fit as `llm-cost calibrate tests/data/measured/train.csv tests/data/measured/train_inferencex.csv
-o measured.json --base lecture --engines`, then each cross-validation fold refitted from the full fit's
knobs (a warm start: the folds converge in a few iterations; the served closed loops are scheduled once
for the whole run and re-timed per profile). Prints the knobs as a `Profile(...)` to paste into
`specs/profiles.py` and the summaries by metric, by source and by GPU, in sample also per file, after
the shipped `measured`'s on the same rows.
`--quick`: the fit only. `--out FILE.json`: the fitted profile written there as soon as it is fitted.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from llm_cost.calibrate.fit import cross_validate, fit_profile
from llm_cost.calibrate.metrics import summaries, summarize
from llm_cost.calibrate.points import read_points
from llm_cost.calibrate.prediction import predict
from llm_cost.calibrate.profile_file import write_profile
from llm_cost.commands.calibrate import read_all
from llm_cost.specs.profiles import PRESETS

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "measured"
FILES = (DATA / "train.csv", DATA / "train_inferencex.csv")


def _print(title: str, predictions) -> None:
    s = summarize(title, predictions)
    print(f"{title}: n {s.n} covered {s.covered} median {s.median_ape:.4f} MAPE {s.mape:.4f} p90 {s.p90_ape:.4f}")
    for by in ("source", "engine", "gpu", "metric"):
        for g in summaries(predictions, by):
            if g.name != "all":
                print(f"    {by} {g.name}: n {g.n} median {g.median_ape:.4f} MAPE {g.mape:.4f}")
    sys.stdout.flush()


def _per_file(title: str, predictions, files: dict) -> None:
    _print(title, predictions)
    for name, ids in files.items():
        _print(f"{title} {name}", [p for p in predictions if p.point.id in ids])


def main(quick: bool, out: str | None) -> None:
    t0 = time.time()
    points = read_all([str(f) for f in FILES])
    files = {f.name: {p.id for p in read_points(f)} for f in FILES}
    # the shipped profile first: its pass schedules the closed loops, which the fit then re-times
    _per_file("shipped measured", [predict(p, PRESETS["measured"]) for p in points], files)
    print(f"    ({time.time() - t0:.0f} s)")
    fit = fit_profile(points, PRESETS["lecture"], name="measured", engines=True)
    prof = fit.profile
    print(f"fitted in {time.time() - t0:.0f} s: {prof!r}")
    if out:
        write_profile(prof, out, calibration={"recipe": "analysis/refit_measured.py", "fit_seconds_here": round(time.time() - t0)})
    _per_file("in sample", [predict(p, prof) for p in points], files)
    if quick:
        return
    for by in ("source", "gpu"):
        t = time.time()
        _print(f"cross-validated by {by}", cross_validate(points, prof, by=by, engines=True))
        print(f"    ({time.time() - t:.0f} s)")
    print(f"total {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main("--quick" in sys.argv, sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else None)
