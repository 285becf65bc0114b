"""The acceptance rate alpha from the mean accepted length tau that papers report (EAGLE, Medusa).

tau = E(alpha, gamma) = (1 - alpha^(gamma+1)) / (1 - alpha), the tokens one round yields
(Leviathan Eq. 1). E rises strictly with alpha from E(0) = 1 to E(1) = gamma + 1 for gamma >= 1,
so each tau in [1, gamma + 1] has one alpha; it is found by bisection on [0, 1] (no SciPy).
"""

from __future__ import annotations

from llm_cost.errors import InvalidValueError, check_number
from llm_cost.grids import scalar_or_array
from llm_cost.speculative.closed_forms import expected_tokens_unchecked
from llm_cost.catalog.arguments import Number, check_arguments

_STEPS = 64  # halvings of [0, 1]: below one ulp of any alpha in it


@check_arguments(tau=Number(None), arrays=("tau", "gamma"))
def alpha_from_tau(tau, gamma):
    """The alpha whose expected tokens per round at `gamma` is `tau`: E(alpha, gamma) = tau.

    tau must be in [1, gamma + 1] and gamma >= 1 (at gamma 0 every alpha gives tau 1). Scalars
    or numpy arrays, broadcast; tau 1 gives alpha 0 and tau gamma + 1 gives alpha 1.

    >>> round(alpha_from_tau(3.3616, 4), 6)  # the article's alpha 0.8, gamma 4
    0.8
    >>> alpha_from_tau(5, 4)
    1.0
    """
    import numpy as np

    t, g = np.broadcast_arrays(np.asarray(tau, dtype=float), np.asarray(gamma, dtype=float))
    for v in np.unique(t).tolist():
        check_number("tau", v)
    for v in np.unique(g).tolist():
        check_number("gamma", int(v) if float(v).is_integer() else v, low=0, integer=True)
        if v < 1:
            raise InvalidValueError(f"tau gives alpha only at gamma >= 1 (at gamma 0 every alpha yields "
                                    f"1 token a round), got gamma {v:g}", params=("tau", "gamma"))
    for tv, gv in zip(t.reshape(-1).tolist(), g.reshape(-1).tolist()):
        if not 1 <= tv <= gv + 1:
            raise InvalidValueError(f"tau must be in [1, gamma + 1] = [1, {gv + 1:g}] at gamma {gv:g} "
                                    f"(1 = nothing accepted, gamma + 1 = every draft token), got {tv:g}",
                                    params=("tau", "gamma"))
    lo, hi = np.zeros(t.shape), np.ones(t.shape)
    for _ in range(_STEPS):
        mid = 0.5 * (lo + hi)
        low = expected_tokens_unchecked(mid, g) < t
        lo, hi = np.where(low, mid, lo), np.where(low, hi, mid)
    alpha = np.where(t >= g + 1, 1.0, np.where(t <= 1, 0.0, 0.5 * (lo + hi)))
    return scalar_or_array(alpha)
