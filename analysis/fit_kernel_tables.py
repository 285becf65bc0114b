"""Fit compact curves to NVIDIA aiconfigurator's measured operator tables; write hardware/kernels/*.json.

Source: the wheel aiconfigurator_core 0.12.0 (Apache-2.0, NVIDIA), tables under
aiconfigurator_core/systems/data/<gpu>/{gemm,comm}/<engine>/<version>/*.parquet (latency in ms).
Not run by CI (the wheel is not in the repo); the shipped coefficients are tested
(tests/test_kernel_tables.py). Run: PYTHONPATH=<pyarrow> python3 analysis/fit_kernel_tables.py /tmp/aicore

GEMM: achieved FLOP/s over the datasheet peak of the format, for the weight-shaped GEMMs
(n, k >= 4096), fitted as a roofline whose compute side is the profile's ramp:
t = max(bytes / (BW eta_bw), 2 m n k / (F eta(m))), eta(m) = eta_max (r + (1 - r) m / (m + h)),
least squares on log time. Collectives (NCCL all_reduce, fp16): t = latency + 2 (n - 1) / n x
bytes / bus_bandwidth per GPU count n, least squares on log time. The MoE grouped GEMMs, the NCCL
all-to-all and decode attention: analysis/fit_kernel_ops.py; context (prefill) attention and MLA
(prefill and decode): analysis/fit_attention_ops.py (their module docs have the models).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from scipy.optimize import least_squares

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fit_attention_ops as att_ops  # noqa: E402  (beside this script, not a package)
import fit_kernel_ops as ops  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "aiconfigurator_core 0.12.0 (NVIDIA, Apache-2.0)"
# aiconfigurator's system name -> this repo's hardware file
GPUS = {"h100_sxm": "h100-sxm", "h200_sxm": "h200", "a100_sxm": "a100-80gb", "b200_sxm": "b200", "l40s": "l40s"}
FORMATS = {"bfloat16": ("bf16", "bf16_flops_per_s", 2), "fp8": ("fp8", "fp8_flops_per_s", 1)}
MIN_NK = 4096


def ramp_model(p, m):
    """eta_max (r + (1 - r) m / (m + h)), p = (eta_max, r, log h)."""
    eta, r, log_h = p
    return eta * (r + (1.0 - r) * m / (m + np.exp(log_h)))


def fit_gemm(rows, peak, bandwidth, element_bytes):
    """Fit the roofline with the ramp to one format's rows (m, n, k, latency ms): t = max(bytes /
    (BW eta_bw), 2 m n k / (F eta(m))), bytes = (m k + k n + m n) x element size; coefficients and errors."""
    m, n, k, t_ms = (np.array([r[c] for r in rows], float) for c in ("m", "n", "k", "latency"))
    keep = (n >= MIN_NK) & (k >= MIN_NK) & (t_ms > 0)
    m, n, k, t = m[keep], n[keep], k[keep], t_ms[keep] / 1e3
    flops = 2 * m * n * k
    moved = (m * k + k * n + m * n) * element_bytes

    def resid(p):
        return np.log(np.maximum(moved / (bandwidth * p[3]), flops / (peak * ramp_model(p[:3], m)))) - np.log(t)

    sol = least_squares(resid, [0.7, 0.3, np.log(64.0), 0.8], bounds=([0.05, 1e-3, 0.0, 0.05], [1.0, 1.0, 12.0, 1.0]))
    ape = np.abs(np.expm1(sol.fun))
    eta, r, log_h, eta_bw = sol.x
    return {"eta_max": round(float(eta), 4), "small_gemm_factor": round(float(r), 4), "bw_efficiency": round(float(eta_bw), 4),
            "gemm_half_rows": round(float(np.exp(log_h)), 1), "rows_fitted": int(keep.sum()),
            "median_ape": round(float(np.median(ape)), 4), "p90_ape": round(float(np.quantile(ape, 0.9)), 4)}


def fit_allreduce(rows):
    """Per GPU count: latency_s and bus_bytes_per_s of NCCL all_reduce (fp16 messages)."""
    out = {}
    for n_gpus in sorted({r["num_gpus"] for r in rows}):
        sub = [r for r in rows if r["num_gpus"] == n_gpus]
        size = np.array([r["message_size"] for r in sub], float) * 2  # fp16 elements -> bytes
        t = np.array([r["latency"] for r in sub], float) / 1e3
        factor = 2 * (n_gpus - 1) / n_gpus

        def resid(p):
            return np.log(np.exp(p[0]) + factor * size / np.exp(p[1])) - np.log(t)

        sol = least_squares(resid, [np.log(1e-5), np.log(3e11)])
        ape = np.abs(np.expm1(sol.fun))
        out[str(n_gpus)] = {"latency_s": float(f"{np.exp(sol.x[0]):.4g}"),
                            "bus_bytes_per_s": float(f"{np.exp(sol.x[1]):.4g}"), "points": len(sub),
                            "median_ape": round(float(np.median(ape)), 4),
                            "p90_ape": round(float(np.quantile(ape, 0.9)), 4)}
    return out


def latest(folder: Path) -> Path | None:
    """The newest version folder under `folder` that holds a table (.parquet)."""
    versions = sorted(p for p in folder.iterdir() if any(p.glob("*.parquet"))) if folder.is_dir() else []
    return versions[-1] if versions else None


def fit_gpu(data: Path, system: str, hw_name: str) -> dict | None:
    hw = json.loads((REPO / "hardware" / f"{hw_name}.json").read_text())
    gemm_dir = latest(data / system / "gemm" / "trtllm")
    if gemm_dir is None:
        return None
    table = pq.read_table(gemm_dir / "gemm_perf.parquet").to_pylist()
    rel = gemm_dir.relative_to(data.parents[1])
    result = {"gpu": hw["name"], "engine": "trtllm", "engine_version": gemm_dir.name,
              "source": f"measured table ({PACKAGE}, {system} trtllm {gemm_dir.name})",
              "files": [str(rel / "gemm_perf.parquet")],
              "license": "Apache-2.0 (SPDX header of the tables' collection_meta.yaml); coefficients fitted here",
              "gemm_model": "t = max((m k + k n + m n) e / (BW bw_efficiency), 2 m n k / (F eta(m))), eta(m) = eta_max (r + (1 - r) m / (m + h)), F the format's datasheet peak, n, k >= 4096",
              "gemm": {}}
    for dtype, (fmt, peak_key, element_bytes) in FORMATS.items():
        rows = [r for r in table if r["gemm_dtype"] == dtype]
        if rows and hw.get(peak_key):
            result["gemm"][fmt] = fit_gemm(rows, hw[peak_key], hw["bandwidth_bytes_per_s"], element_bytes)
    nccl_dir = latest(data / system / "comm" / "nccl")
    if nccl_dir is not None:
        nccl = pq.read_table(nccl_dir / "nccl_perf.parquet").to_pylist()
        ar = [r for r in nccl if r["op_name"] == "all_reduce" and r["nccl_dtype"] == "half"]
        if ar:
            result["files"].append(str(nccl_dir.relative_to(data.parents[1]) / "nccl_perf.parquet"))
            result["all_reduce_model"] = "t = latency_s + 2 (n - 1) / n x bytes / bus_bytes_per_s (NCCL, fp16)"
            result["all_reduce"] = {"nccl_version": nccl_dir.name, **fit_allreduce(ar)}
    return fit_ops(data, system, hw, result)


def fit_ops(data: Path, system: str, hw: dict, result: dict) -> dict:
    """Add the MoE, all-to-all and decode-attention fits (`fit_kernel_ops`) where the tables have them."""
    moe_dir = latest_with(data / system / "moe" / "trtllm", result["engine_version"], "moe_perf.parquet")
    if moe_dir is not None:
        table = pq.read_table(moe_dir / "moe_perf.parquet").to_pylist()
        fits = {}
        for dtype, (fmt, peak_key, element_bytes) in ops.MOE_ELEMENT.items():
            rows = ops.moe_rows(table, dtype)
            if rows and hw.get(peak_key):
                fits[fmt] = ops.fit_moe(rows, hw[peak_key], hw["bandwidth_bytes_per_s"], element_bytes)
        if fits:
            result["files"].append(str(moe_dir.relative_to(data.parents[1]) / "moe_perf.parquet"))
            result["moe_model"] = ("one MoE layer on one GPU, whole experts (ep <= 8, tp 1), balanced: pairs = T k / ep, "
                                   "touched = min(E / ep, max(1, pairs)), m = pairs / touched; t = max(touched 3 H I e / "
                                   "(BW bw_efficiency), 6 H I pairs / (F eta(m))), eta(m) = eta_max (r + (1 - r) m / (m + h))")
            result["moe"] = {"engine_version": moe_dir.name, **fits}
    nccl_dir = latest(data / system / "comm" / "nccl")
    if nccl_dir is not None:
        nccl = pq.read_table(nccl_dir / "nccl_perf.parquet").to_pylist()
        a2a = [r for r in nccl if r["op_name"] == "alltoall" and r["nccl_dtype"] == "half"]
        if a2a:
            result["all_to_all_model"] = "t = latency_s + (n - 1) / n x bytes / bus_bytes_per_s (NCCL alltoall, fp16; bytes each GPU sends)"
            result["all_to_all"] = {"nccl_version": nccl_dir.name, **ops.fit_collective(a2a, lambda n: (n - 1) / n)}
    att_dir = latest_with(data / system / "attention" / "trtllm", result["engine_version"], "generation_attention_perf.parquet")
    if att_dir is not None:
        rows = ops.decode_rows(pq.read_table(att_dir / "generation_attention_perf.parquet").to_pylist())
        if rows:
            result["files"].append(str(att_dir.relative_to(data.parents[1]) / "generation_attention_perf.parquet"))
            result["decode_attention_model"] = ("t = latency_s + b per_sequence_s + b s kv_heads d 2 x 2 / (BW bw_efficiency), "
                                                "BF16 K/V, per GQA group (query heads / K/V heads) range")
            result["decode_attention"] = {"engine_version": att_dir.name,
                                          **ops.fit_decode_attention(rows, hw["bandwidth_bytes_per_s"])}
    return fit_attention(data, system, hw, result)


def fit_attention(data: Path, system: str, hw: dict, result: dict) -> dict:
    """Add the context-attention and MLA fits (`fit_attention_ops`) where the tables have them."""
    peak, bandwidth = hw["bf16_flops_per_s"], hw["bandwidth_bytes_per_s"]
    att_dir = latest_with(data / system / "attention" / "trtllm", result["engine_version"], "context_attention_perf.parquet")
    if att_dir is not None:
        rows = att_ops.context_rows(pq.read_table(att_dir / "context_attention_perf.parquet").to_pylist())
        if rows:
            result["files"].append(str(att_dir.relative_to(data.parents[1]) / "context_attention_perf.parquet"))
            result["context_attention_model"] = ("t = latency_s + f (P + T row_pairs) / (F eta), T = b s rows, P = b s (s + 1) / 2 "
                                                 "causal pairs, f = 4 heads head_dim, BF16, no window, per head dim / GQA group range")
            result["context_attention"] = {"engine_version": att_dir.name, **att_ops.fit_context_attention(rows, peak)}
    mla_dir = latest_with(data / system / "mla" / "trtllm", result["engine_version"], "context_mla_perf.parquet")
    if mla_dir is not None:
        table = att_ops.mla_context_rows(pq.read_table(mla_dir / "context_mla_perf.parquet").to_pylist())
        decode = att_ops.mla_context_rows(pq.read_table(mla_dir / "generation_mla_perf.parquet").to_pylist()) \
            if (mla_dir / "generation_mla_perf.parquet").is_file() else []
        if table:
            result["files"] += [str(mla_dir.relative_to(data.parents[1]) / name) for name in
                                ("context_mla_perf.parquet", "generation_mla_perf.parquet")[:2 if decode else 1]]
            result["mla_model"] = ("DeepSeek-V3's MLA, BF16, heads per GPU; prefill: the context model, f = 2 heads (192 + 128); "
                                   "decode: t = latency_s + b per_sequence_s + max(b s 576 x 2 / (BW bw_efficiency), b s f / (F eta))")
            result["mla"] = {"engine_version": mla_dir.name, "prefill": att_ops.fit_mla_context(table, peak)}
            if decode:
                result["mla"]["decode"] = att_ops.fit_mla_decode(decode, bandwidth, peak)
    return result


def latest_with(folder: Path, version: str, name: str) -> Path | None:
    """`folder`/`version` when it holds the table `name` (the GEMM table's engine version), else the
    newest version folder that does."""
    if (folder / version / name).is_file():
        return folder / version
    versions = sorted(p for p in folder.iterdir() if (p / name).is_file()) if folder.is_dir() else []
    return versions[-1] if versions else None


def main(root: str) -> None:
    data = Path(root) / "aiconfigurator_core" / "systems" / "data"
    for system, hw_name in GPUS.items():
        fitted = fit_gpu(data, system, hw_name)
        if fitted:
            path = REPO / "hardware" / "kernels" / f"{hw_name}.json"
            path.write_text(json.dumps(fitted, indent=2) + "\n")
            print(path.name, json.dumps({k: fitted.get(k) for k in ("gemm", "moe", "all_to_all", "decode_attention",
                                                                  "context_attention", "mla")}))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/aicore")
