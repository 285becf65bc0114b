"""What a batching simulation measured: throughput, per-token latency, KV use, a deadlock if any.

Times in seconds, KV in tokens; means are weighted by the time the engine was busy
(`SimStats` accumulates them iteration by iteration inside `simulator`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from llm_cost.serving.reservations import Deadlock


@dataclass(frozen=True)
class SimResult:
    r"""What a simulation measured. Times in seconds, KV in tokens; means weighted by time busy.

    .. math:: \mathit{latency\ per\ token}_i = (t^{finish}_i - t^{arrival}_i) / O_i

    Attributes
    ----------
    scheduler, reservation, max_batch
        The scheduler ("request", "iteration", "none"), the reservation and the batch limit.
    rate_req_per_s, requests, kv_capacity_tokens
        The workload's rate (req/s), its size and the replica's KV capacity (tokens).
    finish_s
        Finish time of each request (nan for one that never finished).
    latency_per_token_s
        Per-token latency of the finished requests, in arrival order (seconds).
    throughput_req_per_s
        Finished requests / (last finish - first arrival).
    iterations, busy_s
        Iterations run and seconds busy.
    mean_batch
        Requests in the running batch (request-level: padded rows included).
    kv_reserved_mean_tokens, kv_written_mean_tokens, kv_reserved_peak_tokens, kv_written_peak_tokens
        KV reserved and written: time-weighted means and peaks (tokens).
    positions_computed
        Token rows run through the model (padding included).
    positions_needed
        sum of prompt + output - 1 over the requests that ran.
    deadlock
        The deadlock that stopped a `none` run, or None.
    output_tokens
        Tokens the finished requests generated (sum of their outputs).
    ttft_s
        Time to first token of the finished requests, in arrival order (seconds).
    comm_s
        Seconds of collectives over the run (0 on one GPU; counted also where `overlap_comm`
        hides them behind compute).

    Examples
    --------
    See `simulate`.
    """

    scheduler: str
    reservation: str
    max_batch: int
    rate_req_per_s: float
    requests: int
    kv_capacity_tokens: int
    finish_s: tuple[float, ...] = field(repr=False)  # nan for a request that never finished
    latency_per_token_s: tuple[float, ...] = field(repr=False)  # finished requests, arrival order
    throughput_req_per_s: float
    iterations: int
    busy_s: float
    mean_batch: float  # requests in the running batch (request-level: padded rows included)
    kv_reserved_mean_tokens: float
    kv_written_mean_tokens: float
    kv_reserved_peak_tokens: int
    kv_written_peak_tokens: int
    positions_computed: int  # token rows run through the model (padding included)
    positions_needed: int  # sum of prompt + output - 1 over the requests that ran
    deadlock: Deadlock | None
    output_tokens: int = 0
    comm_s: float = 0.0
    ttft_s: tuple[float, ...] = field(default=(), repr=False)  # first token - arrival, finished requests

    def ttft_percentile_s(self, q: float) -> float:
        """The q-th percentile (0..100) of time to first token of the finished requests (the
        iteration that completes the prefill, queueing included), seconds; nan if none."""
        import numpy as np

        return float(np.percentile(self.ttft_s, q)) if self.ttft_s else math.nan

    @property
    def tokens_per_s(self) -> float:
        """Generated tokens per second of one replica: output_tokens / (last finish - first arrival)
        (= throughput_req_per_s x mean output of the finished requests)."""
        if not self.finished or not self.throughput_req_per_s:
            return 0.0
        return self.output_tokens * self.throughput_req_per_s / self.finished

    @property
    def comm_per_iteration_s(self) -> float:
        """Mean seconds of collectives per iteration (0 on one GPU)."""
        return self.comm_s / self.iterations if self.iterations else 0.0

    @property
    def finished(self) -> int:
        """Requests that finished."""
        return len(self.latency_per_token_s)

    def latency_percentile_s(self, q: float) -> float:
        """The q-th percentile (0..100, linear interpolation) of per-token latency; nan if none.

        Parameters
        ----------
        q : float
            Percentile in [0, 100].

        Returns
        -------
        float
            Seconds per token.
        """
        import numpy as np

        return float(np.percentile(self.latency_per_token_s, q)) if self.latency_per_token_s else math.nan

    @property
    def latency_per_token_median_s(self) -> float:
        """Median per-token latency, seconds."""
        return self.latency_percentile_s(50)

    @property
    def latency_per_token_p90_s(self) -> float:
        """90th percentile of per-token latency, seconds."""
        return self.latency_percentile_s(90)

    @property
    def kv_reserved_over_written(self) -> float:
        """Mean reserved / mean written (the lecture §3.5: about 2.5 for Orca with max_gen 512)."""
        return self.kv_reserved_mean_tokens / self.kv_written_mean_tokens if self.kv_written_mean_tokens else math.nan


class SimStats:
    """Time-weighted sums over iterations."""

    __slots__ = ("busy", "area_n", "area_r", "area_w", "peak_r", "peak_w", "iterations", "rows", "comm", "first")

    def __init__(self) -> None:
        """All sums and peaks at zero."""
        self.busy = self.area_n = self.area_r = self.area_w = self.comm = 0.0
        self.peak_r = self.peak_w = self.iterations = self.rows = 0
