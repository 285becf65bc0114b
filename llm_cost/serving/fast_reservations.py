"""The engine's fast path for Orca's reservations: iteration-level scheduling by lazy counters.

`engine.serve` takes it where `FEATURES` (an allow-list of `ServeConfig` fields, as
`fast_engine.FAST_FEATURES`) covers the config: scheduler `iteration` with a `declared` (Orca:
prompt + max_gen) or `max_len` reservation, or `none` (no reservation, no preemption: decoders past
the free K/V stall and the run may deadlock, the lecture §3.5), whole prefills, no speculation, one
stage or a `serial` pipeline, K/V without windows, open-loop arrivals. Anything else takes the
engine's general loop (`engine_loop`), which schedules the same (tests/test_engine_paths.py pins the
finish times; tests/reference_scheduler.py is the plain per-request oracle both are checked against).

Rules (Orca §3 and Algorithm 1): first come, first served with at most `max_batch` requests; a
request is admitted when its reservation fits, and admission stops at the first that does not.
Finished requests leave at once. This path keeps a counter per request (the iteration it was
admitted at, plus one per iteration it stalled) and a heap of finishing iterations, and runs
stretches of identical decode iterations in a tight loop (`decode_stretch`), so 10,000 requests
take well under a second. Beside the engine's statistics it counts K/V reserved against written
(the lecture's 2.5x) and the rows computed.

Deployments: an iteration costs `PassCost.time` on the deployed cost (pp x max(memory, compute) of
one GPU's share + comm(rows) + fixed); a `serial` pipeline crosses every stage before the next
iteration starts. The deployment's other replicas serve as many requests again: the arrival rate
simulated is one replica's. `ServeResult.comm_total_s` sums the collectives' seconds.
"""

from __future__ import annotations

import heapq
import math
import operator
from collections import deque

import numpy as np

from llm_cost.serving import eligibility
from llm_cost.roofline.pass_cost import PassCost
from llm_cost.serving.decode_stretch import takes_arrays
from llm_cost.serving.eligibility import FLAT_KV_ONE_STAGE, any_value, off
from llm_cost.serving.iteration import compute_bound_rows
from llm_cost.serving.orca_iteration import admit_in_order, mixed_iteration, running_deadlock
from llm_cost.serving.run_stats import RunStats
from llm_cost.serving.serve_result import ServeResult


# The `ServeConfig` features this path runs, field by field (field -> whether its value is supported).
# A field missing here, as a new feature's is until someone adds it, takes the general loop.
FEATURES = {
    "max_batch": any_value,
    "reservation": lambda value, cfg: value in ("declared", "max_len", "none"),
    "block_size": any_value,  # paged only
    "watermark": any_value,  # paged only
    "preemption": any_value,  # paged only
    "prefill_chunk": lambda value, cfg: value is None,
    "spec": lambda value, cfg: value is None,
    "pipeline": any_value,  # with stages: `serial` only (`covers`)
    "host_bytes_per_s": any_value,
    "scheduler": lambda value, cfg: value == "iteration",
    "prefix_caching": off,
    "kv_offload_bytes": off,
}


# The pass cost's fields (`eligibility`): K/V without windows or per-sequence state, one stage or a
# `serial` pipeline (an iteration crosses every stage before the next starts).
COST_FEATURES = {**FLAT_KV_ONE_STAGE, "stages": lambda value, cfg: value == 1 or cfg.pipeline == "serial"}


def covers(workload, replica, cfg) -> bool:
    """Whether this path runs `cfg` on `replica` (`FEATURES`, `COST_FEATURES`; open-loop arrivals:
    `eligibility.OPEN_LOOP`)."""
    return eligibility.covers(workload, replica, cfg, config=FEATURES, cost=COST_FEATURES)


def serve_reserved(workload, replica, cfg, res, on_progress=None) -> ServeResult:
    """`engine.serve` on this path (module doc); `res` the tokens each request reserves."""
    stats, first = RunStats(), [math.nan] * len(workload)
    finish, deadlock = _iteration_level(workload, workload.arrival_s, replica, cfg.max_batch, res,
                                        cfg.reservation, stats, first, on_progress)
    if on_progress:
        on_progress(len(workload), len(workload))
    return finished_result(workload, replica, cfg, first, finish, deadlock, stats, "fast_reservations")


def finished_result(workload, replica, cfg, first, finish, deadlock, stats: RunStats, path: str) -> ServeResult:
    """`ServeResult.build` for a path that counts no requests in the system as it runs (this one and
    `request_level`): their time-weighted area from the arrivals and finishes (Little's: each request's
    time from arrival to its finish, or to the end if it never finished), the end the last finish or
    the deadlock; a deadlock's holders their tokens generated (their prompts prefilled whole)."""
    arrivals = workload.arrival_s
    if deadlock is None:  # every request finished, each after its arrival: the same sums, without the tests
        end_s = max(finish, default=0.0)
        stats.in_system_area = sum(map(operator.sub, finish, arrivals))
    else:
        end_s = deadlock.time_s
        stats.in_system_area = sum((fin if fin == fin else end_s) - arrived
                                   for arrived, fin in zip(arrivals, finish) if arrived <= end_s)
    generated = prefilled = None
    if deadlock is not None:
        generated, prefilled = [0] * len(workload), [0] * len(workload)
        for holder in deadlock.holders:
            generated[holder.request], prefilled[holder.request] = holder.generated, holder.prompt
    return ServeResult.build(workload, replica, cfg, arrivals, first, finish, stats, deadlock,
                             span=end_s - arrivals[0] if arrivals else 0.0, path=path, generated=generated,
                             prefilled=prefilled)


ARRAY_FROM = 16  # a shorter stretch of a cost without inline coefficients is timed call by call
PROGRESS_EVERY = 1 << 14  # finished requests between two calls of on_progress (a bar, not a cost)


def _mixed_timer(cost):
    """T of a mixed iteration: `InlineTerms.evaluator` (the same bits in one call) where the cost has inline
    coefficients, else `cost.time`."""
    inline = cost.inline_coefficients() if isinstance(cost, PassCost) else None
    return cost.time if inline is None else inline.evaluator()


def _iteration_level(workload, arrivals, replica, max_batch: int, res: list[int], reservation: str, stats: RunStats,
                     first: list, on_progress=None):
    """Orca's loop. A request admitted in iteration k has generated `iteration` - base[req] tokens once
    `iteration` iterations are done (base[req] = k, plus one per iteration it stalled) and finishes when
    that reaches its output; its KV is prompt + generated - 1. First tokens to `first`, statistics to
    `stats`, `on_progress(finished, n_requests)` every `PROGRESS_EVERY` finishes. (finishes, deadlock)."""
    cost = replica.cost
    deployed, bound_rows, timer, stretch = cost.deployed, compute_bound_rows(cost), _mixed_timer(cost), stretch_fn(cost)
    cap = replica.kv_capacity_tokens
    prompt, output, n_requests = workload.prompt, workload.output, len(workload)
    none = reservation == "none"
    finish, base = [math.nan] * n_requests, [0] * n_requests
    heap: list[tuple[int, int]] = []  # (iteration count at which it finishes, request)
    running: dict[int, None] = {}  # admission order = arrival order
    pending: deque[int] = deque()
    now, iteration, arrived, written, reserved = 0.0, 0, 0, 0, 0
    # the statistics as locals while the loop runs (attribute updates cost a tenth of it), stored on return
    busy_s = batch_area = kv_reserved_area = kv_written_area = kv_used_area = compute_bound_s = 0.0
    peak_kv_reserved = peak_kv_written = peak_kv_used = iterations = rows_sum = done = 0

    def stored():
        stats.busy_s, stats.batch_area, stats.compute_bound_s = busy_s, batch_area, compute_bound_s
        stats.kv_reserved_area, stats.kv_written_area = kv_reserved_area, kv_written_area
        stats.kv_used_area, stats.peak_kv_used = kv_used_area, peak_kv_used
        stats.peak_kv_reserved, stats.peak_kv_written = peak_kv_reserved, peak_kv_written
        stats.iterations, stats.rows = iterations, rows_sum

    while True:
        while arrived < n_requests and arrivals[arrived] <= now:
            pending.append(arrived)
            arrived += 1
        decoders = len(running)
        if not decoders and not pending:
            if arrived == n_requests:
                stored()
                return finish, None
            now = arrivals[arrived]
            continue
        progressing = min(decoders, cap - written) if none else decoders
        if pending and progressing == decoders and decoders < max_batch:
            admitted, reserved = admit_in_order(pending, prompt, res, none, cap - written - decoders, reserved, cap,
                                                max_batch - decoders)
        else:
            admitted = []
        if admitted or progressing < decoders:
            if not admitted and not progressing:
                stored()
                return finish, running_deadlock(running, prompt, output, base, iteration, now, cap, len(pending))
            step_s, rows = mixed_iteration(cost, timer, deployed, running, admitted, progressing, decoders, written, iteration,
                                           now, prompt, output, base, first, heap, stats)
            kv_used_area += step_s * written  # held at the iteration's start
            peak_kv_used = written if written > peak_kv_used else peak_kv_used
            written += rows  # decoders write one token each, prompts their length
            iteration += 1
            now += step_s
            iterations += 1
            rows_sum += rows
            busy_s += step_s
            compute_bound_s += step_s if rows >= bound_rows else 0.0
            batch_area += step_s * len(running)
            kv_reserved_area += step_s * reserved
            kv_written_area += step_s * written
        else:  # a stretch of pure decode iterations with the same batch
            while heap[0][0] != base[heap[0][1]] + output[heap[0][1]]:
                heapq.heappop(heap)  # stale: pushed before the request stalled
            k_max = heap[0][0] - iteration
            if none:
                k_max = min(k_max, (cap - written) // decoders)
            watch = arrivals[arrived] if (not pending and decoders < max_batch and arrived < n_requests) else math.inf
            taken, span, stretch_written, held = stretch(decoders, written, k_max, now, watch)
            if deployed:
                stats.comm_s += taken * cost.comm_time_s(decoders)
            now += span
            iteration += taken
            written = held
            iterations += taken
            rows_sum += taken * decoders
            busy_s += span
            compute_bound_s += span if decoders >= bound_rows else 0.0
            batch_area += span * decoders
            kv_reserved_area += span * reserved
            kv_written_area += stretch_written
            kv_used_area += stretch_written - decoders * span  # each iteration's start holds `decoders` fewer
            peak_kv_used = held - decoders if held - decoders > peak_kv_used else peak_kv_used
        if reserved > peak_kv_reserved:  # max(), without a call on every loop turn
            peak_kv_reserved = reserved
        if written > peak_kv_written:
            peak_kv_written = written
        while heap and heap[0][0] <= iteration:
            due, req = heapq.heappop(heap)
            if due != base[req] + output[req]:  # stale: the request stalled after this was pushed
                continue
            finish[req] = now
            written -= prompt[req] + output[req] - 1
            reserved -= res[req]
            del running[req]
            done += 1
            if on_progress is not None and not done % PROGRESS_EVERY:
                on_progress(done, n_requests)


def decode_stretch(cost, n: int, written: int, k_max: int, t: float = 0.0,
                   watch: float = math.inf) -> tuple[int, float, float, int]:
    """Up to `k_max` pure decode iterations of `n` requests holding `written` KV tokens.

    Iteration j reads kv = written + (j + 1) n K/V tokens and computes as many pairs over n rows
    (`causal_pairs(1, c)` a request), timed as `PassCost.time(n, kv, kv)`: where the cost gives
    `inline_coefficients`, by `InlineTerms.decode_stretch` (the stretch's sum of T in the floor that owns
    T, the same seconds as the general loop's bit for bit); a cost without them (routed experts, a GEMM
    ramp, measured kernels, a cost timing passes its own way) is asked `cost.time` iteration by iteration
    or on arrays (`_stretch_by_calls`). Stops early after the iteration that ends at or past `watch` (an
    arrival that may join, the clock at start `t`).
    Returns (iterations, seconds, integral of written KV over time, written KV at the end).
    """
    return stretch_fn(cost)(n, written, k_max, t, watch)


def stretch_fn(cost):
    """fn(n, written, k_max, t, watch): `decode_stretch` of `cost`, looked up once (a run calls it per stretch)."""
    terms = cost.inline_coefficients()  # None also for a cost timing passes its own way
    if terms is not None:
        return terms.decode_stretch

    def by_calls(sequences: int, written: int, k_max: int, start: float, watch: float) -> tuple:
        return _stretch_by_calls(cost, sequences, written, k_max, start, watch)
    return by_calls


def _stretch_by_calls(cost, n: int, written: int, k_max: int, t: float, watch: float) -> tuple:
    """`decode_stretch` by `cost.time(n, kv, kv)` (`n` requests, `t` the clock at start): iteration by
    iteration, or, where the cost takes arrays (`decode_stretch.takes_arrays`) and the stretch runs
    `ARRAY_FROM` iterations or more before `watch` (by its first iteration's time: later ones read no
    less), first in one call on arrays, summed in order (`np.add.accumulate`: the loop's additions, the
    same bits); where that estimate falls short of `watch` (equal times, rounding) the loop goes on."""
    first = cost.time(n, written + n, written + n)
    taken, span, area_w, held = 0, 0.0, 0.0, written
    if k_max >= ARRAY_FROM and first > 0 and watch - t >= ARRAY_FROM * first and takes_arrays(cost):
        ahead = (watch - t) / first
        count = k_max if ahead + 2 >= k_max else int(ahead) + 2
        kv = written + n * np.arange(1, count + 1, dtype=np.int64)
        dt = np.asarray(cost.time(n, kv, kv), dtype=float)
        spans, areas = np.add.accumulate(dt), np.add.accumulate(dt * kv)
        past = np.flatnonzero(t + spans >= watch)
        last = int(past[0]) if past.size else count - 1
        taken, span, area_w, held = last + 1, float(spans[last]), float(areas[last]), int(kv[last])
        if past.size:
            return taken, span, area_w, held
    while taken < k_max:
        held += n
        dt = cost.time(n, held, held) if taken else first
        span += dt
        area_w += dt * held
        taken += 1
        if t + span >= watch:
            break
    return taken, span, area_w, held
