"""Optional columns of a points file that say how the benchmark ran (README "Calibration"):

| column | meaning | default when absent or empty |
|---|---|---|
| `isl_range_ratio`, `osl_range_ratio` | each request's length uniform on [ratio x L, L] (InferenceX's and vLLM's random dataset: `RANDOM_RANGE_RATIO`) | 1: every request at L |
| `num_prompts` | requests the measured run sends (a closed loop starts empty and drains: its TTFT carries the start-up queueing) | 10 x concurrency, steady window |
| `warmup_prompts` | requests sent before the measured run, not measured | 0 |
| `spec_method` | speculative decoding: none, eagle, eagle3, mtp, ngram, draft | none |
| `spec_gamma` | draft tokens per round | needed with a method |
| `spec_accept_len` | mean accepted length per round (tokens per target pass), in [1, gamma + 1] | needed with a method |

A malformed value is refused in one line naming the row and the column.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

COLUMNS = ("isl_range_ratio", "osl_range_ratio", "num_prompts", "warmup_prompts", "spec_method", "spec_gamma",
           "spec_accept_len")
SPEC_METHODS = ("none", "eagle", "eagle3", "mtp", "ngram", "draft")
# A draft step's cost over the target's (`c`, Leviathan's) by method: an n-gram lookup costs nothing; EAGLE
# heads and MTP modules are one decoder layer on the target's features (EAGLE, arXiv 2401.15077 §3), about
# 1/L of a pass of tens of layers plus the LM head; a separate draft model: the request command's default.
SPEC_COST = {"ngram": 0.0, "eagle": 0.05, "eagle3": 0.05, "mtp": 0.05, "draft": 0.1}


@dataclass(frozen=True)
class BenchConditions:
    """How a point's benchmark drew and sent its requests (module doc); the defaults are a fixed-length
    benchmark without speculation."""

    isl_range_ratio: float = 1.0
    osl_range_ratio: float = 1.0
    num_prompts: int = 0  # 0: not stated (the steady window of CLOSED_LOOP_ROUNDS rounds)
    warmup_prompts: int = 0
    spec_method: str = "none"
    spec_gamma: int = 0
    spec_accept_len: float = 0.0

    @property
    def speculative(self) -> bool:
        return self.spec_method != "none"

    @property
    def spec_alpha(self) -> float:
        """The per-position acceptance alpha whose expected tokens a round at `spec_gamma` is
        `spec_accept_len` (`speculative.tau.alpha_from_tau`: E(alpha, gamma) = tau); 0 without speculation.
        The one solve both a static row (`prediction`) and a served one (`under_load`) use."""
        if not self.speculative:
            return 0.0
        from llm_cost.speculative.tau import alpha_from_tau

        return float(alpha_from_tau(self.spec_accept_len, self.spec_gamma))

    @property
    def spec_cost(self) -> float:
        """A draft step's cost over a target step (`SPEC_COST` of `spec_method`); 0 without speculation."""
        return SPEC_COST.get(self.spec_method, 0.0)

    @property
    def ranged(self) -> bool:
        """Lengths drawn from a range rather than fixed."""
        return self.isl_range_ratio != 1.0 or self.osl_range_ratio != 1.0


def _ratio(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or not 0 < value <= 1:
        raise ValueError(f"must be a ratio in (0, 1], got {text!r}")
    return value


def _count(text: str) -> int:
    value = float(text)
    if not math.isfinite(value) or value != int(value) or value < 0:
        raise ValueError(f"must be a whole number >= 0, got {text!r}")
    return int(value)


def bench_conditions(row: dict, where: str) -> BenchConditions:
    """The row's `BenchConditions`; `where` ('FILE row N') prefixes a refusal.

    Raises
    ------
    ValueError
        `where, column C: what is wrong` (the caller turns it into its PointsError).
    """
    values: dict = {}
    parsers = {"isl_range_ratio": _ratio, "osl_range_ratio": _ratio, "num_prompts": _count,
               "warmup_prompts": _count, "spec_gamma": _count, "spec_accept_len": float,
               "spec_method": lambda cell: cell.strip().lower()}
    for column in COLUMNS:
        text = (row.get(column) or "").strip()
        if not text:
            continue
        try:
            values[column] = parsers[column](text)
        except ValueError as err:
            raise ValueError(f"{where}, column {column}: {err}") from None
    method = values.get("spec_method", "none")
    if method not in SPEC_METHODS:
        raise ValueError(f"{where}, column spec_method: must be one of {', '.join(SPEC_METHODS)}, got {method!r}")
    if method != "none":
        gamma, accepted = values.get("spec_gamma", 0), values.get("spec_accept_len")
        if gamma < 1:
            raise ValueError(f"{where}, column spec_gamma: a speculative row needs gamma >= 1, got {gamma}")
        if accepted is None or not math.isfinite(accepted) or not 1 <= accepted <= gamma + 1:
            raise ValueError(f"{where}, column spec_accept_len: must be in [1, gamma + 1 = {gamma + 1}], "
                             f"got {row.get('spec_accept_len')!r}")
    elif "spec_gamma" in values or "spec_accept_len" in values:
        if values.get("spec_gamma", 0) or values.get("spec_accept_len"):
            raise ValueError(f"{where}, column spec_method: spec_gamma and spec_accept_len need a method")
    return BenchConditions(**values)


def drawn_lengths(length: int, ratio: float, count: int, seed: int) -> list[int]:
    """`count` lengths uniform on the integers [floor(ratio x L), L] (vLLM's random dataset,
    `np.random.randint(int(L * r), L + 1)`), from a seeded generator; L itself when ratio is 1.

    >>> drawn_lengths(1024, 1.0, 3, 0)
    [1024, 1024, 1024]
    >>> all(819 <= n <= 1024 for n in drawn_lengths(1024, 0.8, 100, 0))
    True
    """
    if ratio >= 1.0 or length <= 1:
        return [length] * count
    import random

    low = max(int(length * ratio), 1)
    rng = random.Random(seed)
    return [rng.randint(low, length) for _ in range(count)]
