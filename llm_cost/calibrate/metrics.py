"""Error of predictions against measurements: APE = |predicted / value - 1|, and its summaries."""

from __future__ import annotations

import math
from dataclasses import dataclass


def ape(predicted: float, value: float) -> float:
    """Absolute percentage error as a fraction: |predicted / value - 1|."""
    return abs(predicted / value - 1.0)


def quantile(values, q: float) -> float:
    """The q-quantile (0..1) of `values`, linear between order statistics (numpy's default); nan if empty."""
    xs = sorted(values)
    if not xs:
        return math.nan
    pos = q * (len(xs) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


@dataclass(frozen=True)
class Summary:
    """Points, covered points, and the mean, median and 90th percentile of their APE."""

    name: str
    n: int
    covered: int
    mape: float
    median_ape: float
    p90_ape: float

    def row(self) -> dict:
        return {"metric": self.name, "n": self.n, "covered": self.covered, "mape": self.mape,
                "median_ape": self.median_ape, "p90_ape": self.p90_ape}


def summarize(name: str, predictions) -> Summary:
    """`Summary` of `predictions` (objects with `.covered` and `.ape`)."""
    predictions = list(predictions)
    apes = [p.ape for p in predictions if p.covered]
    mean = sum(apes) / len(apes) if apes else math.nan
    return Summary(name, len(predictions), len(apes), mean, quantile(apes, 0.5), quantile(apes, 0.9))


CLEAN_QUALITIES = ("A", "B")  # fixed conditions (A) or one default or inferred condition (B); C: batch unknown


def summaries(predictions) -> list[Summary]:
    """One `Summary` per metric (in order of first appearance), one for the quality A and B rows
    ("quality A/B", when the file also has rows of another quality: coverage is judged on those),
    and one for all ("all")."""
    predictions = list(predictions)
    metrics = list(dict.fromkeys(p.point.metric for p in predictions))
    out = [summarize(m, [p for p in predictions if p.point.metric == m]) for m in metrics]
    clean = [p for p in predictions if p.point.quality in CLEAN_QUALITIES]
    if clean and len(clean) < len(predictions):
        out.append(summarize("quality A/B", clean))
    return out + [summarize("all", predictions)]
