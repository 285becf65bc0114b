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

    taus, gammas = np.broadcast_arrays(np.asarray(tau, dtype=float), np.asarray(gamma, dtype=float))
    for value in np.unique(taus).tolist():
        check_number("tau", value)
    for value in np.unique(gammas).tolist():
        check_number("gamma", int(value) if float(value).is_integer() else value, low=0, integer=True)
        if value < 1:
            raise InvalidValueError(f"tau gives alpha only at gamma >= 1 (at gamma 0 every alpha yields "
                                    f"1 token a round), got gamma {value:g}", params=("tau", "gamma"))
    for tv, gv in zip(taus.reshape(-1).tolist(), gammas.reshape(-1).tolist()):
        if not 1 <= tv <= gv + 1:
            raise InvalidValueError(f"tau must be in [1, gamma + 1] = [1, {gv + 1:g}] at gamma {gv:g} "
                                    f"(1 = nothing accepted, gamma + 1 = every draft token), got {tv:g}",
                                    params=("tau", "gamma"))
    lo, hi = np.zeros(taus.shape), np.ones(taus.shape)
    for _ in range(_STEPS):
        mid = 0.5 * (lo + hi)
        low = expected_tokens_unchecked(mid, gammas) < taus
        lo, hi = np.where(low, mid, lo), np.where(low, hi, mid)
    alpha = np.where(taus >= gammas + 1, 1.0, np.where(taus <= 1, 0.0, 0.5 * (lo + hi)))
    return scalar_or_array(alpha)
