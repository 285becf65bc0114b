"""Break a `refit_measured.py --rows-out` file down: held-out APE by GPU, engine, metric and concurrency.

    .venv/bin/python analysis/cv_breakdown.py ROWS.csv [--file train_inferencex.csv]

Prints, per group, the rows, median APE, MAPE and the median signed error (predicted / measured - 1:
negative is too fast a prediction for a time, too slow for a throughput), as Markdown tables.
"""

from __future__ import annotations

import csv
import statistics
import sys

GROUPS = (("gpu",), ("engine",), ("metric",), ("batch",), ("gpu", "engine"), ("engine", "metric"),
          ("gpu", "engine", "metric"), ("engine", "metric", "batch"))


def _table(rows: list[dict], keys: tuple[str, ...]) -> list[str]:
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault(tuple(row[key] for key in keys), []).append(row)
    lines = [f"| {' / '.join(keys)} | n | median APE | MAPE | median signed |", "|---|---|---|---|---|"]
    for name, members in sorted(groups.items(), key=lambda item: tuple(_sort_key(v) for v in item[0])):
        apes = [float(r["ape"]) for r in members]
        signed = [float(r["predicted"]) / float(r["measured"]) - 1.0 for r in members]
        lines.append(f"| {' / '.join(name)} | {len(members)} | {100 * statistics.median(apes):.1f}% | "
                     f"{100 * statistics.fmean(apes):.1f}% | {100 * statistics.median(signed):+.1f}% |")
    return lines


def _sort_key(value: str):
    try:
        return (0, float(value), "")
    except ValueError:
        return (1, 0.0, value)


def main(path: str, file_name: str | None) -> None:
    with open(path, newline="") as f:
        rows = [row for row in csv.DictReader(f) if row["ape"] and (not file_name or row["file"] == file_name)]
    print(f"{path}: {len(rows)} covered rows" + (f" of {file_name}" if file_name else ""))
    for keys in GROUPS:
        print()
        print("\n".join(_table(rows, keys)))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[sys.argv.index("--file") + 1] if "--file" in sys.argv else None)
