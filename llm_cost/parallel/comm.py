"""Collectives over the datasheet's interconnect, in the alpha-beta model (Hockney; NCCL's ring).

    ring all-reduce over n GPUs of V bytes:   2 (n - 1) (alpha + V / (n beta))
                                            = 2 (n - 1) alpha + 2 (n - 1) / n x V / beta
    all-to-all over n GPUs, V bytes sent by each: (n - 1) (alpha + V / (n beta))
    point-to-point hand-off of V bytes:          alpha + V / beta

alpha: `interconnect_latency_s` (one step of the collective), beta: `interconnect_bytes_per_s`
(per GPU per direction). One GPU (n = 1): 0. Numbers or numpy arrays of V (broadcast).
"""

from __future__ import annotations

from llm_cost.specs import Accelerator


def all_reduce_s(nbytes, n: int, gpu: Accelerator):
    """Ring all-reduce of `nbytes` over `n` GPUs: 2 (n - 1) alpha + 2 (n - 1) / n x nbytes / beta."""
    if n == 1:
        return 0.0 * nbytes
    return 2 * (n - 1) * gpu.interconnect_latency_s + 2 * (n - 1) / n * nbytes / gpu.interconnect_bytes_per_s


def all_to_all_s(nbytes, n: int, gpu: Accelerator):
    """All-to-all over `n` GPUs, each sending `nbytes` spread evenly (1/n stays home):
    (n - 1) alpha + (n - 1) / n x nbytes / beta."""
    if n == 1:
        return 0.0 * nbytes
    return (n - 1) * gpu.interconnect_latency_s + (n - 1) / n * nbytes / gpu.interconnect_bytes_per_s


def send_s(nbytes, gpu: Accelerator):
    """One point-to-point hand-off of `nbytes` (a pipeline stage's activations): alpha + nbytes / beta."""
    return gpu.interconnect_latency_s + nbytes / gpu.interconnect_bytes_per_s
