"""The serving engine's general loop (`engine.serve`; its module doc states the rules): one loop turn
per iteration, every running sequence visited. `engine.serve` validates the run and takes the fast
path (`fast_engine`) where it applies, which hands preempting stretches of a run to this loop.
"""

from __future__ import annotations

import heapq
import math
from collections import deque

from llm_cost.serving.engine_state import EngineState
from llm_cost.serving.iteration import held_tokens_fn, iteration_time
from llm_cost.serving.kv_blocks import blocks_for
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

    With `state` (an `EngineState`, the fast path's `handover`) it starts from it;
    with `handback` > 0 it returns ("handback", state) at the first loop turn, `handback` iterations
    or more after its start and after its last preemption, where every running sequence decodes,
    nothing is swapped out and the queue's head is a fresh request; and ("done", state) at the end,
    instead of a `ServeResult`."""
    cost, cap, held, K, n, P, O, policy = run_basics(workload, replica, cfg)
    paged, none = policy == "paged", policy == "none"
    spec = cfg.spec
    gmax = spec.gamma if spec else 0
    B = cfg.block_size
    total_blocks = cap // B if paged else 0
    wm_blocks = math.ceil(cfg.watermark * total_blocks) if paged else 0
    closed = workload.concurrency
    sent = n if closed is None else min(closed, n)
    stages = cost.stages
    orca_pipe = stages > 1 and cfg.pipeline == "orca"
    micro = stages > 1 and cfg.pipeline == "microbatch"
    chunk = cfg.prefill_chunk
    hold = cfg.max_batch * stages if orca_pipe else cfg.max_batch  # sequences held: max_batch per batch in flight
    if state is None:
        acceptance = (Acceptance(spec) if spec.bursty is not None else AcceptanceStreams(spec, O)) if spec else None
        state = EngineState.start(P, workload.arrival_s if closed is None else [0.0] * n, total_blocks, acceptance)
    kv_bytes = cost.kv_token_bytes
    host = cfg.host_bytes_per_s

    inflight = [False] * n
    swapped: deque[int] = deque()
    flights: list = []  # heap of (done_s, launch number, decoders [(i, g)], prefills [(i, q)])
    gen, kv, pre, need, blocks = state.gen, state.kv, state.pre, state.need, state.blocks
    first, fin, running, waiting, st = state.first, state.fin, state.running, state.waiting, state.st
    free, used, reserved, t, nxt = state.free, state.used, state.reserved, state.t, state.nxt
    finished, in_system, acceptance, arr = state.finished, state.in_system, state.acceptance, state.arr
    launches = st["iterations"]
    last_pre = st["iterations"]
    progress_every = max(1, n // 100)
    deadlock = None

    def release(i):
        nonlocal free, used, reserved
        if paged:
            free += blocks[i]
            used -= blocks[i] * B
            blocks[i] = 0
        else:
            used -= K(kv[i])
            reserved -= res[i]

    def finish(i, done_s):
        nonlocal finished, sent, in_system
        fin[i] = done_s
        release(i)
        del running[i]
        finished += 1
        in_system -= 1
        if sent < n:  # closed loop: the client sends its next request now
            arr[sent] = done_s
            sent += 1

    accept = acceptance.accepted if acceptance else None

    def complete(done_s, decs, g, pfs):
        nonlocal free, used
        rounds = tokens = 0
        drawn = [accept(i, g) for i in decs] if g else ()
        for k, i in enumerate(decs):
            inflight[i] = False
            gi = gen[i]
            if g:
                tok = drawn[k] + 1
                left = O[i] - gi
                if tok > left:
                    tok = left
                rounds += 1
                tokens += tok
                gi += tok
            else:
                gi += 1
            gen[i] = gi
            old = kv[i]
            new = kv[i] = P[i] + gi - 1
            if paged:
                want = blocks_for(held(new) if held else new, B)
                free += blocks[i] - want
                used += (want - blocks[i]) * B
                blocks[i] = want
            elif held:
                used += held(new) - held(old)
            else:
                used += new - old
            if gi >= O[i]:
                finish(i, done_s)
        if rounds:
            st["spec_rounds"] += rounds
            st["spec_tokens"] += tokens
        for i, q in pfs:
            inflight[i] = False
            old = kv[i]
            pre[i] += q
            kv[i] = pre[i]
            if pre[i] == need[i]:
                gen[i] += 1
                kv[i] = P[i] + gen[i] - 1
                if first[i] != first[i]:
                    first[i] = done_s
            if paged:
                want = blocks_for(K(kv[i]), B)
                free += blocks[i] - want
                used += (want - blocks[i]) * B
                blocks[i] = want
            else:
                used += K(kv[i]) - K(old)
            if gen[i] >= O[i] and fin[i] != fin[i]:
                finish(i, done_s)

    while True:
        while flights and flights[0][0] <= t:
            done_s, _, decs, g_done, pfs = heapq.heappop(flights)
            complete(done_s, decs, g_done, pfs)
        limit_arr = sent
        while nxt < limit_arr and arr[nxt] <= t:
            waiting.append(nxt)
            st["area_sys"] += t - arr[nxt]
            in_system += 1
            nxt += 1
        if on_progress and finished and finished % progress_every == 0:
            on_progress(finished, n)
        if (handback and st["iterations"] - last_pre >= handback and not swapped and not flights
                and (not waiting or (pre[waiting[0]] == 0 and need[waiting[0]] == P[waiting[0]]))
                and all(pre[i] >= need[i] for i in running)):
            break
        decoders, prefilling = [], []
        for i in running:
            if inflight[i]:
                continue
            if pre[i] >= need[i]:
                decoders.append(i)
            else:
                prefilling.append(i)
        if len(decoders) > cfg.max_batch:
            decoders = decoders[:cfg.max_batch]
        g = choose_gamma(spec, cost, decoders, kv) if spec and decoders else 0
        preempted = moved = False
        swap_s = 0.0
        dec_run = []
        if paged:
            gone = set()
            ahead = g + 1
            for i in decoders:
                if gone and i in gone:
                    continue
                c = kv[i] + ahead
                want = blocks_for(held(c) if held else c, B) - blocks[i]
                if want <= 0:  # its blocks already hold the rows (paged: rounded up)
                    dec_run.append(i)
                    continue
                while free < want:
                    victim = next((v for v in reversed(running) if not inflight[v] and v not in gone), None)
                    if victim is None:
                        break
                    gone.add(victim)
                    preempted = True
                    st["preemptions"] += 1
                    if cfg.preemption == "swap":
                        st["swap_bytes"] += K(kv[victim]) * kv_bytes
                        swap_s += K(kv[victim]) * kv_bytes / host
                        free += blocks[victim]
                        used -= blocks[victim] * B
                        blocks[victim] = 0
                        swapped.append(victim)
                    else:
                        release(victim)
                        need[victim] = P[victim] + gen[victim]
                        pre[victim] = kv[victim] = 0
                        waiting.appendleft(victim)
                    del running[victim]
                    if victim == i:
                        break
                if (gone and i in gone) or free < want:
                    continue
                free -= want
                used += want * B
                blocks[i] += want
                dec_run.append(i)
            if gone:
                prefilling = [i for i in prefilling if i not in gone]
                last_pre = st["iterations"]
        elif none:
            room = cap - used
            for i in decoders:
                inc = K(kv[i] + 1) - K(kv[i])
                if inc > room + 1e-9:
                    break
                room -= inc
                dec_run.append(i)
        else:
            dec_run = decoders
        stalled = len(dec_run) < len(decoders)
        rows_dec = len(dec_run) * (g + 1)
        budget = (chunk - rows_dec) if chunk else math.inf
        pf_run = []
        for i in prefilling:
            if budget <= 0:
                break
            q = min(need[i] - pre[i], budget)
            if paged:
                want = blocks_for(K(pre[i] + q), B) - blocks[i]
                if want > free:
                    continue
                free -= want
                used += want * B
                blocks[i] += want
            pf_run.append((i, q))
            budget -= q
        if not preempted and not stalled:
            while swapped and len(running) < hold:
                v = swapped[0]
                want = blocks_for(K(kv[v] + gmax + 1), B)
                if free - want < wm_blocks:
                    break
                swapped.popleft()
                moved = True
                swap_s += K(kv[v]) * kv_bytes / host
                st["swap_bytes"] += K(kv[v]) * kv_bytes
                w0 = blocks_for(K(kv[v]), B)
                free -= w0
                used += w0 * B
                blocks[v] = w0
                running[v] = None
            room = cap - used - sum(K(kv[i] + 1) - K(kv[i]) for i in dec_run) if none else 0
            while (waiting and not swapped and len(running) < hold and budget > 0
                   and len(dec_run) + len(pf_run) < cfg.max_batch):
                i = waiting[0]
                q = min(need[i] - pre[i], budget)
                if paged:
                    want = blocks_for(K(pre[i] + q), B)
                    if free - want < wm_blocks and (running or free < want):
                        break
                    free -= want
                    used += want * B
                    blocks[i] = want
                elif none:
                    if K(need[i]) > room:
                        break
                    room -= K(need[i])
                elif reserved + res[i] > cap:
                    break
                else:
                    reserved += res[i]
                waiting.popleft()
                running[i] = None
                pf_run.append((i, q))
                budget -= q
        rows = rows_dec + sum(q for _, q in pf_run)
        if rows == 0 and swap_s == 0.0:
            if moved:  # swapped in at no transfer time (a cost without bytes): decode it now
                continue
            if flights:
                t_new = max(t, flights[0][0])
            elif running or waiting or swapped:
                holders = tuple(Holder(i, P[i], gen[i], kv[i], O[i] - gen[i]) for i in running)
                deadlock = Deadlock(st["iterations"], t, cap, holders, len(waiting))
                break
            elif nxt < sent:
                t_new = arr[nxt]
            else:
                break
            st["area_sys"] += (t_new - t) * in_system
            t = t_new
            continue
        dt, comm, draft = iteration_time(cost, held, kv, pre, dec_run, pf_run, g, rows, spec,
                                         stages if micro else 1)
        st["comm"] += comm
        st["draft_s"] += draft
        dt += swap_s
        st["gamma_sum"] += g * len(dec_run)
        st["dec_slots"] += len(dec_run)
        launches += 1
        for i in dec_run:
            inflight[i] = True
        for i, _ in pf_run:
            inflight[i] = True
        heapq.heappush(flights, (t + dt, launches, dec_run, g, pf_run))
        step = dt / stages if orca_pipe else dt
        st["iterations"] += 1
        st["rows"] += rows
        st["busy"] += step
        st["area_n"] += step * len(running)
        st["area_kv"] += step * used
        st["area_sys"] += step * in_system
        if used > st["peak_kv"]:
            st["peak_kv"] = used
        t += step
    if handback:
        state.free, state.used, state.reserved, state.t, state.nxt = free, used, reserved, t, nxt
        state.finished, state.in_system, state.deadlock = finished, in_system, deadlock
        return ("done" if finished == n or deadlock else "handback"), state
    if on_progress:
        on_progress(n, n)
    return ServeResult.build(workload, replica, cfg, arr, first, fin, st, deadlock)
