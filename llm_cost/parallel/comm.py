"""Collectives over the datasheet's interconnect, in the alpha-beta model (Hockney; NCCL's ring).

    ring all-reduce over n GPUs of V bytes:   2 (n - 1) (alpha + V / (n beta))
                                            = 2 (n - 1) alpha + 2 (n - 1) / n x V / beta
    all-to-all over n GPUs, V bytes sent by each: (n - 1) (alpha + V / (n beta))
    point-to-point hand-off of V bytes:          alpha + V / beta

alpha: `interconnect_latency_s` (one step of the collective), beta: `interconnect_bytes_per_s`
(per GPU per direction). One GPU (n = 1): 0. Numbers or numpy arrays of V (broadcast).

A group wider than one scale-up domain (`Accelerator.scale_up_gpus`: 8 GPUs of an HGX board) on a
datasheet with a network (`scale_out_bytes_per_s`, `scale_out_latency_s`) spans `d` domains
(`Accelerator.domains`) and is timed as NCCL's tuning model times a ring over d nodes
(src/graph/tuning.cc: `latencies += (nsteps - nInterSteps) * intraLat + nInterSteps * interLat`,
nInterSteps = 2 (nNodes - 1) for an all-reduce, and the inter-node speed for the bandwidth):

    all-reduce:  2 (n - d) alpha + 2 (d - 1) alpha_out + 2 (n - 1) / n x V / beta_out
    all-to-all:  (n - d) alpha + (d - 1) alpha_out + max((s - 1) / n x V / beta, (n - s) / n x V / beta_out)
                 (`s` = n / d GPUs per domain: each GPU's V splits over its own domain's link and the network)
    hand-off:    alpha_out + V / beta_out when it crosses domains

A datasheet without a network keeps one tier (an optimistic bound past the domain; README says so).
"""

from __future__ import annotations

from llm_cost.specs import Accelerator
from llm_cost.catalog.arguments import Number, check_arguments

DEGREE = Number(1, 1e6, integer=True)  # GPUs in a collective


@check_arguments(n=DEGREE, arrays=("nbytes",))
def all_reduce_s(nbytes, n: int, gpu: Accelerator, *, measured: bool = False):
    """Ring all-reduce of `nbytes` over `n` GPUs: 2 (n - 1) alpha + 2 (n - 1) / n x nbytes / beta
    (across `d` scale-up domains: the module doc's two-tier ring). `measured` and a measured NCCL table for this
    GPU and n inside one domain (`roofline.kernels.measured_all_reduce`): latency + 2 (n - 1) / n x
    nbytes / achieved bus bandwidth."""
    if n == 1:
        return 0.0 * nbytes
    d = gpu.domains(n)
    fit = None
    if measured and d == 1:  # the tables' module only when asked for: a datasheet run starts without it
        from llm_cost.roofline.kernels import measured_all_reduce

        fit = measured_all_reduce(gpu.name, n)
    if fit is not None:
        return fit[0] + 2 * (n - 1) / n * nbytes / fit[1]
    if d == 1:
        return 2 * (n - 1) * gpu.interconnect_latency_s + 2 * (n - 1) / n * nbytes / gpu.interconnect_bytes_per_s
    return (2 * (n - d) * gpu.interconnect_latency_s + 2 * (d - 1) * gpu.scale_out_latency_s
            + 2 * (n - 1) / n * nbytes / gpu.scale_out_bytes_per_s)


@check_arguments(n=DEGREE, arrays=("nbytes",))
def all_to_all_s(nbytes, n: int, gpu: Accelerator, *, measured: bool = False):
    """All-to-all over `n` GPUs, each sending `nbytes` spread evenly (1/n stays home):
    (n - 1) alpha + (n - 1) / n x nbytes / beta (across `d` scale-up domains of `s` = n / d GPUs each:
    the module doc's two tiers).
    `measured` and a measured NCCL all-to-all for this GPU and n inside one domain
    (`roofline.kernels.measured_all_to_all`): latency + (n - 1) / n x nbytes / achieved bus bandwidth."""
    if n == 1:
        return 0.0 * nbytes
    d = gpu.domains(n)
    fit = None
    if measured and d == 1:
        from llm_cost.roofline.kernels import measured_all_to_all

        fit = measured_all_to_all(gpu.name, n)
    if fit is not None:
        return fit[0] + (n - 1) / n * nbytes / fit[1]
    if d == 1:
        return (n - 1) * gpu.interconnect_latency_s + (n - 1) / n * nbytes / gpu.interconnect_bytes_per_s
    import numpy as np  # only here: the `model` command imports this module and not numpy

    s = n / d
    inside = (s - 1) / n * nbytes / gpu.interconnect_bytes_per_s
    across = (n - s) / n * nbytes / gpu.scale_out_bytes_per_s
    return (n - d) * gpu.interconnect_latency_s + (d - 1) * gpu.scale_out_latency_s + np.maximum(inside, across)


@check_arguments(n=DEGREE, arrays=("nbytes",))
def send_s(nbytes, gpu: Accelerator, *, across: bool = False):
    """One point-to-point hand-off of `nbytes` (a pipeline stage's activations): alpha + nbytes / beta;
    `across` two scale-up domains: over the network."""
    if across:
        return gpu.scale_out_latency_s + nbytes / gpu.scale_out_bytes_per_s
    return gpu.interconnect_latency_s + nbytes / gpu.interconnect_bytes_per_s


def handoffs_across(tp: int, pp: int, gpu: Accelerator) -> int:
    """How many of a pipeline's pp - 1 hand-offs cross scale-up domains: stages fill a domain in order
    (s // tp stages each; every hand-off crosses when one stage is wider than a domain).

    >>> from llm_cost.catalog import load_accelerator
    >>> h100 = load_accelerator("h100-sxm")
    >>> handoffs_across(8, 2, h100), handoffs_across(4, 4, h100), handoffs_across(2, 4, h100)
    (1, 1, 0)
    """
    if pp == 1 or gpu.domains(tp * pp) == 1:
        return 0
    per_domain = gpu.scale_up_gpus // tp
    if per_domain < 1:
        return pp - 1
    return -(-pp // per_domain) - 1
