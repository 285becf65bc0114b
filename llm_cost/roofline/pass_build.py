"""`PassCost.from_specs`'s coefficients: a model's bytes and FLOPs on an accelerator under a profile.

The weights read per pass (`shared_bytes_read`: the embedding a lookup or not), one token's K/V, a
row's GEMM FLOPs and a pair's attention FLOPs (`counts`); the bandwidth and FLOP/s reached (the
profile's efficiencies, or a measured GEMM table's under `Profile.kernels` "measured", `kernels`),
the fixed seconds, the routed experts, windows and a hybrid's recurrent state. Apart from
`pass_cost` so that module holds the formula and its evaluation only.
"""

from __future__ import annotations

from llm_cost.counts import (attention_flops_per_context_token, kv_bytes_per_token, layer_windows, param_counts,
                             weight_bytes)
from llm_cost.roofline.gemm_rows import dense_gemm_width
from llm_cost.roofline.pass_terms import (DATASHEET, expert_share, gemm_precision, recurrent_row_flops,
                                          shared_bytes_read, state_tokens_per_sequence, weight_only)


def coefficients(model, gpu, profile, weights, kv_bytes_per_element) -> dict:
    """`PassCost`'s fields for this model, accelerator, profile, weight format and K/V element width."""
    kv = profile.count_kv
    wb = weight_bytes(model, weights)
    moe = model.moe
    windows = layer_windows(model) if kv else ()
    precision = gemm_precision(model, weights)
    measured = profile.kernels == "measured"
    if measured:  # the tables' module only where a profile asks for them: a datasheet run starts without it
        from llm_cost.roofline.kernels import measured_gemm, measured_operators
    curve = measured_gemm(gpu.name, precision) if measured else None
    bw_eff, f_eff, ramp_r, ramp_h = ((curve.bw_efficiency, curve.compute_efficiency, curve.small_gemm_factor,
                                      curve.gemm_half_rows) if curve else
                                     (profile.bw_efficiency, profile.compute_efficiency,
                                      profile.small_gemm_factor, profile.gemm_half_rows))
    bytes_per_s = gpu.bandwidth_bytes_per_s * bw_eff
    if profile.weight_only_bw_factor != 1.0 and weight_only(weights):
        bytes_per_s *= profile.weight_only_bw_factor  # dequantizing GEMM kernels reach less
    flops_per_s = gpu.peak_flops_per_s(precision) * f_eff
    if profile.fp8_compute_factor != 1.0 and precision == "fp8" and curve is None:
        flops_per_s *= profile.fp8_compute_factor  # FP8 GEMMs reach less of their (doubled) peak
    fixed_s = profile.fixed_time_s
    if profile.fixed_time_per_layer_s:
        fixed_s += model.num_layers * profile.fixed_time_per_layer_s
    return dict(
        weight_bytes=shared_bytes_read(wb, profile),
        kv_token_bytes=kv_bytes_per_token(model, kv_bytes_per_element) if kv else 0.0,
        row_flops=2 * param_counts(model).gemm_active + recurrent_row_flops(model),
        pair_flops=attention_flops_per_context_token(model) if kv else 0.0,
        bytes_per_s=bytes_per_s,
        flops_per_s=flops_per_s,
        fixed_s=fixed_s,
        expert_bytes=wb.num_moe_layers * wb.expert if moe else 0.0,
        num_experts=moe.num_experts if moe else 0,
        experts_per_token=moe.experts_per_token if moe else 0,
        kv_windows=windows, num_layers=model.num_attention_layers if windows else 0,  # the K/V layers
        # a GEMM table's efficiencies are its own (fitted on wide GEMMs): the profile's half width is not added
        small_gemm_factor=ramp_r, gemm_half_rows=ramp_h, gemm_half_width=0.0 if curve else profile.gemm_half_width,
        dense_width=dense_gemm_width(model), expert_width=moe.expert_intermediate_size if moe else 0,
        kernel_source=curve.source if curve else DATASHEET,  # no table for this GPU and precision
        expert_flops_share=expert_share(model) if moe else 0.0,
        state_tokens=state_tokens_per_sequence(model, kv_bytes_per_element) if kv else 0.0,
        **(measured_operators(model, gpu, precision, bytes_per_s, flops_per_s, count_kv=kv,
                              kv_bytes=kv_bytes_per_element)
           if measured else {}))
