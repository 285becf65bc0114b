"""How close any profile of the `measured` form could come on train.csv if it knew each engine.

Issue 13 asks for 6% median APE and 10% MAPE on a held-out set from other sources and engines. This
script fits, in sample (the most favourable case: the very rows it is scored on), the six shared
knobs of `measured` plus a fixed time per pass and per layer for each engine of `train.csv` (its
`engine` column's first word: TensorRT-LLM, gpt-fast, lmdeploy, vLLM, HF), i.e. an oracle that knows
every engine's overhead, which no held-out prediction can know. If even that misses the target, the
target needs more than overheads: engine-specific kernel efficiencies, which the issue rules out.

    .venv/bin/python analysis/calibration_bound.py        # ~10 s

Printed on 2026-12-01: median 6.8%, MAPE 11.6% (16 knobs, 88 rows, in sample), against 10.3% / 16.0%
for `measured` in sample and 14.8% / 23.2% cross-validated by source. The same on 2026-12-02 (9 s of CPU),
started from today's `measured` less its own engine costs and first-token overhead (with them the
per-engine knobs here change nothing and the fit wandered for minutes).
"""

from __future__ import annotations

import csv
import dataclasses
import math
import statistics
from pathlib import Path

from scipy.optimize import least_squares

from llm_cost.calibrate import predict, read_points
from llm_cost.calibrate.fit import KNOBS
from llm_cost.specs.profiles import PRESETS

TRAIN = Path(__file__).resolve().parents[1] / "tests" / "data" / "measured" / "train.csv"
SHARED = ("bw_efficiency", "compute_efficiency", "weight_only_bw_factor", "fp8_compute_factor",
          "small_gemm_factor", "gemm_half_rows")
PER_ENGINE = ("fixed_time_s", "fixed_time_per_layer_s")


def main() -> None:
    engine = {r["id"]: r["engine"].split(" ")[0] for r in csv.DictReader(TRAIN.open())}
    points = [dataclasses.replace(p, source=engine[p.id]) for p in read_points(TRAIN)]
    engines = sorted({p.source for p in points})
    names = list(SHARED) + [k for _ in engines for k in PER_ENGINE]
    # the engines' own costs are what this fits: none to start, and no first-token overhead (the 2023
    # engines of train.csv have none: measured's 77.7 ms is the served engines' mean)
    base = PRESETS["measured"].with_(engine_costs=(), ttft_overhead_s=0.0)

    def profiles(x):
        knobs = {k: v * KNOBS[k][2] for k, v in zip(SHARED, x)}
        out = {}
        for j, e in enumerate(engines):
            own = {k: x[len(SHARED) + 2 * j + m] * KNOBS[k][2] for m, k in enumerate(PER_ENGINE)}
            out[e] = base.with_(**knobs, **own)
        return out

    def residuals(x):
        by_engine = profiles(x)
        return [math.log(predict(p, by_engine[p.source]).predicted / p.value) for p in points]

    x0 = [getattr(base, k) / KNOBS[k][2] for k in names]
    bounds = ([KNOBS[k][0] / KNOBS[k][2] for k in names], [KNOBS[k][1] / KNOBS[k][2] for k in names])
    fit = least_squares(residuals, x0, bounds=bounds, diff_step=1e-4, max_nfev=300)
    by_engine = profiles(fit.x)
    apes = [abs(predict(p, by_engine[p.source]).predicted / p.value - 1) for p in points]
    print(f"in sample, {len(names)} knobs (per-engine fixed times), {len(points)} rows:\n"  # two lines: 80 columns
          f"  median APE {statistics.median(apes):.3f}, MAPE {statistics.mean(apes):.3f} (target 0.060 / 0.100)")
    for e in engines:
        p = by_engine[e]
        print(f"  {e:14s} fixed {p.fixed_time_s * 1e3:6.3f} ms per pass, {p.fixed_time_per_layer_s * 1e6:6.1f} us per layer")


if __name__ == "__main__":
    main()
