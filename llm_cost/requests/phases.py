"""The two phases of a static batch of requests on the roofline: the prefill and the decode steps.

    prefill  one pass over B x ISL rows, causal attention (each prompt token attends to the tokens
             before it and itself); in chunks of C tokens: ceil(ISL / C) passes, chunk k over
             B x C_k rows after k C cached tokens. Its last row samples the first output token.
    decode   OSL - 1 steps of B rows; step j (1 .. OSL - 1) reads ISL + j - 1 cached tokens and
             attends to ISL + j keys. Summed exactly: one numpy evaluation of T over the contexts.

Every pass is `PassCost.step` on one GPU of the deployment (`parallel.deployed_pass_cost`), so
pipeline stages and collectives are in each step's time.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.roofline import PassCost


@dataclass(frozen=True)
class Phases:
    """Seconds of a static batch's prefill and decode, and the decode's first and last step."""

    prefill_s: float  # all prefill passes: the time to the first token
    prefill_comm_s: float
    prefill_passes: int
    decode_s: float  # the OSL - 1 decode steps, summed
    decode_first_s: float  # the first decode step (context ISL); 0 when OSL = 1
    decode_last_s: float  # the last (context ISL + OSL - 2)
    decode_comm_s: float  # the target's communication (under speculation: of its verification passes)
    prefill_bound: str  # of the (last) prefill pass
    decode_bound: str  # of the last decode step


def prefill_s(cost: PassCost, batch: int, isl: int, chunk: int | None, count_kv: bool) -> tuple[float, float, int, str]:
    """(seconds, comm seconds, passes, bound of the last pass) of the prefill: one pass, or chunks of `chunk`."""
    chunk = chunk or isl
    total = comm = 0.0
    passes, done, bound = 0, 0, "memory"
    while done < isl:
        n = min(chunk, isl - done)
        t = cost.step(batch * n, batch, done, count_kv=count_kv)
        total, comm, bound = total + t.total_s, comm + float(t.comm_time_s), t.bound
        done, passes = done + n, passes + 1
    return total, comm, passes, bound


def decode_steps(cost: PassCost, batch: int, isl: int, osl: int, count_kv: bool):
    """The StepTime of the OSL - 1 decode steps (arrays over the steps), or None when OSL = 1."""
    if osl <= 1:
        return None
    import numpy as np

    contexts = isl + np.arange(osl - 1, dtype=float)  # cached tokens before step j: ISL + j - 1
    return cost.step(float(batch), float(batch), contexts, count_kv=count_kv)


def phases(cost: PassCost, *, batch: int, isl: int, osl: int, chunk: int | None = None,
           count_kv: bool = True) -> Phases:
    """`Phases` of B requests of ISL prompt and OSL output tokens (module doc)."""
    import numpy as np

    pre, pre_comm, passes, pre_bound = prefill_s(cost, batch, isl, chunk, count_kv)
    steps = decode_steps(cost, batch, isl, osl, count_kv)
    if steps is None:
        return Phases(pre, pre_comm, passes, 0.0, 0.0, 0.0, 0.0, pre_bound, "-")
    totals = np.broadcast_to(steps.total_s, (osl - 1,))
    comm = float(np.sum(np.broadcast_to(steps.comm_time_s, (osl - 1,))))
    bound = np.broadcast_to(steps.bound, (osl - 1,))
    return Phases(pre, pre_comm, passes, float(np.sum(totals)), float(totals[0]), float(totals[-1]), comm,
                  pre_bound, str(bound[-1]))
