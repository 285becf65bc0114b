"""Where speculation stops paying: the turning batch, costly verification, the break-even batch.

Verifying gamma drafts is free while the pass over B (gamma + 1) rows stays memory-bound: up to
about ridge / (gamma + 1) sequences (the article §2.4: 295 / 5 ~ 60; W4A16 ~15). A MoE target
pays earlier, because more rows touch more experts. The speedup falls to 1 at the break-even
batch (the article's self-test 1: between B = 128 and 256).
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.catalog import as_model
from llm_cost.counts import weight_bytes
from llm_cost.errors import check_number
from llm_cost.roofline import critical_batch, first_crossing, ridge_point, step_time
from llm_cost.roofline.pass_terms import gemm_precision
from llm_cost.speculative.batched import roofline_speedup
from llm_cost.specs import BF16, Accelerator, ModelSpec, Profile, WeightFormat
from llm_cost.catalog.arguments import Number, check_arguments

GAMMA = Number(0, 1e6, integer=True)  # draft tokens per round


@dataclass(frozen=True)
class TurningBatch:
    r"""Where verifying gamma drafts stops being free.

    .. math:: B_{turn} \approx \frac{\mathit{ridge}}{(16 / \mathit{bits})(\gamma + 1)}

    `batch`: the exact batch at which the verification pass over B (gamma + 1) rows turns
    compute-bound. `ridge_estimate`: the source documents' rule ridge / (compression (gamma + 1)), with
    compression = 16 / bits of the weight format (4 for INT4: the article's ridge / (4 x 5) ~ 15).

    Attributes
    ----------
    gamma : int
        Draft tokens per round.
    batch : float
        Exact turning batch (sequences) from the time model.
    ridge_estimate : float
        The documents' rule of thumb (sequences).

    Examples
    --------
    See `turning_batch`.
    """

    gamma: int
    batch: float
    ridge_estimate: float


@check_arguments()
def turning_batch(model: ModelSpec, gpu: Accelerator, profile: Profile, *, gamma: int,
                  context: float = 0, weights: WeightFormat = BF16) -> TurningBatch:
    r"""Turning batch of a chain of `gamma` drafts (the article §2.4: 295 / 5 ~ 60; 60% MFU: ~35).

    .. math:: B_{turn} \approx \frac{\mathit{ridge}}{(16 / \mathit{bits})(\gamma + 1)}

    The exact batch solves compute time = memory time for a pass of B (gamma + 1) rows
    (`critical_batch`); the estimate is the rule above, with the ridge of the format's GEMM
    precision (FP8 W8A8: the FP8 peak) and, for the model's own checkpoint format, 16 / bits the
    ratio of its BF16 bytes to its checkpoint bytes. The exact one is ~7% higher for
    Llama-3-8B, whose 16.06 GB include an embedding table its FLOPs do not count (§1.2).

    Parameters
    ----------
    model, gpu, profile : ModelSpec, Accelerator, Profile
        The target and where it runs.
    gamma : int
        Draft tokens per round, a whole number >= 0.
    context : float, optional
        Cached tokens per sequence, >= 0 (default 0).
    weights : WeightFormat, optional
        The target's weight format (default BF16).

    Returns
    -------
    TurningBatch
        The exact turning batch and the ridge estimate, in sequences.

    Examples
    --------
    The article §2.4 (Llama-3-8B on H100, gamma 4): 295 / 5 ~ 60 at peak, ~35 at 60% MFU, and
    W4A16 weights ridge / (4 x 5) ~ 15.

    >>> from llm_cost.catalog import as_accelerator, as_model, as_profile
    >>> from llm_cost.specs import INT4_G128
    >>> llama, h100, article = as_model("llama-3-8b"), as_accelerator("h100-sxm"), as_profile("article")
    >>> peak = turning_batch(llama, h100, article, gamma=4)
    >>> mfu60 = turning_batch(llama, h100, article.with_(compute_efficiency=0.6), gamma=4)
    >>> w4 = turning_batch(llama, h100, article, gamma=4, weights=INT4_G128)
    >>> [round(t.ridge_estimate) for t in (peak, mfu60, w4)]
    [59, 35, 15]
    >>> [round(t.batch) for t in (peak, mfu60, w4)]
    [63, 38, 17]
    """
    check_number("gamma", gamma, low=0, integer=True)
    exact = critical_batch(model, gpu, profile, rows_per_sequence=gamma + 1, context=context, weights=weights)
    model = as_model(model)
    compression = 16 / weights.bits
    if weights.checkpoint:  # the model's own mix of widths: BF16 bytes over the checkpoint's
        compression = weight_bytes(model, BF16).total / weight_bytes(model, weights).total
    ridge = ridge_point(gpu, profile, gemm_precision(model, weights))
    return TurningBatch(gamma=int(gamma), batch=exact, ridge_estimate=ridge / (compression * (gamma + 1)))


VERIFY_COSTLY = 1.05  # verification "costs" once it takes more than this many plain decode steps


@check_arguments(gamma=GAMMA, threshold=Number(1, 1e3, low_open=True))
def costly_verification_batch(model: ModelSpec, gpu: Accelerator, profile: Profile, *, gamma: int,
                              context: float = 0, weights: WeightFormat = BF16,
                              threshold: float = VERIFY_COSTLY) -> float:
    r"""Smallest batch at which verifying `gamma` drafts takes over `threshold` plain decode steps.

    .. math:: B_{costly} = \min\{B \ge 1 : T(B(\gamma + 1)) / T(B) \ge \mathit{threshold}\}

    T(B (gamma + 1)) / T(B) >= threshold (inf if never). A dense target: just past the turning
    batch. A MoE target: batch 1 already when gamma + 1 rows touch more experts than one row
    (Mixtral 8x7B, gamma 4, article preset: 2.8x at batch 1, compute-bound only from ~216).
    Source: the lecture §9.3 (the MoE trap).

    Parameters
    ----------
    model, gpu, profile : ModelSpec, Accelerator, Profile
        The target and where it runs.
    gamma : int
        Draft tokens per round, a whole number >= 0.
    context : float, optional
        Cached tokens per sequence, >= 0 (default 0).
    weights : WeightFormat, optional
        The target's weight format (default BF16).
    threshold : float, optional
        Verification cost in plain decode steps that counts as costly, in (1, inf) (default 1.05).

    Returns
    -------
    float
        The batch (sequences), 1.0 when verification is costly from the start, inf if never.

    Examples
    --------
    Mixtral 8x7B pays from batch 1; dense Llama-3-8B just past its turning batch (~63).

    >>> from llm_cost.catalog import as_accelerator, as_model, as_profile
    >>> h100, article = as_accelerator("h100-sxm"), as_profile("article")
    >>> costly_verification_batch(as_model("mixtral-8x7b"), h100, article, gamma=4)
    1.0
    >>> round(costly_verification_batch(as_model("llama-3-8b"), h100, article, gamma=4))
    66
    """
    check_number("gamma", gamma, low=0, integer=True)
    check_number("threshold", threshold, low=1, low_open=True)

    def excess(sequences: float) -> float:
        base = step_time(model, gpu, profile, rows=sequences, batch=sequences, context=context,
                         weights=weights).step_time_s
        verify = step_time(model, gpu, profile, rows=sequences * (gamma + 1), batch=sequences, context=context,
                           weights=weights).step_time_s
        return verify / base - threshold

    return first_crossing(excess, 1.0, 1e12)


@check_arguments(batch_max=Number(1, 1e12))
def break_even_batch(target, gpu, profile, *, alpha: float, gamma: int, batch_max: float = 1e7, c=None,
                     draft=None, draft_profile=None, context=0, weights: WeightFormat = BF16,
                     draft_weights: WeightFormat = BF16) -> float:
    r"""Smallest batch at which the roofline speedup falls to 1 or below (inf if never).

    .. math:: B_{even} = \min\{B \ge 1 : T(B(\gamma + 1)) \ge (E - \gamma c)\,T(B)\}

    The article self-test 1: at alpha 0.8, gamma 4, c 0.1 it lies between B = 128 (1.39x) and
    B = 256 (0.76x): the round costs more than E plain steps once T(B (gamma+1)) > (E - gamma c) T(B).

    Parameters
    ----------
    target, gpu, profile
        Specs, or catalog names / a preset name.
    alpha : float
        Acceptance rate in [0, 1].
    gamma : int
        Draft tokens per round, a whole number >= 0.
    batch_max : float, optional
        Largest batch searched (default 1e7).
    c, draft, draft_profile, context, weights, draft_weights
        As in `roofline_speedup` (`c` the draft's cost ratio): exactly one of c and draft.

    Returns
    -------
    float
        The break-even batch (sequences), or inf if the speedup stays above 1 up to `batch_max`.

    Examples
    --------
    The article §5 self-test 1:

    >>> b = break_even_batch("llama-3-8b", "h100-sxm", "article", alpha=0.8, gamma=4, c=0.1)
    >>> 128 < b < 256, round(b)
    (True, 187)
    """
    check_number("alpha", alpha, low=0, high=1)
    check_number("gamma", gamma, low=0, integer=True)

    def loss(sequences: float) -> float:
        result = roofline_speedup(target, gpu, profile, alpha=alpha, gamma=gamma, batch=sequences, c=c,
                                  draft=draft, draft_profile=draft_profile, context=context, weights=weights,
                                  draft_weights=draft_weights)
        return 1.0 - float(result.speedup)

    return first_crossing(loss, 1.0, batch_max)
