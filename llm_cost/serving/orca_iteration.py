"""The parts of one mixed iteration of Orca's loop (the engine's fast path `fast_reservations`).

Admission in arrival order (`admit_in_order`), the iteration that admits prompts or stalls decoders
(`mixed_iteration`: its rows, cached tokens read and causal pairs, priced by `IterationCost.time` or its inline coefficients),
and the deadlock report when nobody can write (`running_deadlock`). Pure-decode stretches between
them stay in `fast_reservations` (`decode_stretch`). Orca, Algorithm 1; the lecture §3.3-3.5.

Positional arguments throughout: these run once per loop turn of the simulator's hot loop.
"""

from __future__ import annotations

import heapq

from llm_cost.roofline.pass_terms import causal_pairs, decode_pairs  # unchecked: a hot loop (roofline.terms)
from llm_cost.serving.reservations import Deadlock, Holder


def admit_in_order(pending, prompt, res, none: bool, room: int, reserved: int, cap: int,
                   slots: int) -> tuple[list[int], int]:
    r"""Admit from the head of `pending` (popped in place) into at most `slots` free batch places.

    .. math:: \text{admit } i \iff \mathit{reserved} + R_i \le \mathit{cap}
              \ (\text{none: } P_i \le \mathit{room})

    `room` is the K/V tokens left after this iteration's decode writes (used without a reservation,
    `none`); `res` the tokens each request reserves. Returns (admitted, tokens reserved after).
    Orca, Algorithm 1, lines 23-25.
    """
    admitted = []
    while pending and len(admitted) < slots:
        request = pending[0]
        if none:
            if prompt[request] > room:
                break
            room -= prompt[request]
        elif reserved + res[request] > cap:
            break
        reserved += res[request]
        admitted.append(pending.popleft())
    return admitted, reserved


def mixed_iteration(cost, timer, deployed: bool, running: dict, admitted: list[int], prog: int, n_dec: int, written: int,
                    it: int, now: float, prompt, output, base: list[int], first: list[float], heap: list,
                    stats) -> tuple[float, int]:
    r"""One iteration that admits prompts or stalls decoders: (its time in seconds, rows it writes).

    The first `prog` running requests decode (without a reservation the rest stall: one iteration
    later, `base` + 1); each admitted prompt of P tokens prefills.

    .. math:: \mathit{rows} = \mathit{prog} + \sum P_i,\quad
              \mathit{pairs} = \mathit{kv\_read} + \mathit{prog} + \sum (P_i^2 + P_i)/2,\quad
              T = \mathtt{cost.time}(\mathit{rows}, \mathit{kv\_read} + \mathit{rows}, \mathit{pairs})

    `kv_read`: the K/V tokens the decoders hold (`written`, or the progressing ones' when some
    stall). `timer` is `cost.time`, or its `inline_coefficients().evaluator()` (the same T in one call). Pushes each stalled and admitted request's finishing iteration on `heap`, records the
    admitted ones' first token at `now` + T (`first`) and adds the collectives' time to `stats.comm_s`.
    """
    kv_read, stalled = written, ()
    if prog < n_dec:  # only without reservation: the earliest requests get the free tokens
        order = list(running)
        stalled = order[prog:]
        kv_read = sum(prompt[request] + it - base[request] - 1 for request in order[:prog])
    rows, pairs = prog, decode_pairs(1, prog, kv_read)
    for request in admitted:
        tokens = prompt[request]
        rows += tokens
        pairs += causal_pairs(tokens)
    dt = timer(rows, kv_read + rows, pairs)
    if deployed:
        stats.comm_s += cost.comm_time_s(rows)
    for request in stalled:
        base[request] += 1
        heapq.heappush(heap, (base[request] + output[request], request))
    for request in admitted:
        base[request] = it
        running[request] = None
        first[request] = now + dt
        heapq.heappush(heap, (it + output[request], request))
    return dt, rows


def running_deadlock(running, prompt, output, base: list[int], it: int, now: float, cap: int,
                     queued: int) -> Deadlock:
    """The deadlock when no running request can write and none can be admitted: each holder's
    prompt, tokens generated (it - base), K/V held (prompt + generated - 1) and tokens still to go."""
    holders = tuple(Holder(request, prompt[request], it - base[request], prompt[request] + it - base[request] - 1,
                           output[request] - it + base[request]) for request in running)
    return Deadlock(it, now, cap, holders, queued)
