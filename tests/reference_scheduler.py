"""A step-level KV run: iteration-level scheduling counted in iterations, one request at a time.

The lecture §3.5 and exercise 10: without a KV reservation and without preemption, running
requests can fill the cache; each still has to write one more token, none can, none finishes,
none frees memory: deadlock. Orca reserves prompt + max_gen when it first schedules a request
(Algorithm 1, lines 23-25) and stops admitting when a reservation does not fit, so every admitted
request completes.

This module is the test oracle the engine is checked against (it left the library in issue 24:
`engine.serve` is the one scheduler): explicit per-request state, one loop turn per iteration, a
full trace. Every path of `serve` (its fast paths and its general loop) must agree with it iteration
for iteration with every iteration costing 1 s (tests/test_simulator.py, tests/test_engine_paths.py).
`request_level_steps` is the same for FasterTransformer's request-level batches; `served` serves a
workload under one of the lecture's scheduler names (`serve_config.config_for`).

The rules, per iteration:
1. requests that have arrived join the queue (first come, first served);
2. running requests each write one KV token (the token they generated last) and generate one;
   with a reservation their slot is reserved; without one, the earliest get the free slots and
   the rest stall;
3. queued requests are admitted in order, stopping at the first that does not fit: the batch
   holds at most `max_batch`; reservation `declared` needs prompt + max_gen reserved tokens,
   `max_len` needs `max_len`, `none` needs its prompt free (and no running request stalled);
   an admitted request writes its prompt and generates its first token;
4. a request that has generated its output finishes at the end of the iteration and frees its KV.
Deadlock: requests are running and none can write (no free KV token).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llm_cost.errors import InvalidValueError, check_choice, check_number
from llm_cost.serving.reservations import RESERVATIONS, Deadlock, Holder, reservation_tokens
from llm_cost.catalog.arguments import MAX_COUNT, Many, Number, Spec, check_arguments
from llm_cost.specs.validate import check_fields

@dataclass(frozen=True)
class KvRequest:
    """One request of a step-level run; `max_gen` is what it declares (default its output).

        declared = max_gen if given else output;  KV written by its end = prompt + output - 1

    Parameters
    ----------
    prompt : int
        Prompt tokens, a whole number >= 1.
    output : int
        Tokens it generates, >= 1.
    arrival_step : int, optional
        Iteration at which it arrives, >= 0 (default 0).
    max_gen : int or None, optional
        Declared generation limit, >= output (default: output).

    Examples
    --------
    >>> KvRequest(4, 5).declared, KvRequest(4, 5, max_gen=9).declared
    (5, 9)
    """

    prompt: int
    output: int
    arrival_step: int = 0
    max_gen: int | None = None

    def __post_init__(self) -> None:
        """Validate the lengths (whole, >= 1), the arrival step (>= 0) and max_gen (>= output)."""
        check_fields(self)
        check_number("prompt", self.prompt, low=1, integer=True)
        check_number("output", self.output, low=1, integer=True)
        check_number("arrival_step", self.arrival_step, low=0, integer=True)
        if self.max_gen is not None:
            check_number("max_gen", self.max_gen, low=1, integer=True)
            if self.max_gen < self.output:
                raise InvalidValueError(f"max_gen must be at least output ({self.output}), got {self.max_gen}",
                                        params=("max_gen", "output"))

    @property
    def declared(self) -> int:
        """The generation limit it declares: max_gen, else its output."""
        return self.output if self.max_gen is None else self.max_gen


@dataclass(frozen=True)
class Step:
    """One iteration of the trace.

        kv_written = sum over running requests of (prompt + generated - 1)

    Attributes
    ----------
    step
        The iteration's index (iterations are counted from 0, idle ones skipped).
    admitted, progressed, stalled, finished
        Requests (indices) admitted, that wrote a token and generated one, that stalled (no free KV
        token), and that finished in this iteration.
    kv_written
        KV tokens written after the iteration, before finished requests free theirs.
    kv_reserved
        KV tokens reserved after the iteration.

    Examples
    --------
    The lecture exercise 10 without a reservation: both admitted (8 tokens), then 10.

    >>> run = run_steps([KvRequest(4, 5), KvRequest(4, 5)], 10, reservation="none")
    >>> [(s.step, s.admitted, s.progressed, s.kv_written) for s in run.trace]
    [(0, (0, 1), (), 8), (1, (), (0, 1), 10)]
    """

    step: int
    admitted: tuple[int, ...]
    progressed: tuple[int, ...]  # running requests that wrote a token and generated one
    stalled: tuple[int, ...]
    finished: tuple[int, ...]
    kv_written: int  # after the iteration, before finished requests free theirs
    kv_reserved: int


@dataclass(frozen=True)
class StepRun:
    """A step-level run: when each request finished (end of iteration, None if it never did).

        completed = (deadlock is None) and every finish_step is not None

    Attributes
    ----------
    reservation
        The policy: "declared", "max_len" or "none".
    kv_capacity_tokens
        The cache's size, tokens.
    finish_step
        Per request, the number of iterations done when it finished (None if it never did).
    trace
        One `Step` per iteration.
    deadlock
        The deadlock that stopped the run, or None.

    Examples
    --------
    See `run_steps`.
    """

    reservation: str
    kv_capacity_tokens: int
    finish_step: tuple[int | None, ...]
    trace: tuple[Step, ...] = field(repr=False)
    deadlock: Deadlock | None

    @property
    def completed(self) -> bool:
        """True when there was no deadlock and every request finished."""
        return self.deadlock is None and all(f is not None for f in self.finish_step)

    @property
    def peak_kv_written(self) -> int:
        """The most KV tokens written at once, tokens."""
        return max((s.kv_written for s in self.trace), default=0)

    @property
    def peak_kv_reserved(self) -> int:
        """The most KV tokens reserved at once, tokens."""
        return max((s.kv_reserved for s in self.trace), default=0)


@check_arguments(requests=Many(Spec("KvRequest"), most=10**7), kv_capacity_tokens=Number(1, MAX_COUNT, integer=True), max_steps=Number(1, 1e9, integer=True))
def run_steps(requests: list[KvRequest], kv_capacity_tokens: int, *, reservation: str = "none",
              max_batch: int | None = None, max_len: int | None = None,
              max_steps: int = 1_000_000) -> StepRun:
    r"""Run `requests` iteration by iteration under a reservation policy; report deadlock.

    Exercise 10: capacity 10, two requests of 4 prompt tokens generating 5 each. `none`: both
    admitted (8 tokens), then 10 after the next iteration, then stuck with 5 tokens each and 3
    still to generate. `declared` (4 + 5 = 9 reserved): the second waits; both complete.
    The lecture §3.5; Orca, Algorithm 1, lines 23-25.

    .. math:: \text{admit } i \iff \mathit{reserved} + R_i \le \mathit{capacity}
              \ (\text{none: } P_i \le \text{free tokens})

    Parameters
    ----------
    requests : list of KvRequest
        The requests.
    kv_capacity_tokens : int
        The cache's size, a whole number of tokens >= 1.
    reservation : str, optional
        "none" (default), "declared" or "max_len".
    max_batch : int or None, optional
        Most requests running at once, >= 1 (default: all).
    max_len : int or None, optional
        Tokens a "max_len" reservation takes (required for it).
    max_steps : int, optional
        Iterations after which the run stops (default 1,000,000).

    Returns
    -------
    StepRun
        Finish iterations, the trace and the deadlock if any.

    Examples
    --------
    The lecture exercise 10: "两个都被接纳，prefill 后占 8 个 ... 下一次迭代各写 1 个 → 10 个 ...
    死锁".

    >>> run = run_steps([KvRequest(4, 5), KvRequest(4, 5)], 10, reservation="none")
    >>> [s.kv_written for s in run.trace], run.completed, run.deadlock.iterations_done
    ([8, 10], False, 2)
    >>> [(h.request, h.kv_tokens, h.remaining) for h in run.deadlock.holders]
    [(0, 5, 3), (1, 5, 3)]

    Orca's reservation of prompt + max_gen = 9: "慢一些，但一定能完成".

    >>> orca = run_steps([KvRequest(4, 5), KvRequest(4, 5)], 10, reservation="declared")
    >>> orca.completed, orca.finish_step, orca.peak_kv_reserved, orca.peak_kv_written
    (True, (5, 10), 9, 8)
    """
    reservation, cap, max_batch, reserve = _checked_run(requests, kv_capacity_tokens, reservation=reservation,
                                                        max_batch=max_batch, max_len=max_len)
    n = len(requests)
    order = sorted(range(n), key=lambda i: requests[i].arrival_step)
    generated, kv, finish = [0] * n, [0] * n, [None] * n
    running: list[int] = []
    queue: list[int] = []
    trace: list[Step] = []
    written = reserved = 0
    nxt, step = 0, 0
    while step < max_steps:
        while nxt < n and requests[order[nxt]].arrival_step <= step:
            queue.append(order[nxt])
            nxt += 1
        if not running and not queue:
            if nxt == n:
                break
            step = requests[order[nxt]].arrival_step
            continue
        if reservation == "none":
            free = cap - written
            progressed, stalled = running[:free], running[free:]
        else:
            progressed, stalled = list(running), []
        admitted, reserved = _admit(requests, queue, reserve, reservation=reservation, cap=cap,
                                    room=cap - written - len(progressed), reserved=reserved,
                                    slots=max_batch - len(running), stalled=bool(stalled))
        if not progressed and not admitted:  # running requests, none can write: deadlock
            holders = tuple(Holder(i, requests[i].prompt, generated[i], kv[i],
                                   requests[i].output - generated[i]) for i in running)
            return StepRun(reservation, cap, tuple(finish), tuple(trace),
                           Deadlock(len(trace), None, cap, holders, len(queue)))
        for i in progressed:
            generated[i] += 1
            kv[i] += 1
        for i in admitted:
            generated[i], kv[i] = 1, requests[i].prompt
        running += admitted
        written = sum(kv[i] for i in running)
        done = [i for i in running if generated[i] == requests[i].output]
        trace.append(Step(step, tuple(admitted), tuple(progressed), tuple(stalled), tuple(done),
                          written, reserved))
        step += 1
        for i in done:
            finish[i] = step
            written -= kv[i]
            reserved -= reserve[i]
        running = [i for i in running if finish[i] is None]
    return StepRun(reservation, cap, tuple(finish), tuple(trace), None)


def _checked_run(requests: list[KvRequest], kv_capacity_tokens: int, *, reservation: str,
                 max_batch: int | None, max_len: int | None) -> tuple[str, int, int, list[int]]:
    """`run_steps`' inputs checked: (reservation, capacity in tokens, max_batch, tokens each request
    reserves). Raises when a request cannot start even in an empty cache."""
    reservation = check_choice("reservation", reservation, RESERVATIONS)
    check_number("kv_capacity_tokens", kv_capacity_tokens, low=1, integer=True)
    cap = int(kv_capacity_tokens)
    max_batch = len(requests) if max_batch is None else max_batch
    check_number("max_batch", max_batch, low=1, integer=True)
    if reservation == "max_len":
        check_number("max_len", max_len, low=1, integer=True)
    reserve = [reservation_tokens(reservation, r.prompt, r.declared, max_len) for r in requests]
    for i, r in enumerate(requests):
        need = reserve[i] if reservation != "none" else r.prompt
        if need > cap:
            raise InvalidValueError(f"request {i} needs {need} KV tokens to start but the cache holds {cap}")
    return reservation, cap, max_batch, reserve


def _admit(requests: list[KvRequest], queue: list[int], reserve: list[int], *, reservation: str, cap: int,
           room: int, reserved: int, slots: int, stalled: bool) -> tuple[list[int], int]:
    """Admit from the head of `queue` (popped in place) into at most `slots` free batch places:
    (admitted, tokens reserved after). `none`: while the prompt fits the `room` left after this
    iteration's writes and no running request stalls; else while reserved + R_i <= cap (Orca,
    Algorithm 1, lines 23-25)."""
    admitted = []
    while queue and len(admitted) < slots:
        i = queue[0]
        if reservation == "none":
            if stalled or requests[i].prompt > room:
                break
            room -= requests[i].prompt
        elif reserved + reserve[i] > cap:
            break
        reserved += reserve[i]
        admitted.append(queue.pop(0))
    return admitted, reserved


def request_level_steps(arrival_steps, outputs, batch: int) -> tuple[int, ...]:
    """Finish iteration of each request under request-level batching with every iteration costing 1
    (whole iterations: arrivals at whole steps): when idle, the first `batch` queued requests run one
    prefill and max(output) - 1 decode steps together and return at the end."""
    n, finish, t, nxt, queue = len(outputs), [0] * len(outputs), 0, 0, []
    while nxt < n or queue:
        while nxt < n and arrival_steps[nxt] <= t:
            queue.append(nxt)
            nxt += 1
        if not queue:
            t = arrival_steps[nxt]
            continue
        run, queue = queue[:batch], queue[batch:]
        t += max(outputs[i] for i in run)
        for i in run:
            finish[i] = t
    return tuple(finish)


def served(workload, replica, scheduler: str = "iteration", max_batch: int = 32, reservation=None, **serve_kw):
    """`engine.serve` under one of the lecture's schedulers (`request`, `iteration`, `none`)."""
    from llm_cost.serving.engine import serve
    from llm_cost.serving.serve_config import config_for

    return serve(workload, replica, config_for(scheduler, max_batch, reservation), **serve_kw)
