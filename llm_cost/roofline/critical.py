"""Where the roofline bends: the ridge point, the critical row count and the critical batch.

Below the critical rows (or batch) extra rows are free: the pass is memory-bound and more rows
only add arithmetic the idle compute absorbs. The article (§1.2 and §2.4): ridge 295 FLOP/byte
for an H100 at peak, m* ~ 316 rows for Llama-3-8B; verifying gamma drafts stops being free near
ridge / (gamma + 1) sequences.
"""

from __future__ import annotations

from llm_cost.catalog import as_accelerator, as_model, as_profile
from llm_cost.errors import InvalidValueError, check_number
from llm_cost.roofline.pass_cost import MAX_BATCH, PassCost
from llm_cost.specs import BF16, Accelerator, Profile, WeightFormat
from llm_cost.catalog.arguments import Choice, Number, check_arguments


@check_arguments(compute=Choice("bf16", "fp8", "int8", "fp4"))
def ridge_point(gpu: Accelerator | str, profile: Profile | str, compute: str = "bf16") -> float:
    r"""Effective ridge (FLOP/byte): F eta_f / (BW eta_bw), F the dense peak of the GEMMs' precision.

    .. math:: I^* = \frac{F\,\eta_f}{BW\,\eta_{bw}}

    Parameters
    ----------
    gpu : Accelerator or str
        The accelerator or its catalog name (F: BF16 FLOP/s, BW: bytes/s).
    profile : Profile or str
        The profile or a preset name (eta_f: compute efficiency, eta_bw: bandwidth efficiency,
        both in (0, 1]).
    compute : str, optional
        The GEMMs' precision (`WeightFormat.compute`: bf16, fp8, int8, fp4); a chip without it
        runs at the BF16 peak (`Accelerator.compute_precision`). Default bf16.

    Returns
    -------
    float
        Arithmetic intensity (FLOP per byte) where the roofline bends.

    Examples
    --------
    >>> round(ridge_point("h100-sxm", "article"))  # 989e12 / 3.35e12 (the article, §1.2)
    295

    The article §2.4 at 60% MFU (593 TFLOP/s): effective ridge about 177; the lecture preset
    (60% compute, 80% bandwidth): 295 x 0.6 / 0.8 ~ 221.

    >>> round(ridge_point("h100-sxm", as_profile("article").with_(compute_efficiency=0.6)))
    177
    >>> round(ridge_point("h100-sxm", "lecture"))
    221

    FP8 W8A8 GEMMs run at the FP8 peak, 1,979 TFLOP/s dense: twice the ridge.

    >>> round(ridge_point("h100-sxm", "article", "fp8"))
    591
    """
    gpu, profile = as_accelerator(gpu), as_profile(profile)
    if compute == "bf16":
        return gpu.ridge_flops_per_byte * profile.compute_efficiency / profile.bw_efficiency
    peak = gpu.peak_flops_per_s(compute)
    return peak / gpu.bandwidth_bytes_per_s * profile.compute_efficiency / profile.bw_efficiency


@check_arguments(f=None, low=Number(0, 1e300), high=Number(0, 1e300))
def first_crossing(f, low: float, high: float) -> float:
    r"""Smallest `x` in [low, high] where the function `f` of `x` is >= 0 (it may dip before it
    rises): scan, then bisect.

    inf when f stays negative up to `high`. The scan steps x -> 1.25 x + 1 (geometric, so a
    crossing near 1e12 takes ~120 steps); the bisection stops at a relative width of 1e-9.

    .. math:: x^* = \min\{x \in [\mathit{low}, \mathit{high}] : f(x) \ge 0\}

    Parameters
    ----------
    f : callable
        float -> float; negative below the crossing.
    low, high : float
        The search interval, low <= high (low >= 0 for the geometric scan to advance).

    Returns
    -------
    float
        The crossing to within a relative 1e-9 (from above: f(x*) >= 0), `low` when f(low) >= 0
        already, inf if f stays negative up to `high`.

    Examples
    --------
    >>> round(first_crossing(lambda x: x - 3, 1.0, 10.0), 6)
    3.0
    >>> first_crossing(lambda x: -1.0, 1.0, 100.0)
    inf
    """
    if high < low:
        raise InvalidValueError(f"high must be at least low ({low}), got {high}", params=("high", "low"))
    if f(low) >= 0:
        return low
    x_prev, x = low, low
    while x < high:
        x = min(high, x * 1.25 + 1)
        if f(x) >= 0:
            break
        x_prev = x
    else:
        return float("inf")
    lo, hi = x_prev, x
    for _ in range(100):
        mid = (lo + hi) / 2
        if f(mid) >= 0:
            hi = mid
        else:
            lo = mid
        if hi - lo < 1e-9 * hi:
            break
    return hi


def _compute_minus_memory(cost: PassCost, count_kv: bool, *, rows_per_sequence=None, batch=None,
                          context: float):
    """compute_s - memory_s of a uniform pass, as a function of rows (fixed batch) or of batch."""
    if rows_per_sequence is None:
        def gap(rows: float) -> float:
            time = cost.step(rows, batch, context, count_kv=count_kv)
            return time.compute_time_s - time.memory_time_s
    else:
        def gap(sequences: float) -> float:
            time = cost.step(sequences * rows_per_sequence, sequences, context, count_kv=count_kv)
            return time.compute_time_s - time.memory_time_s
    return gap


@check_arguments()
def critical_rows(model, gpu, profile, *, batch: float = 1, context: float = 0,
                  weights: WeightFormat = BF16) -> float:
    r"""Rows per pass (from `batch` sequences) where compute time reaches memory time.

    .. math:: m^* = \frac{\mathit{bytes}}{2N} \cdot I^* \quad\text{(dense, no KV)}

    Dense, no KV: bytes / (2 N) x ridge (article preset: ~316 for Llama-3-8B on H100; lecture
    preset: ridge x 0.6 / 0.8 ~ 221, the lecture's "about 220").

    Parameters
    ----------
    model, gpu, profile
        Specs, or catalog names / a preset name.
    batch : float, optional
        Sequences the rows come from, in [1, 1e12] (default 1); with KV counted, each reads its cache.
    context : float, optional
        Cached tokens per sequence, >= 0 (default 0).
    weights : WeightFormat, optional
        Weight format (default BF16).

    Returns
    -------
    float
        The critical row count m* (>= batch), inf if the pass never turns compute-bound.

    Examples
    --------
    The article §1.2 ("m ~ 316, the same order as ridge 295"):

    >>> round(critical_rows("llama-3-8b", "h100-sxm", "article"))
    316

    The lecture's "about 220":

    >>> round(critical_rows("llama-3-8b", "h100-sxm", "lecture"))
    221
    """
    model, gpu, profile = as_model(model), as_accelerator(gpu), as_profile(profile)
    check_number("batch", batch, low=1, high=MAX_BATCH)
    check_number("context", context, low=0)
    cost = PassCost.from_specs(model, gpu, profile, weights)
    gap = _compute_minus_memory(cost, profile.count_kv, batch=batch, context=context)
    return first_crossing(gap, float(batch), 1e12)


@check_arguments()
def critical_batch(model, gpu, profile, *, rows_per_sequence: float = 1, context: float = 0,
                   weights: WeightFormat = BF16) -> float:
    r"""Batch at which a pass of `rows_per_sequence` rows per sequence becomes compute-bound.

    .. math:: B^* \approx \frac{m^*}{r} \approx \frac{I^*}{r}\quad (r = \text{rows per sequence})

    Decode (1 row): about the ridge for BF16 weights; verifying gamma drafts (gamma + 1 rows):
    about ridge / (gamma + 1) (the article, §2.4).

    Parameters
    ----------
    model, gpu, profile
        Specs, or catalog names / a preset name.
    rows_per_sequence : float, optional
        Rows each sequence puts in the pass, >= 1 (default 1: decode; gamma + 1 to verify).
    context : float, optional
        Cached tokens per sequence, >= 0 (default 0).
    weights : WeightFormat, optional
        Weight format (default BF16).

    Returns
    -------
    float
        The critical batch (sequences), inf if the pass never turns compute-bound.

    Examples
    --------
    Llama-3-8B on H100, article preset: decode turns at m* ~ 316, verifying gamma = 4 drafts at
    ~63 (the ridge rule gives 295 / 5 ~ 60; the exact figure is higher because the weight bytes
    include the embedding table, §1.2).

    >>> round(critical_batch("llama-3-8b", "h100-sxm", "article"))
    316
    >>> round(critical_batch("llama-3-8b", "h100-sxm", "article", rows_per_sequence=5))
    63
    """
    model, gpu, profile = as_model(model), as_accelerator(gpu), as_profile(profile)
    check_number("rows_per_sequence", rows_per_sequence, low=1)
    check_number("context", context, low=0)
    cost = PassCost.from_specs(model, gpu, profile, weights)
    gap = _compute_minus_memory(cost, profile.count_kv, rows_per_sequence=rows_per_sequence, context=context)
    return first_crossing(gap, 1.0, 1e12)
