"""speculative."""
from llm_cost.speculative.closed_forms import *  # noqa: F401,F403  (temporary)
from llm_cost.speculative.closed_forms import expected_tokens_unchecked, check_alpha, check_gamma, check_cost, TIE_RTOL  # noqa
