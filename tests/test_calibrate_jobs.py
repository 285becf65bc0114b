"""`calibrate --jobs N / --ray` (issue 26.2): the served rows of a fit (concurrency, request rate:
`calibrate.under_load`) predicted through the executor, the same fit bit for bit as in one process."""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path

import pytest

from helpers import rows_of
from llm_cost.calibrate import fit_profile, read_points
from llm_cost.calibrate.fit import predictions
from llm_cost.calibrate.prediction import SERVED_KINDS
from llm_cost.executor import TaskPool
from llm_cost.specs.profiles import PRESETS

KINDS = Path(__file__).resolve().parent / "data" / "calibrate" / "kinds.csv"


def _points():
    """kinds.csv (every batch kind: three request-rate rows and two closed loops among static rows; the
    request rates sending 60 prompts, not 1,000, to keep the fit short), plus a closed loop of 64
    clients past one iteration's budget (a re-timed schedule) and one drawn from a length range (served
    directly), with values the lecture preset misses by 10%."""
    pts = [replace(p, bench=replace(p.bench, num_prompts=60)) if p.batch_kind == "request rate" else p
           for p in read_points(KINDS)]
    m11 = next(p for p in pts if p.id == "m11")
    pts += [replace(m11, id="big", batch=64.0, isl=1024, osl=256),
            replace(m11, id="ranged", bench=replace(m11.bench, isl_range_ratio=0.5, osl_range_ratio=0.5))]
    lec = PRESETS["lecture"]
    return [replace(p, value=1.1 * q.predicted) for p, q in zip(pts, predictions(pts, lec)) if q.covered]


def test_predictions_through_two_processes_are_the_same_bit_for_bit():
    pts = _points()
    assert sum(p.batch_kind in SERVED_KINDS for p in pts) >= 6
    lec = PRESETS["lecture"].with_(bw_efficiency=0.7)
    with TaskPool(2) as pool:
        assert predictions(pts, lec, pool) == predictions(pts, lec)


def test_fit_through_two_processes_is_the_same_fit():
    """The fit's hundreds of evaluations through one pool of two processes: the same profile, error and
    knobs as in this process (exact equality, not a tolerance)."""
    pts = _points()
    serial = fit_profile(pts, PRESETS["lecture"], ["bw_efficiency", "fixed_time_s"])
    with TaskPool(2) as pool:
        assert fit_profile(pts, PRESETS["lecture"], ["bw_efficiency", "fixed_time_s"], executor=pool) == serial
    assert serial.fitted == ("bw_efficiency", "fixed_time_s") and serial.rms_log_error > 0


def test_calibrate_cli_jobs_writes_the_same_profile(tmp_path):
    """`calibrate --jobs 2` prints the same rows and writes the same profile as --jobs 1 (--no-cv: a
    cross-validation is fits of the same kind, through the same pool)."""
    with KINDS.open() as f:
        rows = list(csv.DictReader(f))
    for r in rows:  # the request rates send 60 prompts (as `_points`)
        r["num_prompts"] = "60" if r["batch_kind"] == "request rate" else ""
    path = tmp_path / "points.csv"
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    args = ("calibrate", path, "--free", "bw_efficiency", "--base", "lecture", "--no-cv")
    one = rows_of(*args, "-o", tmp_path / "one.json", "--jobs", "1")
    two = rows_of(*args, "-o", tmp_path / "two.json", "--jobs", "2")
    assert one == two and next(r for r in one if r["knob"] == "bw_efficiency")["fitted"]
    assert (tmp_path / "one.json").read_text() == (tmp_path / "two.json").read_text()


# Run in a fresh interpreter: Ray reads RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER when it is imported (as
# test_plan_verify.test_ray_equals_local_executor_on_loopback; there, why the switch keeps the node on
# loopback rather than the machine's routable address).
RAY_FIT = """
import json, sys
import ray
sys.path.insert(0, sys.argv[1])
from test_calibrate_jobs import _points
from llm_cost.calibrate.fit import predictions
from llm_cost.executor import TaskPool
from llm_cost.specs.profiles import PRESETS

ray.init(address="local", include_dashboard=False, num_cpus=1, log_to_driver=False, logging_level="WARNING")
try:
    pts, lec = _points(), PRESETS["lecture"]
    with TaskPool(ray="local") as pool:
        same = predictions(pts, lec, pool) == predictions(pts, lec)
    print(json.dumps({"nodes": [n["NodeManagerAddress"] for n in ray.nodes()], "same": same}))
finally:
    ray.shutdown()
"""


def test_calibrate_on_ray_equals_one_process():
    """The served rows predicted as Ray tasks on a local node bound to loopback: the same as in one process."""
    pytest.importorskip("ray", reason="the ray extra is not installed: pip install 'llm-cost[ray]'")
    import json
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
           "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", RAY_FIT, str(Path(__file__).parent)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["nodes"] == ["127.0.0.1"] and got["same"] is True


def test_validate_and_calibrate_default_to_all_cores_as_plan_verify_does():
    """Issue 26.2: `--jobs N` (default: all cores) on plan --verify, validate and calibrate alike."""
    import inspect

    from llm_cost.commands.calibrate import calibrate_cmd, validate_cmd

    for command in (validate_cmd, calibrate_cmd):
        assert inspect.signature(command).parameters["jobs"].default is None  # run_tasks: None is all cores
