"""Context (prefill) attention and MLA fits for analysis/fit_kernel_tables.py (same source, same wheel).

Context attention (aiconfigurator_core 0.12.0, systems/data/<gpu>/attention/trtllm/<version>/
context_attention_perf.parquet; one layer's prefill attention on one GPU, latency in ms; BF16
activations and K/V, no window, no cached prefix): b sequences of s new tokens, T = b s rows,
P = b s (s + 1) / 2 causal (query, key) pairs, f = 4 heads head_dim FLOPs a pair (this project's
`attention_flops_per_context_token` per layer):

    t = latency + f (P + T x0) / (F eta)

eta the large prompts' fraction of the BF16 datasheet peak, x0 the keys' worth of work each query
row costs beyond its own keys (softmax, rescaling, Q and O tiles: the ramp eta s / (s + 2 x0) of
the achieved efficiency with prompt length), per head dim and GQA group range (query heads / K/V
heads), robust least squares on log time (soft L1 at 10%, as the MoE's).

MLA (mla/trtllm/<version>/): the prefill table context_mla_perf.parquet (num_heads per GPU, the
uncompressed K/V of DeepSeek-V3's 128 + 64 qk and 128 v dims) with the same model, f = 2 heads
(qk 192 + v 128) (this project's count); the decode table generation_mla_perf.parquet (b sequences of
s cached tokens, the 576-element latent read once per token, BF16):

    t = latency + b per_sequence + max(b s 576 x 2 / (BW bw_efficiency), b s f / (F eta))

(the absorbed kernel does more FLOPs a pair than f counts: eta is the counted FLOPs' rate).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import least_squares

from fit_kernel_ops import GQA_GROUPS, _errors

MLA_QK, MLA_V, MLA_LATENT = 192, 128, 576  # DeepSeek-V3's qk (128 nope + 64 rope), v and latent dims


def context_rows(table):
    """The rows the context-attention fit uses (module doc)."""
    return [r for r in table if r["attn_dtype"] == "bfloat16" and r["kv_cache_dtype"] == "bfloat16"
            and r["window_size"] == 0 and r["num_heads"] % r["num_key_value_heads"] == 0 and r["step"] == 0]


def _fit_prefill(flops, pairs, tokens, t, peak) -> dict:
    """latency_s, eta and x0 of t = latency + flops (pairs + tokens x0) / (pairs F eta) (module doc)."""
    per_pair = flops / pairs

    def model(p):
        return np.exp(p[0]) + per_pair * (pairs + tokens * np.exp(p[2])) / (peak * p[1])

    def resid(p):
        return np.log(model(p)) - np.log(t)

    sol = least_squares(resid, [np.log(1e-5), 0.6, np.log(500.0)],
                        bounds=([np.log(1e-7), 0.01, 0.0], [np.log(1e-2), 1.0, np.log(1e5)]), loss="soft_l1", f_scale=0.1)
    return {"latency_s": float(f"{np.exp(sol.x[0]):.4g}"), "eta": round(float(sol.x[1]), 4),
            "row_pairs": round(float(np.exp(sol.x[2])), 1), "points": len(t), **_errors(sol.fun)}


def fit_context_attention(rows, peak) -> dict:
    """Per head dim and GQA group range: the prefill fit (module doc)."""
    col = {c: np.array([r[c] for r in rows], float) for c in
           ("batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim", "latency")}
    tokens = col["batch_size"] * col["isl"]
    pairs = tokens * (col["isl"] + 1) / 2
    flops = 4 * col["num_heads"] * col["head_dim"] * pairs
    group = col["num_heads"] / col["num_key_value_heads"]
    out = {}
    for d in sorted(set(col["head_dim"].astype(int))):
        for low, high in GQA_GROUPS:
            keep = (col["head_dim"] == d) & (group >= low) & (group <= high)
            if keep.sum() < 20:
                continue
            fit = _fit_prefill(flops[keep], pairs[keep], tokens[keep], col["latency"][keep] / 1e3, peak)
            out[f"{d}/{low}-{high}"] = {"head_dim": int(d), "gqa_group_min": low, "gqa_group_max": high, **fit}
    return out


def mla_context_rows(table):
    return [r for r in table if r["mla_dtype"] == "bfloat16" and r["kv_cache_dtype"] == "bfloat16"]


def fit_mla_context(rows, peak) -> dict:
    col = {c: np.array([r[c] for r in rows], float) for c in ("batch_size", "isl", "num_heads", "latency")}
    tokens = col["batch_size"] * col["isl"]
    pairs = tokens * (col["isl"] + 1) / 2
    flops = 2 * col["num_heads"] * (MLA_QK + MLA_V) * pairs
    return _fit_prefill(flops, pairs, tokens, col["latency"] / 1e3, peak)


def mla_decode_time(p, kv, flops, batch, bandwidth, peak):
    """The module doc's MLA decode, p = (log latency, log per-sequence seconds, bw_efficiency, eta)."""
    return np.exp(p[0]) + batch * np.exp(p[1]) + np.maximum(kv / (bandwidth * p[2]), flops / (peak * p[3]))


def fit_mla_decode(rows, bandwidth, peak) -> dict:
    col = {c: np.array([r[c] for r in rows], float) for c in ("batch_size", "step", "num_heads", "latency")}
    kv = col["batch_size"] * col["step"] * MLA_LATENT * 2
    flops = col["batch_size"] * col["step"] * 2 * col["num_heads"] * (MLA_QK + MLA_V)
    t = col["latency"] / 1e3

    def resid(p):
        return np.log(mla_decode_time(p, kv, flops, col["batch_size"], bandwidth, peak)) - np.log(t)

    sol = min((least_squares(resid, [np.log(1e-5), np.log(1e-7), bw, eta],
                             bounds=([np.log(1e-7), np.log(1e-10), 0.01, 0.005], [np.log(1e-2), np.log(1e-4), 1.0, 1.0]),
                             loss="soft_l1", f_scale=0.1) for bw in (0.3, 0.8) for eta in (0.05, 0.4)),
              key=lambda s: s.cost)  # max() has two branches: the best of 4 starts
    return {"latency_s": float(f"{np.exp(sol.x[0]):.4g}"), "per_sequence_s": float(f"{np.exp(sol.x[1]):.4g}"),
            "bw_efficiency": round(float(sol.x[2]), 4), "eta": round(float(sol.x[3]), 4), "points": len(t),
            **_errors(sol.fun)}
