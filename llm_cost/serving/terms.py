"""Serving's small formulas as the public API gives them (`llm_cost.serving.reservation_tokens`, ...):
checked at entry (issue 29).

The serving engine calls `reservations.reservation_tokens` once per request and
`batch_waste.padded_positions` once per request-level batch with the library's own numbers, unchecked; a caller from outside gets these twins, the
same functions behind `@check_arguments`: a string, nan, inf or a negative count is refused naming the
parameter instead of returning nan.
"""

from __future__ import annotations

from llm_cost.catalog.arguments import MAX_COUNT, Choice, Number, check_arguments
from llm_cost.serving import batch_waste, reservations

TOKENS = Number(0, MAX_COUNT, integer=True)

reservation_tokens = check_arguments(reservation=Choice(*reservations.RESERVATIONS), prompt=TOKENS,
                                     declared=TOKENS, max_len=Number(1, MAX_COUNT, integer=True))(
    reservations.reservation_tokens)
padded_positions = check_arguments(batch=Number(1, MAX_COUNT, integer=True), prompt_max=TOKENS,
                                   output_max=TOKENS)(batch_waste.padded_positions)
