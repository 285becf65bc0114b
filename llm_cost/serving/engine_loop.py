"""The serving engine's general loop (`engine.serve`; its module doc states the rules): one loop turn
per iteration, every running sequence visited. `engine.serve` validates the run and takes one of
its fast paths (`engine.FAST_PATHS`) where one applies; `fast_engine` and `fast_prefix` hand
preempting stretches of a run to this loop.

`EngineLoop` is built from named parts, each a method a reader can find and replace:

- the K/V ledger (`release`, `resize`: blocks by `kv_blocks.blocks_for`, or tokens held);
- completion (`complete`: accepted drafts, roll-back, first tokens and finishes);
- the decoders' K/V (`allocate_decoders`, paged: blocks for the rows ahead) and the preemption
  policy (`preempt`: the latest-admitted running sequence, recomputed or swapped; `swap_in`), or
  without a reservation the stall (`stall_unreserved`): in `engine_preemption`;
- the batch composition (`compose_prefill`: decode rows first, then prompt chunks up to the budget);
- the admission policy (`swap_in`: swapped sequences first, then `admit`: the queue);
- the speculation policy (`spec_batch.choose_gamma`) and the pipeline (`launch`: an iteration in
  flight, the next one a stage-time later under `orca`); decode stretches (`decode_stretch`).
"""

from __future__ import annotations

import heapq
import math
from collections import deque

from llm_cost.errors import InvalidValueError
from llm_cost.serving import decode_stretch
from llm_cost.serving.engine_preemption import PreemptionPolicy
from llm_cost.serving.engine_routed import CachedAdmission, RoutedArrivals
from llm_cost.serving.engine_state import EngineState, count_launch
from llm_cost.serving.iteration import compute_bound_rows, held_tokens_fn, iteration_time
from llm_cost.serving.kv_blocks import block_pool, blocks_for
from llm_cost.serving.replica import Replica
from llm_cost.serving.reservations import Deadlock, Holder
from llm_cost.serving.serve_config import ServeConfig
from llm_cost.serving.serve_result import ServeResult
from llm_cost.serving.spec_batch import Acceptance, choose_gamma
from llm_cost.serving.spec_streams import AcceptanceStreams
from llm_cost.serving.workload import Workload


def run_basics(workload: Workload, replica: Replica, cfg: ServeConfig) -> tuple:
    """What `engine.serve` validates and the loop runs on: (the replica's iteration cost, its KV capacity
    in tokens, `held_tokens_fn` of the cost (None without windows), K: a sequence's context -> the K/V
    tokens it holds, requests, prompts, outputs, the reservation policy)."""
    cost = replica.cost
    held = held_tokens_fn(cost)
    return (cost, replica.kv_capacity_tokens, held, held or (lambda c: c), len(workload), workload.prompt,
            workload.output, cfg.reservation)


def general_loop(workload: Workload, replica: Replica, cfg: ServeConfig, res, on_progress=None, state=None,
                 handback: int = 0):
    """The loop of the module doc over a validated workload (`serve`); `res` the reservations.

    With `state` (an `EngineState`, the fast path's `handover`) it starts from it; with `handback` > 0
    it returns ("handback", state) at the first loop turn, `handback` iterations or more after its
    start and after its last preemption, where every running sequence decodes, nothing is swapped out
    and the queue's head is a fresh request; and ("done", state) at the end, instead of a `ServeResult`."""
    loop = EngineLoop(workload, replica, cfg, res, state)
    loop.run(on_progress, handback)
    s = loop.state
    if handback:
        return ("done" if s.finished == loop.n or s.deadlock else "handback"), s
    if on_progress:
        on_progress(loop.n, loop.n)
    return ServeResult.build(workload, replica, cfg, s.arr, s.first, s.fin, s.st, s.deadlock, needed=s.needed(loop.P))


class EngineLoop(PreemptionPolicy, CachedAdmission, RoutedArrivals):
    """One run of the general loop: the settings (read once) and the `EngineState` it advances; the
    decoders' K/V and the preemption policy come from `engine_preemption.PreemptionPolicy`, prefix
    caching's admission and a router's arrivals from `engine_routed`."""

    def __init__(self, workload: Workload, replica: Replica, cfg: ServeConfig, res, state=None) -> None:
        self.cost, self.cap, self.held, self.K, n, self.P, self.O, policy = run_basics(workload, replica, cfg)
        self.n, self.cfg, self.res = n, cfg, res
        self.paged, self.none = policy == "paged", policy == "none"
        self.spec = spec = cfg.spec
        self.gmax = spec.gamma if spec else 0
        self.B = cfg.block_size
        self.total_blocks, self.wm_blocks = block_pool(self.cap, self.B, cfg.watermark) if self.paged else (0, 0)
        closed = workload.concurrency
        self.sent = n if closed is None else min(closed, n)
        self.stages = stages = self.cost.stages
        self.orca_pipe = stages > 1 and cfg.pipeline == "orca"
        self.micro = stages > 1 and cfg.pipeline == "microbatch"
        self.bound_rows = compute_bound_rows(self.cost, stages if self.micro else 1)  # the energy's split
        self.hold = cfg.max_batch * stages if self.orca_pipe else cfg.max_batch  # max_batch per batch in flight
        if state is None:
            acceptance = (Acceptance(spec) if spec.bursty is not None else AcceptanceStreams(spec, self.O)) \
                if spec else None
            state = EngineState.start(self.P, workload.arrival_s if closed is None else [0.0] * n, self.total_blocks,
                                      acceptance)
        self.state = state
        self.accept = state.acceptance.accepted if state.acceptance else None
        self.kv_bytes, self.host = self.cost.kv_token_bytes, cfg.host_bytes_per_s
        self.inflight = [False] * n
        self.swapped: deque[int] = deque()
        self.flights: list = []  # heap of (done_s, launch number, decoders, gamma, prefills [(i, q)])
        self.launches = self.last_pre = state.st["iterations"]
        self.cache = None
        if cfg.prefix_caching:
            if self.held is not None:
                raise InvalidValueError("prefix_caching runs on K/V without windowed layers (a window's blocks "
                                        "are not a prompt's prefix)", params=("prefix_caching",))
            from llm_cost.serving.prefix_cache import PrefixCache

            self.cache = PrefixCache(workload, self.B)
        self.tier, self.reload_s = None, 0.0  # K/V offload: the host tier; reload seconds for the next launch
        if cfg.kv_offload_bytes > 0:
            from llm_cost.serving.host_tier import HostTier

            self.tier = HostTier(cfg.kv_offload_bytes, self.B * self.kv_bytes)
            if self.cache is not None:
                self.cache.host = self.tier
        self.stretch = decode_stretch.DecodeStretch(self) if decode_stretch.applies(self, EngineLoop) else None

    # ---- the K/V ledger ------------------------------------------------------------------------

    def release(self, i: int) -> None:
        """Free request i's K/V (paged: its blocks; otherwise its tokens and reservation)."""
        s = self.state
        if self.paged:
            own = s.blocks[i]
            if self.cache is not None:  # its cached blocks are the cache's; the unreferenced ones are free
                self.cache.trim(s.free)
                own = s.blocks[i] - self.cache.held[i] + self.cache.release(i, s.kv[i] if s.fin[i] == s.fin[i] else 0)
            s.free += own
            s.used -= own * self.B
            s.blocks[i] = 0
        else:
            s.used -= self.K(s.kv[i])
            s.reserved -= self.res[i]

    def resize(self, i: int, tokens, old: int) -> None:
        """Request i now holds `tokens` all-layer K/V tokens (was `old` cached tokens): paged, exactly the
        blocks that hold them (a roll-back frees the spare ones)."""
        s = self.state
        if self.paged:
            want = blocks_for(tokens, self.B)
            s.free += s.blocks[i] - want
            s.used += (want - s.blocks[i]) * self.B
            s.blocks[i] = want
        else:
            s.used += tokens - self.K(old)

    def finish(self, i: int, done_s: float) -> None:
        """Request i is done at `done_s`; a closed loop's client sends its next request then."""
        s = self.state
        s.fin[i] = done_s
        self.release(i)
        del s.running[i]
        s.finished += 1
        s.in_system -= 1
        if self.sent < self.n:
            s.arr[self.sent] = done_s
            self.sent += 1

    # ---- completion ----------------------------------------------------------------------------

    def complete(self, done_s: float, decs, g: int, pfs) -> None:
        """An iteration ends: each decoder accepts its drafts and gains min(n + 1, left) tokens, its K/V
        rolled back to prompt + generated - 1; each prefill chunk is cached, a finished prompt emits
        the first token."""
        s, P, O, held, inflight = self.state, self.P, self.O, self.held, self.inflight
        gen, kv = s.gen, s.kv
        flat, B, blocks = self.paged and not held, self.B, s.blocks
        rounds = tokens = 0
        drawn = [self.accept(i, g) for i in decs] if g else ()
        for k, i in enumerate(decs):
            inflight[i] = False
            gi = gen[i]
            if g:
                tok = min(drawn[k] + 1, O[i] - gi)
                rounds += 1
                tokens += tok
                gi += tok
            else:
                gi += 1
            gen[i] = gi
            old = kv[i]
            new = kv[i] = P[i] + gi - 1
            if flat:  # `resize` inlined (a hot loop): paged blocks without windows
                want = blocks_for(new, B)
                if want != blocks[i]:
                    s.free += blocks[i] - want
                    s.used += (want - blocks[i]) * B
                    blocks[i] = want
            else:
                self.resize(i, held(new) if held else new, old)
            if gi >= O[i]:
                self.finish(i, done_s)
        if rounds:
            s.st["spec_rounds"] += rounds
            s.st["spec_tokens"] += tokens
        cache = self.cache
        if cache is not None and pfs:
            cache.trim(s.free)
        for i, q in pfs:
            inflight[i] = False
            old = kv[i]
            s.pre[i] += q
            kv[i] = s.pre[i]
            if cache is not None:  # its newly full prefix blocks join the cache; a duplicate's copy is freed
                dup = cache.register(i, s.pre[i])
                s.free += dup
                s.used -= dup * self.B
            if s.pre[i] == s.need[i]:
                gen[i] += 1
                kv[i] = P[i] + gen[i] - 1
                if s.first[i] != s.first[i]:
                    s.first[i] = done_s
            self.resize(i, self.K(kv[i]), old)
            if gen[i] >= O[i] and s.fin[i] != s.fin[i]:
                self.finish(i, done_s)

    # ---- one iteration's parts -----------------------------------------------------------------

    def arrivals(self) -> None:
        """Queue the requests that have arrived by the clock."""
        s = self.state
        while s.nxt < self.sent and s.arr[s.nxt] <= s.t:
            s.waiting.append(s.nxt)
            s.st["area_sys"] += s.t - s.arr[s.nxt]
            s.in_system += 1
            s.nxt += 1

    def may_hand_back(self, handback: int) -> bool:
        """Every running sequence decodes, nothing is swapped or in flight, the queue's head is fresh,
        and `handback` iterations have passed since the last preemption."""
        s = self.state
        head = s.waiting[0] if s.waiting else None
        return (s.st["iterations"] - self.last_pre >= handback and not self.swapped and not self.flights
                and (head is None or (s.pre[head] == 0 and s.need[head] == self.P[head]))
                and all(s.pre[i] >= s.need[i] for i in s.running))

    def ready(self) -> tuple[list, list]:
        """(decoders up to max_batch, sequences still prefilling) among the running ones not in flight."""
        s, decoders, prefilling = self.state, [], []
        for i in s.running:
            if self.inflight[i]:
                continue
            (decoders if s.pre[i] >= s.need[i] else prefilling).append(i)
        return decoders[:self.cfg.max_batch], prefilling

    def compose_prefill(self, prefilling, budget):
        """The batch composition after the decode rows: prompt chunks of the running prefills while the
        token budget lasts (paged: while their blocks fit). ([(i, q)], budget left)."""
        s, run = self.state, []
        for i in prefilling:
            if budget <= 0:
                break
            q = min(s.need[i] - s.pre[i], budget)
            if self.paged:
                want = blocks_for(self.K(s.pre[i] + q), self.B) - s.blocks[i]
                if want > s.free:
                    continue
                s.free -= want
                s.used += want * self.B
                s.blocks[i] += want
            run.append((i, q))
            budget -= q
        return run, budget

    def admit(self, dec_run, pf_run, budget) -> None:
        """The admission policy: queued requests (recompute victims first) while the batch has room, the
        reservation fits and (paged) the free blocks after it stay above the watermark."""
        s, K, paged, none = self.state, self.K, self.paged, self.none
        room = self.cap - s.used - sum(K(s.kv[i] + 1) - K(s.kv[i]) for i in dec_run) if none else 0
        while (s.waiting and not self.swapped and len(s.running) < self.hold and budget > 0
               and len(dec_run) + len(pf_run) < self.cfg.max_batch):
            i = s.waiting[0]
            if self.cache is not None:
                if not self.admit_cached(i, budget, pf_run):
                    break
                budget -= min(s.need[i] - s.pre[i], budget)
                s.waiting.popleft()
                s.running[i] = None
                continue
            q = min(s.need[i] - s.pre[i], budget)
            if paged:
                want = blocks_for(K(s.pre[i] + q), self.B)
                if s.free - want < self.wm_blocks and (s.running or s.free < want):
                    break
                s.free -= want
                s.used += want * self.B
                s.blocks[i] = want
            elif none:
                if K(s.need[i]) > room:
                    break
                room -= K(s.need[i])
            elif s.reserved + self.res[i] > self.cap:
                break
            else:
                s.reserved += self.res[i]
            s.waiting.popleft()
            s.running[i] = None
            pf_run.append((i, q))
            budget -= q

    def idle(self) -> bool:
        """Nothing to run: wait for a flight or an arrival (True), or stop: done, or a deadlock (False)."""
        s = self.state
        if self.flights:
            t_new = max(s.t, self.flights[0][0])
        elif s.running or s.waiting or self.swapped:
            holders = tuple(Holder(i, self.P[i], s.gen[i], s.kv[i], self.O[i] - s.gen[i]) for i in s.running)
            s.deadlock = Deadlock(s.st["iterations"], s.t, self.cap, holders, len(s.waiting))
            return False
        elif s.nxt < self.sent:
            t_new = s.arr[s.nxt]
        else:
            return False
        s.st["area_sys"] += (t_new - s.t) * s.in_system
        s.t = t_new
        return True

    def launch(self, dec_run, pf_run, g: int, rows: float, swap_s: float) -> None:
        """The iteration in flight until its time (`iteration.iteration_time` plus any swap transfer);
        the pipeline: under `orca` the next one starts a stage-time later, otherwise when it ends."""
        s, st = self.state, self.state.st
        dt, comm, draft = iteration_time(self.cost, self.held, s.kv, s.pre, dec_run, pf_run, g, rows, self.spec,
                                         self.stages if self.micro else 1)
        st["comm"] += comm
        st["draft_s"] += draft
        dt += swap_s
        st["gamma_sum"] += g * len(dec_run)
        st["dec_slots"] += len(dec_run)
        self.launches += 1
        for i in dec_run:
            self.inflight[i] = True
        for i, _ in pf_run:
            self.inflight[i] = True
        heapq.heappush(self.flights, (s.t + dt, self.launches, dec_run, g, pf_run))
        step = dt / self.stages if self.orca_pipe else dt
        count_launch(st, step, rows, self.bound_rows, len(s.running), s.used, s.in_system, s.reserved)
        s.t += step

    # ---- the loop ------------------------------------------------------------------------------

    def run(self, on_progress=None, handback: int = 0, until: float = math.inf) -> None:
        """Iterations until every request is done, a deadlock, (`handback`) the fast path may resume, or
        the clock reaches `until` (a fleet's next arrival: the router reads the replicas then)."""
        s, cfg, spec = self.state, self.cfg, self.spec
        every = max(1, self.n // 100)
        while True:
            while self.flights and self.flights[0][0] <= s.t:
                done_s, _, decs, g_done, pfs = heapq.heappop(self.flights)
                self.complete(done_s, decs, g_done, pfs)
            if s.t >= until:
                return
            self.arrivals()
            if on_progress and s.finished and s.finished % every == 0:
                on_progress(s.finished, self.n)
            if handback and self.may_hand_back(handback):
                return
            stretch = self.stretch  # decode-only iterations in one step (`decode_stretch`) from `after` on
            if stretch and s.st["iterations"] >= stretch.after and stretch.advance(until, handback, on_progress, every):
                continue
            decoders, prefilling = self.ready()
            g = choose_gamma(spec, self.cost, decoders, s.kv) if spec and decoders else 0
            preempted, swap_s = False, 0.0
            if self.paged:
                dec_run, gone, swap_s = self.allocate_decoders(decoders, g)
                if gone:
                    preempted = True
                    prefilling = [i for i in prefilling if i not in gone]
                    self.last_pre = s.st["iterations"]
            elif self.none:
                dec_run = self.stall_unreserved(decoders)
            else:
                dec_run = decoders
            rows_dec = len(dec_run) * (g + 1)
            pf_run, budget = self.compose_prefill(prefilling, (cfg.prefill_chunk - rows_dec) if cfg.prefill_chunk
                                                  else math.inf)
            if self.cache is not None:  # the decoders' and chunks' blocks may have taken cached free blocks
                self.cache.trim(s.free)
            moved = False
            if not preempted and len(dec_run) == len(decoders):  # admission only when nothing was preempted or stalled
                moved, seconds = self.swap_in()
                swap_s += seconds
                self.admit(dec_run, pf_run, budget)
            rows = rows_dec + sum(q for _, q in pf_run)
            if rows and self.tier is not None:  # the host link: prefix blocks back for the admitted, evicted ones out
                swap_s += self.reload_s + self.tier.sent(s.st, self.host)
                self.reload_s = 0.0
            if rows == 0 and swap_s == 0.0:
                if moved:  # swapped in at no transfer time (a cost without bytes): decode it now
                    continue
                if self.idle():
                    continue
                return
            self.launch(dec_run, pf_run, g, rows, swap_s)
