"""What the serving engine carries from one iteration to the next, and what its two paths hand over.

`EngineState` is the general loop's state between loop turns (per-request lists indexed by request,
the queues, the clock, the K/V ledger, the running statistics); the fast path (`fast_engine`) writes
one when it hands a run to the general loop and reads it back when it takes the run again
(`handover`). `fresh_stats` is the one spelling of the statistics `ServeResult.build` reads.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field


def fresh_stats() -> dict:
    """The run's statistics at zero: busy seconds, time-weighted areas (batch, K/V, requests in the
    system), iterations, rows, preemptions, swap bytes, draft and collective seconds, the K/V peak and
    the speculation counts (rounds, tokens, gamma summed over decode slots); `compute_bound` the busy
    seconds of the iterations of `iteration.compute_bound_rows` rows or more; `area_r` / `peak_r` the K/V
    reserved (declared, max_len) and `area_w` / `peak_w` written (held at the launch plus the rows it
    writes), as `fast_reservations.StepStats` counts them."""
    return {"busy": 0.0, "compute_bound": 0.0, "area_n": 0.0, "area_kv": 0.0, "area_sys": 0.0, "iterations": 0, "rows": 0,
            "preemptions": 0, "swap_bytes": 0.0, "draft_s": 0.0, "peak_kv": 0.0, "spec_rounds": 0,
            "spec_tokens": 0, "gamma_sum": 0, "dec_slots": 0, "comm": 0.0,
            "prefix_lookups": 0, "prefix_lookup_tokens": 0, "prefix_hit_requests": 0, "prefix_hit_tokens": 0,
            "area_r": 0.0, "area_w": 0.0, "peak_r": 0, "peak_w": 0.0}


def count_launch(st: dict, step: float, rows, bound_rows: float, running: int, used: float, in_system: int,
                 reserved: int = 0) -> None:
    """Add one launched iteration to the statistics `st` (`fresh_stats`): `step` busy seconds (compute-bound
    with `bound_rows` rows or more) over `rows` rows, `running` sequences, `used` K/V tokens, `in_system`
    requests, `reserved` K/V tokens reserved."""
    st["iterations"] += 1
    st["rows"] += rows
    st["busy"] += step
    if rows >= bound_rows:
        st["compute_bound"] += step
    st["area_n"] += step * running
    st["area_kv"] += step * used
    st["area_sys"] += step * in_system
    if used > st["peak_kv"]:
        st["peak_kv"] = used
    st["area_r"] += step * reserved
    st["area_w"] += step * (used + rows)
    if reserved > st["peak_r"]:
        st["peak_r"] = reserved
    if used + rows > st["peak_w"]:
        st["peak_w"] = used + rows


@dataclass(eq=False)
class EngineState:
    """The engine between two iterations (tokens; seconds).

    Per request i: `gen` tokens generated, `kv` K/V tokens cached, `pre` prompt tokens prefilled of
    `need` (prompt, or prompt + generated after a recompute preemption), `blocks` paged blocks held,
    `first` / `fin` first-token and finish times (nan until then), `arr` arrival times (a closed loop
    writes them as it goes). The queues: `running` (admission order), `waiting` (FCFS, recompute
    victims at its head). The ledger: `free` blocks, `used` K/V tokens held (paged: blocks x size),
    `reserved` tokens (declared, max_len). `t` the clock, `nxt` the next request to arrive,
    `finished` and `in_system` counts, `acceptance` the draws, `st` the statistics (`fresh_stats`),
    `deadlock` once the run has stopped on one.
    """

    gen: list
    kv: list
    pre: list
    need: list
    blocks: list
    first: list
    fin: list
    arr: list
    running: dict = field(default_factory=dict)
    waiting: deque = field(default_factory=deque)
    st: dict = field(default_factory=fresh_stats)
    free: int = 0
    used: float = 0.0
    reserved: int = 0
    t: float = 0.0
    nxt: int = 0
    finished: int = 0
    in_system: int = 0
    acceptance: object = None
    deadlock: object = None

    @classmethod
    def start(cls, prompts, arrivals, free_blocks: int, acceptance) -> "EngineState":
        """Nothing run yet: every request ahead, `free_blocks` free (0 unless paged)."""
        n = len(prompts)
        return cls(gen=[0] * n, kv=[0] * n, pre=[0] * n, need=list(prompts), blocks=[0] * n,
                   first=[math.nan] * n, fin=[math.nan] * n, arr=list(arrivals), free=free_blocks,
                   acceptance=acceptance)

    def needed(self, prompts) -> int | None:
        """After a deadlock, the token rows the requests' K/V needed (prompt + generated - 1, or the
        prompt tokens prefilled of one that generated nothing); None otherwise (`ServeResult.build`
        sums the finished requests')."""
        if self.deadlock is None:
            return None
        return sum(p + g - 1 if g else q for p, g, q in zip(prompts, self.gen, self.pre))
