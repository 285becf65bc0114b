"""The MoE, all-to-all and attention fits of analysis/fit_kernel_tables.py (same source, same wheel).

MoE (aiconfigurator_core 0.12.0, systems/data/<gpu>/moe/trtllm/<version>/moe_perf.parquet; one MoE
layer's grouped GEMMs on one GPU, latency in ms): the rows of whole experts per GPU inside one node
(moe_tp_size 1, moe_ep_size <= 8), balanced routing, the gated CUTLASS kernel. For T tokens into the
layer, top-k of E experts over ep GPUs (g = E / ep each) of width I:

    pairs = T k / ep,  touched = min(g, max(1, pairs)),  m = pairs / touched   (tokens per expert)
    t = max(touched x 3 H I e / (BW bw_efficiency), 2 x 3 H I pairs / (F eta(m))),
    eta(m) = eta_max (r + (1 - r) m / (m + h))

robust least squares on log time (soft L1 at 10%: the table has a few shapes 2-5x off any roofline,
which plain least squares lets pull every coefficient). Wider expert parallelism (64-256 ranks emulated on one GPU) and tp-sharded
experts are left out: the table's times there are 1.5-5x what any roofline of its shapes gives (its
own emulation), and this project times them with its own collectives.

All-to-all (comm/nccl/<version>/nccl_perf.parquet, op alltoall, fp16): per GPU count n,
t = latency + (n - 1) / n x bytes / bus_bandwidth, bytes what each GPU sends (NCCL's busBw convention).

Decode attention (attention/trtllm/<version>/generation_attention_perf.parquet, BF16 K/V, no window):
t = latency + b x per_sequence + b s kv_heads d 2 e / (BW bw_efficiency) for b sequences of s cached
tokens, per GQA group (query heads / K/V heads) 1, 2-4, 5-8 and beyond: how much of the bandwidth the
kernel reaches as the group grows, its launch floor and its cost per sequence (robust, as the MoE's).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import least_squares

MOE_ELEMENT = {"bfloat16": ("bf16", "bf16_flops_per_s", 2), "fp8_block": ("fp8", "fp8_flops_per_s", 1)}
MOE_KERNEL = "moe_torch_flow_cutlass"  # gated (SwiGLU: gate, up, down)
GQA_GROUPS = ((1, 1), (2, 4), (5, 8), (9, 128))  # query heads per K/V head, inclusive ranges


def _errors(residuals) -> dict:
    ape = np.abs(np.expm1(residuals))
    return {"median_ape": round(float(np.median(ape)), 4), "p90_ape": round(float(np.quantile(ape, 0.9)), 4)}


def moe_terms(rows, element_bytes):
    """(touched-expert weight bytes, FLOPs, tokens per touched expert, seconds) of MoE table rows."""
    col = {c: np.array([r[c] for r in rows], float) for c in
           ("num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_ep_size", "latency")}
    g = col["num_experts"] / col["moe_ep_size"]
    pairs = col["num_tokens"] * col["topk"] / col["moe_ep_size"]
    touched = np.minimum(g, np.maximum(1.0, pairs))
    per_pair = 3 * col["hidden_size"] * col["inter_size"]
    return touched * per_pair * element_bytes, 2 * per_pair * pairs, pairs / touched, col["latency"] / 1e3


def moe_time(p, weight_bytes, flops, m, bandwidth, peak):
    """The module doc's MoE roofline, p = (bw_efficiency, eta_max, r, log h)."""
    bw, eta, r, log_h = p
    ramp = eta * (r + (1.0 - r) * m / (m + np.exp(log_h)))
    return np.maximum(weight_bytes / (bandwidth * bw), flops / (peak * ramp))


def moe_rows(table, dtype):
    """The rows the MoE fit uses (module doc)."""
    return [r for r in table if r["moe_dtype"] == dtype and r["distribution"] == "balanced"
            and r["kernel_source"] == MOE_KERNEL and r["moe_tp_size"] == 1 and r["moe_ep_size"] <= 8]


def fit_moe(rows, peak, bandwidth, element_bytes) -> dict:
    w, f, m, t = moe_terms(rows, element_bytes)

    def resid(p):
        return np.log(moe_time(p, w, f, m, bandwidth, peak)) - np.log(t)

    starts = [[bw, eta, r, np.log(h)] for bw in (0.6, 0.8) for eta in (0.5, 0.8) for r in (0.05, 0.3) for h in (32.0, 256.0)]
    sol = min((least_squares(resid, x0, bounds=([0.05, 0.05, 1e-3, 0.0], [1.0, 1.0, 1.0, 12.0]), loss="soft_l1",
                             f_scale=0.1) for x0 in starts),
              key=lambda s: s.cost)  # the ramp's log-time surface has local minima: the best of 16 starts
    bw, eta, r, log_h = sol.x
    return {"bw_efficiency": round(float(bw), 4), "eta_max": round(float(eta), 4), "small_gemm_factor": round(float(r), 4),
            "gemm_half_rows": round(float(np.exp(log_h)), 1), "rows_fitted": len(rows), **_errors(sol.fun)}


def fit_collective(rows, factor) -> dict:
    """Per GPU count n: latency_s and bus_bytes_per_s of t = latency + factor(n) x bytes / bus (fp16)."""
    out = {}
    for n_gpus in sorted({r["num_gpus"] for r in rows}):
        sub = [r for r in rows if r["num_gpus"] == n_gpus]
        size = np.array([r["message_size"] for r in sub], float) * 2  # fp16 elements -> bytes
        t = np.array([r["latency"] for r in sub], float) / 1e3
        share = factor(n_gpus)

        def resid(p):
            return np.log(np.exp(p[0]) + share * size / np.exp(p[1])) - np.log(t)

        sol = least_squares(resid, [np.log(1e-5), np.log(3e11)])
        out[str(n_gpus)] = {"latency_s": float(f"{np.exp(sol.x[0]):.4g}"),
                            "bus_bytes_per_s": float(f"{np.exp(sol.x[1]):.4g}"), "points": len(sub), **_errors(sol.fun)}
    return out


def decode_attention_time(p, kv, batch, bandwidth):
    """The module doc's decode attention, p = (log latency, log per-sequence seconds, bw_efficiency)."""
    return np.exp(p[0]) + batch * np.exp(p[1]) + kv / (bandwidth * p[2])


def decode_attention_terms(rows):
    """(K/V bytes read, seconds, GQA group, batch) of generation-attention table rows (BF16 K/V)."""
    col = {c: np.array([r[c] for r in rows], float) for c in
           ("batch_size", "step", "num_heads", "num_key_value_heads", "head_dim", "latency")}
    kv = col["batch_size"] * col["step"] * col["num_key_value_heads"] * col["head_dim"] * 2 * 2
    return kv, col["latency"] / 1e3, col["num_heads"] / col["num_key_value_heads"], col["batch_size"]


def decode_rows(table):
    return [r for r in table if r["kv_cache_dtype"] == "bfloat16" and r["window_size"] == 0
            and r["num_heads"] % r["num_key_value_heads"] == 0]


def fit_decode_attention(rows, bandwidth) -> dict:
    """Per GQA group range: latency_s, per_sequence_s and bw_efficiency (module doc)."""
    kv, t, group, batch = decode_attention_terms(rows)
    out = {}
    for low, high in GQA_GROUPS:
        keep = (group >= low) & (group <= high)
        if keep.sum() < 10:
            continue
        k, tt, b = kv[keep], t[keep], batch[keep]

        def resid(p):
            return np.log(decode_attention_time(p, k, b, bandwidth)) - np.log(tt)

        sol = least_squares(resid, [np.log(1e-5), np.log(1e-7), 0.6],
                            bounds=([np.log(1e-7), np.log(1e-10), 0.01], [np.log(1e-2), np.log(1e-4), 1.0]),
                            loss="soft_l1", f_scale=0.1)
        out[f"{low}-{high}"] = {"gqa_group_min": low, "gqa_group_max": high,
                                "latency_s": float(f"{np.exp(sol.x[0]):.4g}"),
                                "per_sequence_s": float(f"{np.exp(sol.x[1]):.4g}"), "bw_efficiency": round(float(sol.x[2]), 4),
                                "points": int(keep.sum()), **_errors(sol.fun)}
    return out
