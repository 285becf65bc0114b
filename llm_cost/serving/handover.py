"""The serving engine's fast path and its general loop handing a run to each other (`fast_engine`).

A segment of fast iterations k0 .. k1 - 1 is summed up when it ends (`close_segment`): per iteration
its decoders (the requests prefilled in it before, or handed over at k0, not yet done), its
admissions, rows, pairs and K/V from the packed totals, and from them its seconds
(`iteration.totals_time_arrays`, elementwise what the loop computed) and the general loop's
statistics; the requests that finished in it get their finish times. `to_general` then writes the
general loop's variables at iteration k1 (each running request's tokens from its own acceptance
stream, its blocks after the last roll-back, the stream's round), and `from_general` takes them
back: each running request's remaining rounds become a trajectory from iteration k on, as at an
admission. Time in system is summed at the end as the sum of finish - arrival (Little's area).
"""

from __future__ import annotations

import math
from collections import deque

from llm_cost.serving.engine_state import EngineState
from llm_cost.roofline.pass_terms import causal_pairs, decode_pairs  # unchecked: a hot loop (roofline.terms)
from llm_cost.serving.iteration import compute_bound_rows, totals_time_arrays
from llm_cost.serving.kv_blocks import blocks_for
from llm_cost.serving.serve_result import ServeResult

_LOW = (1 << 32) - 1


def _gained(fast, request: int, js: int, rounds: int) -> int:
    """Tokens `request` gains in `rounds` rounds from round `js` of its stream (none done yet capped)."""
    if not fast.g:
        return rounds
    np = fast.np
    return int(np.minimum(fast.streams.stream(request)[js:js + rounds], fast.g).sum()) + rounds


def _alive(fast, iteration: int):
    """Requests running at `iteration` (not done by its start): the handed-over ones, then this
    segment's admissions, each with (first iteration of the segment it decodes in, tokens before,
    stream round before)."""
    np = fast.np
    out = [(req, custom[0], custom[3], custom[2]) for req, custom in fast.customs.items()
           if custom[0] + custom[1] - 1 >= iteration]
    adm = np.frombuffer(fast.adm, dtype=np.int64)[fast.h0:fast.head]
    alive = adm + fast.R_all[fast.h0:fast.head] >= iteration
    ids = np.flatnonzero(alive) + fast.h0
    out += [(req, admitted + 1, 1, 0) for req, admitted in zip(ids.tolist(), adm[alive].tolist())]
    return out


BLOCK = 1 << 16  # iterations summed per pass: the temporaries stay in cache and out of the page allocator


def close_segment(fast) -> None:
    """Statistics, first tokens and finish times of the fast iterations fast.k0 .. fast.k - 1.

    Per request (admitted at a, R rounds): decoders per iteration from the starts a + 1 and the ends
    a + R + 1; the per-iteration sums in blocks of `BLOCK` iterations, whose admissions are a
    contiguous run of requests (a does not decrease: first come, first served).

    Symbols: `K` the segment's iterations; per request of the segment `a` its admission iteration
    (from k0), `R` its rounds, `P` its prompt tokens, `O` its output tokens; `g` the draft tokens per
    round (gamma, 0 without speculation) and `r` = g + 1 the rows a decoder computes per iteration;
    `B` the block size (tokens); per iteration of a block of `m` iterations, `S` the decoders' K/V
    tokens and `U` their blocks (the packed totals' low and high 32 bits)."""
    np, k0, k1, h0, h1, stats = fast.np, fast.k0, fast.k, fast.h0, fast.head, fast.stats
    K = k1 - k0
    if K <= 0:
        return
    g, r = fast.g, fast.g + 1
    P = fast.P_array[h0:h1]
    a = np.frombuffer(fast.adm, dtype=np.int64)[h0:h1] - k0
    R = fast.R_all[h0:h1]
    end_s = np.frombuffer(fast.T_end, dtype=np.float64)
    dec = R > 0
    delta = np.bincount(a[dec] + 1, minlength=K + 1)[:K] - np.bincount((a + R + 1)[dec], minlength=K + 2)[:K]
    if fast.customs:
        ci = np.array(list(fast.customs), dtype=np.int64)
        cs = np.array([custom[0] for custom in fast.customs.values()], dtype=np.int64) - k0
        cr = np.array([custom[1] for custom in fast.customs.values()], dtype=np.int64)
        delta = delta + np.bincount(cs, minlength=K + 1)[:K] - np.bincount(cs + cr, minlength=K + 2)[:K]
        over = cs + cr - 1 < K
        fast.fin[ci[over]] = end_s[(cs + cr - 1 + k0)[over]]
    nd = np.cumsum(delta)
    cost, spec, paged, B = fast.replica.cost, fast.cfg.spec, fast.paged, fast.B
    starts = np.searchsorted(a, np.arange(0, K + BLOCK, BLOCK).clip(max=K))
    busy = area_n = area_kv = draft_s = comm_s = compute_bound = area_w = area_r = 0.0
    total_rows, bound_rows = 0, compute_bound_rows(cost)
    peak, peak_w = stats.peak_kv_used, stats.peak_kv_written
    held = None if paged else _reserved_by_iteration(fast, a, R, K)
    for block, lo in enumerate(range(0, K, BLOCK)):
        hi = min(lo + BLOCK, K)
        m, i0, i1 = hi - lo, starts[block], starts[block + 1]
        aa, pp = a[i0:i1] - lo, P[i0:i1]
        packed = fast.D[k0 + lo:k0 + hi]
        S, U, n_b = packed & _LOW, packed >> 32, nd[lo:hi]
        rows = n_b * r + np.bincount(aa, weights=pp, minlength=m)
        pairs = decode_pairs(r, n_b, S) + np.bincount(aa, weights=causal_pairs(pp), minlength=m)
        dt, comm, draft = totals_time_arrays(cost, spec, g, rows, pairs, n_b, S)
        if paged:
            used = (U + np.bincount(aa, weights=blocks_for(pp, B), minlength=m).astype(np.int64)) * B
        else:
            used = S
            area_w += float(dt @ (S + rows))
            area_r += float(dt @ held[lo:hi])
            peak_w = max(peak_w, float((S + rows).max()))
        busy += float(dt.sum())
        compute_bound += float(dt[rows >= bound_rows].sum())
        area_n += float(dt @ (n_b + np.bincount(aa, minlength=m)))
        area_kv += float(dt @ used)
        total_rows += int(rows.sum())
        draft_s += float(draft.sum())
        comm_s += float(comm.sum())
        peak = max(peak, float(used.max()))
    fast.first[h0:h1] = end_s[a + k0]
    done = a + R < K
    fast.fin[np.arange(h0, h1)[done]] = end_s[(a + R + k0)[done]]
    slots = int(nd.sum())
    stats.busy_s += busy
    stats.compute_bound_s += compute_bound
    stats.batch_area += area_n
    stats.kv_used_area += area_kv
    stats.kv_written_area += area_w
    stats.kv_reserved_area += area_r
    stats.peak_kv_written = peak_w
    if held is not None:
        stats.peak_kv_reserved = max(stats.peak_kv_reserved, int(held.max()))
    stats.iterations += K
    stats.rows += total_rows
    stats.draft_s += draft_s
    stats.comm_s += comm_s
    stats.peak_kv_used = peak
    stats.decode_slots += slots
    stats.gamma_sum += g * slots
    if g:
        stats.spec_rounds += slots
        O = fast.O_array[h0:h1]
        stats.spec_tokens += int((O - 1)[done].sum())
        for req, custom in fast.customs.items():
            if custom[0] + custom[1] - 1 < k1:
                stats.spec_tokens += fast.O[req] - custom[3]


def _reserved_by_iteration(fast, a, R, K: int):
    """K/V reserved in each of the segment's `K` iterations (declared, max_len): a request admitted at
    `a` (from the segment's start) holds its reservation from iteration a to its last round a + R (`R`
    its rounds), one handed over (`customs`) from the segment's start to its last round."""
    np, h0 = fast.np, fast.h0
    res = np.asarray(fast.res[h0:fast.head], dtype=np.int64)
    delta = np.bincount(a, weights=res, minlength=K + 1)[:K + 1] - np.bincount(
        np.minimum(a + R + 1, K), weights=res, minlength=K + 1)[:K + 1]
    for req, custom in fast.customs.items():
        delta[0] += fast.res[req]
        delta[min(custom[0] - fast.k0 + custom[1], K)] -= fast.res[req]
    return np.cumsum(delta[:K]).astype(np.int64)


def _horizon(fast) -> int:
    """Past the last iteration for which the running segment's requests have entries in the totals:
    those admitted in it (finishing at a + R) and those handed over at its start (at k0 + R - 1)."""
    adm = fast.np.frombuffer(fast.adm, dtype=fast.np.int64)[fast.h0:fast.head]
    ends = [int((adm + fast.R_all[fast.h0:fast.head]).max()) + 1] if len(adm) else []
    return max(ends + [start + rounds for start, rounds, _, _ in fast.customs.values()], default=fast.k)


def to_general(fast) -> EngineState:
    """The general loop's variables at iteration fast.k (fast iterations closed). `P` the prompt
    tokens per request, `g` the draft tokens per round (0 without speculation), `B` the block size."""
    close_segment(fast)
    iteration, requests, P, g, B = fast.k, fast.n, fast.P, fast.g, fast.B
    if fast.general is None:
        fast.general = {"gen": [0] * requests, "kv": [0] * requests, "pre": [0] * requests, "need": list(P),
                        "blocks": [0] * requests}
    gl = fast.general
    gen, kv, pre, need, blocks = gl["gen"], gl["kv"], gl["pre"], gl["need"], gl["blocks"]
    running: dict[int, None] = {}
    held = 0
    for req, start, g0, js in _alive(fast, iteration):
        rounds = iteration - start
        gen[req] = g0 + _gained(fast, req, js, rounds)
        kv[req] = P[req] + gen[req] - 1
        pre[req] = need[req]
        blocks[req] = blocks_for(kv[req], B) if fast.paged else 0
        held += blocks[req] * B if fast.paged else kv[req]
        if fast.streams is not None:
            fast.streams.rounds_drawn[req] = js + rounds
        if g:
            fast.stats.spec_tokens += gen[req] - g0
        running[req] = None
    hz = _horizon(fast)
    fast.D[iteration:hz] = 0
    fast.FIN[iteration:hz] = [0] * max(0, hz - iteration)
    if not fast.paged:
        fast.DRES[iteration:hz] = [0] * max(0, hz - iteration)
    fast.customs = {}
    return EngineState(gen=gen, kv=kv, pre=pre, need=need, blocks=blocks, first=fast.first, fin=fast.fin,
                       arr=fast.arr, running=running, waiting=deque(range(fast.head, fast.nxt)), stats=fast.stats,
                       free=fast.total - held // B if fast.paged else 0, used=float(held), reserved=fast.reserved,
                       t=fast.t, nxt=fast.nxt, finished=fast.finished, in_system=fast.nxt - fast.finished,
                       acceptance=fast.streams)


def from_general(fast, state: EngineState) -> None:
    """Take the run back at the general loop's iteration (module doc). `O` the output tokens per
    request, `g` the draft tokens per round (0 without speculation), `B` the block size (tokens)."""
    np, O, g, B = fast.np, fast.O, fast.g, fast.B
    iteration = fast.stats.iterations
    missing = iteration - len(fast.T_end)
    fast.T_end.extend([math.nan] * missing)  # the general loop's iterations: their times are in first / fin
    gen, kv = state.gen, state.kv
    for req in state.running:
        js = fast.streams.rounds_drawn.get(req, 0) if fast.streams is not None else 0
        left = O[req] - gen[req]
        if g:
            tok = np.minimum(fast.streams.stream(req)[js:], g).astype(np.int64) + 1
            before = np.cumsum(tok) - tok
            kvs = before[before < left] + kv[req]
        else:
            kvs = np.arange(left, dtype=np.int64) + kv[req]
        if fast.paged:
            kvs = kvs + (blocks_for(kvs + (g + 1), B) << 32)
        rounds = len(kvs)
        last = iteration + rounds - 1
        while last + 2 > fast.size:
            grow = fast.size // 2
            fast.D = np.concatenate((fast.D, np.zeros(grow, dtype=np.int64)))
            fast.FIN += [0] * grow
            if not fast.paged:
                fast.DRES += [0] * grow
            fast.size += grow
        fast.D[iteration:iteration + rounds] += kvs
        fast.FIN[last] += 1
        if not fast.paged:
            fast.DRES[last] += fast.res[req]
        fast.customs[req] = (iteration, rounds, js, gen[req])
    fast.k, fast.t, fast.running = iteration, state.t, len(state.running)
    waiting = state.waiting
    fast.nxt = state.nxt
    fast.head = waiting[0] if waiting else fast.nxt
    fast.k0, fast.h0 = iteration, fast.head
    fast.finished, fast.reserved = state.finished, state.reserved


def result(fast, state) -> ServeResult:
    """The run's `ServeResult` (state: the general loop's at the end, None if it ended fast; a deadlock's
    positions needed count its running and preempted requests' tokens)."""
    np = fast.np
    stats = fast.stats
    arr = np.fromiter(fast.arr, dtype=np.float64, count=len(fast.arr))  # faster than asarray on a list
    deadlock = state.deadlock if state else None
    if deadlock is None:
        stats.in_system_area = float(np.sum(fast.fin - arr))
    span = float(np.nanmax(fast.fin)) - float(arr.min()) if not np.isnan(fast.fin).all() else 0.0
    fin = fast.fin.tolist()
    return ServeResult.build(fast.workload, fast.replica, fast.cfg, fast.workload.arrival_s, fast.first.tolist(),
                             fin, stats, deadlock, span=span, path="fast_engine",
                             generated=state.gen if deadlock else None, prefilled=state.pre if deadlock else None)
