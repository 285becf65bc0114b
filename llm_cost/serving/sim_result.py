"""The step-level simulator's running sums (`SimStats`, iteration by iteration inside `simulator`).

`simulate` returns the engine's `ServeResult` (one result type for every run, TTFT / TPOT / tails
included); `SimResult` is that type under the name scripts knew it by. Times in seconds, KV in
tokens; means are weighted by the time the engine was busy.
"""

from __future__ import annotations

from llm_cost.serving.serve_result import ServeResult


SimResult = ServeResult  # the name scripts used for `simulate`'s result: the one result type now


class SimStats:
    """Time-weighted sums over iterations."""

    __slots__ = ("busy", "area_n", "area_r", "area_w", "peak_r", "peak_w", "iterations", "rows", "comm", "first")

    def __init__(self) -> None:
        """All sums and peaks at zero."""
        self.busy = self.area_n = self.area_r = self.area_w = self.comm = 0.0
        self.peak_r = self.peak_w = self.iterations = self.rows = 0
