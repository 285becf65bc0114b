"""A step-level KV run: iteration-level scheduling counted in iterations, one request at a time.

The lecture §3.5 and exercise 10: without a KV reservation and without preemption, running
requests can fill the cache; each still has to write one more token, none can, none finishes,
none frees memory: deadlock. Orca reserves prompt + max_gen when it first schedules a request
(Algorithm 1, lines 23-25) and stops admitting when a reservation does not fit, so every admitted
request completes.

This module is the plain reference: explicit per-request state, one loop turn per iteration,
a full trace. The time-based simulator (`llm_cost.serving.simulator`) implements the same rules with
lazy counters and must agree with it iteration for iteration (tests/test_simulator.py).

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

RESERVATIONS = ("declared", "max_len", "none")


@dataclass(frozen=True)
class KvRequest:
    """One request of a step-level run; `max_gen` is what it declares (default its output)."""

    prompt: int
    output: int
    arrival_step: int = 0
    max_gen: int | None = None

    def __post_init__(self) -> None:
        check_number("prompt", self.prompt, low=1, integer=True)
        check_number("output", self.output, low=1, integer=True)
        check_number("arrival step", self.arrival_step, low=0, integer=True)
        if self.max_gen is not None:
            check_number("max_gen", self.max_gen, low=self.output, integer=True)

    @property
    def declared(self) -> int:
        return self.output if self.max_gen is None else self.max_gen


@dataclass(frozen=True)
class Holder:
    """A request stuck in a deadlock and the KV it holds."""

    request: int  # index in arrival order
    prompt: int
    generated: int
    kv_tokens: int  # prompt + generated - 1
    remaining: int  # tokens it still has to generate


@dataclass(frozen=True)
class Deadlock:
    """When a no-reservation run stopped, and who holds the KV cache."""

    iterations_done: int  # iterations run (idle time excluded); the next one cannot run
    time_s: float | None  # clock at that point (None for a step-level run: no clock)
    kv_capacity_tokens: int
    holders: tuple[Holder, ...]
    waiting: int  # requests arrived but not admitted

    @property
    def kv_held_tokens(self) -> int:
        return sum(h.kv_tokens for h in self.holders)

    def describe(self, limit: int = 8) -> str:
        """One line: when, how much is held, and by whom (the first `limit` holders)."""
        shown = ", ".join(f"#{h.request} holds {h.kv_tokens} ({h.remaining} to go)"
                          for h in self.holders[:limit])
        more = f", and {len(self.holders) - limit} more" if len(self.holders) > limit else ""
        when = "" if self.time_s is None else f" (t = {self.time_s:.4g} s)"
        return (f"deadlock: iteration {self.iterations_done + 1} cannot run{when}; "
                f"{len(self.holders)} requests hold {self.kv_held_tokens} of "
                f"{self.kv_capacity_tokens} KV tokens: {shown}{more}; {self.waiting} waiting")


@dataclass(frozen=True)
class Step:
    """One iteration of the trace."""

    step: int
    admitted: tuple[int, ...]
    progressed: tuple[int, ...]  # running requests that wrote a token and generated one
    stalled: tuple[int, ...]
    finished: tuple[int, ...]
    kv_written: int  # after the iteration, before finished requests free theirs
    kv_reserved: int


@dataclass(frozen=True)
class StepRun:
    """A step-level run: when each request finished (end of iteration, None if it never did)."""

    reservation: str
    kv_capacity_tokens: int
    finish_step: tuple[int | None, ...]
    trace: tuple[Step, ...] = field(repr=False)
    deadlock: Deadlock | None

    @property
    def completed(self) -> bool:
        return self.deadlock is None and all(f is not None for f in self.finish_step)

    @property
    def peak_kv_written(self) -> int:
        return max((s.kv_written for s in self.trace), default=0)

    @property
    def peak_kv_reserved(self) -> int:
        return max((s.kv_reserved for s in self.trace), default=0)


def reservation_tokens(reservation: str, prompt: int, declared: int, max_len: int | None) -> int:
    """KV tokens a request reserves when admitted: prompt + max_gen, max_len, or 0."""
    if reservation == "declared":
        return prompt + declared
    if reservation == "max_len":
        return int(max_len)
    return 0


def run_steps(requests: list[KvRequest], kv_capacity_tokens: int, *, reservation: str = "none",
              max_batch: int | None = None, max_len: int | None = None,
              max_steps: int = 1_000_000) -> StepRun:
    """Run `requests` iteration by iteration under a reservation policy; report deadlock.

    Exercise 10: capacity 10, two requests of 4 prompt tokens generating 5 each. `none`: both
    admitted (8 tokens), then 10 after the next iteration, then stuck with 5 tokens each and 3
    still to generate. `declared` (4 + 5 = 9 reserved): the second waits; both complete.
    """
    check_choice("reservation", reservation, RESERVATIONS)
    check_number("KV capacity (tokens)", kv_capacity_tokens, low=1, integer=True)
    cap, n = int(kv_capacity_tokens), len(requests)
    max_batch = n if max_batch is None else max_batch
    check_number("max_batch", max_batch, low=1, integer=True)
    if reservation == "max_len":
        check_number("max_len", max_len, low=1, integer=True)
    reserve = [reservation_tokens(reservation, r.prompt, r.declared, max_len) for r in requests]
    for i, r in enumerate(requests):
        need = reserve[i] if reservation != "none" else r.prompt
        if need > cap:
            raise InvalidValueError(f"request {i} needs {need} KV tokens to start but the cache holds {cap}")
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
        admitted = []
        room = cap - written - len(progressed)
        while queue and len(running) + len(admitted) < max_batch:
            i = queue[0]
            if reservation == "none":
                if stalled or requests[i].prompt > room:
                    break
                room -= requests[i].prompt
            elif reserved + reserve[i] > cap:
                break
            reserved += reserve[i]
            admitted.append(queue.pop(0))
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
