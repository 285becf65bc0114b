"""The two phases of a static batch of requests on the roofline: the prefill and the decode steps.

    prefill  one pass over B x ISL rows, causal attention (each prompt token attends to the tokens
             before it and itself); in chunks of C tokens: ceil(ISL / C) passes, chunk k over
             B x C_k rows after k C cached tokens. Its last row samples the first output token.
    decode   OSL - 1 steps of B rows; step j (1 .. OSL - 1) reads ISL + j - 1 cached tokens and
             attends to ISL + j keys. Summed exactly: one numpy evaluation of T over the contexts.

Every pass is `PassCost.step` on one GPU of the deployment (`parallel.deployed_pass_cost`), so
pipeline stages and collectives are in each step's time.

The decode sum is `decode_sum`, the one implementation the request and the planner share: on a
pass cost whose memory and compute seconds are linear in the context (no windowed layers, collectives
that add) a step is stages x max(memory, compute) + a constant, and the sum over the contexts is
closed-form (`sum_of_max`: two lines that cross at most once), O(1) in OSL; otherwise every context
is evaluated and summed (exact, O(OSL)).

Budgets (issue 29): where the decode is summed context by context (not linear) it is evaluated
`BLOCK_STEPS` at a time, so memory stays a few MB whatever OSL; the work, those decode steps and the
prefill passes, is estimated first and a request past `budget.work_budget_s()` is refused with the
estimate and the setting that raises it. The closed form costs nothing per step.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.budget import check_work
from llm_cost.catalog.arguments import MAX_COUNT, Number, check_arguments
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
TIME = Number(0, 1e12)  # seconds


@dataclass(frozen=True)
class Phases:
    """Seconds of a static batch's prefill and decode, and the decode's first and last step."""

    prefill_s: float  # all prefill passes: the time to the first token
    prefill_comm_time_s: float  # the collectives and hand-offs of the prefill passes
    prefill_passes: int
    decode_s: float  # the OSL - 1 decode steps, summed
    tpot_first_s: float  # seconds per output token of the first decode step (context ISL); 0 when OSL = 1
    tpot_last_s: float  # of the last (context ISL + OSL - 2)
    decode_comm_time_s: float  # the target's communication (under speculation: of its verification passes)
    prefill_bound: str  # of the (last) prefill pass
    decode_bound: str  # of the last decode step


def prefill_s(cost: PassCost, batch: int, isl: int, chunk: int | None, count_kv: bool) -> tuple[float, float, int, str]:
    """(seconds, comm seconds, passes, bound of the last pass) of the prefill: one pass, or chunks of `chunk`.

    The one prefill of a static batch: `request_cost` and the planner (`planner.search`, `batch` an
    array of batch sizes: seconds, comm seconds and bounds are arrays then)."""
    chunk = chunk or isl
    total = comm = 0.0
    passes, done, bound = 0, 0, "memory"
    while done < isl:
        tokens = min(chunk, isl - done)
        step = cost.step(batch * tokens, batch, done, count_kv=count_kv)
        total, comm, bound = total + step.step_time_s, comm + step.comm_time_s, step.bound
        done, passes = done + tokens, passes + 1
    return total, comm, passes, bound


@check_arguments(m0=TIME, m1=TIME, c0=TIME, c1=TIME, n=Number(1, MAX_COUNT, integer=True), arrays=("m0", "m1", "c0", "c1"))
def sum_of_max(m0, m1, c0, c1, n: int):
    r"""Sum over j = 0 .. `n` - 1 of max(M_j, C_j) for M and C linear in j, given at j = 0 and n - 1.

    D = M - C is linear, so the points where M is the larger are a prefix (D falling) or a suffix
    (D rising) of the n; each part is an arithmetic series:

    .. math:: \sum_{j=a}^{b} L_j = (b - a + 1) L_0 + \Delta L\,(a + b)(b - a + 1) / 2

    Element-wise over numpy arrays (broadcast). n = 1: max(M_0, C_0).

    >>> float(sum_of_max(10.0, 0.0, 0.0, 10.0, 11))  # 10 9 8 7 6 5 6 7 8 9 10
    85.0
    """
    import numpy as np

    m0, m1, c0, c1 = np.broadcast_arrays(*(np.asarray(value, dtype=float) for value in (m0, m1, c0, c1)))
    if n == 1:
        return np.maximum(m0, c0)
    dm, dc = (m1 - m0) / (n - 1), (c1 - c0) / (n - 1)
    d0, d1 = m0 - c0, m1 - c1
    with np.errstate(divide="ignore", invalid="ignore"):
        cross = np.where(d0 != d1, d0 / (d0 - d1) * (n - 1), 0.0)  # where D = 0, in steps
    falling, rising = d1 < d0, d1 > d0
    # points where memory is the larger: a prefix [0, p) when falling, a suffix [n - s, n) when rising
    prefix = np.where(falling, np.clip(np.floor(cross) + 1, 0, n), np.where(rising, 0, np.where(d0 >= 0, n, 0)))
    suffix = np.where(rising, np.clip(n - np.ceil(cross), 0, n), 0)

    def head(l0, dl, count):  # j in [0, count)
        return count * l0 + dl * (count - 1) * count / 2

    def tail(l0, dl, count):  # j in [n - count, n)
        return count * l0 + dl * count * (2 * n - count - 1) / 2

    all_c = head(c0, dc, n)
    memory = head(m0, dm, prefix) + tail(m0, dm, suffix)
    compute = all_c - head(c0, dc, prefix) - tail(c0, dc, suffix)
    return memory + compute


def linear_in_context(cost: PassCost, count_kv: bool) -> bool:
    """Whether a pass's seconds are stages x max(memory, compute) + a constant, memory and compute
    linear in the context: no windowed layer bending the K/V read, no collectives hidden behind it."""
    return not (count_kv and cost.kv_windows) and not cost.overlap_comm


def decode_sum(cost: PassCost, rows, batch, isl: int, steps: int, *, count_kv: bool = True):
    """Seconds of `steps` decode passes of `rows` rows over `batch` sequences, whose context grows from
    `isl` by one token a step: sum over j = 0 .. steps - 1 of T(rows, batch, isl + j) (module doc),
    broadcast over `rows` and `batch` (numpy arrays; the verification of gamma drafts: rows =
    (gamma + 1) x batch). steps >= 1.

    Closed-form where `linear_in_context`:

        sum = steps x T_0 + stages x (sum_of_max(M, C) - steps x max(M_0, C_0))

    >>> from llm_cost.catalog import load_accelerator, load_model
    >>> from llm_cost.specs import BF16, preset
    >>> cost = PassCost.from_specs(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"), preset("lecture"), BF16)
    >>> import numpy as np
    >>> direct = float(np.sum(cost.step(8.0, 8.0, 1024 + np.arange(255.0)).step_time_s))
    >>> abs(float(decode_sum(cost, 8, 8, 1024, 255)) / direct - 1) < 1e-12
    True
    """
    import numpy as np

    rows, batch = np.broadcast_arrays(np.asarray(rows, dtype=float), np.asarray(batch, dtype=float))
    shape = rows.shape
    if not linear_in_context(cost, count_kv):  # every context, `BLOCK_STEPS` at a time (bounded memory)
        total = np.zeros(shape)
        for lo in range(0, steps, BLOCK_STEPS):
            contexts = isl + np.arange(lo, min(steps, lo + BLOCK_STEPS), dtype=float)
            step = cost.step(rows[..., None], batch[..., None], contexts, count_kv=count_kv)
            total = total + np.broadcast_to(step.step_time_s, shape + contexts.shape).sum(axis=-1)
        return total
    ends = np.array([isl, isl + steps - 1], dtype=float).reshape((2,) + (1,) * len(shape))
    step = cost.step(rows, batch, ends, count_kv=count_kv)
    memory, compute, total = (np.broadcast_to(value, (2,) + shape) for value in (step.memory_time_s, step.compute_time_s, step.step_time_s))
    longest = sum_of_max(memory[0], memory[1], compute[0], compute[1], steps)
    return steps * total[0] + cost.stages * (longest - steps * np.maximum(memory[0], compute[0]))


def decode_steps(cost: PassCost, batch: int, isl: int, osl: int, count_kv: bool):
    """The StepTime of the OSL - 1 decode steps (arrays over the steps), or None when OSL = 1."""
    if osl <= 1:
        return None
    import numpy as np

    contexts = isl + np.arange(osl - 1, dtype=float)  # cached tokens before step j: ISL + j - 1
    return cost.step(float(batch), float(batch), contexts, count_kv=count_kv)


def check_request_work(isl: int, osl: int, chunk: int | None, speculative: bool = False,
                       closed_form: bool = False) -> None:
    """Refuse, before any work, a request whose decode steps and prefill passes would take past the
    work budget: the estimate is OSL - 1 steps x SECONDS_PER_DECODE_STEP (SECONDS_PER_SPECULATIVE_STEP
    under speculation; none when the decode is summed in closed form, `closed_form`: `linear_in_context`
    without speculation) + ceil(ISL / chunk) passes x SECONDS_PER_PREFILL_PASS; the message names `osl`
    (or `prefill_chunk` when the passes dominate)."""
    chunk = chunk or isl
    passes = -(-isl // chunk)
    step = SECONDS_PER_SPECULATIVE_STEP if speculative else 0.0 if closed_form else SECONDS_PER_DECODE_STEP
    decode_s, prefill_s_ = max(osl - 1, 0) * step, passes * SECONDS_PER_PREFILL_PASS
    if decode_s >= prefill_s_:
        check_work("osl", decode_s + prefill_s_, lambda: f"{osl - 1:,} {'speculative ' if speculative else ''}"
                   f"decode steps at {step * 1e6:g} us")
    else:
        check_work("prefill_chunk", decode_s + prefill_s_,
                   lambda: f"{passes:,} prefill passes of {chunk:,} tokens at {SECONDS_PER_PREFILL_PASS * 1e6:g} us")


def phases(cost: PassCost, *, batch: int, isl: int, osl: int, chunk: int | None = None,
           count_kv: bool = True) -> Phases:
    """`Phases` of B requests of ISL prompt and OSL output tokens (module doc), the work checked first."""
    check_request_work(isl, osl, chunk, closed_form=linear_in_context(cost, count_kv))
    pre, pre_comm, passes, pre_bound = prefill_s(cost, batch, isl, chunk, count_kv)
    pre_comm = float(pre_comm)
    if osl <= 1:
        return Phases(pre, pre_comm, passes, 0.0, 0.0, 0.0, 0.0, pre_bound, "-")
    import numpy as np

    steps = osl - 1
    ends = cost.step(float(batch), float(batch), np.array([isl, isl + steps - 1], dtype=float), count_kv=count_kv)
    totals = np.broadcast_to(ends.step_time_s, (2,))
    comm = steps * float(np.broadcast_to(ends.comm_time_s, (2,))[0])  # the collectives' rows are the batch's
    bound = np.broadcast_to(ends.bound, (2,))
    decode = float(decode_sum(cost, batch, batch, isl, steps, count_kv=count_kv))
    return Phases(pre, pre_comm, passes, decode, float(totals[0]), float(totals[-1]), comm, pre_bound, str(bound[-1]))
