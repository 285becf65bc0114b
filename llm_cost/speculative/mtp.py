"""DeepSeek-V3's multi-token-prediction (MTP) module as a speculative draft (gamma = 1).

The MTP module (Technical Report §2.2, Figure 3) is one transformer block (a MoE layer for
DeepSeek-V3), RMSNorms on its two inputs, a projection M in R^{d x 2d} of [h; emb] back to d,
and the embedding and output head shared with the main model. Assumptions: the next token's
embedding is a one-row lookup (not read in full, whatever the preset); the shared LM head is
read again by every draft step (shared in memory, not in bandwidth); routing is uniform top-k.

Its parameter counts are `llm_cost.counts.mtp`; this module times it and gives its speedup, which
the cost table (`report.cost_table`) uses for DeepSeek-V3's speculative row.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from llm_cost.counts.checkpoint import checkpoint_format
from llm_cost.counts.mtp import MtpParams, mtp_module, mtp_params  # noqa: F401  (MtpParams re-exported)
from llm_cost.catalog import as_accelerator, as_model, as_profile
from llm_cost.roofline import PassCost, StepTime
from llm_cost.specs import BF16, WeightFormat
from llm_cost.catalog.arguments import Many, Number, check_arguments

# DeepSeek-V3 Technical Report (arXiv 2412.19437) §5.4.3: "the acceptance rate of the second token
# prediction ranges between 85% and 90% ... 1.8 times TPS"; the article §2.5 and the lecture §10.4
MTP_ALPHA_REPORTED = (0.85, 0.90)
MTP_TPS_REPORTED = 1.8
MTP_GAMMA = 1  # one MTP module predicts one extra token


@check_arguments(arrays=("batch",))
def mtp_step_time(model, gpu, profile, *, batch: float = 1, weights: WeightFormat = BF16,
                  deployment=None) -> StepTime:
    r"""One MTP draft step for `batch` sequences: `step_time` of `mtp_module` plus the projection.

    The projection adds its weight bytes and 2 x 2d^2 FLOPs per row to the same two roofline
    terms (as `PassCost` counts any GEMM); the embedding is a lookup.

    .. math:: t_{MTP} = \max\left(\frac{B_{module} + B_{proj}}{BW\,\eta_{bw}},
              \frac{B\,(F_{module} + 2 N_{proj})}{F_{peak}\,\eta_f}\right) + t_{fixed}

    Parameters
    ----------
    model, gpu, profile
        Specs, or catalog names / a preset name.
    batch : float, optional
        Sequences drafting at once, in [1, 1e12] (default 1).
    weights : WeightFormat, optional
        The module's weight format (default BF16).
    deployment : Deployment, optional
        The target's GPUs: the module is split over tp (and its experts over ep) like the model's
        layers, on one pipeline stage (the last); default one GPU.

    Returns
    -------
    StepTime
        Bytes, FLOPs and times (seconds) of the draft step.

    Examples
    --------
    DeepSeek-V3 on an H100, article preset, batch 1: c = t_MTP / T = 0.043 (the MTP module reads
    its block's active experts, the projection and the LM head).

    >>> from llm_cost.roofline import step_time
    >>> t = mtp_step_time("deepseek-v3", "h100-sxm", "article")
    >>> round(t.step_time_s / step_time("deepseek-v3", "h100-sxm", "article").step_time_s, 3)
    0.043
    """
    model, gpu, profile = as_model(model), as_accelerator(gpu), as_profile(profile)
    prof = profile.with_(read_input_embedding=False)  # one row of the table, not the table
    block = PassCost.from_specs(mtp_module(model), gpu, prof, weights)
    projection = mtp_params(model).projection  # a GEMM like any other: its bytes and 2 FLOPs each
    # the checkpoint's own format keeps eh_proj at torch_dtype (BF16 in DeepSeek-V3's FP8 checkpoint)
    per = checkpoint_format(model).dtype_bytes if weights.checkpoint else weights.bytes_per_weight
    cost = replace(block, weight_bytes=block.weight_bytes + projection * per,
                   row_flops=block.row_flops + 2 * projection)
    if deployment is not None and not deployment.is_single:
        from llm_cost.parallel import deployed_cost

        cost = deployed_cost(cost, mtp_module(model), gpu, weights, replace(deployment, pp=1))
    return cost.step(batch, batch, 0, count_kv=prof.count_kv)


@dataclass(frozen=True)
class MtpSpeedup:
    r"""The MTP draft (gamma 1) at each acceptance rate: tokens per step and speedups.

    .. math:: E = 1 + \alpha,\quad S_{free} = E / (1 + c),\quad S = E\,T(B) / (c\,T(B) + T(2B))

    Attributes
    ----------
    alphas
        Acceptance rates of the second token, fractions in [0, 1].
    expected_tokens
        1 + alpha per rate.
    c
        MTP step / model step, both on the roofline at the same batch.
    verify_over_base
        T(2B) / T(B): 2 rows per sequence read more experts.
    speedup_verify_free
        E / (1 + c) per rate.
    speedup
        The roofline's E T(B) / (c T(B) + T(2B)) per rate.

    Examples
    --------
    See `mtp_speedup`.
    """

    alphas: tuple[float, ...]
    expected_tokens: tuple[float, ...]  # 1 + alpha
    c: float  # MTP step / model step, both on the roofline at the same batch
    verify_over_base: float  # T(2B) / T(B): 2 rows per sequence read more experts
    speedup_verify_free: tuple[float, ...]  # E / (1 + c)
    speedup: tuple[float, ...]  # roofline: E T(B) / (c T(B) + T(2B))


@check_arguments(alphas=Many(Number(0, 1), most=64))
def mtp_speedup(model, gpu, profile="article", *, alphas: Sequence[float] = MTP_ALPHA_REPORTED,
                batch: float = 1, deployment=None) -> MtpSpeedup:
    r"""Speculative decoding with the model's own MTP module as the draft (gamma = 1).

    DeepSeek-V3 on H100, article preset, batch 1: `c` (the MTP step's time over T(B)) ~ 0.04,
    E / (1 + c) ~ 1.77-1.82 (the report's 1.8x, DeepSeek-V3 Technical Report §5.4.3; the article
    §2.5 and the lecture §10.4); on the roofline ~1.2, because verifying 2 rows touches ~2x the
    routed experts (the lecture §9.3).

    .. math:: S = (1 + \alpha)\,T(B) / (c\,T(B) + T(2B))

    Parameters
    ----------
    model, gpu
        Specs, or catalog names.
    profile : Profile or str, optional
        The time model's preset (default "article").
    alphas : sequence of float, optional
        Acceptance rates, fractions in [0, 1] (default the report's 0.85 and 0.90).
    batch : float, optional
        Sequences per step, in [1, 1e12] (default 1).
    deployment : Deployment, optional
        The GPUs and their split (default one GPU): T and the MTP step are one GPU's.

    Returns
    -------
    MtpSpeedup
        Tokens per step, c, T(2B) / T(B) and both speedups per acceptance rate.

    Examples
    --------
    The article §2.5: E = 1 + alpha = 1.85 to 1.9 tokens per step; E / (1 + c) brackets the
    report's 1.8x TPS.

    >>> s = mtp_speedup("deepseek-v3", "h100-sxm", "article")
    >>> [round(e, 2) for e in s.expected_tokens], round(s.c, 3)
    ([1.85, 1.9], 0.043)
    >>> [round(x, 2) for x in s.speedup_verify_free], [round(x, 2) for x in s.speedup]
    ([1.77, 1.82], [1.18, 1.21])
    """
    import numpy as np

    from llm_cost import speculative as speculative
    from llm_cost.parallel import deployed_step_time
    from llm_cost.speculative import roofline_speedup
    from llm_cost.specs.deployment import SINGLE_GPU

    model, gpu, profile = as_model(model), as_accelerator(gpu), as_profile(profile)
    deployment = deployment or SINGLE_GPU
    rates = np.asarray(list(alphas), dtype=float)
    base = deployed_step_time(model, gpu, profile, deployment, rows=batch, batch=batch)
    c = mtp_step_time(model, gpu, profile, batch=batch, deployment=deployment).step_time_s / base.step_time_s
    roofline = roofline_speedup(model, gpu, profile, alpha=rates, gamma=MTP_GAMMA, batch=batch, c=c, deployment=deployment)
    free = np.atleast_1d(speculative.speedup(rates, MTP_GAMMA, c))
    return MtpSpeedup(alphas=tuple(rates.tolist()), expected_tokens=tuple(np.atleast_1d(roofline.expected_tokens).tolist()),
                      c=float(c), verify_over_base=float(np.atleast_1d(roofline.verify_over_base)[0]),
                      speedup_verify_free=tuple(free.tolist()), speedup=tuple(np.atleast_1d(roofline.speedup).tolist()))
