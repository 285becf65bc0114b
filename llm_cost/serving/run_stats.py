"""A serving run's statistics, one type for every path of `engine.serve` (`ServeResult.build` reads it).

`RunStats` holds what a run sums and the peaks it reaches while it iterates. The general loop and
prefix caching's fast path add each launched iteration with `RunStats.count_launch`; the other paths
add the same sums over many iterations at once (a stretch of decode iterations, a segment of fast
iterations, a request-level batch) or keep them in locals in their hot loops and write them back once
(`fast_reservations`, `fast_pipeline`: an attribute update per iteration would cost them). The time-weighted areas are integrals over the
busy seconds: an iteration of `step` seconds adds `step` x its value (in-system requests: over wall
time, idle included). Several replicas' statistics are summed by `+` (`RunStats.__add__`: sums
added, peaks the largest one replica reached).

`positions_needed` is the one rule for the token rows the requests' K/V needed, deadlocked or not.
"""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(slots=True)
class RunStats:
    """The sums and peaks of one run (seconds, tokens, token rows, bytes), all zero at its start.

    Attributes
    ----------
    busy_s
        Seconds iterations ran (idle time excluded; an `orca` pipeline's launch a stage-time).
    compute_bound_s
        Of `busy_s`, the iterations of `iteration.compute_bound_rows` rows or more.
    batch_area
        Running sequences x seconds (sequence-seconds; / `busy_s`: the mean batch).
    kv_used_area
        K/V tokens held at each launch (paged: whole blocks) x seconds.
    kv_reserved_area
        K/V tokens reserved (declared, max_len) at each launch x seconds.
    kv_written_area
        K/V tokens written: held at each launch plus the rows it writes, x seconds.
    in_system_area
        Requests in the system (arrived, not finished) x seconds of wall time (Little's area).
    peak_kv_used, peak_kv_reserved, peak_kv_written
        The largest K/V tokens held, reserved and written at one launch.
    iterations
        Iterations launched.
    rows
        Token rows computed (padding, drafts and recomputed rows included).
    preemptions
        Sequences preempted (recomputed or swapped out).
    swap_bytes
        Bytes moved over the host link (swapped K/V, offloaded prefix blocks).
    draft_s
        Seconds of the draft model's passes (of `busy_s`).
    comm_s
        Seconds of the collectives, summed over the iterations.
    spec_rounds, spec_tokens
        Speculative rounds (one per decoding row of an iteration with gamma > 0) and the tokens they
        generated.
    gamma_sum, decode_slots
        Gamma summed over the decoding rows, and the decoding rows (sequences x iterations).
    prefix_lookups, prefix_lookup_tokens, prefix_hit_requests, prefix_hit_tokens
        Prefix caching: admissions that looked the cache up, their prompt tokens, those that found a
        cached prefix, and the prompt tokens found (not prefilled).

    Examples
    --------
    >>> stats = RunStats()
    >>> stats.count_launch(2.0, rows=3, bound_rows=64, running=1, used=10.0, in_system=2)
    >>> stats.busy_s, stats.kv_used_area, stats.kv_written_area, stats.peak_kv_written
    (2.0, 20.0, 26.0, 13.0)
    >>> (stats + stats).busy_s, (stats + stats).peak_kv_used
    (4.0, 10.0)
    """

    busy_s: float = 0.0
    compute_bound_s: float = 0.0
    batch_area: float = 0.0
    kv_used_area: float = 0.0
    kv_reserved_area: float = 0.0
    kv_written_area: float = 0.0
    in_system_area: float = 0.0
    peak_kv_used: float = 0.0
    peak_kv_reserved: int = 0
    peak_kv_written: float = 0.0
    iterations: int = 0
    rows: int = 0
    preemptions: int = 0
    swap_bytes: float = 0.0
    draft_s: float = 0.0
    comm_s: float = 0.0
    spec_rounds: int = 0
    spec_tokens: int = 0
    gamma_sum: int = 0
    decode_slots: int = 0
    prefix_lookups: int = 0
    prefix_lookup_tokens: int = 0
    prefix_hit_requests: int = 0
    prefix_hit_tokens: int = 0

    def count_launch(self, step: float, rows, bound_rows: float, running: int, used: float, in_system: int,
                     reserved: int = 0) -> None:
        """Add one launched iteration: `step` busy seconds (compute-bound with `bound_rows` rows or
        more) over `rows` token rows, `running` sequences, `used` K/V tokens held at the launch,
        `in_system` requests, `reserved` K/V tokens reserved; it writes `used` + `rows`."""
        self.iterations += 1
        self.rows += rows
        self.busy_s += step
        if rows >= bound_rows:
            self.compute_bound_s += step
        self.batch_area += step * running
        self.kv_used_area += step * used
        self.in_system_area += step * in_system
        if used > self.peak_kv_used:
            self.peak_kv_used = used
        self.kv_reserved_area += step * reserved
        written = used + rows
        self.kv_written_area += step * written
        if reserved > self.peak_kv_reserved:
            self.peak_kv_reserved = reserved
        if written > self.peak_kv_written:
            self.peak_kv_written = written

    def __add__(self, other: "RunStats") -> "RunStats":
        """Two runs' statistics together (replicas of a fleet): the sums added, each peak the larger."""
        return RunStats(*(max(getattr(self, name), getattr(other, name)) if name in PEAKS
                          else getattr(self, name) + getattr(other, name) for name in FIELDS))


FIELDS = tuple(field.name for field in fields(RunStats))
PEAKS = frozenset(name for name in FIELDS if name.startswith("peak_"))


def positions_needed(prompt, output, finish, generated=None, prefilled=None) -> int:
    """Token rows the requests' K/V needed, the one rule of every path: prompt + output - 1 of each
    finished request (`finish` not nan); of one that stopped part-way (a deadlock, per request
    `generated` tokens and `prefilled` prompt tokens) prompt + generated - 1, or the prompt tokens
    prefilled if it generated none; nothing of an unfinished one when `generated` is None.

    >>> positions_needed((4, 4, 4), (5, 5, 5), (9.0, float("nan"), float("nan")), (5, 2, 0), (4, 4, 3))
    16
    """
    if generated is None:
        total_s = sum(finish)  # nan as soon as one request is unfinished: then request by request
        if total_s == total_s:
            return sum(prompt) + sum(output) - len(prompt)
        return sum(tokens + out - 1 for tokens, out, done_s in zip(prompt, output, finish) if done_s == done_s)
    return sum(tokens + out - 1 if done_s == done_s else (tokens + gen - 1 if gen else pre)
               for tokens, out, done_s, gen, pre in zip(prompt, output, finish, generated, prefilled))
