"""The GEMMs' rows at full efficiency: what a pass's `rows` cost on the ramp and at their width.

A GEMM of m rows reaches eta_f ramp(m), ramp(m) = r + (1 - r) m / (m + h) (`Profile.small_gemm_factor`
r, `gemm_half_rows` h), a routed expert's at its own rows m_e = rows x k / E(rows) (or the measured MoE
table's curve), and a GEMM `w` columns wide on one GPU reaches w / (w + w_h) of that
(`Profile.gemm_half_width` w_h; a GEMM's width is the dimension tensor parallelism splits: its output
columns, or its inner dimension for the projections that end a block). The GEMMs outside the routed
experts, each at its own width, take sum_g f_g (1 + w_h / w_g) = (sum_g f_g) (1 + w_h / w_dense) with
w_dense = sum_g f_g / sum_g (f_g / w_g), the harmonic mean of their widths weighted by their FLOPs f_g
(`dense_gemm_width`: the attention projections at heads x head_dim, a dense MLP at its intermediate
size, shared experts at theirs, the LM head at the vocabulary), over `attention_tp` on a deployment; a
routed expert is its intermediate size over the GPUs that share it. So `rows` cost

    dense = rows / ramp(rows) x (1 + w_h / w_dense),  routed = rows / ramp(m_e) x (1 + w_h / w_expert)

rows at full efficiency (`PassCost.gemm_rows` = (1 - s) dense + s routed, s the routed experts' share
of row_flops). Under expert parallelism the routed share is the busiest GPU's (`expert_load`); under
data-parallel attention the dense GEMMs are one rank's.
"""

from __future__ import annotations

from llm_cost.roofline.expert_load import busiest_gpu_pairs_factor
from llm_cost.roofline.pass_terms import expected_experts_touched


def dense_gemm_width(model) -> float:
    """w_dense of `model` on one GPU (module doc): the FLOP-weighted harmonic mean of the widths of its
    GEMMs outside the routed experts; 0 for a model without any."""
    from llm_cost.counts import param_counts

    counts = param_counts(model)
    parts = ((counts.num_layers * counts.attention_block_per_layer, model.num_heads * model.head_dim),
             (counts.num_dense_layers * counts.dense_mlp_per_layer, model.intermediate_size),
             (counts.num_moe_layers * counts.shared_experts_per_layer, model.shared_expert_width),
             (counts.lm_head or counts.embedding, model.vocab_size))
    flops = sum(params for params, width in parts if params and width)
    slow = sum(params / width for params, width in parts if params and width)
    return flops / slow if slow else 0.0


def width_factor(half_width: float, width: float) -> float:
    """1 + w_h / w: a GEMM `width` columns wide per GPU takes this times its time at full width (1 where
    either is 0: no width effect, or a width not known)."""
    return 1.0 + half_width / width if half_width and width else 1.0


def gemm_rows_parts(cost, rows, dense_scale=1.0):
    """(dense, routed) rows at full efficiency of `cost` (a `PassCost`) for a pass over `rows` (module
    doc); `dense_scale` the busiest attention rank's share under data-parallel attention. Numbers or
    numpy arrays. Ramp symbols (module doc): `m` a GEMM's rows, `r` small_gemm_factor, `h` gemm_half_rows."""
    dense = experts = rows
    routed = rows * cost.expert_rows_scale
    dp = cost.attention_dp
    if cost.gemm_ramped:
        h, r = cost.gemm_half_rows, cost.small_gemm_factor
        dense = experts = rows * (rows + h) / (rows + r * h)
        if dp != 1:
            m = rows * dense_scale / dp  # one rank's rows
            dense = rows * dense_scale * (m + h) / (m + r * h)
    elif dp != 1:
        dense = rows * dense_scale
    if cost.expert_flops_share and (cost.gemm_ramped or cost.expert_curve):
        m = routed * cost.experts_per_token / expected_experts_touched(
            cost.num_experts, cost.experts_per_token, routed)  # rows per touched expert
        if cost.expert_curve:  # the measured MoE table's eta_max (r' + (1 - r') m / (m + h'))
            ratio, r, h = cost.expert_curve
            experts = rows * ratio * (m + h) / (m + r * h)
        else:
            h, r = cost.gemm_half_rows, cost.small_gemm_factor
            experts = rows * (m + h) / (m + r * h)
    if cost.dense_width_factor != 1.0:
        dense = dense * cost.dense_width_factor
    if cost.expert_width_factor != 1.0:
        experts = experts * cost.expert_width_factor
    if cost.busiest:
        experts = experts * busiest_gpu_pairs_factor(cost.num_experts, cost.experts_per_token, routed,
                                                     cost.expert_parallel, cost.busiest_z)
    return dense, experts
