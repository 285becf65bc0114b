"""What a serving run measured: TTFT, TPOT, end-to-end latency and their tails, goodput, KV use.

One type for every run of `engine.serve`, whichever of its paths ran it (`path`).

TTFT = first token - arrival (the iteration that completes the prefill, queueing included);
TPOT = (finish - first token) / (output - 1) for outputs of two tokens or more; e2e = finish -
arrival; latency per token = e2e / output (the lecture's and Orca's metric). Goodput = requests per
second that finished within both SLOs (`goodput_req_per_s(ttft_s, tpot_s)`). Means of KV and batch
are weighted by the time the engine was busy; `mean_in_system` by wall time (Little's law:
mean_in_system = arrival rate x mean e2e in steady state).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

from llm_cost.serving.reservations import Deadlock
from llm_cost.serving.run_stats import RunStats, positions_needed

METRICS = ("ttft", "tpot", "e2e", "latency_per_token")
PERCENTILES = {"median": 50.0, "p50": 50.0, "p90": 90.0, "p99": 99.0}


@dataclass(frozen=True)
class ServeResult:
    """One run of `engine.serve`. Seconds, tokens; nan for requests that never finished.

    Examples
    --------
    Exercise 10's two requests (4 prompt + 5 output tokens, 1 s per iteration) under Orca's
    reservation: the second waits for the first's K/V, so its TTFT is 6 s.

    >>> from llm_cost.serving.engine import serve
    >>> from llm_cost.serving.replica import IterationCost, Replica
    >>> from llm_cost.serving.workload import fixed_workload
    >>> r = serve(fixed_workload([(4, 5), (4, 5)]), Replica(IterationCost.unit(), 10, 2048))
    >>> r.first_token_s, r.finish_s, r.percentile_s("tpot", "p50"), r.throughput_req_per_s
    ((1.0, 6.0), (5.0, 10.0), 1.0, 0.2)
    >>> r.goodput_req_per_s(ttft_s=2.0), r.kv_used_peak_tokens
    (0.1, 7.0)
    """

    reservation: str
    max_batch: int
    rate_req_per_s: float
    requests: int
    kv_capacity_tokens: int
    arrival_s: tuple = field(repr=False)
    first_token_s: tuple = field(repr=False)
    finish_s: tuple = field(repr=False)
    output: tuple = field(repr=False)
    iterations: int
    busy_s: float
    mean_batch: float
    kv_used_mean_tokens: float
    kv_used_peak_tokens: float
    preemptions: int
    swap_bytes: float
    draft_s: float
    mean_in_system: float
    tokens_per_round: float  # generated tokens per speculative round (0 without speculation)
    mean_gamma: float  # gamma per decoding row, averaged over decode rows
    deadlock: Deadlock | None
    comm_total_s: float = 0.0  # the collectives' seconds, summed over the iterations (a pass's: comm_time_s)
    # the busy seconds of the compute-bound iterations (`iteration.compute_bound_rows` rows or more; of busy_s)
    compute_bound_s: float = 0.0
    # the admission policy (`request`, `iteration`, or `none`: iteration-level without a reservation) and
    # the path of `engine.serve` that ran it (`general`, `fast_engine`, `fast_reservations`, `fast_prefix`,
    # `request_level`); whichever path ran it: K/V reserved and written (tokens, time-weighted over the
    # busy seconds as K/V used; written = held at an iteration's start plus the rows it writes; `none`
    # reserves what it writes; None under `paged`, whose K/V used is its blocks), token rows computed
    # (padding, drafts and recomputed rows included) and needed (prompt + generated - 1 of the requests
    # that ran)
    scheduler: str = "iteration"
    path: str = "general"
    kv_reserved_mean_tokens: float | None = None
    kv_written_mean_tokens: float | None = None
    kv_reserved_peak_tokens: float | None = None
    kv_written_peak_tokens: float | None = None
    positions_computed: int = 0
    positions_needed: int = 0
    # prefix caching (`ServeConfig.prefix_caching`; 0 without it): admissions that looked the cache up,
    # their prompt tokens, those that found a cached prefix, and the prompt tokens found (not prefilled)
    prefix_lookups: int = 0
    prefix_lookup_tokens: int = 0
    prefix_hit_requests: int = 0
    prefix_hit_tokens: int = 0

    @staticmethod
    def scheduler_of(cfg) -> str:
        """The admission policy of a `ServeConfig`: `none` without a reservation, else its scheduler."""
        return "none" if cfg.reservation == "none" else cfg.scheduler

    @classmethod
    def build(cls, wl, replica, cfg, arrivals, first, fin, stats: RunStats, deadlock, span=None,
              path: str = "general", generated=None, prefilled=None) -> "ServeResult":
        """The result of a run of `wl` whose statistics are `stats` (every path's `run_stats.RunStats`).

        `span`: last finish (or the deadlock) - first arrival when the caller knows it (every request
        finished); `path`: the engine's path that ran it; `generated` / `prefilled`: per request the
        tokens generated and the prompt tokens prefilled, which a deadlock's positions needed count
        (`run_stats.positions_needed`, the one rule)."""
        busy = stats.busy_s or 1.0
        if span is None and deadlock is not None:  # the run ends at the deadlock, as its in-system area does
            span = deadlock.time_s - min(arrivals)
        elif span is None:
            done_t = [done_s for done_s in fin if done_s == done_s]
            span = (max(done_t) - min(arrivals)) if done_t else 0.0
        return cls(
            reservation=cfg.reservation, max_batch=cfg.max_batch, rate_req_per_s=wl.rate_req_per_s,
            requests=len(wl), kv_capacity_tokens=replica.kv_capacity_tokens, arrival_s=tuple(arrivals),
            first_token_s=tuple(first), finish_s=tuple(fin), output=tuple(wl.output),
            iterations=stats.iterations, busy_s=stats.busy_s, mean_batch=stats.batch_area / busy,
            kv_used_mean_tokens=stats.kv_used_area / busy, kv_used_peak_tokens=float(stats.peak_kv_used),
            preemptions=stats.preemptions, swap_bytes=stats.swap_bytes, draft_s=stats.draft_s,
            mean_in_system=stats.in_system_area / span if span > 0 else 0.0,
            tokens_per_round=stats.spec_tokens / stats.spec_rounds if stats.spec_rounds else 0.0,
            mean_gamma=stats.gamma_sum / max(1, stats.decode_slots), deadlock=deadlock, comm_total_s=stats.comm_s,
            compute_bound_s=stats.compute_bound_s,
            **cls.reserved_written(cfg.reservation, stats, busy),
            positions_computed=stats.rows, scheduler=cls.scheduler_of(cfg), path=path,
            positions_needed=positions_needed(wl.prompt, wl.output, fin, generated, prefilled),
            prefix_lookups=stats.prefix_lookups, prefix_lookup_tokens=stats.prefix_lookup_tokens,
            prefix_hit_requests=stats.prefix_hit_requests, prefix_hit_tokens=stats.prefix_hit_tokens)

    @staticmethod
    def reserved_written(reservation: str, stats: RunStats, busy: float) -> dict:
        """The K/V reserved and written fields from `stats` over `busy` seconds: None under `paged`;
        `none` reserves what it writes."""
        if reservation == "paged":
            return {}
        if reservation == "none":
            reserved_area, reserved_peak = stats.kv_written_area, stats.peak_kv_written
        else:
            reserved_area, reserved_peak = stats.kv_reserved_area, stats.peak_kv_reserved
        return {"kv_reserved_mean_tokens": reserved_area / busy, "kv_written_mean_tokens": stats.kv_written_area / busy,
                "kv_reserved_peak_tokens": int(reserved_peak), "kv_written_peak_tokens": int(stats.peak_kv_written)}

    @property
    def prefix_token_hit_rate(self) -> float:
        """Prompt tokens found in the prefix cache / prompt tokens looked up (a fraction; 0 without)."""
        return self.prefix_hit_tokens / self.prefix_lookup_tokens if self.prefix_lookup_tokens else 0.0

    @property
    def prefix_request_hit_rate(self) -> float:
        """Admissions that found a cached prefix / admissions that looked (a fraction; 0 without)."""
        return self.prefix_hit_requests / self.prefix_lookups if self.prefix_lookups else 0.0

    @property
    def prefill_tokens_saved(self) -> int:
        """Prompt tokens not prefilled because the cache held them (tokens)."""
        return self.prefix_hit_tokens

    @cached_property
    def _arrays(self):
        """(arrival, first token, finish, output, finished mask) as numpy arrays, built once: a report
        reads a dozen statistics of a run of 10^6 requests."""
        import numpy as np

        arrival, first, finish = (np.asarray(column, dtype=float)
                                  for column in (self.arrival_s, self.first_token_s, self.finish_s))
        return arrival, first, finish, np.asarray(self.output, dtype=float), ~np.isnan(finish)

    @cached_property
    def finished(self) -> int:
        return int(self._arrays[4].sum())

    @cached_property
    def span_s(self) -> float:
        """Last finish - first arrival."""
        arrival, _, finish, _, ok = self._arrays
        return float(finish[ok].max() - arrival.min()) if ok.any() else 0.0

    @property
    def throughput_req_per_s(self) -> float:
        return self.finished / self.span_s if self.span_s > 0 else 0.0

    @property
    def tokens_per_s(self) -> float:
        """Generated tokens of the finished requests per second."""
        span = self.span_s
        return float(self._arrays[3][self._arrays[4]].sum()) / span if span > 0 else 0.0

    @property
    def output_tokens(self) -> int:
        """Tokens the finished requests generated."""
        return int(self._arrays[3][self._arrays[4]].sum())

    @property
    def comm_time_s(self) -> float:
        """Mean seconds of collectives per iteration: a pass's comm_time_s, as the CLI names it (0 on one GPU)."""
        return self.comm_total_s / self.iterations if self.iterations else 0.0

    @property
    def latency_per_token_s(self) -> tuple:
        """(finish - arrival) / output of the finished requests, in arrival order (seconds)."""
        return tuple(self.values("latency_per_token").tolist())

    @property
    def ttft_s(self) -> tuple:
        """First token - arrival of the finished requests, in arrival order (seconds)."""
        return tuple(self.values("ttft").tolist())

    def latency_percentile_s(self, q: float) -> float:
        """The `q`-th percentile (0..100, linear interpolation) of latency per token; nan if none finished."""
        return self._percentile("latency_per_token", q)

    def ttft_percentile_s(self, q: float) -> float:
        """The `q`-th percentile (0..100) of time to first token; nan if none finished."""
        return self._percentile("ttft", q)

    @property
    def latency_per_token_median_s(self) -> float:
        return self.latency_percentile_s(50)

    @property
    def latency_per_token_p90_s(self) -> float:
        return self.latency_percentile_s(90)

    @property
    def kv_reserved_over_written(self) -> float | None:
        """Mean reserved / mean written (the lecture §3.5: about 2.5 for Orca with max_gen 512); None
        where the run does not count them apart or wrote nothing."""
        written, reserved = self.kv_written_mean_tokens, self.kv_reserved_mean_tokens
        return reserved / written if written and reserved is not None else None

    @property
    def kv_utilisation(self) -> float:
        """Mean K/V held (paged: whole blocks) / capacity, a fraction."""
        return self.kv_used_mean_tokens / self.kv_capacity_tokens

    @cached_property
    def _values(self) -> dict:
        return {}

    def values(self, metric: str):
        """Seconds per finished request for `metric` (ttft, tpot, e2e, latency_per_token); a read-only
        numpy array (computed once per metric)."""
        got = self._values.get(metric)
        if got is None:
            arrival, first, finish, output, ok = self._arrays
            if metric == "ttft":
                got = (first - arrival)[ok]
            elif metric == "e2e":
                got = (finish - arrival)[ok]
            elif metric == "latency_per_token":
                got = ((finish - arrival) / output)[ok]
            else:
                many = ok & (output > 1)
                got = (finish - first)[many] / (output - 1)[many]
            got.flags.writeable = False
            self._values[metric] = got
        return got

    def percentile_s(self, metric: str, stat: str = "p50") -> float:
        """A percentile (median, p50, p90, p99) or `mean` of `metric`; nan when none finished."""
        if stat == "mean":
            seconds = self.values(metric)
            return float(seconds.mean()) if seconds.size else math.nan
        return self._percentile(metric, PERCENTILES[stat])

    def _percentile(self, metric: str, q: float) -> float:
        """The `q`-th percentile (0..100, linear interpolation) of `metric`; nan if none finished."""
        import numpy as np

        seconds = self.values(metric)
        return float(np.percentile(seconds, q)) if seconds.size else math.nan

    def goodput_req_per_s(self, ttft_s: float | None = None, tpot_s: float | None = None) -> float:
        """Finished requests within both targets (None: no target) per second of the run.

        TPOT of a one-token request counts as met."""
        import numpy as np

        span = self.span_s
        if span <= 0:
            return 0.0
        arrival, first, finish, output, ok = self._arrays
        ok = ok.copy()
        if ttft_s is not None:
            ok &= (first - arrival) <= ttft_s
        if tpot_s is not None:
            with np.errstate(invalid="ignore", divide="ignore"):
                tpot = np.where(output > 1, (finish - first) / np.maximum(output - 1, 1), 0.0)
            ok &= tpot <= tpot_s
        return float(ok.sum()) / span
