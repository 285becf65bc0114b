"""The serving engine's fast path: running totals instead of a visit to every sequence each iteration.

When the schedule has no choice that depends on one sequence's state (one pipeline stage, whole
prefills, K/V without windows, open-loop arrivals, a reservation policy that never stalls a decoder,
speculation off or at a fixed gamma with independent positions), every running sequence decodes in
every iteration from the one after its prefill to its last, and what it adds to an iteration is
known at its admission: in iteration a + j (a: its prefill) it holds kv = P + tokens gained so far
and, paged, ceil((kv + gamma + 1) / block) blocks (`spec_streams.trajectories`, its acceptances
drawn from its own stream, `spec_streams.AcceptanceStreams`). Admission adds that trajectory to two
running totals per iteration, packed in one int64 array (kv summed, blocks summed << 32), and one
finish count at a + R; each iteration then costs a few additions and `iteration.totals_time_fn`.

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
import operator
from array import array

from llm_cost.serving import handover
from llm_cost.serving.iteration import decode_iterations_fn, totals_time_fn
from llm_cost.serving.spec_streams import CHUNK, AcceptanceStreams, trajectories

_LOW = (1 << 32) - 1
HANDBACK = 64  # general-loop iterations after a preemption before the fast path takes the run back


def fast_eligible(workload, replica, cfg, held) -> bool:
    """Whether `serve_fast` applies (module doc)."""
    spec = cfg.spec
    if replica.cost.stages != 1 or cfg.prefill_chunk is not None or held is not None:
        return False
    if workload.concurrency is not None or cfg.reservation not in ("paged", "declared", "max_len"):
        return False
    if spec is not None and (spec.bursty is not None or spec.policy == "adaptive"
                             or (spec.policy == "off-above-batch" and spec.off_above < cfg.max_batch)):
        return False
    gmax = spec.gamma if spec else 0
    longest = max(map(operator.add, workload.prompt, workload.output)) + gmax + 1
    return cfg.max_batch * longest < 1 << 31  # the totals fit 31 bits each


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
    round of its stream, tokens generated before)) and the general loop's arrays once it has run."""

    def __init__(self, workload, replica, cfg, res) -> None:
        import numpy as np

        self.np, self.workload, self.replica, self.cfg, self.res = np, workload, replica, cfg, res
        cost, cap = replica.cost, replica.kv_capacity_tokens
        n, O = len(workload), workload.output
        self.n, self.P, self.O, self.arr = n, workload.prompt, O, list(workload.arrival_s)
        self.paged = cfg.reservation == "paged"
        spec = cfg.spec
        self.g = g = spec.gamma if spec else 0
        self.B = cfg.block_size
        self.total = cap // self.B if self.paged else 0
        self.streams = AcceptanceStreams(spec, O) if g else None
        self.tf, self.decode = totals_time_fn(cost, spec, g), decode_iterations_fn(cost, spec, g)
        self.need = np.maximum(np.asarray(O, dtype=np.int64) - 1, 0)
        self.R_all = np.zeros(n, dtype=np.int64)
        self.size = 4 * n + 1024
        self.D = np.zeros(self.size, dtype=np.int64)  # per iteration: sum of kv + (sum of blocks << 32)
        self.FIN = [0] * self.size  # requests finishing at the end of each iteration
        self.DRES = [0] * self.size  # their reservations (declared, max_len)
        self.horizon = 0  # past the last iteration any of these has an entry for
        self.T_end = array("d")  # per iteration: when it ends
        self.adm = array("q", bytes(8 * n))  # per request: the iteration that prefills it
        self.first = np.full(n, np.nan)
        self.fin = np.full(n, np.nan)
        self.chunk = (0, 0, None, None, None, None)  # c_lo, c_hi, R list, offsets list, packed, extra
        self.t, self.k, self.running, self.head, self.nxt, self.finished, self.reserved = 0.0, 0, 0, 0, 0, 0, 0
        self.k0 = self.h0 = 0  # where the running segment of fast iterations started
        self.customs: dict[int, tuple] = {}
        self.st = {"busy": 0.0, "area_n": 0.0, "area_kv": 0.0, "area_sys": 0.0, "iterations": 0, "rows": 0,
                   "preemptions": 0, "swap_bytes": 0.0, "draft_s": 0.0, "peak_kv": 0.0, "spec_rounds": 0,
                   "spec_tokens": 0, "gamma_sum": 0, "dec_slots": 0, "comm": 0.0}
        self.general = None  # the general loop's per-request lists, once it has run
        self.every = max(1, n // 100)

    def run(self, on_progress) -> bool:
        """Fast iterations from (k, t) until every request is done (True) or one would preempt (False)."""
        np, n, P, res, cap = self.np, self.n, self.P, self.res, self.replica.kv_capacity_tokens
        paged, B, total, g = self.paged, self.B, self.total, self.g
        r = g + 1
        dec_pairs = r * (r + 1) / 2
        wm = math.ceil(self.cfg.watermark * total) if paged else 0
        max_batch = self.cfg.max_batch
        streams, tf, decode, need, R_all = self.streams, self.tf, self.decode, self.need, self.R_all
        D, FIN, DRES, size, adm = self.D, self.FIN, self.DRES, self.size, self.adm
        c_lo, c_hi, Rl, ol, Fc, extra = self.chunk
        every = self.every
        report = (self.finished // every + 1) * every
        arrx = self.arr + [math.inf]
        t, k, running, head, nxt = self.t, self.k, self.running, self.head, self.nxt
        finished, reserved = self.finished, self.reserved
        arr_next = arrx[nxt]
        item = D.item
        over = total if paged else 1 << 62  # blocks ahead past this: preemption
        reserving = not paged
        append = self.T_end.append
        done = False
        hz = self.horizon
        while True:
            while arr_next <= t:
                nxt += 1
                arr_next = arrx[nxt]
            nd = running
            if head == nxt or nd >= max_batch:  # nobody can join: decode until a finish or an arrival
                if not nd:
                    if nxt < n:
                        t = arr_next  # idle until the next arrival
                        continue
                    done = True
                    break
                got = decode(nd, t, k, item, FIN, append, over, arr_next if nd < max_batch else math.inf)
                if got is None:
                    break  # the decoders' blocks ahead do not fit: preemption, the general loop
                t, k, f = got
            else:
                if nd:
                    v = item(k)
                    S, U = v & _LOW, v >> 32
                    if U > over:
                        break
                else:
                    S = U = 0
                rows, pairs = nd * r, r * S + nd * dec_pairs
                free = total - U
                while head < nxt and running < max_batch:
                    i = head
                    p = P[i]
                    if paged:
                        want = -(-p // B)
                        if free - want < wm and (running or free < want):
                            break
                        free -= want
                    elif reserved + res[i] > cap:
                        break
                    else:
                        reserved += res[i]
                    head += 1
                    running += 1
                    rows += p
                    pairs += p * (p + 1) / 2
                    if i >= c_hi:  # the next chunk's trajectories
                        c = i // CHUNK
                        c_lo, c_hi = c * CHUNK, min((c + 1) * CHUNK, n)
                        Rc, offs, Fc, extra = trajectories(P[c_lo:c_hi], need[c_lo:c_hi], g, r, B if paged else None,
                                                           streams, c)
                        R_all[c_lo:c_hi] = Rc
                        Rl, ol = Rc.tolist(), offs.tolist()
                    R = Rl[i - c_lo]
                    e = k + R
                    if e >= hz:
                        hz = e + 1
                    if e + 2 > size:  # room for its rounds: grow by half again or to fit
                        grow = max(size // 2, e + 2 - size)
                        D = np.concatenate((D, np.zeros(grow, dtype=np.int64)))
                        item = D.item
                        FIN += [0] * grow
                        DRES += [0] * grow
                        size += grow
                    if R:
                        o = ol[i - c_lo]
                        seg = D[k + 1:e + 1]
                        seg += Fc[o:o + R] if o >= 0 else extra[i - c_lo]
                    FIN[e] += 1
                    if reserving:
                        DRES[e] += res[i]
                    adm[i] = k
                if not rows:
                    break  # nothing can run (cannot happen: the worst request fits alone)
                t += tf(rows, pairs, nd, S)
                append(t)
                f = FIN[k]
                k += 1
            if f:
                running -= f
                if reserving:
                    reserved -= DRES[k - 1]
                finished += f
                if on_progress:
                    if finished >= report:
                        on_progress(finished, n)
                        report = (finished // every + 1) * every

        self.t, self.k, self.running, self.head, self.nxt = t, k, running, head, nxt
        self.finished, self.reserved = finished, reserved
        self.D, self.FIN, self.DRES, self.size = D, FIN, DRES, size
        self.chunk = (c_lo, c_hi, Rl, ol, Fc, extra)
        self.horizon = hz
        if done and on_progress:
            on_progress(n, n)
        return done
