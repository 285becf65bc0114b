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
(sum of blocks > capacity) and the fast path gives up (None): `engine.serve` runs its general loop
from the start, which draws the same acceptances. Everything else (admission while the batch has
room, the reservation fits and the free blocks stay above the watermark, the statistics) is the
general loop's, operation for operation, so the two agree (tests/test_serving_engine.py).
"""

from __future__ import annotations

import math
import operator

from llm_cost.serving.iteration import totals_time_fn
from llm_cost.serving.serve_result import ServeResult
from llm_cost.serving.spec_streams import CHUNK, AcceptanceStreams, trajectories

_LOW = (1 << 32) - 1


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


def serve_fast(workload, replica, cfg, res, on_progress=None) -> ServeResult | None:
    """`engine.serve` by running totals (module doc); None when paged KV would preempt."""
    import numpy as np

    cost, cap = replica.cost, replica.kv_capacity_tokens
    n, P, O, arr = len(workload), workload.prompt, workload.output, workload.arrival_s
    paged = cfg.reservation == "paged"
    spec = cfg.spec
    g = spec.gamma if spec else 0
    r = g + 1
    dec_pairs = r * (r + 1) / 2
    B = cfg.block_size
    total = cap // B if paged else 0
    wm = math.ceil(cfg.watermark * total) if paged else 0
    max_batch = cfg.max_batch
    streams = AcceptanceStreams(spec, O) if g else None
    tf = totals_time_fn(cost, spec, g)
    need = np.maximum(np.asarray(O, dtype=np.int64) - 1, 0)
    R_all = np.zeros(n, dtype=np.int64)
    size = 4 * n + 1024
    D = np.zeros(size, dtype=np.int64)  # per iteration: sum of kv + (sum of blocks << 32)
    FIN = [0] * size  # requests finishing at the end of each iteration
    DRES = [0] * size  # their reservations (declared, max_len)
    T_end, DT = [], []  # per iteration: when it ends, its seconds
    adm = [0] * n
    c_lo = c_hi = 0
    Rl = ol = Fc = extra = None
    every = max(1, n // 100)
    report = every
    arrx = list(arr) + [math.inf]
    arr_next = arrx[0]
    item = D.item
    over = total if paged else 1 << 62  # blocks ahead past this: preemption
    reserving = not paged
    append, append_dt = T_end.append, DT.append
    t, k, running, head, nxt, finished, reserved = 0.0, 0, 0, 0, 0, 0, 0
    while True:
        while arr_next <= t:
            nxt += 1
            arr_next = arrx[nxt]
        nd = running
        if nd:
            v = item(k)
            S, U = v & _LOW, v >> 32
            if U > over:
                return None  # the decoders' blocks ahead do not fit: preemption, the general loop
        else:
            S = U = 0
        rows, pairs = nd * r, r * S + nd * dec_pairs
        if head < nxt and running < max_batch:
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
                if e + 2 > size:  # room for its rounds: grow by half again or to fit
                    more = max(size // 2, e + 2 - size)
                    D = np.concatenate((D, np.zeros(more, dtype=np.int64)))
                    item = D.item
                    FIN += [0] * more
                    DRES += [0] * more
                    size += more
                if R:
                    o = ol[i - c_lo]
                    seg = D[k + 1:e + 1]
                    seg += Fc[o:o + R] if o >= 0 else extra[i - c_lo]
                FIN[e] += 1
                if reserving:
                    DRES[e] += res[i]
                adm[i] = k
        if not rows:
            if nxt < n:
                t = arr_next
                continue
            break
        dt = tf(rows, pairs, nd, S)
        t += dt
        append(t)
        append_dt(dt)
        f = FIN[k]
        k += 1
        if f:
            running -= f
            if reserving:
                reserved -= DRES[k - 1]
            if on_progress:
                finished += f
                if finished >= report:
                    on_progress(finished, n)
                    report = (finished // every + 1) * every
    if on_progress:
        on_progress(n, n)
    return _result(workload, replica, cfg, np, D[:k], np.asarray(T_end), np.asarray(DT),
                   np.asarray(adm, dtype=np.int64), R_all, g, paged)


def _result(workload, replica, cfg, np, D, T, DT, a, R, g, paged) -> ServeResult:
    """The statistics of the general loop from the schedule: per iteration, its seconds DT, the
    sequences it holds (decoders: admitted before it and not yet done; plus the ones it admits), the
    K/V they hold (the packed totals D plus the admitted prompts' blocks) and the draft steps."""
    from llm_cost.serving.iteration import draft_time

    k = len(T)
    P = np.asarray(workload.prompt, dtype=np.int64)
    arr = np.asarray(workload.arrival_s, dtype=np.float64)
    dec = R > 0
    nd = np.cumsum(np.bincount(a[dec] + 1, minlength=k + 1)[:k] - np.bincount((a + R + 1)[dec], minlength=k + 2)[:k])
    admitted = np.bincount(a, minlength=k)
    S, U = D & _LOW, D >> 32
    if paged:
        B = cfg.block_size
        used = (U + np.bincount(a, weights=-(-P // B), minlength=k).astype(np.int64)) * B
    else:
        used = S
    first, fin = T[a], T[a + R]
    spec, cost = cfg.spec, replica.cost
    rows = nd * (g + 1) + np.bincount(a, weights=P, minlength=k)
    draft = 0.0
    if g:
        on = nd > 0
        draft = float(draft_time(cost, spec, g, nd[on].astype(np.float64), S[on].astype(np.float64)).sum())
    comm = float(np.sum(cost.comm_s(rows))) if cost.deployed else 0.0
    slots = int(R.sum())
    st = {"busy": float(DT.sum()), "area_n": float(DT @ (nd + admitted)), "area_kv": float(DT @ used),
          "area_sys": float((fin - arr).sum()), "iterations": k, "rows": int(P.sum()) + (g + 1) * slots,
          "preemptions": 0, "swap_bytes": 0.0, "draft_s": draft, "peak_kv": float(used.max()) if k else 0.0,
          "spec_rounds": slots if g else 0, "spec_tokens": int(R.sum() and np.maximum(
              np.asarray(workload.output) - 1, 0).sum()) if g else 0,
          "gamma_sum": g * slots, "dec_slots": slots, "comm": comm}
    return ServeResult.build(workload, replica, cfg, arr.tolist(), first.tolist(), fin.tolist(), st, None)
