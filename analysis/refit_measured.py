"""Refit the shipped `measured` profile on both training files, with each engine's fixed costs, and
measure its error in sample, cross-validated by source and leaving one GPU out.

    .venv/bin/python analysis/refit_measured.py [--quick] [--out FILE.json] [--start FILE.json]

The same fit as `llm-cost calibrate tests/data/measured/train.csv tests/data/measured/train_inferencex.csv
-o measured.json --base lecture --engines`, then each cross-validation fold refitted from the full fit's
knobs (a warm start: the folds converge in a few iterations; the served closed loops are scheduled once
for the whole run and re-timed per profile). Prints the knobs as a `Profile(...)` to paste into
`specs/profiles.py` and the summaries by metric, by source and by GPU, in sample also per file, after
the shipped `measured`'s on the same rows.
`--quick`: the fit only. `--out FILE.json`: the fitted profile written there as soon as it is fitted.
`--schedules FILE.pkl`: the closed loops' schedules kept in that pickle between runs (read when it exists,
else written after the first pass): a run then skips the 6-minute pass.
`--cv-only PROFILE.json [--cv-by source,gpu] [--rows-out FILE.csv]`: no fit, the cross-validations only,
each fold's fit started from PROFILE's knobs, with the error per file; `--rows-out` writes each point's
held-out prediction and APE to FILE.csv (FILE-source.csv and FILE-gpu.csv for both).
`--cv-only PROFILE.json --cv-gpus h100-sxm,h200 [--rows-out FILE.csv]`: only those GPUs' folds of leave
one GPU out (the served rows' folds: about 15 minutes instead of 37 here).
`--start FILE.json`: the fit starts from that profile's knobs (an earlier run's `--out`) instead of the
lecture's, the same least squares from a nearer start: fewer iterations (the lecture's non-fitted knobs,
embedding a lookup and KV counted, are the file's too).

The shipped `measured` (specs/profiles.py) is, on this machine (2 cores, shared), 2026-12-02:

    PYTHONPATH=$PWD .venv/bin/python analysis/refit_measured.py --start analysis/measured_two_files.json \
        --out analysis/measured_engines.json --quick                      # 30 min here (19 the first pass)
    PYTHONPATH=$PWD .venv/bin/python analysis/refit_measured.py --cv-only analysis/measured_engines.json \
        --cv-by gpu --schedules /tmp/schedules.pkl                          # and --cv-by source

each engine with its own fixed times and MFU (`fit.ENGINE_KNOBS`); the start is the fit of the three
fixed times per engine alone (the same command without --start, before the MFU was an engine's).
Refitted 2026-12-03 when the closed loops gained the clients' round trip (`Workload.client_round_trip`,
issue 23), from the fit before it (505 s here; leaving one GPU out 21 min):

    PYTHONPATH=$PWD .venv/bin/python analysis/refit_measured.py --start analysis/measured_engines.json \
        --out analysis/measured_engines.json --schedules /tmp/rt_schedules.pkl --quick
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from llm_cost.calibrate.fit import CV_GROUPS, KNOBS, cv_groups, fit_profile
from llm_cost.calibrate.metrics import summaries, summarize
from llm_cost.calibrate.points import read_points
from llm_cost.calibrate.prediction import predict
from llm_cost.calibrate.profile_file import read_profile, write_profile
from llm_cost.commands.calibrate import read_all
from llm_cost.specs.profiles import PRESETS

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "measured"
FILES = (DATA / "train.csv", DATA / "train_inferencex.csv")
FREE = tuple(KNOBS)  # every knob, the GEMM half width too (vLLM's rows run at tp 1 to 8: they tell it from the MFU)


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


def _schedules(path: str | None, points, files) -> None:
    """The shipped profile on every point: its pass schedules the closed loops, which the fit then
    re-times. With `path`: the schedules (`under_load._SCHEDULES`, in iteration counts, whatever the
    profile's efficiencies) are read from that pickle when it exists (no pass), else written there after it."""
    import pickle

    from llm_cost.calibrate import under_load

    if path and Path(path).exists():
        under_load._SCHEDULES.update(pickle.loads(Path(path).read_bytes()))
        return
    t0 = time.time()
    _per_file("shipped measured", [predict(p, PRESETS["measured"]) for p in points], files)
    print(f"    ({time.time() - t0:.0f} s)")
    if path:
        Path(path).write_bytes(pickle.dumps(under_load._SCHEDULES))


def write_rows(path: str, predictions, files: dict) -> None:
    """One CSV row per point: its conditions, measured and predicted value and APE (blank when not covered)."""
    import csv

    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["id", "file", "source", "engine", "gpu", "config", "tp", "gpu_count", "batch_kind",
                      "batch", "isl", "osl", "metric", "measured", "predicted", "ape", "reason"])
        for pred in predictions:
            pt = pred.point
            name = next((n for n, ids in files.items() if pt.id in ids), "")
            out.writerow([pt.id, name, pt.source, pt.engine, pt.gpu_name, pt.config, pt.tp, pt.gpu_count,
                          pt.batch_kind, pt.batch, pt.isl, pt.osl, pt.metric, pt.value,
                          "" if pred.predicted is None else pred.predicted,
                          "" if pred.ape is None else pred.ape, pred.reason])


def fold_start(profile, train):
    """A fold's start: `profile` without the engines no point of the fold's training set has. The start
    is the fit to every point, so such an engine's knobs come from the held-out points alone, and
    `fit_profile` keeps a base's engines it has no points for: kept, they would predict their own points
    (on the H200 fold: SGLang's and TensorRT-LLM 1.x's, on no other GPU). Dropped, the held-out rows of
    that engine take the fitted engines' mean, as an engine the profile never saw."""
    seen = {point.engine for point in train}
    return profile.with_(engine_costs=tuple(entry for entry in profile.engine_costs if entry[0] in seen))


def held_out(points, profile, by: str, groups=None) -> list:
    """Each group's points (of `groups`, default all of `by`) predicted by the fit to the others, started
    from `fold_start`: `cross_validate(engines=True)` without its warm start's leak; in `points` order."""
    group = CV_GROUPS[by]
    out = {}
    for name in groups or cv_groups(points, by):
        t = time.time()
        train = [point for point in points if group(point) != name]
        fold = fit_profile(train, fold_start(profile, train), FREE, engines=True).profile
        out.update((point.id, predict(point, fold)) for point in points if group(point) == name)
        print(f"    fold {name}: {time.time() - t:.0f} s")
    return [out[point.id] for point in points if point.id in out]


def cross_validations(profile_path: str, by: tuple[str, ...], schedules: str | None,
                      rows_out: str | None = None) -> None:
    """`--cv-only PROFILE`: no fit, each cross-validation from PROFILE's knobs (a warm start), per file too.
    With `rows_out`: each point's held-out prediction written there (`-BY` before the suffix when
    several groupings are run)."""
    points = read_all([str(f) for f in FILES])
    files = {f.name: {p.id for p in read_points(f)} for f in FILES}
    _schedules(schedules, points, files)
    prof = read_profile(profile_path)
    for b in by:
        t = time.time()
        held = held_out(points, prof, b)
        _per_file(f"cross-validated by {b}", held, files)
        if rows_out:
            target = Path(rows_out)
            write_rows(str(target.with_stem(f"{target.stem}-{b}")) if len(by) > 1 else rows_out, held, files)
        print(f"    ({time.time() - t:.0f} s)")


def held_out_gpus(profile_path: str, gpus: tuple[str, ...], schedules: str | None, rows_out: str | None) -> None:
    """`--cv-only PROFILE --cv-gpus A,B`: leave one GPU out for those GPUs' folds alone (the served rows
    of train_inferencex.csv are all on H100 and H200: the other folds do not move them), each fold's fit
    started from PROFILE's knobs (`held_out`); the held-out rows' error and `rows_out`."""
    points = read_all([str(f) for f in FILES])
    files = {f.name: {p.id for p in read_points(f)} for f in FILES}
    _schedules(schedules, points, files)
    held = held_out(points, read_profile(profile_path), "gpu", gpus)
    _per_file(f"held out: {', '.join(gpus)}", held, files)
    if rows_out:
        write_rows(rows_out, held, files)


def main(quick: bool, out: str | None, start: str | None = None, schedules: str | None = None) -> None:
    t0 = time.time()
    points = read_all([str(f) for f in FILES])
    files = {f.name: {p.id for p in read_points(f)} for f in FILES}
    _schedules(schedules, points, files)
    base = read_profile(start) if start else PRESETS["lecture"]
    fit = fit_profile(points, base, FREE, name="measured", engines=True)
    prof = fit.profile
    print(f"fitted in {time.time() - t0:.0f} s: {prof!r}")
    if out:
        write_profile(prof, out, calibration={"recipe": "analysis/refit_measured.py" + (f" --start {start}" if start else ""),
                                              "fit_seconds_here": round(time.time() - t0)})
    _per_file("in sample", [predict(p, prof) for p in points], files)
    if quick:
        return
    for by in ("source", "gpu"):
        t = time.time()
        _per_file(f"cross-validated by {by}", held_out(points, prof, by), files)
        print(f"    ({time.time() - t:.0f} s)")
    print(f"total {time.time() - t0:.0f} s")


if __name__ == "__main__":
    arg = lambda flag: sys.argv[sys.argv.index(flag) + 1] if flag in sys.argv else None  # noqa: E731
    if arg("--cv-only") and arg("--cv-gpus"):
        held_out_gpus(arg("--cv-only"), tuple(arg("--cv-gpus").split(",")), arg("--schedules"), arg("--rows-out"))
    elif arg("--cv-only"):
        cross_validations(arg("--cv-only"), tuple((arg("--cv-by") or "source,gpu").split(",")), arg("--schedules"),
                          arg("--rows-out"))
    else:
        main("--quick" in sys.argv, arg("--out"), arg("--start"), arg("--schedules"))
