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


def totals_time_fn(cost, spec, g: int):
    """fn(rows, pairs, decoders, kv_dec): the seconds of `totals_time` of an iteration from its totals
    (`g` drafts a decoder), kv_read = kv_dec (no cached prompt tokens: whole prefills), for the engine's
    fast path where `inline_coefficients` gives None."""
    def general(rows, pairs, decoders, kv_dec):
        return totals_time(cost, spec, rows, kv_dec, pairs, decoders, kv_dec, g)[0]
    return general


def inline_coefficients(cost, spec, g: int) -> tuple | None:
    """The coefficients with which the engine's fast path evaluates `totals_time_fn` inline (a call per
    iteration would cost a fifth of it), or None where it cannot: a deployment, routed experts or a
    GEMM ramp, of the target or the draft (`one_stage_terms`).

    The target's first seven `InlineTerms` (w, kvb, bps, rf, pf, fps, fixed), the draft's seven (the
    target's own without a draft model), `c` (None with a draft model or without speculation), then the
    collectives' (cf, cr) of the target and of the draft (zeros on one GPU: a tensor-parallel replica
    takes the fast path's inline time too). The fast path evaluates `roofline.inline_terms`' T with
    them on one stage without hand-offs, the target's over the iteration's rows, K/V and pairs and,
    when `g` (drafts a decoder) and decoders, `draft_time`'s g x [c x] the draft's over ctx = kv_dec +
    decoders rows-worth of K/V and pairs: operation for operation what `PassCost.time` and `draft_time` compute (the same
    seconds, bit for bit: tests/test_serving_engine.py)."""
    draft_cost = spec.draft_cost if spec else None
    target, draft = one_stage_terms(cost), one_stage_terms(draft_cost or cost)
    if target is None or draft is None:
        return None
    c = None if draft_cost is not None or not g else spec.c
    return (*target[:7], *draft[:7], c, target.comm_fixed_s, target.comm_row_s, draft.comm_fixed_s,
            draft.comm_row_s)


def memory_bound_from(cost, spec, g: int, max_decoders: int) -> tuple[list, list] | None:
    """For iterations in which only decoders run (n of them, `g` + 1 rows each, S cached tokens in all):
    per n in 0 .. `max_decoders`, the S from which the target's pass is memory-bound, and the same for
    the draft step (one row a sequence; inf: not known to be), from `InlineTerms.memory_bound_from`
    (the pass cost's own terms); None where `inline_coefficients` is. There the fast path skips the
    compute term, exactly: max(memory, compute) is the memory term."""
    draft_cost = spec.draft_cost if spec else None
    target, draft = one_stage_terms(cost), one_stage_terms(draft_cost or cost)
    if target is None or draft is None:
        return None
    return target.memory_bound_from(g + 1, max_decoders), draft.memory_bound_from(1, max_decoders)
