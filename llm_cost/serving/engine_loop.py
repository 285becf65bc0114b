"""The serving engine's general loop (`engine.serve`; its module doc states the rules): one loop turn
per iteration, every running sequence visited. `engine.serve` validates the run and takes one of
its fast paths (`engine.FAST_PATHS`) where one applies; `fast_engine` and `fast_prefix` hand
preempting stretches of a run to this loop.

`EngineLoop` is built from named parts, each a method a reader can find and replace:

- the K/V allocator (`ledger`, a `kv_ledger.KvLedger`: the free blocks and each sequence's, counted
  by `kv_blocks.blocks_for`; prefix caching plugs in there) and, without paging, the tokens held
  (`release`, `resize`);
- completion (`complete`: accepted drafts, roll-back, first tokens and finishes);
- the decoders' K/V (`allocate_decoders`, paged: blocks for the rows ahead) and the preemption
  policy (`preempt`: the latest-admitted running sequence, recomputed or swapped; `swap_in`), or
  without a reservation the stall (`stall_unreserved`): in `engine_preemption`;
- the batch composition (`compose_prefill`: decode rows first, then prompt chunks up to the budget);
- the admission policy (`swap_in`: swapped sequences first, then `admit`: the queue);
- the speculation policy (`spec_batch.choose_gamma`) and the pipeline (`pipeline.Pipeline`: `launch`
  sends an iteration in flight, the next one a stage-time later under `orca`; `run` completes those
  that landed); decode stretches (`decode_stretch`).
Symbols: `P` / `O` the prompt / output tokens, `K` a context's K/V tokens held, `B` the block size;
the statistics a `run_stats.RunStats`, each launch added by `RunStats.count_launch`.
"""

from __future__ import annotations

import math
from collections import deque

from llm_cost.errors import InvalidValueError
from llm_cost.serving import decode_stretch
from llm_cost.serving.engine_preemption import PreemptionPolicy
from llm_cost.serving.engine_routed import CachedAdmission, RoutedArrivals
from llm_cost.serving.engine_state import EngineState
from llm_cost.serving.iteration import compute_bound_rows, held_tokens_fn, iteration_time
from llm_cost.serving.kv_blocks import block_pool, blocks_for
from llm_cost.serving.kv_ledger import KvLedger
from llm_cost.serving.pipeline import Pipeline
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
    return (cost, replica.kv_capacity_tokens, held, held or (lambda context: context), len(workload), workload.prompt,
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
    state = loop.state
    if handback:
        return ("done" if state.finished == loop.n or state.deadlock else "handback"), state
    if on_progress:
        on_progress(loop.n, loop.n)
    return ServeResult.build(workload, replica, cfg, state.arr, state.first, state.fin, state.stats, state.deadlock,
                             generated=state.gen, prefilled=state.pre)


class EngineLoop(PreemptionPolicy, CachedAdmission, RoutedArrivals):
    """One run of the general loop: the settings (read once), the `EngineState` it advances and its
    K/V allocator (`ledger`, a `kv_ledger.KvLedger` over the state's blocks); the decoders' K/V and
    the preemption policy come from `engine_preemption.PreemptionPolicy`, prefix caching's admission
    and a router's arrivals from `engine_routed`."""

    def __init__(self, workload: Workload, replica: Replica, cfg: ServeConfig, res, state=None) -> None:
        self.cost, self.cap, self.held, self.K, requests, self.P, self.O, policy = run_basics(workload, replica, cfg)
        self.n, self.cfg, self.res = requests, cfg, res
        self.paged, self.none = policy == "paged", policy == "none"
        self.spec = spec = cfg.spec
        self.gmax = spec.gamma if spec else 0
        self.B = cfg.block_size
        self.total_blocks, self.wm_blocks = block_pool(self.cap, self.B, cfg.watermark) if self.paged else (0, 0)
        closed = workload.concurrency
        self.sent = requests if closed is None else min(closed, requests)
        # a closed loop's re-sent requests that miss the iteration a busy engine starts as they are sent
        # (`Workload.client_round_trip`): marked by `finish`, held back once by `arrivals`
        self.resent = [False] * requests if closed is not None and workload.client_round_trip else None
        self.stages = self.cost.stages
        self.pipeline = Pipeline(self.stages, cfg.pipeline, cfg.max_batch)
        self.bound_rows = compute_bound_rows(self.cost, self.pipeline.iteration_stages)  # the energy's split
        if state is None:
            acceptance = (Acceptance(spec) if spec.bursty is not None else AcceptanceStreams(spec, self.O)) \
                if spec else None
            arrivals = workload.arrival_s if closed is None else [0.0] * requests
            state = EngineState.start(self.P, arrivals, self.total_blocks, acceptance)
        self.state = state
        self.accept = state.acceptance.accepted if state.acceptance else None
        self.kv_bytes, self.host = self.cost.kv_token_bytes, cfg.host_bytes_per_s
        self.inflight = [False] * requests
        self.swapped: deque[int] = deque()
        self.flights = self.pipeline.flights  # the iterations in flight (the parts that wait on them read it)
        self.launches = self.last_pre = state.stats.iterations
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
        self.ledger = KvLedger(state, self.B, self.cache)  # paged: every block moves through it
        self.stretch = decode_stretch.DecodeStretch(self) if decode_stretch.applies(self, EngineLoop) else None

    # ---- the K/V held --------------------------------------------------------------------------

    def release(self, req: int) -> None:
        """Free request `req`'s K/V (paged: its blocks, `KvLedger.release`, a finished one's K/V kept
        for the cache; otherwise its tokens and reservation)."""
        state = self.state
        if self.paged:
            self.ledger.release(req, state.kv[req] if self.cache is not None and state.fin[req] == state.fin[req]
                                else 0)
        else:
            state.used -= self.K(state.kv[req])
            state.reserved -= self.res[req]

    def resize(self, req: int, tokens, old: int) -> None:
        """Request `req` now holds `tokens` all-layer K/V tokens (was `old` cached tokens): paged, exactly the
        blocks that hold them (a roll-back frees the spare ones)."""
        if self.paged:
            self.ledger.resize(req, blocks_for(tokens, self.B))
        else:
            self.state.used += tokens - self.K(old)

    def finish(self, req: int, done_s: float) -> None:
        """Request `req` is done at `done_s`; a closed loop's client sends its next request then."""
        state = self.state
        state.fin[req] = done_s
        self.release(req)
        del state.running[req]
        state.finished += 1
        state.in_system -= 1
        if self.sent < self.n:
            state.arr[self.sent] = done_s
            if self.resent is not None:
                self.resent[self.sent] = True
            self.sent += 1

    # ---- completion ----------------------------------------------------------------------------

    def complete(self, done_s: float, decs, gamma: int, pfs) -> None:
        """An iteration ends: each decoder accepts its drafts and gains min(n + 1, left) tokens, its K/V
        rolled back to prompt + generated - 1; each prefill chunk is cached, a finished prompt emits
        the first token. `P` / `O` each request's prompt / output tokens, `B` the block size."""
        state, P, O, held, inflight = self.state, self.P, self.O, self.held, self.inflight
        gen, kv = state.gen, state.kv
        flat, B, blocks, ledger = self.paged and not held, self.B, state.blocks, self.ledger
        rounds = tokens = 0
        drawn = [self.accept(req, gamma) for req in decs] if gamma else ()
        for slot, req in enumerate(decs):
            inflight[req] = False
            gi = gen[req]
            if gamma:
                tok = min(drawn[slot] + 1, O[req] - gi)
                rounds += 1
                tokens += tok
                gi += tok
            else:
                gi += 1
            gen[req] = gi
            old = kv[req]
            new = kv[req] = P[req] + gi - 1
            if flat:  # `resize` inlined (a hot loop): paged blocks without windows
                want = blocks_for(new, B)
                if want != blocks[req]:
                    ledger.resize(req, want)
            else:
                self.resize(req, held(new) if held else new, old)
            if gi >= O[req]:
                self.finish(req, done_s)
        if rounds:
            state.stats.spec_rounds += rounds
            state.stats.spec_tokens += tokens
        cache = self.cache
        if cache is not None and pfs:
            ledger.trim()
        for req, chunk in pfs:
            inflight[req] = False
            old = kv[req]
            state.pre[req] += chunk
            kv[req] = state.pre[req]
            if cache is not None:  # its newly full prefix blocks join the cache; a duplicate's copy is freed
                ledger.register(req, state.pre[req])
            if state.pre[req] == state.need[req]:
                gen[req] += 1
                kv[req] = P[req] + gen[req] - 1
                if state.first[req] != state.first[req]:
                    state.first[req] = done_s
            self.resize(req, self.K(kv[req]), old)
            if gen[req] >= O[req] and state.fin[req] != state.fin[req]:
                self.finish(req, done_s)

    # ---- one iteration's parts -----------------------------------------------------------------

    def arrivals(self) -> None:
        """Queue the requests that have arrived by the clock; under `Workload.client_round_trip` one
        re-sent at this very clock waits while the engine has work (the iteration starting now runs
        without it: its client is still receiving its predecessor's last token)."""
        state = self.state
        held = self.resent is not None and bool(state.running or state.waiting or self.swapped or self.flights)
        while state.nxt < self.sent and state.arr[state.nxt] <= state.t:
            if held and self.resent[state.nxt] and state.arr[state.nxt] == state.t:
                break
            state.waiting.append(state.nxt)
            state.stats.in_system_area += state.t - state.arr[state.nxt]
            state.in_system += 1
            state.nxt += 1

    def may_hand_back(self, handback: int) -> bool:
        """Every running sequence decodes, nothing is swapped or in flight, the queue's head is fresh,
        and `handback` iterations have passed since the last preemption."""
        state = self.state
        head = state.waiting[0] if state.waiting else None
        return (state.stats.iterations - self.last_pre >= handback and not self.swapped and not self.flights
                and (head is None or (state.pre[head] == 0 and state.need[head] == self.P[head]))
                and all(state.pre[req] >= state.need[req] for req in state.running))

    def ready(self) -> tuple[list, list]:
        """(decoders up to max_batch, sequences still prefilling) among the running ones not in flight."""
        state, decoders, prefilling = self.state, [], []
        for req in state.running:
            if self.inflight[req]:
                continue
            (decoders if state.pre[req] >= state.need[req] else prefilling).append(req)
        return decoders[:self.cfg.max_batch], prefilling

    def compose_prefill(self, prefilling, budget):
        """The batch composition after the decode rows: prompt chunks of the running prefills while the
        token budget lasts (paged: while their blocks fit). ([(req, chunk)], budget left)."""
        state, run = self.state, []
        for req in prefilling:
            if budget <= 0:
                break
            chunk = min(state.need[req] - state.pre[req], budget)
            if self.paged:
                want = blocks_for(self.K(state.pre[req] + chunk), self.B) - state.blocks[req]
                if not self.ledger.fits(want):
                    continue
                self.ledger.take(req, want)
            run.append((req, chunk))
            budget -= chunk
        return run, budget

    def admit(self, dec_run, pf_run, budget) -> None:
        """The admission policy: queued requests (recompute victims first) while the batch has room, the
        reservation fits and (paged) the free blocks after it stay above the watermark; `K` the K/V
        tokens held at a context."""
        state, K, paged, none = self.state, self.K, self.paged, self.none
        room = self.cap - state.used - sum(K(state.kv[req] + 1) - K(state.kv[req]) for req in dec_run) if none else 0
        while (state.waiting and not self.swapped and len(state.running) < self.pipeline.hold and budget > 0
               and len(dec_run) + len(pf_run) < self.cfg.max_batch):
            req = state.waiting[0]
            if self.cache is not None:
                if not self.admit_cached(req, budget, pf_run):
                    break
                budget -= min(state.need[req] - state.pre[req], budget)
                state.waiting.popleft()
                state.running[req] = None
                continue
            chunk = min(state.need[req] - state.pre[req], budget)
            if paged:
                want = blocks_for(K(state.pre[req] + chunk), self.B)
                if not self.ledger.fits(want, self.wm_blocks, alone=not state.running):
                    break
                self.ledger.take(req, want)
            elif none:
                if K(state.need[req]) > room:
                    break
                room -= K(state.need[req])
            elif state.reserved + self.res[req] > self.cap:
                break
            else:
                state.reserved += self.res[req]
            state.waiting.popleft()
            state.running[req] = None
            pf_run.append((req, chunk))
            budget -= chunk

    def idle(self) -> bool:
        """Nothing to run: wait for a flight or an arrival (True), or stop: done, or a deadlock (False)."""
        state = self.state
        if self.flights:
            t_new = max(state.t, self.pipeline.next_landing())
        elif state.running or state.waiting or self.swapped:
            holders = tuple(Holder(req, self.P[req], state.gen[req], state.kv[req], self.O[req] - state.gen[req])
                            for req in state.running)
            state.deadlock = Deadlock(state.stats.iterations, state.t, self.cap, holders, len(state.waiting))
            return False
        elif state.nxt < self.sent:
            t_new = state.arr[state.nxt]
        else:
            return False
        state.stats.in_system_area += (t_new - state.t) * state.in_system
        state.t = t_new
        return True

    def launch(self, dec_run, pf_run, gamma: int, rows: float, swap_s: float) -> None:
        """The iteration in flight until its time (`iteration.iteration_time` plus any swap transfer),
        sent down the pipeline (`Pipeline.send`: under `orca` the next one starts a stage-time later,
        otherwise when it lands)."""
        state, stats = self.state, self.state.stats
        dt, comm, draft = iteration_time(self.cost, self.held, state.kv, state.pre, dec_run, pf_run, gamma, rows,
                                         self.spec, self.pipeline.iteration_stages)
        stats.comm_s += comm
        stats.draft_s += draft
        dt += swap_s
        stats.gamma_sum += gamma * len(dec_run)
        stats.decode_slots += len(dec_run)
        self.launches += 1
        for req in dec_run:
            self.inflight[req] = True
        for req, _ in pf_run:
            self.inflight[req] = True
        step = self.pipeline.send(state.t, dt, self.launches, dec_run, gamma, pf_run)
        stats.count_launch(step, rows, self.bound_rows, len(state.running), state.used, state.in_system, state.reserved)
        state.t += step

    # ---- the loop ------------------------------------------------------------------------------

    def run(self, on_progress=None, handback: int = 0, until: float = math.inf) -> None:
        """Iterations until every request is done, a deadlock, (`handback`) the fast path may resume, or
        the clock reaches `until` (a fleet's next arrival: the router reads the replicas then)."""
        state, cfg, spec = self.state, self.cfg, self.spec
        every = max(1, self.n // 100)
        while True:
            for done_s, _, decs, gamma_done, pfs in self.pipeline.landed(state.t):
                self.complete(done_s, decs, gamma_done, pfs)
            if state.t >= until:
                return
            self.arrivals()
            if on_progress and state.finished and state.finished % every == 0:
                on_progress(state.finished, self.n)
            if handback and self.may_hand_back(handback):
                return
            stretch = self.stretch  # decode-only iterations in one step (`decode_stretch`) from `after` on
            if (stretch and state.stats.iterations >= stretch.after
                    and stretch.advance(until, handback, on_progress, every)):
                continue
            decoders, prefilling = self.ready()
            gamma = choose_gamma(spec, self.cost, decoders, state.kv) if spec and decoders else 0
            preempted, swap_s = False, 0.0
            if self.paged:
                dec_run, gone, swap_s = self.allocate_decoders(decoders, gamma)
                if gone:
                    preempted = True
                    prefilling = [req for req in prefilling if req not in gone]
                    self.last_pre = state.stats.iterations
            elif self.none:
                dec_run = self.stall_unreserved(decoders)
            else:
                dec_run = decoders
            rows_dec = len(dec_run) * (gamma + 1)
            pf_run, budget = self.compose_prefill(prefilling, (cfg.prefill_chunk - rows_dec) if cfg.prefill_chunk
                                                  else math.inf)
            if self.cache is not None:  # the decoders' and chunks' blocks may have taken cached free blocks
                self.ledger.trim()
            moved = False
            if not preempted and len(dec_run) == len(decoders):  # admission only when nothing was preempted or stalled
                moved, seconds = self.swap_in()
                swap_s += seconds
                self.admit(dec_run, pf_run, budget)
            rows = rows_dec + sum(chunk for _, chunk in pf_run)
            if rows and self.tier is not None:  # the host link: prefix blocks back for the admitted, evicted ones out
                swap_s += self.reload_s + self.tier.sent(state.stats, self.host)
                self.reload_s = 0.0
            if rows == 0 and swap_s == 0.0:
                if moved:  # swapped in at no transfer time (a cost without bytes): decode it now
                    continue
                if self.idle():
                    continue
                return
            self.launch(dec_run, pf_run, gamma, rows, swap_s)
