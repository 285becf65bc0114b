"""Prefix caching's fast path (issue 25.7): the general loop's schedule without a visit to every
running sequence each iteration, for `engine.serve` (`serve_prefix`) and the fleet's replicas
(`fleet.serve_fleet`).

Where `FEATURES` (an allow-list of `ServeConfig` fields, as `fast_engine.FAST_FEATURES`) covers the
config (paged K/V, recompute preemption, whole prefills, no speculation, no host tier) and the replica
has one stage and K/V without windows, a sequence prefilled in iteration a decodes in every iteration
from a + 1 to its last, a + O - 1, holding kv = P + (k - a - 1) tokens in iteration k, and needs a new
block in the iterations where kv is a multiple of the block size. So an iteration's decoders are a
count and a sum (kv summed = A + n k), their new blocks a count per iteration (`NEWB`), their finishes
a list per iteration (`FIN`, in admission order, the general loop's order of release). The prefix
cache is the general loop's own `PrefixCache`, called in the loop's order with the loop's free
blocks (`lookup`, `take` and `trim` at admission, `release` at a finish, `register` at the end of a
prefill), and the statistics are the loop's sums, added in its order: finish times, hit statistics and
every float the same bit for bit (tests/test_prefix_equal.py).

When an iteration's new blocks exceed the free ones the general loop would preempt: `PrefixReplica`
hands the run to its `engine_loop.EngineLoop` (same `EngineState`, same cache) at that loop turn and
takes it back at the first turn, `fast_engine.HANDBACK` iterations or more later, where the loop says
it may (`EngineLoop.may_hand_back`: every running sequence decodes, nothing swapped, a fresh head).
"""

from __future__ import annotations

import math

from llm_cost.roofline.pass_terms import causal_pairs  # unchecked: a hot loop (roofline.terms)
from llm_cost.serving.fast_engine import HANDBACK
from llm_cost.serving import eligibility
from llm_cost.serving.eligibility import FLAT_KV_ONE_STAGE, OPEN_LOOP, any_value
from llm_cost.serving.iteration import inline_coefficients, totals_time
from llm_cost.serving.kv_blocks import blocks_for


# The `ServeConfig` features this path runs, field by field (field -> whether its value is supported).
# A field missing here, as a new feature's is until someone adds it, takes the general loop.
FEATURES = {
    "max_batch": any_value,
    "reservation": lambda value, cfg: value == "paged",
    "block_size": any_value,
    "watermark": any_value,
    "preemption": lambda value, cfg: value == "recompute",  # a preempting stretch runs in the general loop
    "prefill_chunk": lambda value, cfg: value is None,  # whole prefills only
    "spec": lambda value, cfg: value is None,
    "pipeline": any_value,  # one stage (`covers`): nothing to schedule
    "host_bytes_per_s": any_value,
    "scheduler": lambda value, cfg: value == "iteration",
    "prefix_caching": lambda value, cfg: bool(value),
    "kv_offload_bytes": lambda value, cfg: not value,  # the host tier lives in the general loop
}


# The workload's fields (`eligibility`): open-loop arrivals whose prompts name their prefixes.
ARRIVALS = {**OPEN_LOOP, "prefix": lambda value, cfg: value is not None}


def covers(workload, replica, cfg) -> bool:
    """Whether this path runs `cfg` (`FEATURES`, one stage, K/V without windows or per-sequence state,
    open-loop arrivals, a workload with prefixes)."""
    return eligibility.covers(workload, replica, cfg, config=FEATURES, cost=FLAT_KV_ONE_STAGE, arrivals=ARRIVALS)


def serve_prefix(workload, replica, cfg, res, on_progress=None):
    """`engine.serve` by this path (`covers`), `res` the reservations; a `ServeResult`."""
    from llm_cost.serving.serve_result import ServeResult

    run = PrefixReplica(workload, replica, cfg, res)
    run.progress = on_progress
    run.run()
    s = run.state
    if on_progress:
        on_progress(run.n, run.n)
    return ServeResult.build(workload, replica, cfg, s.arr, s.first, s.fin, s.st, s.deadlock, path="fast_prefix")


class PrefixReplica:
    """One replica's run (module doc): its `EngineLoop` (`loop`, whose `state`, `cache`, `flights` and
    `swapped` it shares) and the fast path's totals; `run(until)`, `routed` and `enqueue` as the loop's."""

    def __init__(self, workload, replica, cfg, res) -> None:
        from llm_cost.serving.engine_loop import EngineLoop

        self.loop = loop = EngineLoop(workload, replica, cfg, res)
        self.state, self.cache, self.flights, self.swapped = loop.state, loop.cache, loop.flights, loop.swapped
        self.cost, self.P, self.O, self.n, self.B = loop.cost, loop.P, loop.O, loop.n, loop.B
        self.total, self.wm, self.hold = loop.total_blocks, loop.wm_blocks, loop.hold
        self.general = False  # the loop runs (a preempting stretch) until it may hand back
        self.coeffs = None if self.cost.deployed else inline_coefficients(self.cost, None, 0)  # T inline
        self.consts = None  # what `_run_fast` reads, once the run's arrivals are known (`routed`)
        self.k = 0  # iterations launched
        self.A = self.nd = 0  # decoders: sum of P - a - 1, count
        self.contrib = [0] * self.n
        self.FIN: dict = {}  # iteration -> decoders finishing at its end, in admission order
        self.NEWB: dict = {}  # iteration -> decoders needing a new block in it
        self.progress, self.every = None, max(1, self.n // 100)  # on_progress(finished, requests), how often

    def routed(self) -> None:
        """The requests come from a router, one `enqueue(i, t)` at a time: the loop's own
        (`RoutedArrivals.routed`, `enqueue`), on the state both share."""
        self.loop.routed()
        self.enqueue = self.loop.enqueue

    def run(self, until: float = math.inf) -> None:
        """Iterations until every request is done or the clock reaches `until`, in the fast path or, over
        a preemption, in the general loop (module doc)."""
        while True:
            if self.general:
                self.loop.run(until=until, handback=HANDBACK)
                if self.state.deadlock or not self.loop.may_hand_back(HANDBACK):
                    return
                self._from_general()
            if self._run_fast(until):
                return
            self._to_general()

    def _decoder(self, i: int, k0: int, kv0: int, last: int) -> None:
        """Request i decodes from iteration k0 (holding kv0 tokens there) to `last`: its share of the
        decoders' sum, its finish and the iterations where it needs a new block."""
        c = kv0 - k0  # kv in iteration k: P + k - a - 1 = c + k
        self.contrib[i] = c
        self.A += c
        self.nd += 1
        fin = self.FIN.get(last)
        if fin is None:
            self.FIN[last] = [i]
        else:
            fin.append(i)
        B, newb = self.B, self.NEWB
        for k in range(k0 + blocks_for(kv0, B) * B - kv0, last + 1, B):  # where kv is a multiple of B
            newb[k] = newb.get(k, 0) + 1

    def _finish(self, i: int, t: float, free: int) -> int:
        """Request i is done at t (`EngineLoop.finish`): its K/V released (`EngineLoop.release`). Free blocks after."""
        s, cache = self.state, self.cache
        s.fin[i] = t
        cache.trim(free)
        free += blocks_for(self.P[i] + self.O[i] - 1, self.B) - cache.held[i] + cache.release(i)
        del s.running[i]
        s.finished += 1
        s.in_system -= 1
        if self.progress is not None and s.finished % self.every == 0:
            self.progress(s.finished, self.n)
        return free

    def _complete(self, t: float, a: int, pf: list, free: int) -> int:
        """Iteration a ends at t (`EngineLoop.complete`): its last decoders finish, then its prefills are
        cached (a duplicate's blocks freed) and emit their first token. Free blocks after."""
        for i in self.FIN.pop(a, ()):
            c = self.contrib[i]
            self.A -= c
            self.nd -= 1
            free = self._finish(i, t, free)
        if pf:
            cache, P, O, first = self.cache, self.P, self.O, self.state.first
            cache.trim(free)
            for i, _ in pf:
                free += cache.register(i, P[i])
                first[i] = t
                if O[i] == 1:
                    free = self._finish(i, t, free)
                else:
                    self._decoder(i, a + 1, P[i], a + O[i] - 1)
        return free

    def _admit(self, free: int) -> tuple:
        """Prefix caching's admission (`CachedAdmission.admit_cached` under `EngineLoop.admit`): queued
        requests while the batch has room and the free blocks after their uncached ones stay above the
        watermark. ([(i, rows)], free blocks after)."""
        s, cache, P, B, wm, hold = self.state, self.cache, self.P, self.B, self.wm, self.hold
        running, waiting, st, pf = s.running, s.waiting, s.st, []
        while waiting and len(running) < hold:
            i = waiting[0]
            hits, unref = cache.lookup(i)
            start = hits * B
            want = blocks_for(P[i], B) - hits
            if free - unref - want < wm and (running or free - unref < want):
                break
            cache.take(i, hits)
            free -= unref + want
            cache.trim(free)
            st["prefix_lookups"] += 1
            st["prefix_lookup_tokens"] += P[i]
            if start:
                st["prefix_hit_requests"] += 1
                st["prefix_hit_tokens"] += start
            pf.append((i, P[i] - start))
            waiting.popleft()
            running[i] = None
        return pf, free

    def _run_fast(self, until: float) -> bool:
        """Fast iterations (module doc) until `until` or the end (True) or a preemption ahead (False: the
        state is the general loop's at the start of that loop turn). An iteration's seconds are
        `iteration.iteration_time`'s operations in order (on one GPU `inline_coefficients`' T, operation for
        operation `PassCost.time`), its statistics `EngineLoop.launch`'s."""
        if self.consts is None:
            co = self.coeffs
            self.consts = (self.state, self.state.st, self.cost, self.P, self.B, self.total, self.hold,
                           self.cache.lru, self.NEWB, self.FIN, self.state.arr, self.loop.sent, self.state.running,
                           self.state.waiting, self.cache.trim, co, *(co[:7] if co else (0,) * 7),
                           *(co[15:17] if co else (0, 0)), causal_pairs(1))
        (s, st, cost, P, B, total, hold, lru, NEWB, FIN, arr, sent, running, waiting, trim, co,
         w, kvb, bps, rf, pfl, fps, fixed, cf, cr, cp1) = self.consts
        t, k, free, pf, pending = s.t, self.k, s.free, [], False
        while True:
            if pending:
                pending = False
                if pf or (k - 1) in FIN:
                    free = self._complete(t, k - 1, pf, free)
                    pf = []
            if t >= until:
                break
            while s.nxt < sent and arr[s.nxt] <= t:  # `EngineLoop.arrivals`
                waiting.append(s.nxt)
                st["area_sys"] += t - arr[s.nxt]
                s.in_system += 1
                s.nxt += 1
            nd = self.nd
            want = NEWB.pop(k, 0) if nd else 0
            if want > free:  # the loop would preempt: hand over at this turn
                s.t, s.free, self.k = t, free, k
                return False
            free -= want
            if len(lru) > free:
                trim(free)
            rows = nd
            if waiting and len(running) < hold:
                pf, free = self._admit(free)
                for _, q in pf:
                    rows += q
            if not rows:
                if running or waiting:  # a deadlock (cannot happen: the worst request fits alone)
                    s.t, s.free, self.k = t, free, k
                    return False
                if s.nxt < sent:  # idle until the next arrival (`EngineLoop.idle`)
                    st["area_sys"] += (arr[s.nxt] - t) * s.in_system
                    t = arr[s.nxt]
                    continue
                break
            if nd:
                kv_dec = self.A + nd * k
                kv_read, pairs = kv_dec, 1 * kv_dec + nd * cp1
            else:
                kv_read = pairs = kv_dec = 0.0
            for i, q in pf:
                c = P[i] - q
                kv_read += c
                pairs += causal_pairs(q, c)
            if co:
                mem = (w + (kv_read + rows) * kvb) / bps
                comp = (rows * rf + pairs * pfl if pfl else rows * rf) / fps
                dt = ((mem if mem > comp else comp) + (cf + rows * cr)) + fixed
            else:
                dt, comm, draft = totals_time(cost, None, rows, kv_read, pairs, nd, kv_dec, 0, 1)
                st["comm"] += comm
                st["draft_s"] += draft
            used = float((total - free) * B)
            st["dec_slots"] += nd
            st["iterations"] += 1
            st["rows"] += rows
            st["busy"] += dt
            st["area_n"] += dt * len(running)
            st["area_kv"] += dt * used
            st["area_sys"] += dt * s.in_system
            if used > st["peak_kv"]:
                st["peak_kv"] = used
            t += dt
            k += 1
            pending = True
        s.t, s.free, self.k = t, free, k
        s.used = float((total - free) * B)
        return True

    def _to_general(self) -> None:
        """The general loop's variables at this loop turn: each running sequence's tokens and blocks."""
        s, loop, P, k = self.state, self.loop, self.P, self.k
        for i in s.running:
            kv = self.contrib[i] + k
            s.gen[i] = kv - P[i] + 1
            s.kv[i] = kv
            s.pre[i] = s.need[i]
            s.blocks[i] = blocks_for(kv, self.B)
        s.used = float((self.total - s.free) * self.B)
        loop.launches = loop.last_pre = s.st["iterations"]
        self.FIN.clear()
        self.NEWB.clear()
        self.A = self.nd = 0
        self.general = True

    def _from_general(self) -> None:
        """The fast path's totals from the general loop's variables (every running sequence decodes)."""
        s = self.state
        self.k = k = s.st["iterations"]
        for i in s.running:
            self._decoder(i, k, s.kv[i], k - s.gen[i] + self.O[i] - 1)
        self.general = False
