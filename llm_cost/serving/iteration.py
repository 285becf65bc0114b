"""What one iteration of the serving engine costs, and how many all-layer K/V tokens a sequence holds.

K/V is counted in all-layer tokens as `capacity.kv_capacity`: a sequence of c tokens holds
K(c) = (full layers x c + sum over windowed layers of min(c, window)) / layers tokens
(`counts.kv_bytes(model, c)` / `kv_bytes_per_token`); K(c) = c for a model without windows.

An iteration's time is `IterationCost.time(rows, kv_read + rows, pairs)`: every sequence with c
cached tokens feeding r rows adds r rows, c K/V read and causal_pairs(r, c) pairs (windowed layers
each capped at its window, `PassCost.uniform_terms`), plus gamma draft steps (c x the plain decode
step, or the draft model's own step). A microbatched pipeline of m stages times one microbatch of
rows / m (the others overlap it).
"""

from __future__ import annotations


def held_tokens_fn(cost):
    """K(c): all-layer tokens a sequence of c tokens holds (module doc); identity without windows."""
    if not cost.kv_windows:
        return None
    layers = cost.num_layers
    windows = cost.kv_windows
    full = layers - sum(n for _, n in windows)

    def held(c):
        return (full * c + sum(n * (c if c < w else w) for w, n in windows)) / layers
    return held


def iteration_time(cost, held, kv, pre, dec_run, pf_run, g: int, rows: float, spec, microbatches: int = 1):
    """(seconds, of which collectives, of which draft steps) of one iteration: the decoders `dec_run`
    (indices into `kv`, each feeding g + 1 rows) and the prefill chunks `pf_run` ((index, rows) after
    `pre[index]` cached tokens); `held` is `held_tokens_fn(cost)` (None without windows)."""
    kv_read = pairs = 0.0
    kv_dec = 0.0
    r = g + 1
    if held:
        for i in dec_run:
            c = kv[i]
            kt, pr = cost.uniform_terms(r, 1, c)
            kv_read += kt - r
            pairs += pr
            kv_dec += c
    elif dec_run:
        kv_dec = sum(map(kv.__getitem__, dec_run))
        kv_read = kv_dec
        pairs = r * kv_dec + len(dec_run) * (r * (r + 1) / 2)
    for i, q in pf_run:
        c = pre[i]
        if held:
            kt, pr = cost.uniform_terms(q, 1, c)
            kv_read += kt - q
            pairs += pr
        else:
            kv_read += c
            pairs += q * c + q * (q + 1) / 2
    dt = comm = draft = 0.0
    if rows:
        if microbatches > 1:  # microbatches of rows / m each, the pipeline full in steady state
            m = microbatches
            dt = cost.time(rows / m, (kv_read + rows) / m, pairs / m)
        else:
            dt = cost.time(rows, kv_read + rows, pairs)
        if cost.deployed:
            comm = cost.comm_s(rows)
    if g and dec_run:
        nd = len(dec_run)
        plain = (spec.draft_cost or cost).time(nd, kv_dec + nd, kv_dec + nd)
        draft = g * (plain if spec.draft_cost is not None else spec.c * plain)
        dt += draft
    return dt, comm, draft
