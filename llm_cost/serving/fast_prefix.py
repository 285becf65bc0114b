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

from llm_cost.roofline.pass_terms import causal_pairs, decode_pairs  # unchecked: a hot loop (roofline.terms)
from llm_cost.serving.fast_engine import HANDBACK
from llm_cost.serving import eligibility
from llm_cost.serving.eligibility import FLAT_KV_ONE_STAGE, OPEN_LOOP, any_value
from llm_cost.serving.iteration import pass_timer, totals_time
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
    state = run.state
    if on_progress:
        on_progress(run.n, run.n)
    return ServeResult.build(workload, replica, cfg, state.arr, state.first, state.fin, state.stats, state.deadlock,
                             path="fast_prefix", generated=state.gen, prefilled=state.pre)


class PrefixReplica:
    """One replica's run (module doc): its `EngineLoop` (`loop`, whose `state`, `cache`, `flights` and
    `swapped` it shares) and the fast path's totals; `run(until)`, `routed` and `enqueue` as the loop's."""

    def __init__(self, workload, replica, cfg, res) -> None:
        from llm_cost.serving.engine_loop import EngineLoop

        self.loop = loop = EngineLoop(workload, replica, cfg, res)
        self.state, self.cache, self.flights, self.swapped = loop.state, loop.cache, loop.flights, loop.swapped
        self.cost, self.P, self.O, self.n, self.B = loop.cost, loop.P, loop.O, loop.n, loop.B
        self.total, self.wm, self.hold = loop.total_blocks, loop.wm_blocks, loop.pipeline.hold
        self.general = False  # the loop runs (a preempting stretch) until it may hand back
        self.timer = None if self.cost.deployed else pass_timer(self.cost)  # T in one call; deployed: `totals_time`
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

    def _decoder(self, req: int, k0: int, kv0: int, last: int) -> None:
        """Request `req` decodes from iteration k0 (holding kv0 tokens there) to `last`: its share of the
        decoders' sum, its finish and the iterations where it needs a new block."""
        offset = kv0 - k0  # kv in iteration k: P + k - a - 1 = offset + k
        self.contrib[req] = offset
        self.A += offset
        self.nd += 1
        fin = self.FIN.get(last)
        if fin is None:
            self.FIN[last] = [req]
        else:
            fin.append(req)
        block, newb = self.B, self.NEWB
        for at in range(k0 + blocks_for(kv0, block) * block - kv0, last + 1, block):  # kv a multiple of B
            newb[at] = newb.get(at, 0) + 1

    def _finish(self, req: int, now: float, free: int) -> int:
        """Request `req` is done at `now` (`EngineLoop.finish`): its K/V released (`EngineLoop.release`).
        Free blocks after."""
        state, cache = self.state, self.cache
        state.fin[req] = now
        cache.trim(free)
        kv = self.P[req] + self.O[req] - 1
        free += blocks_for(kv, self.B) - cache.held[req] + cache.release(req, kv)
        del state.running[req]
        state.finished += 1
        state.in_system -= 1
        if self.progress is not None and state.finished % self.every == 0:
            self.progress(state.finished, self.n)
        return free

    def _complete(self, now: float, launched: int, pf: list, free: int) -> int:
        """Iteration `launched` ends at `now` (`EngineLoop.complete`): its last decoders finish, then its prefills are
        cached (a duplicate's blocks freed) and emit their first token. Free blocks after."""
        for req in self.FIN.pop(launched, ()):
            share = self.contrib[req]
            self.A -= share
            self.nd -= 1
            free = self._finish(req, now, free)
        if pf:
            cache, prompt, output, first = self.cache, self.P, self.O, self.state.first
            cache.trim(free)
            for req, _ in pf:
                free += cache.register(req, prompt[req])
                first[req] = now
                if output[req] == 1:
                    free = self._finish(req, now, free)
                else:
                    self._decoder(req, launched + 1, prompt[req], launched + output[req] - 1)
        return free

    def _admit(self, free: int) -> tuple:
        """Prefix caching's admission (`CachedAdmission.admit_cached` under `EngineLoop.admit`): queued
        requests while the batch has room and the free blocks after their uncached ones stay above the
        watermark. ([(i, rows)], free blocks after)."""
        state, cache, prompt, block, wm, hold = self.state, self.cache, self.P, self.B, self.wm, self.hold
        running, waiting, stats, pf = state.running, state.waiting, state.stats, []
        while waiting and len(running) < hold:
            req = waiting[0]
            hits, unref = cache.lookup(req)
            start = hits * block
            want = blocks_for(prompt[req], block) - hits
            if free - unref - want < wm and (running or free - unref < want):
                break
            cache.take(req, hits)
            free -= unref + want
            cache.trim(free)
            stats.prefix_lookups += 1
            stats.prefix_lookup_tokens += prompt[req]
            if start:
                stats.prefix_hit_requests += 1
                stats.prefix_hit_tokens += start
            pf.append((req, prompt[req] - start))
            waiting.popleft()
            running[req] = None
        return pf, free

    def _run_fast(self, until: float) -> bool:
        """Fast iterations (module doc) until `until` or the end (True) or a preemption ahead (False: the
        state is the general loop's at the start of that loop turn). An iteration's seconds are
        `iteration.iteration_time`'s: its pairs by `decode_pairs` and `causal_pairs`, on one GPU its T in one
        call (`iteration.pass_timer`: `InlineTerms.evaluator`, `PassCost.time` bit for bit), deployed
        `iteration.totals_time`; its statistics `EngineLoop.launch`'s (`RunStats.count_launch`)."""
        if self.consts is None:
            self.consts = (self.state, self.state.stats, self.cost, self.P, self.B, self.total, self.hold,
                           self.cache.lru, self.NEWB, self.FIN, self.state.arr, self.loop.sent, self.state.running,
                           self.state.waiting, self.cache.trim, self.timer)
        (state, stats, cost, prompt, block, total, hold, lru, NEWB, FIN, arr, sent, running, waiting, trim,
         timer) = self.consts
        now, iteration, free, pf, pending, bound_rows = state.t, self.k, state.free, [], False, self.loop.bound_rows
        while True:
            if pending:
                pending = False
                if pf or (iteration - 1) in FIN:
                    free = self._complete(now, iteration - 1, pf, free)
                    pf = []
            if now >= until:
                break
            while state.nxt < sent and arr[state.nxt] <= now:  # `EngineLoop.arrivals`
                waiting.append(state.nxt)
                stats.in_system_area += now - arr[state.nxt]
                state.in_system += 1
                state.nxt += 1
            decoders = self.nd
            want = NEWB.pop(iteration, 0) if decoders else 0
            if want > free:  # the loop would preempt: hand over at this turn
                state.t, state.free, self.k = now, free, iteration
                return False
            free -= want
            if len(lru) > free:
                trim(free)
            rows = decoders
            if waiting and len(running) < hold:
                pf, free = self._admit(free)
                for _, rows_new in pf:
                    rows += rows_new
            if not rows:
                if running or waiting:  # a deadlock (cannot happen: the worst request fits alone)
                    state.t, state.free, self.k = now, free, iteration
                    return False
                if state.nxt < sent:  # idle until the next arrival (`EngineLoop.idle`)
                    stats.in_system_area += (arr[state.nxt] - now) * state.in_system
                    now = arr[state.nxt]
                    continue
                break
            if decoders:
                kv_dec = self.A + decoders * iteration
                kv_read, pairs = kv_dec, decode_pairs(1, decoders, kv_dec)
            else:
                kv_read = pairs = kv_dec = 0.0
            for req, rows_new in pf:
                cached = prompt[req] - rows_new
                kv_read += cached
                pairs += causal_pairs(rows_new, cached)
            if timer is not None:
                dt = timer(rows, kv_read + rows, pairs)
            else:
                dt, comm, draft = totals_time(cost, None, rows, kv_read, pairs, decoders, kv_dec, 0, 1)
                stats.comm_s += comm
                stats.draft_s += draft
            used = float((total - free) * block)
            stats.decode_slots += decoders
            stats.count_launch(dt, rows, bound_rows, len(running), used, state.in_system)
            now += dt
            iteration += 1
            pending = True
        state.t, state.free, self.k = now, free, iteration
        state.used = float((total - free) * block)
        return True

    def _to_general(self) -> None:
        """The general loop's variables at this loop turn: each running sequence's tokens and blocks."""
        state, loop, prompt, iteration = self.state, self.loop, self.P, self.k
        for req in state.running:
            kv = self.contrib[req] + iteration
            state.gen[req] = kv - prompt[req] + 1
            state.kv[req] = kv
            state.pre[req] = state.need[req]
            state.blocks[req] = blocks_for(kv, self.B)
        state.used = float((self.total - state.free) * self.B)
        loop.launches = loop.last_pre = state.stats.iterations
        self.FIN.clear()
        self.NEWB.clear()
        self.A = self.nd = 0
        self.general = True

    def _from_general(self) -> None:
        """The fast path's totals from the general loop's variables (every running sequence decodes)."""
        state = self.state
        self.k = iteration = state.stats.iterations
        for req in state.running:
            self._decoder(req, iteration, state.kv[req], iteration - state.gen[req] + self.O[req] - 1)
        self.general = False
