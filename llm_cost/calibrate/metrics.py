"""Error of predictions against measurements: APE = |predicted / value - 1|, and its summaries."""

from __future__ import annotations

import math
from dataclasses import dataclass


def ape(predicted: float, value: float) -> float:
    """Absolute percentage error as a fraction: |predicted / value - 1|."""
    return abs(predicted / value - 1.0)


def quantile(values, q: float) -> float:
    """The `q`-quantile (0..1) of `values`, linear between order statistics (numpy's default); nan if empty."""
    xs = sorted(values)
    if not xs:
        return math.nan
    pos = q * (len(xs) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


@dataclass(frozen=True)
class Summary:
    """Points (`n`), covered points, and the mean, median and 90th percentile of their APE."""

    name: str
    n: int
    covered: int
    mape: float
    median_ape: float
    p90_ape: float

    def row(self, key: str = "metric") -> dict:
        """The summary as a report row, its name under `key` (the grouping: metric, source, ...)."""
        return {key: self.name, "n": self.n, "covered": self.covered, "mape": self.mape,
                "median_ape": self.median_ape, "p90_ape": self.p90_ape}


def summarize(name: str, predictions) -> Summary:
    """`Summary` of `predictions` (objects with `.covered` and `.ape`)."""
    predictions = list(predictions)
    apes = [pred.ape for pred in predictions if pred.covered]
    mean = sum(apes) / len(apes) if apes else math.nan
    return Summary(name, len(predictions), len(apes), mean, quantile(apes, 0.5), quantile(apes, 0.9))


CLEAN_QUALITIES = ("A", "B")  # fixed conditions (A) or one default or inferred condition (B); C: batch unknown


def _model_label(config: str) -> str:
    """A catalog name as it is; a config file by its name without .json, or its folder's name when
    the file is a `<model>/config.json`."""
    parts = config.replace("\\", "/").rsplit("/", 2)
    stem = parts[-1].removesuffix(".json")
    return parts[-2] if stem == "config" and len(parts) > 1 else stem


# How `summaries` can group the points: the row's metric (default), source, GPU, model, batch kind, quality,
# serving engine
GROUPS = {
    "metric": lambda point: point.metric,
    "source": lambda point: point.source,
    "gpu": lambda point: point.gpu_name,
    "model": lambda point: _model_label(point.config),
    "batch-kind": lambda point: point.batch_kind,
    "quality": lambda point: point.quality,
    "engine": lambda point: point.engine,
}


def summaries(predictions, by: str = "metric") -> list[Summary]:
    """One `Summary` per group of `by` (one of GROUPS; in order of first appearance), one for the
    quality A and B rows ("quality A/B", when the file also has rows of another quality: coverage is
    judged on those; not when grouping by quality), and one for all ("all")."""
    from llm_cost.errors import check_choice

    key = GROUPS[check_choice("by", by, tuple(GROUPS))]
    predictions = list(predictions)
    groups = list(dict.fromkeys(key(pred.point) for pred in predictions))
    out = [summarize(group, [pred for pred in predictions if key(pred.point) == group]) for group in groups]
    clean = [pred for pred in predictions if pred.point.quality in CLEAN_QUALITIES]
    if by != "quality" and clean and len(clean) < len(predictions):
        out.append(summarize("quality A/B", clean))
    return out + [summarize("all", predictions)]
