"""`validate` on several processes sends a served condition's rows to one process (`prediction.served_groups`):
its metrics share one simulation (and a closed loop's schedule), which each process would otherwise run
again. The rows come back in the file's order, the same as in one process."""

from __future__ import annotations

import csv
from pathlib import Path

from llm_cost.calibrate import read_points, validate_points
from llm_cost.calibrate.prediction import SERVED_KINDS, served_groups

TRAIN = Path(__file__).resolve().parent / "data" / "measured" / "train_inferencex.csv"
STATIC = Path(__file__).resolve().parent / "data" / "measured" / "train.csv"


def _points(tmp_path):
    """Two served conditions of train_inferencex.csv (3 metrics each, interleaved) and three static rows."""
    with TRAIN.open(newline="") as f:
        rows = [row for row in csv.DictReader(f)
                if row["id"].startswith(("inferencex-h100-gpt-oss-120b-vllm-fp4-tp8-1k1k-c4-",
                                         "inferencex-h100-gpt-oss-120b-vllm-fp4-tp8-1k1k-c8-"))]
    rows.sort(key=lambda row: row["metric"])  # the two conditions' rows interleave
    path = tmp_path / "served.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return read_points(path) + read_points(STATIC)[:3]


def test_a_conditions_metrics_are_one_group(tmp_path):
    points = _points(tmp_path)
    groups = served_groups(points)
    assert len(groups) == 2 and sorted(len(at) for at in groups) == [3, 3]
    for at in groups:
        assert len({points[index].batch for index in at}) == 1
        assert len({points[index].metric for index in at}) == 3
    assert all(points[index].batch_kind in SERVED_KINDS for at in groups for index in at)
    assert not any(index >= 6 for at in groups for index in at)  # static rows are not grouped


def test_two_processes_give_the_rows_of_one_in_order(tmp_path):
    points = _points(tmp_path)
    ticks = []
    one = validate_points(points, "measured", jobs=1)
    two = validate_points(points, "measured", jobs=2, on_done=lambda done, total: ticks.append((done, total)))
    assert [p.point.id for p in two.predictions] == [p.id for p in points]
    assert two.predictions == one.predictions and not two.interrupted
    assert ticks[-1] == (len(points), len(points)) and all(b == len(points) for _, b in ticks)
    assert [a for a, _ in ticks] == sorted(a for a, _ in ticks)



def test_validate_hands_the_executor_one_task_per_condition(tmp_path, monkeypatch):
    """The tasks `validate_points` gives the executor: a served condition's three rows as one, each static
    row alone (one task per row would simulate a condition once per process that draws a row of it)."""
    import llm_cost.executor as executor

    seen = []
    real = executor.run_tasks
    monkeypatch.setattr(executor, "run_tasks", lambda fn, tasks, **kw: seen.append(list(tasks)) or real(fn, tasks, **kw))
    points = _points(tmp_path)
    validate_points(points, "measured", jobs=1)
    (tasks,) = seen
    assert sorted(len(task) for task in tasks) == [1, 1, 1, 3, 3]
    assert sorted(p.id for task in tasks for p in task) == sorted(p.id for p in points)
