"""What one iteration of the serving engine costs, and how many all-layer K/V tokens a sequence holds.

K/V is counted in all-layer tokens as `capacity.kv_capacity`: a sequence of `c` tokens holds
K(c) = (full layers x c + sum over windowed layers of min(c, window)) / layers tokens
(`counts.kv_bytes(model, c)` / `kv_bytes_per_token`); K(c) = c for a model without windows. In
`held_tokens_fn`, `n` layers share a window of `w` tokens.

An iteration's time is `IterationCost.time(rows, kv_read + rows, pairs)`: every sequence with c
cached tokens feeding `r` rows adds r rows, c K/V read and causal_pairs(r, c) pairs (windowed layers
each capped at its window, `PassCost.uniform_terms`), plus `g` (gamma) draft steps each (`spec.c` x
the plain decode step, or the draft model's own step). A microbatched pipeline of `m` stages times
one microbatch of rows / m (the others overlap it).
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple

from llm_cost.roofline.pass_terms import causal_pairs, decode_pairs  # unchecked: a hot loop (roofline.terms)


def held_tokens_fn(cost):
    """K(c): all-layer tokens a sequence of c tokens holds (module doc); None where that is c itself.

    Windowed layers hold at most their window; a hybrid's recurrent layers hold a fixed state per
    sequence (in all-layer K/V tokens: `PassCost.state_tokens`, the state a pass moves, over
    `STATE_MOVES_PER_PASS`), from its first token to its last:

        K(c) = (full c + sum_w n_w min(c, w)) / layers + state  (c > 0),   K(0) = 0

    at context `c`, `n` layers sharing a window of `w` tokens.

    Its attribute `many` is K over a numpy array of contexts, elementwise the same operations.
    """
    from llm_cost.roofline.pass_terms import STATE_MOVES_PER_PASS

    state = cost.state_tokens / STATE_MOVES_PER_PASS
    if not cost.kv_windows and not state:
        return None
    layers = cost.num_layers
    windows = cost.kv_windows
    full = layers - sum(n for _, n in windows)

    def held(c):
        tokens = (full * c + sum(n * (c if c < w else w) for w, n in windows)) / layers if windows else c
        return tokens + state if c > 0 else tokens

    def held_many(c):  # the same operations elementwise over a numpy array of contexts (`decode_stretch`)
        import numpy as np

        tokens = (full * c + sum(n * np.minimum(c, w) for w, n in windows)) / layers if windows else c
        return np.where(c > 0, tokens + state, tokens)
    held.many = held_many
    return held


def compute_bound_rows(cost, microbatches: int = 1) -> float:
    """Rows from which an iteration counts as compute-bound, its busy seconds tallied in the statistics'
    `compute_bound` (`ServeResult.compute_bound_s`, the split `serving.energy` takes): the smallest rows
    `m` with compute_s(m, 0) >= memory_s(m, m), the GEMMs of m rows against the weights and their own
    K/V (`roofline.critical.first_crossing`; cached K/V and attention pairs left out, one comparison
    an iteration), x `microbatches` (each times rows / m); inf for a pass without arithmetic."""
    if not cost.row_flops:
        return math.inf
    from llm_cost.roofline.critical import first_crossing

    return microbatches * first_crossing(lambda m: cost.compute_s(m, 0.0) - cost.memory_s(m, m), 1.0, 1e12)


def iteration_time(cost, held, kv, pre, dec_run, pf_run, g: int, rows: float, spec, microbatches: int = 1):
    """(seconds, of which collectives, of which draft steps) of one iteration: the decoders `dec_run`
    (indices into `kv`, each feeding `r` = `g` + 1 rows at its `c` cached tokens) and the prefill chunks
    `pf_run` ((index, rows) after `pre[index]` cached tokens); `held` is `held_tokens_fn(cost)` (None
    without windows)."""
    kv_read = pairs = 0.0
    kv_dec = 0.0
    r = g + 1
    if held:
        for index in dec_run:
            c = kv[index]
            kt, pr = cost.uniform_terms(r, 1, c)
            kv_read += kt - r
            pairs += pr
            kv_dec += c
    elif dec_run:
        kv_dec = sum(map(kv.__getitem__, dec_run))
        kv_read = kv_dec
        pairs = decode_pairs(r, len(dec_run), kv_dec)
    for index, chunk in pf_run:
        c = pre[index]
        if held:
            kt, pr = cost.uniform_terms(chunk, 1, c)
            kv_read += kt - chunk
            pairs += pr
        else:
            kv_read += c
            pairs += causal_pairs(chunk, c)
    return totals_time(cost, spec, rows, kv_read, pairs, len(dec_run), kv_dec, g, microbatches)


def totals_time(cost, spec, rows, kv_read, pairs, decoders: int, kv_dec, g: int, microbatches: int = 1):
    """(seconds, of which collectives, of which draft steps) of an iteration from its totals: `rows`
    rows reading `kv_read` cached K/V tokens and computing `pairs` pairs, of which `decoders`
    sequences decode with `kv_dec` cached tokens in all and `g` drafts each (module doc), over `m`
    microbatches when `microbatches` > 1."""
    dt = comm = draft = 0.0
    if rows:
        if microbatches > 1:  # microbatches of rows / m each, the pipeline full in steady state
            m = microbatches
            dt = cost.time(rows / m, (kv_read + rows) / m, pairs / m)
        else:
            dt = cost.time(rows, kv_read + rows, pairs)
        if cost.deployed:
            comm = cost.comm_time_s(rows)
    if g and decoders:
        draft = draft_time(cost, spec, g, decoders, kv_dec)
        dt += draft
    return dt, comm, draft


def draft_time(cost, spec, g: int, decoders, kv_dec):
    """`g` draft steps over `decoders` sequences holding `kv_dec` cached tokens in all: c x the plain
    decode step each, or the draft model's own step. Numbers or numpy arrays (decoders >= 1)."""
    plain = (spec.draft_cost or cost).time(decoders, kv_dec + decoders, kv_dec + decoders)
    return g * (plain if spec.draft_cost is not None else spec.c * plain)


def totals_time_arrays(cost, spec, g: int, rows, pairs, decoders, kv_dec, kv_read=None):
    """`totals_time` of many iterations at once (numpy arrays, rows >= 1, kv_read = kv_dec unless
    given), `g` drafts a decoder: the (seconds, collectives, draft steps) arrays, elementwise the same
    floating-point operations."""
    import numpy as np

    dt = cost.time(rows, (kv_dec if kv_read is None else kv_read) + rows, pairs)
    comm = cost.comm_time_s(rows) if cost.deployed else np.zeros(len(dt))
    draft = np.zeros(len(dt))
    on = decoders > 0
    if g and on.any():
        draft[on] = draft_time(cost, spec, g, decoders[on], kv_dec[on])
        dt[on] += draft[on]
    return dt, comm, draft


def one_stage_terms(cost):
    """`PassCost.inline_coefficients` of a cost on one stage without hand-offs, or None (not a `PassCost`,
    or T more than max(memory, compute) + collectives(rows) + fixed)."""
    from llm_cost.roofline.pass_cost import PassCost

    terms = cost.inline_coefficients() if isinstance(cost, PassCost) else None
    if terms is None or terms.stages != 1 or terms.handoff_fixed_s or terms.handoff_row_s:
        return None
    return terms


class PassTimers(NamedTuple):
    """How a fast path prices its iterations (`pass_timers`): the target's pass and the draft's step, each
    as fn(rows, kv_tokens, pairs) and, where memory-bound (`memory_bound_from`), fn(rows, kv_tokens)."""

    target: Callable  # T of the target's pass
    target_memory: Callable  # T of the target's pass where memory-bound (its compute term left out)
    draft: Callable  # T of one draft step
    draft_memory: Callable  # T of one draft step where memory-bound
    draft_ratio: float | None  # a draft step's share of `draft` (spec.c); None: a draft model, or no speculation
    target_from: list  # per n decoders: the K/V tokens from which a decode-only pass is memory-bound
    draft_from: list  # the same for the draft step (one row a sequence)


def pass_timers(cost, spec, g: int, max_decoders: int) -> PassTimers:
    """`PassTimers` of an iteration in which n decoders feed `g` + 1 rows each (n <= `max_decoders`) and
    `g` drafts a decoder: `totals_time`'s seconds are target(rows, kv_read + rows, pairs) + g x
    [draft_ratio x] draft(n, kv_dec + n, kv_dec + n) (`draft_time`), bit for bit.

    Where the pass cost gives `inline_coefficients` on one stage without hand-offs (`one_stage_terms`),
    its `InlineTerms.evaluator` and `memory_evaluator` (T in one call, coefficients bound: a hot loop's
    one call) and `InlineTerms.memory_bound_from` (from those K/V tokens on, max(memory, compute) is the
    memory term, exactly); else `cost.time` itself and no memory-bound K/V (inf)."""
    draft_cost = spec.draft_cost if spec else None
    target = _timers(cost, g + 1, max_decoders)
    draft = _timers(draft_cost or cost, 1, max_decoders)
    ratio = None if draft_cost is not None or not g else spec.c
    return PassTimers(target[0], target[1], draft[0], draft[1], ratio, target[2], draft[2])


def pass_timer(cost):
    """fn(rows, kv_tokens, pairs): `cost.time` for numbers in one call, coefficients bound
    (`InlineTerms.evaluator`) where `one_stage_terms` gives them, else `cost.time` itself."""
    terms = one_stage_terms(cost)
    return cost.time if terms is None else terms.evaluator()


def _timers(cost, rows_each: int, max_decoders: int) -> tuple:
    """(T, T where memory-bound, memory-bound from) of one cost (`pass_timers`)."""
    terms = one_stage_terms(cost)
    if terms is None:
        return cost.time, cost.time, [math.inf] * (max_decoders + 1)
    return pass_timer(cost), terms.memory_evaluator(), terms.memory_bound_from(rows_each, max_decoders)


def memory_bound_from(cost, spec, g: int, max_decoders: int) -> tuple[list, list]:
    """For iterations in which only decoders run (n of them, `g` + 1 rows each, S cached tokens in all):
    per n in 0 .. `max_decoders`, the S from which the target's pass is memory-bound, and the same for
    the draft step (one row a sequence; inf: not known to be), from `InlineTerms.memory_bound_from`
    (the pass cost's own terms; `pass_timers`' `target_from` and `draft_from`). There the fast path
    skips the compute term, exactly: max(memory, compute) is the memory term."""
    timers = pass_timers(cost, spec, g, max_decoders)
    return timers.target_from, timers.draft_from
