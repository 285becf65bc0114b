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
from collections import deque

from llm_cost.serving import eligibility
from llm_cost.serving.eligibility import FLAT_KV_ONE_STAGE, any_value, off
from llm_cost.serving.iteration import compute_bound_rows
from llm_cost.serving.orca_iteration import admit_in_order, mixed_iteration, running_deadlock
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


class StepStats:
    """Time-weighted sums over iterations: busy seconds, batch, K/V reserved, written (after each
    iteration's writes) and used (held at each iteration's start, as the engine's loop counts it)."""

    __slots__ = ("busy", "area_n", "area_r", "area_w", "area_u", "peak_r", "peak_w", "peak_u", "iterations",
                 "rows", "comm", "compute_bound", "first")

    def __init__(self, requests: int) -> None:
        """All sums and peaks at zero; no first token yet for any of the `requests`."""
        self.busy = self.area_n = self.area_r = self.area_w = self.area_u = self.comm = self.compute_bound = 0.0
        self.peak_r = self.peak_w = self.peak_u = self.iterations = self.rows = 0
        self.first = [math.nan] * requests


def serve_reserved(workload, replica, cfg, res, on_progress=None) -> ServeResult:
    """`engine.serve` on this path (module doc); `res` the tokens each request reserves."""
    st = StepStats(len(workload))
    finish, deadlock = _iteration_level(workload, workload.arrival_s, replica, cfg.max_batch, res,
                                        cfg.reservation, st, on_progress)
    if cfg.reservation == "none":  # K/V is allocated as it is written
        st.area_r, st.peak_r = st.area_w, st.peak_w
    if on_progress:
        on_progress(len(workload), len(workload))
    return step_result(workload, replica, cfg, finish, deadlock, st, st.rows, "fast_reservations")


def step_result(workload, replica, cfg, finish, deadlock, st: StepStats, needed: int, path: str) -> ServeResult:
    """The `ServeResult` of a run counted in `StepStats` (this path's and `request_level`'s)."""
    arrivals = workload.arrival_s
    busy = st.busy or 1.0
    end_s = deadlock.time_s if deadlock is not None else max((fin for fin in finish if fin == fin), default=0.0)
    return ServeResult(
        reservation=cfg.reservation, max_batch=int(cfg.max_batch), rate_req_per_s=workload.rate_req_per_s,
        requests=len(workload), kv_capacity_tokens=replica.kv_capacity_tokens, arrival_s=tuple(arrivals),
        first_token_s=tuple(st.first), finish_s=tuple(finish), output=tuple(workload.output),
        iterations=st.iterations, busy_s=st.busy, mean_batch=st.area_n / busy,
        kv_used_mean_tokens=st.area_u / busy, kv_used_peak_tokens=float(st.peak_u), preemptions=0, swap_bytes=0.0,
        draft_s=0.0, mean_in_system=_mean_in_system(arrivals, finish, end_s), tokens_per_round=0.0,
        mean_gamma=0.0, deadlock=deadlock, comm_total_s=st.comm, compute_bound_s=st.compute_bound, scheduler=ServeResult.scheduler_of(cfg), path=path,
        kv_reserved_mean_tokens=st.area_r / busy, kv_written_mean_tokens=st.area_w / busy,
        kv_reserved_peak_tokens=int(st.peak_r), kv_written_peak_tokens=int(st.peak_w),
        positions_computed=st.rows, positions_needed=needed)


def _mean_in_system(arrivals, finish, end_s: float) -> float:
    """Requests in the system averaged over first arrival .. `end_s` (Little's area: each request's
    time from arrival to its finish, or to `end_s` if it never finished)."""
    span = end_s - arrivals[0] if arrivals else 0.0
    if span <= 0:
        return 0.0
    area = sum((fin if fin == fin else end_s) - arrived for arrived, fin in zip(arrivals, finish) if arrived <= end_s)
    return area / span


PROGRESS_EVERY = 1 << 14  # finished requests between two calls of on_progress (a bar, not a cost)


def _iteration_level(wl, arrivals, replica, max_batch: int, res: list[int], reservation: str, st: StepStats,
                     on_progress=None):
    """Orca's loop. A request admitted in iteration k has generated it - base[i] tokens once
    `it` iterations are done (base[i] = k, plus one per iteration it stalled) and finishes when
    that reaches its output; its KV is prompt + generated - 1. `on_progress(finished, n_requests)` is
    called every `PROGRESS_EVERY` finished requests."""
    cost = replica.cost
    deployed, bound_rows = cost.deployed, compute_bound_rows(cost)  # once: the loop below is hot
    cap = replica.kv_capacity_tokens
    prompt, output, n_requests = wl.prompt, wl.output, len(wl)
    none = reservation == "none"
    finish = [math.nan] * n_requests
    first = st.first
    base = [0] * n_requests
    heap: list[tuple[int, int]] = []  # (iteration count at which it finishes, request)
    running: dict[int, None] = {}  # admission order = arrival order
    pending: deque[int] = deque()
    now, it, nxt, written, reserved = 0.0, 0, 0, 0, 0
    # st's sums and peaks as locals while the loop runs (attribute updates cost a tenth of it), stored on return
    busy = area_n = area_r = area_w = area_u = compute_bound = 0.0
    peak_r = peak_w = peak_u = iterations = positions = done = 0

    def stored():
        st.busy, st.area_n, st.area_r, st.area_w, st.area_u = busy, area_n, area_r, area_w, area_u
        st.compute_bound = compute_bound
        st.peak_r, st.peak_w, st.peak_u, st.iterations, st.rows = peak_r, peak_w, peak_u, iterations, positions

    while True:
        while nxt < n_requests and arrivals[nxt] <= now:
            pending.append(nxt)
            nxt += 1
        n_dec = len(running)
        if not n_dec and not pending:
            if nxt == n_requests:
                stored()
                return finish, None
            now = arrivals[nxt]
            continue
        prog = min(n_dec, cap - written) if none else n_dec
        if pending and prog == n_dec and n_dec < max_batch:
            admitted, reserved = admit_in_order(pending, prompt, res, none, cap - written - n_dec, reserved, cap,
                                                max_batch - n_dec)
        else:
            admitted = []
        if admitted or prog < n_dec:
            if not admitted and not prog:
                stored()
                return finish, running_deadlock(running, prompt, output, base, it, now, cap, len(pending))
            dt, rows = mixed_iteration(cost, deployed, running, admitted, prog, n_dec, written, it, now, prompt, output,
                                       base, first, heap, st)
            area_u += dt * written  # held at the iteration's start
            peak_u = written if written > peak_u else peak_u
            written += rows  # decoders write one token each, prompts their length
            it += 1
            now += dt
            iterations += 1
            positions += rows
            busy += dt
            compute_bound += dt if rows >= bound_rows else 0.0
            area_n += dt * len(running)
            area_r += dt * reserved
            area_w += dt * written
        else:  # a stretch of pure decode iterations with the same batch
            while heap[0][0] != base[heap[0][1]] + output[heap[0][1]]:
                heapq.heappop(heap)  # stale: pushed before the request stalled
            k_max = heap[0][0] - it
            if none:
                k_max = min(k_max, (cap - written) // n_dec)
            watch = arrivals[nxt] if (not pending and n_dec < max_batch and nxt < n_requests) else math.inf
            taken, span, stretch_w, held = decode_stretch(cost, n_dec, written, k_max, now, watch)
            if deployed:
                st.comm += taken * cost.comm_time_s(n_dec)
            now += span
            it += taken
            written = held
            iterations += taken
            positions += taken * n_dec
            busy += span
            compute_bound += span if n_dec >= bound_rows else 0.0
            area_n += span * n_dec
            area_r += span * reserved
            area_w += stretch_w
            area_u += stretch_w - n_dec * span  # each iteration's start holds n_dec fewer
            peak_u = held - n_dec if held - n_dec > peak_u else peak_u
        if reserved > peak_r:  # max(), without a call on every loop turn
            peak_r = reserved
        if written > peak_w:
            peak_w = written
        while heap and heap[0][0] <= it:
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

    Iteration j reads written + j n cached tokens, writes n and computes as many pairs plus n
    (`IterationCost.decode_s` per request); its memory and compute times are the first
    iteration's `cost.memory_s` and `cost.compute_s` advanced by n x `kv_token_s` and
    n x `pair_s`, so a stretch costs one compare and four additions per iteration
    (tests/test_simulator.py pins the result to `roofline.step_time`). Stops early after the
    iteration that ends at or past `watch` (an arrival that may join, the clock at start `t`).
    Returns (iterations, seconds, integral of written KV over time, written KV at the end).

    A deployed cost (`cost.deployed`: stages or collectives) takes `cost.deployed_total` of the same
    max(memory, compute): stages x max + comm(n) + fixed, as `cost.time`; one GPU keeps the
    inlined roofline below, bit for bit as before.
    """
    mem = cost.memory_s(n, written + n)
    comp = cost.compute_s(n, written + n)
    d_mem, d_comp, fixed_s = cost.kv_token_s * n, cost.pair_s * n, cost.fixed_s
    taken, span, area_w, held = 0, 0.0, 0.0, written
    if cost.deployed:
        total = cost.deployed_total
        while taken < k_max:
            dt = total(mem if mem > comp else comp, n)
            span += dt
            held += n
            area_w += dt * held
            mem += d_mem
            comp += d_comp
            taken += 1
            if t + span >= watch:
                break
        return taken, span, area_w, held
    while taken < k_max:
        dt = (mem if mem > comp else comp) + fixed_s  # roofline_total, inlined: a call here costs 25%
        span += dt
        held += n
        area_w += dt * held
        mem += d_mem
        comp += d_comp
        taken += 1
        if t + span >= watch:
            break
    return taken, span, area_w, held
