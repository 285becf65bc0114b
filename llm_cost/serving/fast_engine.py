"""The serving engine's fast path: running totals instead of a visit to every sequence each iteration.

When the schedule has no choice that depends on one sequence's state (one pipeline stage, whole
prefills, K/V without windows, open-loop arrivals, a reservation policy that never stalls a decoder,
speculation off or at a fixed gamma with independent positions), every running sequence decodes in
every iteration from the one after its prefill to its last, and what it adds to an iteration is
known at its admission: in iteration a + j (a: its prefill) it holds kv = P + tokens gained so far
and, paged, ceil((kv + gamma + 1) / block) blocks (`spec_streams.trajectories`, its acceptances
drawn from its own stream, `spec_streams.AcceptanceStreams`). Admission adds that trajectory to two
running totals per iteration, packed in one int64 array (kv summed, blocks summed << 32), and one
finish count at a + R; each iteration then costs a few additions and the iteration's time: one call
of the pass cost's own evaluator for the target's pass and one for the draft's step
(`iteration.pass_timers`: `InlineTerms.evaluator`, coefficients bound, or `PassCost.time`), the
memory-only evaluator where a decode-only iteration is memory-bound for sure
(`InlineTerms.memory_bound_from`), and its pairs by `decode_pairs`: no pass time or pairs expression
of this module's own.

Paged KV preempts only when the decoders' blocks ahead exceed the free ones; the totals see that
(sum of blocks > capacity) and the fast path hands the run over to the engine's general loop at that
iteration (`handover`), which takes it back `HANDBACK` iterations after its last preemption, when
every running sequence decodes again; both draw the same acceptances. Everything else (admission
while the batch has room, the reservation fits and the free blocks stay above the watermark, the
statistics) is the general loop's, operation for operation, so the two agree
(tests/test_serving_engine.py).
"""

from __future__ import annotations

import math
from array import array
from dataclasses import fields

from llm_cost.serving import handover
from llm_cost.serving import eligibility
from llm_cost.serving.eligibility import FLAT_KV_ONE_STAGE, any_value
from llm_cost.roofline.pass_terms import causal_pairs, decode_pairs  # unchecked: a hot loop (roofline.terms)
from llm_cost.serving.run_stats import RunStats
from llm_cost.serving.kv_blocks import block_pool, blocks_for
from llm_cost.serving.iteration import pass_timers
from llm_cost.serving.spec_streams import CHUNK, SUB, AcceptanceStreams, trajectories

_LOW = (1 << 32) - 1
HANDBACK = 64  # general-loop iterations after a preemption before the fast path takes the run back


def _fast_spec(spec, cfg) -> bool:
    """Speculation the totals can follow: none, or a gamma fixed for the whole run with independent
    positions (`off-above-batch` never switching off: its threshold at least max_batch)."""
    if spec is None:
        return True
    if not {field.name for field in fields(spec)} <= FAST_SPEC_FIELDS or spec.bursty is not None:
        return False
    return spec.policy == "fixed" or (spec.policy == "off-above-batch" and spec.off_above >= cfg.max_batch)


# The `SpecConfig` fields the fast path knows (a new one takes the general loop); bursty must be None.
FAST_SPEC_FIELDS = frozenset(("gamma", "alpha", "c", "draft_cost", "policy", "off_above", "bursty", "seed"))
# The `ServeConfig` features the fast path supports, field by field: (field -> whether its value is
# supported). A field missing here, as a new feature's is until someone adds it, takes the general
# loop: eligibility is an allow-list, never a list of exclusions.
FAST_FEATURES = {
    "max_batch": any_value,
    "reservation": lambda value, cfg: value in ("paged", "declared", "max_len"),  # `none` stalls decoders
    "block_size": any_value,
    "watermark": any_value,
    "preemption": any_value,  # a preempting stretch runs in the general loop (`handover`)
    "prefill_chunk": lambda value, cfg: value is None,  # whole prefills only
    "spec": _fast_spec,
    "pipeline": any_value,  # with one stage (below) the pipeline has nothing to schedule
    "host_bytes_per_s": any_value,
    "scheduler": lambda value, cfg: value == "iteration",
    "prefix_caching": lambda value, cfg: not value,  # the cache lives in the general loop
    "kv_offload_bytes": lambda value, cfg: not value,  # the host tier lives in the general loop
}


def fast_eligible(workload, replica, cfg, longest: int) -> bool:
    """Whether `serve_fast` applies (module doc): every `ServeConfig` field in `FAST_FEATURES` with a
    supported value, the pass cost's and the workload's by `eligibility.FLAT_KV_ONE_STAGE` (one stage,
    K/V without windows or recurrent state) and `eligibility.OPEN_LOOP`, and the totals within 31 bits
    each; `longest` is the largest prompt + output."""
    if not eligibility.covers(workload, replica, cfg, config=FAST_FEATURES, cost=FLAT_KV_ONE_STAGE):
        return False
    gmax = cfg.spec.gamma if cfg.spec else 0
    return cfg.max_batch * (longest + gmax + 1) < 1 << 31  # the totals fit 31 bits each


def serve_fast(workload, replica, cfg, res, on_progress, general):
    """`engine.serve` by running totals (module doc); `general(state, handback)` is the engine's
    general loop, run from a state and handing back as `engine_loop.general_loop` says."""
    fast = _Fast(workload, replica, cfg, res)
    while True:
        if fast.run(on_progress):
            handover.close_segment(fast)
            return handover.result(fast, None)
        status, state = general(handover.to_general(fast), HANDBACK)
        if status == "done":
            return handover.result(fast, state)
        handover.from_general(fast, state)


class _Fast:
    """The fast path's state: the per-iteration totals and finish counts, each request's trajectory,
    the requests handed over from the general loop (`customs`: i -> (first iteration, rounds, first
    round of its stream, tokens generated before)) and the general loop's arrays once it has run.

    `run`'s locals: `iteration` (k) and `now` (t, when it starts); `packed` the iteration's totals,
    `cached` (S) the running decoders' K/V tokens and `blocks_ahead` their blocks; per request admitted,
    `req`, its `rounds` (R) and the `last` iteration of them (a + R); the iteration's time from
    `iteration.PassTimers`' fields (`target`, `target_memory`, `draft`, `draft_memory`, `draft_ratio`,
    and the K/V from which each is memory-bound, `mem_from` and `draft_mem_from`)."""

    def __init__(self, workload, replica, cfg, res) -> None:
        import numpy as np

        self.np, self.workload, self.replica, self.cfg, self.res = np, workload, replica, cfg, res
        cost, cap = replica.cost, replica.kv_capacity_tokens
        n_requests, outputs = len(workload), workload.output
        self.n, self.P, self.O, self.arr = n_requests, workload.prompt, outputs, list(workload.arrival_s)
        self.arrx = self.arr + [math.inf]  # the loop's arrivals, ending past every time
        self.P_array = np.fromiter(self.P, dtype=np.int64, count=n_requests)  # faster than asarray on a tuple
        self.O_array = np.fromiter(outputs, dtype=np.int64, count=n_requests)
        self.paged = cfg.reservation == "paged"
        spec = cfg.spec
        self.g = gamma = spec.gamma if spec else 0
        self.B = cfg.block_size
        self.total, self.wm = block_pool(cap, self.B, cfg.watermark) if self.paged else (0, 0)
        self.streams = AcceptanceStreams(spec, self.O_array) if gamma else None
        self.timers = pass_timers(cost, spec, gamma, cfg.max_batch)  # T of the target's pass and the draft's step
        self.need = np.maximum(self.O_array - 1, 0)
        self.R_all = np.zeros(n_requests, dtype=np.int64)
        self.size = 4 * n_requests + 1024
        self.D = np.zeros(self.size, dtype=np.int64)  # per iteration: sum of kv + (sum of blocks << 32)
        self.FIN = [0] * self.size  # requests finishing at the end of each iteration
        self.DRES = [0] * self.size if not self.paged else []  # their reservations (declared, max_len)
        self.T_end = array("d")  # per iteration: when it ends
        self.adm = array("q", bytes(8 * n_requests))  # per request: the iteration that prefills it
        self.first = np.full(n_requests, np.nan)
        self.fin = np.full(n_requests, np.nan)
        self.chunk = (0, 0, None, None, None, None, None, None)  # c_lo, c_hi, R, offsets, packed, extra, pairs, blocks
        self.t, self.k, self.running, self.head, self.nxt, self.finished, self.reserved = 0.0, 0, 0, 0, 0, 0, 0
        self.k0 = self.h0 = 0  # where the running segment of fast iterations started
        self.customs: dict[int, tuple] = {}
        self.stats = RunStats()
        self.general = None  # the general loop's per-request lists, once it has run
        self.every = max(1, n_requests // 100)

    def run(self, on_progress) -> bool:
        """Fast iterations from (k, t) until every request is done (True) or one would preempt (False): one loop
        turn per iteration, its calls the pass cost's evaluators, `decode_pairs` and the end time's append
        (module doc)."""
        (n_requests, prompt, res, cap, paged, total, gamma, rows_each, wm, max_batch, packed_array, FIN,
         DRES, size, adm, c_lo, c_hi, chunk_rounds, chunk_offsets, chunk_packed, extra, chunk_pairs, chunk_blocks,
         every, report, arrx, now, iteration, running, head, nxt, finished, reserved, arr_next, totals, over,
         reserving, append, done, low, target, target_memory, draft, draft_memory, draft_ratio, mem_from,
         draft_mem_from) = self.loop_locals()
        while True:
            while arr_next <= now:
                nxt += 1
                arr_next = arrx[nxt]
            decoders = running
            if decoders:
                packed = totals[iteration]
                blocks_ahead = packed >> 32
                if blocks_ahead > over:
                    break  # the decoders' blocks ahead do not fit: preemption, the general loop
                cached = packed & low
            elif head == nxt:  # nobody runs or waits
                if nxt < n_requests:
                    now = arr_next  # idle until the next arrival
                    continue
                done = True
                break
            else:
                cached = blocks_ahead = 0
            rows = decoders * rows_each
            admitting = head < nxt and decoders < max_batch
            full = admitting or cached < mem_from[decoders]  # the compute term is needed
            if full:
                pairs = decode_pairs(rows_each, decoders, cached)
            if admitting:
                free = total - blocks_ahead
                while head < nxt and running < max_batch:
                    req = head
                    if req >= c_hi:  # the next chunk's trajectories, prefill pairs and blocks
                        (c_lo, c_hi, chunk_rounds, chunk_offsets, chunk_packed, extra, chunk_pairs,
                         chunk_blocks) = self.chunk_of(req)
                    slot = req - c_lo
                    rounds = chunk_rounds[slot]
                    last = iteration + rounds  # its rounds in iterations k + 1 .. last, its finish at the end of last
                    if last + 2 > size:  # room for its rounds
                        packed_array, size = self.grow(last + 2)
                        totals = memoryview(packed_array)
                    if paged:
                        want = chunk_blocks[slot]
                        if free - want < wm and (running or free < want):
                            break
                        free -= want
                    elif reserved + res[req] > cap:
                        break
                    else:
                        reserved += res[req]
                        DRES[last] += res[req]
                    head += 1
                    running += 1
                    rows += prompt[req]
                    pairs += chunk_pairs[slot]
                    offset = chunk_offsets[slot]
                    seg = packed_array[iteration + 1:last + 1]  # empty for a request of one token (no rounds)
                    seg += chunk_packed[offset:offset + rounds] if offset >= 0 else extra[slot]
                    FIN[last] += 1
                    adm[req] = iteration
                if not rows:
                    break  # nothing can run (cannot happen: the worst request fits alone)
            # `iteration.totals_time`'s seconds (`pass_timers`): memory-bound for sure, no compute term, no pairs
            dt = target(rows, cached + rows, pairs) if full else target_memory(rows, cached + rows)
            if gamma and decoders:
                ctx = cached + decoders
                one = draft(decoders, ctx, ctx) if cached < draft_mem_from[decoders] else draft_memory(decoders, ctx)
                dt = dt + gamma * (one if draft_ratio is None else draft_ratio * one)
            now += dt
            append(now)
            finishing = FIN[iteration]
            iteration += 1
            if finishing:
                running -= finishing
                if reserving:
                    reserved -= DRES[iteration - 1]
                finished += finishing
                if on_progress:
                    if finished >= report:
                        on_progress(finished, n_requests)
                        report = (finished // every + 1) * every
        return self.stored(done, on_progress, now, iteration, running, head, nxt, finished, reserved, packed_array, FIN,
                           DRES, size, (c_lo, c_hi, chunk_rounds, chunk_offsets, chunk_packed, extra, chunk_pairs,
                                        chunk_blocks))

    def loop_locals(self) -> tuple:
        """What `run`'s loop reads as locals (a local is faster than an attribute), from the state: one
        turn per iteration (`iteration.pass_timers`' evaluators, the memory-only ones from `memory_bound_from`'s
        K/V on), the packed totals read through a memoryview, once per `SUB` requests their trajectories
        (`chunk_of`)."""
        n_requests, prompt, res, cap = self.n, self.P, self.res, self.replica.kv_capacity_tokens
        paged, total, gamma = self.paged, self.total, self.g
        rows_each = gamma + 1
        wm = self.wm
        every, arrx = self.every, self.arrx
        over = total if paged else 1 << 62  # blocks ahead past this: preemption
        return (n_requests, prompt, res, cap, paged, total, gamma, rows_each, wm, self.cfg.max_batch, self.D,
                self.FIN, self.DRES, self.size, self.adm, *self.chunk, every, (self.finished // every + 1) * every,
                arrx, self.t, self.k, self.running, self.head, self.nxt, self.finished, self.reserved, arrx[self.nxt],
                memoryview(self.D),  # its entries as Python ints, faster than D.item
                over, not paged, self.T_end.append, False, _LOW, *self.timers)

    def stored(self, done: bool, on_progress, now, iteration, running, head, nxt, finished, reserved, packed_array, FIN,
               DRES, size, chunk) -> bool:
        """`run`'s locals written back to the state; `done`, after the last progress report when done."""
        self.t, self.k, self.running, self.head, self.nxt = now, iteration, running, head, nxt
        self.finished, self.reserved = finished, reserved
        self.D, self.FIN, self.DRES, self.size, self.chunk = packed_array, FIN, DRES, size, chunk
        if done and on_progress:
            on_progress(self.n, self.n)
        return done

    def chunk_of(self, req: int) -> tuple:
        """The trajectories (`spec_streams.trajectories`), prefill causal pairs and prompt blocks of the
        `SUB` requests from request `req`'s on (a part of one `CHUNK`): (c_lo, c_hi, R, offsets, packed, extra, pairs,
        blocks), Python lists where the loop indexes them; records each request's R in `R_all`."""
        c_lo = req - req % SUB
        c_hi, ch = min(c_lo + SUB, self.n), c_lo // CHUNK
        pc = self.P_array[c_lo:c_hi]
        Rc, offs, Fc, extra = trajectories(pc, self.need[c_lo:c_hi], self.g, self.g + 1,
                                           self.B if self.paged else None, self.streams, ch, c_lo - ch * CHUNK)
        self.R_all[c_lo:c_hi] = Rc
        return (c_lo, c_hi, Rc.tolist(), offs.tolist(), Fc, extra, causal_pairs(pc).tolist(),
                blocks_for(pc, self.B).tolist())

    def grow(self, end: int) -> tuple:
        """Room in the per-iteration totals, finish counts and reservations for iterations before `end`:
        grow by half again or to fit. (the totals array, a new one; its size)."""
        np = self.np
        grow = max(self.size // 2, end - self.size)
        self.D = np.concatenate((self.D, np.zeros(grow, dtype=np.int64)))
        self.FIN += [0] * grow  # in place: the loop's alias sees it
        if not self.paged:
            self.DRES += [0] * grow
        self.size += grow
        return self.D, self.size
