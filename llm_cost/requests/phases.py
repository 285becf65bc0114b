"""The two phases of a static batch of requests on the roofline: the prefill and the decode steps.

    prefill  one pass over B x ISL rows, causal attention (each prompt token attends to the tokens
             before it and itself); in chunks of C tokens: ceil(ISL / C) passes, chunk k over
             B x C_k rows after k C cached tokens. Its last row samples the first output token.
    decode   OSL - 1 steps of B rows; step j (1 .. OSL - 1) reads ISL + j - 1 cached tokens and
             attends to ISL + j keys. Summed exactly: one numpy evaluation of T over the contexts.

Every pass is `PassCost.step` on one GPU of the deployment (`parallel.deployed_pass_cost`), so
pipeline stages and collectives are in each step's time.

Budgets (issue 29): the decode steps are evaluated `BLOCK_STEPS` at a time, so memory stays a few MB
whatever OSL (OSL 10^7 took 1.4 GB in one evaluation); the work, decode steps and prefill passes, is
estimated first and a request past `budget.work_budget_s()` is refused with the estimate and the
setting that raises it.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.budget import check_work
from llm_cost.roofline import PassCost

BLOCK_STEPS = 1 << 16  # decode steps per numpy evaluation: about 10 MB of work arrays
# Measured with /usr/bin/time on the shared 2-core dev machine, less the 1.7 s of `request --osl 2`:
# `request --model llama-3-8b --osl 10000000` 6.8 s, 0.5 us a decode step evaluated in blocks (counted
# at 1 us: a loaded machine); `--isl 8000 --prefill-chunk 1` 3.3 s, 200 us a prefill pass (one Python
# call of PassCost.step each; counted at 250 us).
SECONDS_PER_DECODE_STEP = 1e-6
# `request --osl 2000000 --spec-alpha 0.8 --spec-gamma 4`: 5.6 s, 1.9 us a step (a verification and the
# draft's steps through roofline_speedup); counted at 2.5 us
SECONDS_PER_SPECULATIVE_STEP = 2.5e-6
SECONDS_PER_PREFILL_PASS = 250e-6


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
        total, comm, bound = total + t.total_s, comm + float(t.comm_s), t.bound
        done, passes = done + n, passes + 1
    return total, comm, passes, bound


def decode_steps(cost: PassCost, batch: int, isl: int, osl: int, count_kv: bool):
    """The StepTime of the OSL - 1 decode steps (arrays over the steps), or None when OSL = 1."""
    if osl <= 1:
        return None
    import numpy as np

    contexts = isl + np.arange(osl - 1, dtype=float)  # cached tokens before step j: ISL + j - 1
    return cost.step(float(batch), float(batch), contexts, count_kv=count_kv)


def check_request_work(isl: int, osl: int, chunk: int | None, speculative: bool = False) -> None:
    """Refuse, before any work, a request whose decode steps and prefill passes would take past the
    work budget: the estimate is OSL - 1 steps x SECONDS_PER_DECODE_STEP (SECONDS_PER_SPECULATIVE_STEP
    under speculation) + ceil(ISL / chunk) passes x SECONDS_PER_PREFILL_PASS; the message names `osl`
    (or `prefill_chunk` when the passes dominate)."""
    chunk = chunk or isl
    passes = -(-isl // chunk)
    step = SECONDS_PER_SPECULATIVE_STEP if speculative else SECONDS_PER_DECODE_STEP
    decode_s, prefill_s_ = max(osl - 1, 0) * step, passes * SECONDS_PER_PREFILL_PASS
    if decode_s >= prefill_s_:
        check_work("osl", decode_s + prefill_s_, lambda: f"{osl - 1:,} {'speculative ' if speculative else ''}"
                   f"decode steps at {step * 1e6:g} us")
    else:
        check_work("prefill_chunk", decode_s + prefill_s_,
                   lambda: f"{passes:,} prefill passes of {chunk:,} tokens at {SECONDS_PER_PREFILL_PASS * 1e6:g} us")


def decode_sums(cost: PassCost, batch: int, isl: int, osl: int, count_kv: bool) -> tuple:
    """(seconds, comm seconds, first step s, last step s, last step's bound) of the OSL - 1 decode steps
    (OSL >= 2), evaluated `BLOCK_STEPS` steps at a time (one block: exactly `decode_steps` summed)."""
    import numpy as np

    total = comm = 0.0
    first = last = bound = None
    for lo in range(0, osl - 1, BLOCK_STEPS):
        contexts = isl + np.arange(lo, min(osl - 1, lo + BLOCK_STEPS), dtype=float)  # ISL + j - 1
        steps = cost.step(float(batch), float(batch), contexts, count_kv=count_kv)
        totals = np.broadcast_to(steps.total_s, contexts.shape)
        total += float(np.sum(totals))
        comm += float(np.sum(np.broadcast_to(steps.comm_s, contexts.shape)))
        first = float(totals[0]) if first is None else first
        last, bound = float(totals[-1]), str(np.broadcast_to(steps.bound, contexts.shape)[-1])
    return total, comm, first, last, bound


def phases(cost: PassCost, *, batch: int, isl: int, osl: int, chunk: int | None = None,
           count_kv: bool = True) -> Phases:
    """`Phases` of B requests of ISL prompt and OSL output tokens (module doc), the work checked first."""
    check_request_work(isl, osl, chunk)
    pre, pre_comm, passes, pre_bound = prefill_s(cost, batch, isl, chunk, count_kv)
    if osl <= 1:
        return Phases(pre, pre_comm, passes, 0.0, 0.0, 0.0, 0.0, pre_bound, "-")
    total, comm, first, last, bound = decode_sums(cost, batch, isl, osl, count_kv)
    return Phases(pre, pre_comm, passes, total, first, last, comm, pre_bound, bound)
