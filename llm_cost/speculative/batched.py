"""Speculative decoding at batch B on the roofline: verification is free only below the ridge.

One round of a batch of B sequences costs gamma draft steps plus one target pass over
B (gamma + 1) rows (the article §2.4, the lecture §9):

    round    = gamma * t_draft(B) + T(B (gamma + 1))
    speedup  = E * T(B) / round,        E = (1 - alpha^(gamma+1)) / (1 - alpha)

t_draft is `c * T(B)` (the article) or a draft model's own roofline time (the lecture:
Llama-3.2-1B drafting for Llama-3.1-8B, c = 0.186 at batch 1). T(B (gamma + 1)) equals T(B)
until the pass turns compute-bound, at about ridge / (gamma + 1) sequences (article: 295 / 5 ~ 60;
W4A16 weights: ridge / (4 x 5) ~ 15; `turning`). A MoE target reads more experts to verify gamma + 1
rows than to decode one, so its speedup falls below a dense model's of the same active size (`moe`).
Everything broadcasts over alpha, gamma, c and batch.

On a deployment (`deployment`, default one GPU) T is one GPU's pass (`parallel.deployed_pass_cost`:
its share of the weights, K/V at the deployment's kv_dtype, FLOPs, pipeline stages and collectives),
and the draft runs on the same tp and pp (`draft_deployment`). `best_gamma` leaves out the gammas
whose verification pass over B (gamma + 1) rows does not fit in memory (`fit.verification_fit`) and
says how many per cell (`BestGamma.gamma_skipped_unfit`).

In the code `a` is alpha, `g` gamma, `b` the batch B, `c` the draft's cost ratio and `e` E.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from llm_cost.catalog import as_accelerator, as_model, as_profile
from llm_cost.errors import InvalidValueError, check_number
from llm_cost.grids import checked
from llm_cost.roofline import MAX_BATCH, MAX_CONTEXT, PassCost
from llm_cost.roofline.inplace import into
from llm_cost.speculative import blocks
from llm_cost.speculative.closed_forms import expected_tokens_g1
from llm_cost.speculative.inputs import TIE_RTOL
from llm_cost.speculative.inputs import check_alpha, check_cost, check_gamma
from llm_cost.specs import BF16, WeightFormat
from llm_cost.specs.deployment import SINGLE_GPU, Deployment
from llm_cost.speculative.fit import draft_deployment_for, fits_grid
from llm_cost.catalog.arguments import check_arguments


@dataclass(frozen=True)
class RooflineSpeedup:
    r"""Speculative decoding at batch B, element-wise over the broadcast inputs (seconds, ratios).

    .. math:: \mathit{round} = \gamma\,t_{draft}(B) + T(B(\gamma + 1)),\quad
              S = E\,T(B) / \mathit{round}

    Fields are numpy arrays of the broadcast shape, or Python numbers when every input is one.

    Attributes
    ----------
    alpha, gamma, batch : float or numpy.ndarray
        Acceptance rate in [0, 1], draft tokens per round, sequences per step.
    c : float or numpy.ndarray
        Draft step over target step: as given, or the draft model's own ratio.
    expected_tokens : float or numpy.ndarray
        E, tokens per round per sequence.
    base_s, verify_s, draft_s, round_s : float or numpy.ndarray
        T(B), T(B (gamma + 1)), one draft step and one round (gamma draft steps plus one
        verification), in seconds.
    speedup : float or numpy.ndarray
        E T(B) / round (> 1: speculation pays).
    verify_compute_bound : bool or numpy.ndarray
        True where the verification pass is compute-bound.

    Examples
    --------
    `roofline_speedup` gives it. The article §2.4 (alpha 0.8, gamma 4, c 0.1, Llama-3-8B on an
    H100, peak) at B = 64: 3.36 tokens a round of 4 draft steps and one verification, 6.77 ms
    against 3.36 plain steps of 4.79 ms:

    >>> import llm_cost as lc
    >>> r = lc.roofline_speedup("llama-3-8b", "h100-sxm", "article", alpha=0.8, gamma=4, c=0.1, batch=64)
    >>> round(r.expected_tokens, 2), round(r.base_s * 1e3, 2), round(r.verify_s * 1e3, 2), round(r.draft_s * 1e3, 3)
    (3.36, 4.79, 4.86, 0.479)
    >>> round(r.round_s * 1e3, 2), round(r.speedup, 2), r.verify_compute_bound
    (6.77, 2.38, True)

    Arrays in, arrays out: at B = 256 verification costs 4 decode steps and speculation loses.

    >>> r = lc.roofline_speedup("llama-3-8b", "h100-sxm", "article", alpha=0.8, gamma=4, c=0.1, batch=[1, 256])
    >>> r.speedup.round(2).tolist(), r.verify_compute_bound.tolist()
    ([2.4, 0.76], [False, True])
    """

    alpha: np.ndarray
    gamma: np.ndarray
    batch: np.ndarray
    c: np.ndarray  # draft step over target step: as given, or the draft model's own ratio
    expected_tokens: np.ndarray
    base_s: np.ndarray  # T(B): one plain decode step
    verify_s: np.ndarray  # T(B (gamma + 1)): one verification pass
    draft_s: np.ndarray  # one draft step
    round_s: np.ndarray  # gamma draft steps + one verification
    speedup: np.ndarray
    verify_compute_bound: np.ndarray

    @property
    def verify_over_base(self) -> np.ndarray:
        """T(B (gamma + 1)) / T(B): one verification pass in plain decode steps (1: free).

        Examples
        --------
        The article §2.4 (alpha 0.8, gamma 4, c 0.1, Llama-3-8B on H100, peak): free at batch 1,
        4x a decode step at batch 256.

        >>> r = roofline_speedup("llama-3-8b", "h100-sxm", "article", alpha=0.8, gamma=4, c=0.1,
        ...                      batch=[1, 256])
        >>> r.verify_over_base.round(2).tolist()
        [1.0, 4.05]
        """
        return self.verify_s / self.base_s

    @property
    def tokens_per_s(self) -> np.ndarray:
        """Generated tokens per second across the batch: B E / round.

        Examples
        --------
        The article's setting at batch 1: 3.36 tokens per 6.71 ms round, against 209 tokens/s plain.

        >>> r = roofline_speedup("llama-3-8b", "h100-sxm", "article", alpha=0.8, gamma=4, c=0.1)
        >>> round(r.tokens_per_s), round(1 / r.base_s)
        (501, 209)
        """
        return self.batch * self.expected_tokens / self.round_s


@check_arguments(alpha=None, gamma=None, batch=None, c=None, context=None)  # the grids: checked once, inside
def roofline_speedup(target, gpu, profile, *, alpha, gamma, batch=1, c=None, draft=None,
                     draft_profile=None, context=0, weights: WeightFormat = BF16,
                     draft_weights: WeightFormat = BF16, deployment: Deployment = SINGLE_GPU,
                     draft_deployment: Deployment | None = None) -> RooflineSpeedup:
    r"""Speedup of speculative decoding over plain decoding at batch B, from the time model.

    .. math:: S = E\,T(B) / (\gamma\,t_{draft}(B) + T(B(\gamma + 1))),\quad
              E = (1 - \alpha^{\gamma+1}) / (1 - \alpha)

    Source: the article §2.4 (t_draft = c T(B)) and the lecture §9 (a draft model's own time).

    Parameters
    ----------
    target, gpu, profile
        Specs, or catalog names / a preset name.
    alpha, gamma, batch, context
        Acceptance rate in [0, 1], draft tokens per round (whole, >= 0), sequences in
        [1, 1e12], cached tokens per sequence; numbers or numpy arrays (broadcast).
    c, draft, draft_profile
        The draft's cost: `c` (t_draft = c T(B), the article), or a `draft` model timed on the
        same accelerator under `draft_profile` (default `profile`). Exactly one of c and draft.
    weights, draft_weights
        Weight formats of the target and the draft.
    deployment : Deployment, optional
        The GPUs the target runs on (default one GPU): T is one GPU's pass, collectives and
        pipeline stages included, K/V at `deployment.kv_dtype` (`parallel.deployed_pass_cost`).
    draft_deployment : Deployment, optional
        The draft model's deployment (default `draft_deployment_for(draft, deployment)`: the same tp
        and pp). Only with `draft`.

    Returns
    -------
    RooflineSpeedup
        Arrays of the broadcast shape: E, T(B), T(B (gamma + 1)), the draft step, the round
        (seconds), the speedup, and whether verification is compute-bound.

    Examples
    --------
    The article's table (§2.4; alpha 0.8, gamma 4, c 0.1, Llama-3-8B on H100, peak): 2.38 at B = 64.

    >>> r = roofline_speedup("llama-3-8b", "h100-sxm", "article", alpha=0.8, gamma=4, c=0.1, batch=64)
    >>> round(float(r.speedup), 2)
    2.38

    The whole peak column of the table (§3.1's output) in one broadcast call, and 60% MFU at 64:

    >>> r = roofline_speedup("llama-3-8b", "h100-sxm", "article", alpha=0.8, gamma=4, c=0.1,
    ...                      batch=[1, 64, 128, 256])
    >>> r.speedup.round(2).tolist()
    [2.4, 2.38, 1.39, 0.76]
    >>> mfu60 = as_profile("article").with_(compute_efficiency=0.6)
    >>> round(roofline_speedup("llama-3-8b", "h100-sxm", mfu60, alpha=0.8, gamma=4, c=0.1, batch=64).speedup, 2)
    1.61

    The lecture §9.1: Llama-3.2-1B drafting for Llama-3.1-8B (lecture presets, context 1024) costs
    c = 0.186 of a target step.

    >>> r = roofline_speedup("llama-3.1-8b", "h100-sxm", "lecture", alpha=0.8, gamma=4, context=1024,
    ...                      draft="llama-3.2-1b", draft_profile="lecture-draft")
    >>> round(r.c, 3), round(r.base_s * 1e3, 2), round(r.draft_s * 1e3, 2)
    (0.186, 6.65, 1.23)

    Llama-3-70B on four H100s (tensor parallel): one GPU reads a quarter of the weights and adds
    two all-reduces per layer, so the decode step falls from 42.1 ms to about 11 ms.

    >>> from llm_cost.specs.deployment import Deployment
    >>> one = roofline_speedup("llama-3-70b", "h100-sxm", "article", alpha=0.8, gamma=4, c=0.1)
    >>> tp4 = roofline_speedup("llama-3-70b", "h100-sxm", "article", alpha=0.8, gamma=4, c=0.1,
    ...                        deployment=Deployment(tp=4))
    >>> round(one.base_s * 1e3, 1), round(tp4.base_s * 1e3, 1)
    (42.1, 11.0)
    """
    if (c is None) == (draft is None):
        raise InvalidValueError("give the draft cost as exactly one of c (a ratio) or draft (a model)",
                                params=("c", "draft"))
    target, gpu, profile = as_model(target), as_accelerator(gpu), as_profile(profile)
    from llm_cost.specs.weights import as_weights

    weights, draft_weights = as_weights(weights), as_weights(draft_weights)  # formats or their names
    alpha, gamma = check_alpha(alpha), check_gamma(gamma)
    batch = checked("batch", batch, low=1, high=MAX_BATCH)
    ctx = checked("context", context, low=0, high=MAX_CONTEXT)
    from llm_cost.parallel import deployed_pass_cost

    cost = deployed_pass_cost(target, gpu, profile, weights, deployment)  # one GPU: PassCost.from_specs
    if draft is None:
        c, draft_cost = check_cost("c", c), None
    else:
        own = as_profile(draft_profile) if draft_profile is not None else profile
        draft = as_model(draft)
        on = draft_deployment if draft_deployment is not None else draft_deployment_for(draft, deployment)
        draft_cost = (deployed_pass_cost(draft, gpu, own, draft_weights, on), own.count_kv)
    c, *computed = _round(cost, profile.count_kv, draft_cost, alpha, gamma, batch, ctx, c)
    return _as_result(np.broadcast_arrays(alpha, gamma, batch, c, *computed))


def _as_result(fields, cls=None) -> "RooflineSpeedup":
    """A RooflineSpeedup (or `cls`) of arrays, or of Python numbers when every input was a number."""
    cls = cls or RooflineSpeedup
    if fields[0].ndim:
        return cls(*fields)
    return cls(*(value.item() for value in fields))


def _round(cost: PassCost, count_kv: bool, draft_cost, a, g, b, ctx, c):
    """(c, E, T(B), T(B (gamma + 1)), draft step, round, speedup, verification compute-bound),
    element-wise over checked inputs (`a` alpha, `g` gamma, `b` the batch B; `e` is E); `draft_cost`
    (PassCost, count_kv) replaces `c` when given.

    `PassCost.step_total` is `PassCost.step(...).step_time_s` bit for bit with fewer temporaries: a
    10^6-point sweep is bound by fresh 8 MB arrays and memory traffic, so g + 1 serves E, then
    the verification rows, then (in place) their time; each later result is written into the
    array its expression starts. b >= 1 and g >= 0 are checked, so rows = b (g + 1) >= b.
    Inputs that are all one shape (flat arrays) go blockwise through `blocks.flat_round`.
    """
    if blocks.blockable(a, g, b, ctx, *(() if c is None else (c,))):
        return blocks.flat_round(cost, count_kv, draft_cost, a, g, b, ctx, c)
    g1 = g + 1.0
    e = expected_tokens_g1(a, g1)
    base_s = cost.step_total(b, b, ctx, count_kv=count_kv)
    verify_s, bound = cost.step_total(into(g1, "multiply", b), b, ctx, count_kv=count_kv,  # rows b (g + 1)
                                      with_bound=True, rows_scratch=True)
    if draft_cost is None:
        draft_s = c * base_s
    else:
        draft_s = draft_cost[0].step_total(b, b, ctx, count_kv=draft_cost[1])
        c = draft_s / base_s
    round_s = into(g * draft_s, "add", verify_s)  # g draft_s + verify_s
    return c, e, base_s, verify_s, draft_s, round_s, into(e * base_s, "true_divide", round_s), bound


ROOFLINE_GAMMA_MAX = 16  # the roofline search's range: one verification pass per gamma


@dataclass(frozen=True)
class BestGamma(RooflineSpeedup):
    """`RooflineSpeedup` at the best gamma, and how many gammas the search left out per cell
    because their verification pass does not fit (`gamma_skipped_unfit`; 0 where even plain
    decoding does not fit: then every gamma is searched, assuming it fits)."""

    gamma_skipped_unfit: np.ndarray


@check_arguments(alpha=None, gamma=None, batch=None, c=None, context=None)  # the grids: checked once, inside
def best_gamma(target, gpu, profile, *, alpha, batch=1, gamma_max: int = ROOFLINE_GAMMA_MAX, c=None, draft=None,
               draft_profile=None, context=0, weights: WeightFormat = BF16,
               draft_weights: WeightFormat = BF16, deployment: Deployment = SINGLE_GPU,
               draft_deployment: Deployment | None = None, skip_unfit: bool = True) -> BestGamma:
    r"""The round at the integer gamma in [0, gamma_max] with the highest roofline speedup.

    .. math:: \gamma^* = \arg\max_{0 \le \gamma \le \gamma_{max}}
              \frac{E(\alpha, \gamma)\,T(B)}{\gamma\,t_{draft}(B) + T(B(\gamma + 1))}

    Exhaustive over gamma (a MoE target or the ridge can bend the curve), ties to the smaller
    gamma; gamma 0 means plain decoding (speedup 1). The lecture §9.2: batch 512, context 512,
    alpha 0.8, 1B draft for 8B -> gamma 1, about 1.1x.

    Parameters
    ----------
    target, gpu, profile
        Specs, or catalog names / a preset name.
    alpha, batch, context
        Acceptance rate in [0, 1], sequences in [1, 1e12], cached tokens per sequence;
        numbers or numpy arrays (broadcast).
    gamma_max : int, optional
        Largest gamma tried, a whole number >= 0 (default 16).
    c, draft, draft_profile, weights, draft_weights, deployment, draft_deployment
        As in `roofline_speedup`: exactly one of c and draft.
    skip_unfit : bool, optional
        Leave out the gammas whose verification pass (B (gamma + 1) rows, the draft's weights and
        K/V included) does not fit one GPU of `deployment` (default True). Where even gamma 0
        does not fit, nothing is left out: the whole search assumes it fits.

    Returns
    -------
    BestGamma
        The round at the best gamma, per cell (Python numbers when every input is a number), and
        `gamma_skipped_unfit`, the gammas left out there.

    Examples
    --------
    The lecture §9.1 and §9.2 (Llama-3.2-1B drafting for Llama-3.1-8B, lecture presets): gamma 4
    and about 2x at batch 1 (context 1024); gamma 1 and about 1.1x at batch 512 (context 512).

    >>> kw = dict(alpha=0.8, draft="llama-3.2-1b", draft_profile="lecture-draft")
    >>> b1 = best_gamma("llama-3.1-8b", "h100-sxm", "lecture", batch=1, context=1024, **kw)
    >>> b512 = best_gamma("llama-3.1-8b", "h100-sxm", "lecture", batch=512, context=512, **kw)
    >>> (int(b1.gamma), round(b1.speedup, 2)), (int(b512.gamma), round(b512.speedup, 1))
    ((4, 1.93), (1, 1.1))

    Llama-3-8B at batch 64 and context 7240 on one H100 (alpha 0.9, c 0.01), on the 81,559 MiB
    the driver reports: the batch's K/V nearly fills the card, and only gammas 0 to 2 leave room
    for their verification rows; the search takes 2 instead of the 4 it would take if everything
    fitted, and says it left 14 out. (The fits count `profile`'s memory basis unless `deployment`
    names one: the article's preset counts the marketed 80 GB.)

    >>> usable = Deployment(memory_basis="usable")
    >>> kw = dict(alpha=0.9, c=0.01, batch=64, context=7240, deployment=usable)
    >>> b = best_gamma("llama-3-8b", "h100-sxm", "article", **kw)
    >>> int(b.gamma), b.gamma_skipped_unfit, int(best_gamma("llama-3-8b", "h100-sxm", "article", skip_unfit=False, **kw).gamma)
    (2, 14, 4)
    """
    check_number("gamma_max", gamma_max, low=0, integer=True)
    alpha, batch = check_alpha(alpha), checked("batch", batch, low=1, high=MAX_BATCH)
    ndim = max(alpha.ndim, batch.ndim, np.ndim(0.0 if c is None else c), np.ndim(context))
    gammas = np.arange(gamma_max + 1, dtype=float).reshape((-1,) + (1,) * ndim)
    every = roofline_speedup(target, gpu, profile, alpha=alpha, gamma=gammas, batch=batch, c=c, draft=draft,
                             draft_profile=draft_profile, context=context, weights=weights,
                             draft_weights=draft_weights, deployment=deployment,
                             draft_deployment=draft_deployment)
    speedup = every.speedup
    skipped = np.zeros(np.shape(speedup)[1:], dtype=int)
    if skip_unfit:
        on = deployment.following(as_profile(profile))  # the profile's memory basis unless it names one
        fits = fits_grid(as_model(target), as_accelerator(gpu), on, weights, gammas, batch,
                          checked("context", context, low=0, high=MAX_CONTEXT),
                          None if draft is None else as_model(draft), draft_weights, draft_deployment)
        fits = np.broadcast_to(fits | ~fits.any(axis=0), speedup.shape)  # none fits: search them all
        if not fits.all():
            speedup = np.where(fits, speedup, -np.inf)
            skipped = (~fits).sum(axis=0)
    top = speedup.max(axis=0)
    pick = np.argmax(speedup >= top * (1 - TIE_RTOL), axis=0)[None]  # smallest near-best gamma
    best = [np.take_along_axis(getattr(every, field.name), pick, 0)[0] for field in fields(RooflineSpeedup)]
    return _as_result(best + [np.broadcast_to(skipped, best[0].shape)], BestGamma)
