"""Discrete-event simulation of request-level and iteration-level (Orca) batching.

Schedulers (the lecture §2-§3, Orca §3 and Algorithm 1):
- `request`: FasterTransformer style. When the engine is idle it takes up to `max_batch`
  queued requests, no more than fit with a maximum-length KV reservation each (GPT-3 13B on an
  A100 40GB: 12,564 // 2048 = 6). Prompts are padded to the longest, every row runs to the
  longest output, and the whole batch returns at the end.
- `iteration`: iteration-level first come, first served with at most `max_batch` requests; a
  request is admitted when its reservation fits (`declared`: prompt + max_gen, Orca; or
  `max_len`), and admission stops at the first that does not. Finished requests leave at once.
- `none`: iteration-level without a reservation and without preemption. Running requests get
  free KV tokens in order of arrival, the rest stall; when none can write the run stops and
  reports the deadlock (the lecture §3.5).
The rules are those of `llm_cost.deadlock.run_steps`, which is the plain reference; this module
computes the same schedule with lazy counters and runs stretches of identical decode iterations
in a tight loop, so 10,000 requests take well under a second.

Per-token latency = (finish - arrival) / generated tokens (the lecture §3.3, Orca §6).
Models with sliding or chunked attention layers (gpt-oss, Gemma 2/3, Llama 4) are refused in one
line (`replica.refuse_windowed`): the counters are sums of contexts, every layer's K/V.
Everything is deterministic: the workload carries its seed and the schedule has no randomness.

Deployments (`Replica.from_specs(..., deployment=...)`): the simulation is one replica's. Its
iteration costs `PassCost.time` on the deployed cost: pp x max(memory, compute) of one GPU's share
+ the collectives comm(rows) + t_fixed; a decode stretch adds the same terms (one GPU: the
roofline exactly, bit for bit). Pipeline stages run one batch at a time: an iteration's latency
crosses every stage and the next iteration starts when it is done (no microbatches in flight, so a
pp > 1 replica's throughput is a lower bound: the stages idle while the others work). The
deployment's other replicas each serve as many requests again: the arrival rate simulated is one
replica's (a balancer splitting Poisson arrivals evenly), the rows multiply by the replicas.
`ServeResult.comm_s` sums the collectives' seconds (hidden ones too, under overlap_comm).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from llm_cost.serving.reservations import reservation_tokens
from llm_cost.errors import InvalidValueError, check_choice, check_number
from llm_cost.serving.batch_waste import padded_positions
from llm_cost.serving.orca_iteration import admit_in_order, mixed_iteration, running_deadlock
from llm_cost.serving.replica import NOT_MODELLED, Replica
from llm_cost.serving.serve_result import ServeResult
from llm_cost.serving.sim_result import SimStats
from llm_cost.serving.workload import Workload
from llm_cost.roofline.pass_terms import causal_pairs  # unchecked: a hot loop (roofline.terms)
from llm_cost.catalog.arguments import check_arguments

SCHEDULERS = ("request", "iteration", "none")


@check_arguments()
def simulate(workload: Workload, replica: Replica, *, scheduler: str = "iteration",
             max_batch: int = 32, reservation: str | None = None, on_progress=None) -> ServeResult:
    r"""Serve `workload` on `replica` with a scheduler; see the module docstring for the rules.

    reservation: `request` always reserves max_len; `iteration` reserves `declared` (default)
    or `max_len`; `none` reserves nothing. The lecture §2-§3, Orca §3 and Algorithm 1.

    .. math:: T_{iter} = T(\mathit{rows}, kv_{read} + \mathit{rows}, \mathit{pairs}),\quad
              \mathit{latency\ per\ token} = (t_{finish} - t_{arrival}) / O

    Parameters
    ----------
    workload : Workload
        The requests and their arrival times.
    replica : Replica
        Iteration cost, KV capacity (tokens) and the maximum length.
    scheduler : str, optional
        "iteration" (default, Orca), "request" (FasterTransformer) or "none" (iteration-level
        without a reservation).
    max_batch : int, optional
        Most requests in the running batch, a whole number >= 1 (default 32).
    reservation : str or None, optional
        "max_len" or "declared" (see above; default the scheduler's first).

    Returns
    -------
    ServeResult
        Finish times, TTFT / TPOT / latency tails, throughput, KV reserved and written, any deadlock
        (the engine's result type: `scheduler` says which ran).

    Examples
    --------
    The lecture exercise 10 in the simulator, every iteration costing 1 s: without a
    reservation both requests stall after 2 iterations; Orca's reservation of 9 completes both.

    >>> from llm_cost.serving.replica import IterationCost
    >>> from llm_cost.serving.workload import fixed_workload
    >>> wl = fixed_workload([(4, 5), (4, 5)])
    >>> server = Replica(IterationCost.unit(), 10, 2048)
    >>> stuck = simulate(wl, server, scheduler="none")
    >>> stuck.finished, stuck.deadlock.time_s, stuck.deadlock.kv_held_tokens
    (0, 2.0, 10)
    >>> done = simulate(wl, server, scheduler="iteration")
    >>> done.finish_s, done.kv_reserved_peak_tokens
    ((5.0, 10.0), 9)

    GPT-3 13B on an A100 40GB: request-level batching fits 12,564 // 2048 = 6 requests.

    >>> from llm_cost.catalog import load_model, load_accelerator
    >>> from llm_cost.serving.workload import poisson_workload
    >>> a100 = Replica.from_specs(load_model("gpt-3-13b"), load_accelerator("a100-40gb"))
    >>> simulate(poisson_workload(200, 4.0), a100, scheduler="request", max_batch=8).kv_reserved_peak_tokens
    12288
    """
    scheduler = check_choice("scheduler", scheduler, SCHEDULERS)  # names ignore case: REQUEST is request
    check_number("max_batch", max_batch, low=1, integer=True)
    if replica.cost.kv_windows or replica.cost.state_tokens:  # built without from_specs (which refuses them)
        raise InvalidValueError(f"{replica.description or 'this replica'}: the model has sliding or chunked "
                                f"attention layers; {NOT_MODELLED}", params=("replica",))
    allowed = {"request": ("max_len",), "iteration": ("declared", "max_len"), "none": ("none",)}[scheduler]
    reservation = allowed[0] if reservation is None else reservation
    if reservation not in allowed:
        raise InvalidValueError(f"reservation must be one of {', '.join(allowed)} with scheduler {scheduler}, "
                                f"got {reservation!r}", params=("reservation", "scheduler"))
    cap, max_len = replica.kv_capacity_tokens, replica.max_len
    res = [reservation_tokens(reservation, p, d, max_len) for p, d in zip(workload.prompt, workload.declared_gen)]
    worst = max(res) if reservation != "none" else max(workload.prompt)
    if worst > cap:
        raise InvalidValueError(f"a request needs {worst} KV tokens to start but the replica holds {cap}; "
                                f"lower max_gen or max_len, or free memory", params=("max_gen", "max_len"))
    if reservation == "max_len" and max(p + d for p, d in zip(workload.prompt, workload.declared_gen)) > max_len:
        raise InvalidValueError(f"a request's prompt + max_gen exceeds max_len ({max_len})", params=("max_len",))
    arrivals = workload.arrival_s
    st = SimStats()
    st.first = [math.nan] * len(workload)
    if scheduler == "request":
        if max(workload.prompt) + max(workload.output) - 1 > max_len:
            raise InvalidValueError(f"request-level batching pads rows to the longest prompt plus the longest "
                                    f"output, which exceeds max_len ({max_len})", params=("max_len",))
        finish, deadlock = _request_level(workload, arrivals, replica, min(max_batch, cap // max_len), st), None
        needed = sum(workload.kv_tokens_written)
    else:
        finish, deadlock = _iteration_level(workload, arrivals, replica, max_batch, res, reservation, st,
                                            on_progress)
        needed = st.rows
    busy = st.busy or 1.0
    if reservation == "none":  # KV is allocated as it is written
        st.area_r, st.peak_r = st.area_w, st.peak_w
    end_s = deadlock.time_s if deadlock is not None else max((f for f in finish if f == f), default=0.0)
    return ServeResult(
        reservation=reservation, max_batch=int(max_batch), rate_req_per_s=workload.rate_req_per_s,
        requests=len(workload), kv_capacity_tokens=cap, arrival_s=tuple(arrivals), first_token_s=tuple(st.first),
        finish_s=tuple(finish), output=tuple(workload.output), iterations=st.iterations, busy_s=st.busy,
        mean_batch=st.area_n / busy, kv_used_mean_tokens=st.area_w / busy, kv_used_peak_tokens=float(st.peak_w),
        preemptions=0, swap_bytes=0.0, draft_s=0.0, mean_in_system=_mean_in_system(arrivals, finish, end_s),
        tokens_per_round=0.0, mean_gamma=0.0, deadlock=deadlock, comm_s=st.comm, scheduler=scheduler,
        kv_reserved_mean_tokens=st.area_r / busy, kv_written_mean_tokens=st.area_w / busy,
        kv_reserved_peak_tokens=int(st.peak_r), kv_written_peak_tokens=int(st.peak_w),
        positions_computed=st.rows, positions_needed=needed)


def _mean_in_system(arrivals, finish, end_s: float) -> float:
    """Requests in the system averaged over first arrival .. `end_s` (Little's area: each request's
    time from arrival to its finish, or to `end_s` if it never finished)."""
    span = end_s - arrivals[0] if arrivals else 0.0
    if span <= 0:
        return 0.0
    area = sum((f if f == f else end_s) - a for a, f in zip(arrivals, finish) if a <= end_s)
    return area / span


def _request_level(wl: Workload, arrivals, replica: Replica, batch_cap: int, st: SimStats) -> list[float]:
    """Batches run to completion; rows padded to the longest prompt and the longest output."""
    cost = replica.cost
    prompt, output, n = wl.prompt, wl.output, len(wl)
    finish = [math.nan] * n
    queue: deque[int] = deque()
    t, nxt, left = 0.0, 0, n
    while left:
        while nxt < n and arrivals[nxt] <= t:
            queue.append(nxt)
            nxt += 1
        if not queue:
            t = arrivals[nxt]
            continue
        batch = [queue.popleft() for _ in range(min(batch_cap, len(queue)))]
        b = len(batch)
        lmax = max(prompt[i] for i in batch)
        omax = max(output[i] for i in batch)
        reserved = b * replica.max_len
        prefill = cost.time(b * lmax, b * lmax, b * causal_pairs(lmax))
        _, span, area_w, _ = _decode_stretch(cost, b, b * lmax, omax - 1)  # every row to the longest output
        for i in batch:
            st.first[i] = t + prefill  # the batch's prefill emits every row's first token
        if cost.deployed:
            st.comm += cost.comm_s(b * lmax) + (omax - 1) * cost.comm_s(b)
        dt = prefill + span
        area_w += prefill * b * lmax
        t += dt
        for i in batch:
            finish[i] = t
        left -= b
        st.busy += dt
        st.area_n += dt * b
        st.area_r += dt * reserved
        st.area_w += area_w
        st.peak_r = max(st.peak_r, reserved)
        positions = padded_positions(b, lmax, omax)  # also the KV the batch holds at its end
        st.peak_w = max(st.peak_w, positions)
        st.iterations += omax
        st.rows += positions
    return finish


PROGRESS_EVERY = 1 << 14  # finished requests between two calls of on_progress (a bar, not a cost)


def _iteration_level(wl: Workload, arrivals, replica: Replica, max_batch: int, res: list[int],
                     reservation: str, st: SimStats, on_progress=None):
    """Orca's loop. A request admitted in iteration k has generated it - base[i] tokens once
    `it` iterations are done (base[i] = k, plus one per iteration it stalled) and finishes when
    that reaches its output; its KV is prompt + generated - 1. `on_progress(finished, n)` is called
    every `PROGRESS_EVERY` finished requests."""
    cost = replica.cost
    deployed = cost.deployed  # once: the loop below is hot
    cap = replica.kv_capacity_tokens
    prompt, output, n = wl.prompt, wl.output, len(wl)
    none = reservation == "none"
    finish = [math.nan] * n
    first = st.first
    base = [0] * n
    heap: list[tuple[int, int]] = []  # (iteration count at which it finishes, request)
    running: dict[int, None] = {}  # admission order = arrival order
    pending: deque[int] = deque()
    t, it, nxt = 0.0, 0, 0
    written = reserved = 0
    # st's sums and peaks as locals while the loop runs (an attribute update per term each loop turn
    # cost a tenth of it), stored back on return
    busy = area_n = area_r = area_w = 0.0
    peak_r = peak_w = iterations = positions = 0
    done = 0

    def stored():
        st.busy, st.area_n, st.area_r, st.area_w = busy, area_n, area_r, area_w
        st.peak_r, st.peak_w, st.iterations, st.rows = peak_r, peak_w, iterations, positions

    while True:
        while nxt < n and arrivals[nxt] <= t:
            pending.append(nxt)
            nxt += 1
        n_dec = len(running)
        if not n_dec and not pending:
            if nxt == n:
                stored()
                return finish, None
            t = arrivals[nxt]
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
                return finish, running_deadlock(running, prompt, output, base, it, t, cap, len(pending))
            dt, rows = mixed_iteration(cost, deployed, running, admitted, prog, n_dec, written, it, t, prompt, output,
                                       base, first, heap, st)
            written += rows  # decoders write one token each, prompts their length
            it += 1
            t += dt
            iterations += 1
            positions += rows
            busy += dt
            area_n += dt * len(running)
            area_r += dt * reserved
            area_w += dt * written
        else:  # a stretch of pure decode iterations with the same batch
            while heap[0][0] != base[heap[0][1]] + output[heap[0][1]]:
                heapq.heappop(heap)  # stale: pushed before the request stalled
            k_max = heap[0][0] - it
            if none:
                k_max = min(k_max, (cap - written) // n_dec)
            watch = arrivals[nxt] if (not pending and n_dec < max_batch and nxt < n) else math.inf
            k, span, stretch_w, w = _decode_stretch(cost, n_dec, written, k_max, t, watch)
            if deployed:
                st.comm += k * cost.comm_s(n_dec)
            t += span
            it += k
            written = w
            iterations += k
            positions += k * n_dec
            busy += span
            area_n += span * n_dec
            area_r += span * reserved
            area_w += stretch_w
        if reserved > peak_r:  # max(), without a call on every loop turn
            peak_r = reserved
        if written > peak_w:
            peak_w = written
        while heap and heap[0][0] <= it:
            d, i = heapq.heappop(heap)
            if d != base[i] + output[i]:  # stale: the request stalled after this was pushed
                continue
            finish[i] = t
            written -= prompt[i] + output[i] - 1
            reserved -= res[i]
            del running[i]
            done += 1
            if on_progress is not None and not done % PROGRESS_EVERY:
                on_progress(done, n)


def _decode_stretch(cost, n: int, written: int, k_max: int, t: float = 0.0,
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
    k, span, area_w, w = 0, 0.0, 0.0, written
    if cost.deployed:
        total = cost.deployed_total
        while k < k_max:
            dt = total(mem if mem > comp else comp, n)
            span += dt
            w += n
            area_w += dt * w
            mem += d_mem
            comp += d_comp
            k += 1
            if t + span >= watch:
                break
        return k, span, area_w, w
    while k < k_max:
        dt = (mem if mem > comp else comp) + fixed_s  # roofline_total, inlined: a call here costs 25%
        span += dt
        w += n
        area_w += dt * w
        mem += d_mem
        comp += d_comp
        k += 1
        if t + span >= watch:
            break
    return k, span, area_w, w
