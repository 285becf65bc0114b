"""What the serving engine carries from one iteration to the next, and what its two paths hand over.

`EngineState` is the general loop's state between loop turns (per-request lists indexed by request,
the queues, the clock, the K/V ledger's fields, the running statistics); the fast path (`fast_engine`) writes
one when it hands a run to the general loop and reads it back when it takes the run again
(`handover`). Its statistics are a `run_stats.RunStats`, the one type `ServeResult.build` reads.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from llm_cost.serving.run_stats import RunStats


@dataclass(eq=False)
class EngineState:
    """The engine between two iterations (tokens; seconds).

    Per request i: `gen` tokens generated, `kv` K/V tokens cached, `pre` prompt tokens prefilled of
    `need` (prompt, or prompt + generated after a recompute preemption), `blocks` paged blocks held,
    `first` / `fin` first-token and finish times (nan until then), `arr` arrival times (a closed loop
    writes them as it goes). The queues: `running` (admission order), `waiting` (FCFS, recompute
    victims at its head). The ledger: `free` blocks, `used` K/V tokens held (paged: blocks x size),
    `reserved` tokens (declared, max_len); paged, `free`, `blocks` and `used` are the storage of the
    general loop's allocator (`kv_ledger.KvLedger`), the only part of the loop that edits them. `t` the clock, `nxt` the next request to arrive,
    `finished` and `in_system` counts, `acceptance` the draws, `stats` the statistics (`run_stats.RunStats`),
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
    stats: RunStats = field(default_factory=RunStats)
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
        requests = len(prompts)
        return cls(gen=[0] * requests, kv=[0] * requests, pre=[0] * requests, need=list(prompts),
                   blocks=[0] * requests, first=[math.nan] * requests, fin=[math.nan] * requests,
                   arr=list(arrivals), free=free_blocks, acceptance=acceptance)

