"""Selective batching (Orca §3, C2; the lecture §4): flatten the tokens for the linear layers, split
them by request for attention.

For one iteration of requests given as (cached, new) token counts:

    padded to [B, L]     B x max(new) token positions, B x max(new) x max(cached + new) attention scores
    flattened            sum(new) positions; per request new x (cached + new) scores (the q x k block;
                         a causal mask keeps new x cached + new (new + 1) / 2 of them)

and the bytes one selectively batched pass reads against one pass per request: the weights once
against once per request, the K/V the same either way (attention has no weights: the lecture §4.3,
"applying batching to Attention has no benefit of reducing the amount of GPU memory reads", Orca §3),
and so is a hybrid's recurrent state: each request's read and written back once per pass
(`roofline.pass_terms.STATE_MOVES_PER_PASS`), whatever its length.

The lecture's figure-5 example (after Orca's Figure 5): x1 and x2 decoding with 3 and 1 cached
tokens, x3 and x4 arriving with 2 and 3: 12 positions padded, 7 useful; 48 scores padded, 19 useful.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.roofline.pass_terms import causal_pairs
from llm_cost.errors import InvalidValueError, check_number

# The lecture §4.2 (Orca Figure 5): (cached, new) of x1, x2 (decoding), x3, x4 (arriving)
FIGURE5 = ((3, 1), (1, 1), (0, 2), (0, 3))


@dataclass(frozen=True)
class SelectiveLedger:
    """Token positions and attention scores, padded against selective; bytes, batched against per request."""

    requests: tuple[tuple[int, int], ...]
    positions_padded: int
    positions_useful: int
    scores_padded: int
    scores_useful: int  # each request's new x (cached + new) block
    scores_causal: int  # of those, the ones a causal mask keeps
    weight_bytes_selective: float | None = None  # one pass: the weights once
    weight_bytes_per_request: float | None = None  # one pass per request: once each
    kv_bytes: float | None = None  # the same either way
    state_bytes: float | None = None  # a hybrid's recurrent state, read and written per request (0: none)


def selective_ledger(requests, *, model=None, weights=None, kv_bytes_per_element: float = 2.0) -> SelectiveLedger:
    """The ledger of one iteration over `requests`, each (cached, new) tokens: cached >= 0, new >= 1.

    With `model` (and `weights`, default BF16), the bytes: weights read by every pass
    (`roofline.pass_terms.shared_bytes_read` under the lecture's convention, the input table a lookup),
    and the K/V each request reads (its cached tokens) and writes (its new ones); a hybrid's recurrent
    state, each request's read and written back once (`state_bytes` = B x 2 x
    `counts.recurrent.state_bytes_per_sequence`: Bamba-9B's 62.29 MB x 2 x 4 = 0.50 GB for figure 5).

    Examples
    --------
    >>> x = selective_ledger(FIGURE5)
    >>> (x.positions_padded, x.positions_useful, x.scores_padded, x.scores_useful)
    (12, 7, 48, 19)
    """
    requests = tuple(requests)
    if not requests:
        raise InvalidValueError("requests needs at least one (cached, new) pair", params=("requests",))
    for cached, new in requests:
        try:
            check_number("cached", cached, low=0, integer=True)
            check_number("new", new, low=1, integer=True)
        except InvalidValueError as err:
            raise InvalidValueError(f"requests entry {cached}:{new}: {err}", params=("requests",)) from None
    requests = tuple((int(cached), int(new)) for cached, new in requests)
    batch = len(requests)
    longest_new = max(new for _, new in requests)
    longest_keys = max(cached + new for cached, new in requests)
    ledger = dict(
        requests=requests,
        positions_padded=batch * longest_new, positions_useful=sum(new for _, new in requests),
        scores_padded=batch * longest_new * longest_keys,
        scores_useful=sum(new * (cached + new) for cached, new in requests),
        scores_causal=sum(int(causal_pairs(new, cached)) for cached, new in requests),  # new(new + 1) even: /2 exact
    )
    if model is not None:
        from llm_cost.catalog import as_model
        from llm_cost.counts import kv_bytes_per_token, weight_bytes
        from llm_cost.counts.recurrent import state_bytes_per_sequence
        from llm_cost.roofline.pass_terms import shared_bytes_read
        from llm_cost.roofline.pass_terms import STATE_MOVES_PER_PASS
        from llm_cost.specs import BF16, PRESETS

        model = as_model(model)
        read = shared_bytes_read(weight_bytes(model, weights or BF16), PRESETS["lecture"])
        if model.moe is not None:
            raise InvalidValueError("selective_ledger counts a dense model's weights; a MoE pass reads the experts "
                                    "its rows touch (use roofline)", params=("model",))
        kv = kv_bytes_per_token(model, kv_bytes_per_element) * sum(cached + new for cached, new in requests)
        state = batch * STATE_MOVES_PER_PASS * state_bytes_per_sequence(model, kv_bytes_per_element)
        ledger.update(weight_bytes_selective=read, weight_bytes_per_request=batch * read, kv_bytes=kv,
                      state_bytes=state)
    return SelectiveLedger(**ledger)
