"""The pass terms as the public API gives them (`llm_cost.roofline.causal_pairs`, ...): checked at entry.

`pass_terms` holds the formulas and checks nothing: the engines call them on every iteration with the
library's own numbers, where a check per call would cost more than the term. A caller from outside
gets these twins, the same functions behind `@check_arguments` (issue 29): a string, nan, inf or a
negative count is refused naming the parameter instead of returning nan or a negative count.
"""

from __future__ import annotations

from llm_cost.catalog.arguments import MAX_COUNT, Many, Number, check_arguments
from llm_cost.roofline import pass_terms

SECONDS = Number(0, 1e12)  # a pass's memory, compute or fixed time: up to 30,000 years
COUNT = Number(0, MAX_COUNT)
LAYERS = Number(1, 1e6, integer=True)
WINDOW = Number(0, MAX_COUNT, integer=True)
BATCH = Number(0, 1e12, low_open=True)  # sequences: rows / batch follows

roofline_total = check_arguments(memory_s=SECONDS, compute_s=SECONDS, fixed_s=SECONDS,
                                 arrays=("memory_s", "compute_s"))(pass_terms.roofline_total)
causal_pairs = check_arguments(new_rows=COUNT, arrays=("new_rows", "context"))(pass_terms.causal_pairs)
decode_pairs = check_arguments(rows_each=COUNT, sequences=COUNT, cached_tokens=COUNT,
                               arrays=("rows_each", "sequences", "cached_tokens"))(pass_terms.decode_pairs)
uniform_pass = check_arguments(batch=BATCH, arrays=("rows", "batch", "context"))(pass_terms.uniform_pass)
windowed_pairs = check_arguments(new_rows=COUNT, window=WINDOW, arrays=("new_rows", "context"))(
    pass_terms.windowed_pairs)
windowed_pass = check_arguments(batch=BATCH, windows=Many(Many(WINDOW, most=2), empty=True), num_layers=LAYERS,
                                arrays=("rows", "batch", "context"))(pass_terms.windowed_pass)
expected_experts_touched = check_arguments(num_experts=Number(0, 1e6, integer=True),
                                           experts_per_token=Number(0, 1e6, integer=True),
                                           arrays=("rows",))(pass_terms.expected_experts_touched)
