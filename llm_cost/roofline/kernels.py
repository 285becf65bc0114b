"""Measured kernel curves: the GEMM roofline fitted to NVIDIA aiconfigurator's operator tables.

hardware/kernels/<gpu>.json (written by analysis/fit_kernel_tables.py from aiconfigurator_core
0.12.0's measured tables, Apache-2.0) hold, per GEMM format, a measured GEMM's
t = max(bytes / (BW bw_efficiency), 2 m n k / (F eta(m))), eta(m) = eta_max (r + (1 - r) m / (m + h)),
the same shape as `PassCost`'s roofline with its GEMM ramp: under `Profile.kernels == "measured"`
these coefficients replace the profile's bw_efficiency, compute_efficiency, small_gemm_factor and
gemm_half_rows for a GPU that has a table, and `PassCost.kernel_source` names the table; a GPU without
one keeps the profile's figures and its source says "datasheet".

The same files hold (analysis/fit_kernel_ops.py) a MoE layer's grouped GEMMs by tokens per expert
(`measured_moe`: the routed experts' compute at eta_max (r + (1 - r) m / (m + h)), m the rows per
touched expert), NCCL's all-to-all by GPU count (`measured_all_to_all`) and decode attention's
bandwidth by GQA group (`measured_decode_attention`: the K/V bytes' share of the bandwidth); under
`Profile.kernels == "measured"` `PassCost` and `parallel.comm` use them where a GPU has them, and each
names its table ("<GEMM source>: moe", ": all-to-all", ": decode attention").

Prefill attention (`measured_context_attention`, analysis/fit_attention_ops.py): a layer's causal
attention over T rows and P (query, key) pairs at t = f (P + T row_pairs) / (F eta), f the pair's
FLOPs, per head dim and GQA group; DeepSeek's MLA (`measured_mla`) the same from its prefill table and
its latent K/V's bandwidth from its decode table. `PassCost` times attention pairs with them
(`pair_time_factor`, `row_pairs`) and the breakdown's attention row names the tables.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

from llm_cost.specs import Accelerator, ModelSpec


@dataclass(frozen=True)
class GemmCurve:
    """One GPU's and format's fitted GEMM roofline (efficiencies are fractions of the datasheet)."""

    bw_efficiency: float
    compute_efficiency: float  # eta_max: large GEMMs' fraction of the format's peak
    small_gemm_factor: float  # r
    gemm_half_rows: float  # h, rows
    median_ape: float  # the fit's median |error| on its table (a fraction)
    p90_ape: float
    source: str


@lru_cache(maxsize=None)
def _tables() -> dict:
    """{gpu name: the json of its hardware/kernels file}, read once."""
    from llm_cost.catalog.paths import catalog_dir

    folder = catalog_dir("hardware") / "kernels"
    tables = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        data = json.loads(path.read_text())
        tables[data["gpu"]] = data
    return tables


def measured_gemm(gpu_name: str, precision: str) -> GemmCurve | None:
    """The measured GEMM curve of `gpu_name` (an `Accelerator.name`) at `precision` ("bf16", "fp8"),
    or None when no table covers them."""
    table = _tables().get(gpu_name)
    fit = table["gemm"].get(precision) if table else None
    if fit is None:
        return None
    return GemmCurve(bw_efficiency=fit["bw_efficiency"], compute_efficiency=fit["eta_max"],
                     small_gemm_factor=fit["small_gemm_factor"], gemm_half_rows=fit["gemm_half_rows"],
                     median_ape=fit["median_ape"], p90_ape=fit["p90_ape"], source=table["source"])


def measured_all_reduce(gpu_name: str, num_gpus: int) -> tuple[float, float] | None:
    """(latency_s, bus_bytes_per_s) of a measured NCCL all-reduce over `num_gpus` GPUs, or None:
    t = latency_s + 2 (n - 1) / n x bytes / bus_bytes_per_s."""
    table = _tables().get(gpu_name)
    fit = table.get("all_reduce", {}).get(str(num_gpus)) if table else None
    return (fit["latency_s"], fit["bus_bytes_per_s"]) if fit else None


@dataclass(frozen=True)
class OperatorCurve:
    """A fitted operator table other than the GEMM's: its coefficients and its fit's error on it."""

    efficiency: float  # MoE: eta_max of the format's peak; attention: the K/V bytes' share of the bandwidth
    small_gemm_factor: float  # MoE's r (1 for attention)
    gemm_half_rows: float  # MoE's h, rows per touched expert (0 for attention)
    median_ape: float
    p90_ape: float
    source: str


def measured_moe(gpu_name: str, precision: str) -> OperatorCurve | None:
    """The fitted MoE grouped-GEMM curve of `gpu_name` at `precision` ("bf16", "fp8"), or None."""
    table = _tables().get(gpu_name)
    fit = table.get("moe", {}).get(precision) if table else None
    if fit is None:
        return None
    return OperatorCurve(fit["eta_max"], fit["small_gemm_factor"], fit["gemm_half_rows"], fit["median_ape"],
                         fit["p90_ape"], f"{table['source']}: moe")


def measured_all_to_all(gpu_name: str, num_gpus: int) -> tuple[float, float] | None:
    """(latency_s, bus_bytes_per_s) of a measured NCCL all-to-all over `num_gpus` GPUs, or None:
    t = latency_s + (n - 1) / n x bytes / bus_bytes_per_s, bytes what each GPU sends."""
    table = _tables().get(gpu_name)
    fit = table.get("all_to_all", {}).get(str(num_gpus)) if table else None
    return (fit["latency_s"], fit["bus_bytes_per_s"]) if fit else None


def measured_decode_attention(gpu_name: str, gqa_group: float) -> OperatorCurve | None:
    """The fitted decode-attention bandwidth of `gpu_name` for a GQA group (query heads per K/V head),
    or None; a fit that ended on its bound (bw_efficiency 1: the table reads faster than the datasheet
    allows, A100's) is not used."""
    table = _tables().get(gpu_name)
    for key, fit in (table.get("decode_attention", {}) if table else {}).items():
        if isinstance(fit, dict) and fit["gqa_group_min"] <= gqa_group <= fit["gqa_group_max"]:
            if fit["bw_efficiency"] >= 1.0:
                return None
            return OperatorCurve(fit["bw_efficiency"], 1.0, 0.0, fit["median_ape"], fit["p90_ape"],
                                 f"{table['source']}: decode attention")
    return None


@dataclass(frozen=True)
class AttentionCurve:
    """A fitted attention table: prefill t = f (P + T row_pairs) / (F eta) (module doc), and for MLA its
    decode table's share of the bandwidth (None where not fitted or not used)."""

    eta: float  # fraction of the BF16 datasheet peak on the counted pair FLOPs of long prompts
    row_pairs: float  # keys' worth of work each query row costs beyond its own keys
    median_ape: float
    p90_ape: float
    source: str
    decode_bw_efficiency: float | None = None
    decode_eta: float = 0.0  # MLA decode: the counted pair FLOPs' share of the BF16 peak (0: not used)


MAX_DECODE_APE = 0.15  # an MLA decode fit with a larger median error on its own table is not used


def measured_context_attention(gpu_name: str, head_dim: int, gqa_group: float) -> AttentionCurve | None:
    """The fitted prefill attention of `gpu_name` for `head_dim` (the table's nearest) and a GQA group
    (query heads per K/V head), or None when the GPU has no table."""
    table = _tables().get(gpu_name)
    fits = [entry for entry in (table.get("context_attention", {}) if table else {}).values() if isinstance(entry, dict)]
    if not fits:
        return None
    nearest = min({entry["head_dim"] for entry in fits}, key=lambda dim: (abs(dim - head_dim), dim))
    for fit in fits:
        if fit["head_dim"] == nearest and fit["gqa_group_min"] <= gqa_group <= fit["gqa_group_max"]:
            return AttentionCurve(fit["eta"], fit["row_pairs"], fit["median_ape"], fit["p90_ape"],
                                  f"{table['source']}: context attention")
    return None


def measured_mla(gpu_name: str) -> AttentionCurve | None:
    """The fitted MLA prefill of `gpu_name` and its decode bandwidth (`MAX_DECODE_APE`), or None."""
    table = _tables().get(gpu_name)
    mla = table.get("mla") if table else None
    if not mla:
        return None
    fit, decode = mla["prefill"], mla.get("decode")
    good = decode and decode["median_ape"] <= MAX_DECODE_APE and decode["bw_efficiency"] < 1.0
    return AttentionCurve(fit["eta"], fit["row_pairs"], fit["median_ape"], fit["p90_ape"],
                          f"{table['source']}: MLA {'prefill and decode' if good else 'prefill'}",
                          decode["bw_efficiency"] if good else None, decode["eta"] if good else 0.0)


def kv_time_factor(gpu: Accelerator, bytes_per_s: float, kv_curve: tuple[float, float], pair_flops: float,
                   kv_token_bytes: float) -> float:
    """`PassCost.kv_time_factor` of a decode-attention curve kv_curve = (bw_efficiency, eta): a cached
    token's seconds over its bytes at bytes_per_s, max(b / (BW bw_efficiency), f / (F_bf16 eta)) x
    bytes_per_s / b, with b its K/V bytes and f a pair's FLOPs on one GPU (eta 0: bandwidth only; MLA's
    decode kernel is compute-bound with many heads a GPU, tp splits them, the latent is replicated)."""
    bw, eta = kv_curve
    per_byte = 1.0 / (gpu.bandwidth_bytes_per_s * bw)
    if eta and kv_token_bytes:
        per_byte = max(per_byte, pair_flops / kv_token_bytes / (gpu.peak_flops_per_s("bf16") * eta))
    return bytes_per_s * per_byte


def measured_operators(model: ModelSpec, gpu: Accelerator, precision: str, bytes_per_s: float, flops_per_s: float,
                       *, count_kv: bool = True, kv_bytes: float = 2.0) -> dict:
    """`PassCost` fields from the measured operator tables of `gpu` beyond the GEMM's: a MoE's routed
    experts at the MoE table's curve, expert_curve = (flops_per_s / (F eta_max), r, h); attention pairs
    at the prefill table's (MLA: its own), pair_time_factor = flops_per_s / (F_bf16 eta) and row_pairs;
    the K/V bytes at decode attention's bandwidth for the model's GQA group (MLA: its decode table's),
    kv_time_factor = bytes_per_s / (BW bw_efficiency) (MLA: `kv_time_factor`, kept as kv_curve for a
    deployment's share). {} where the GPU has none of them."""
    out = {}
    moe = measured_moe(gpu.name, precision) if model.moe is not None else None
    if moe is not None:
        out.update(expert_curve=(flops_per_s / (gpu.peak_flops_per_s(precision) * moe.efficiency),
                                 moe.small_gemm_factor, moe.gemm_half_rows), expert_source=moe.source)
    if not (count_kv and model.num_kv_heads):
        return out
    group = model.num_heads / model.num_kv_heads
    if model.mla is not None:
        prefill = measured_mla(gpu.name)
        bw = prefill.decode_bw_efficiency if prefill else None
        eta = prefill.decode_eta if prefill else 0.0
        sources = [prefill.source] if prefill else []
    else:
        prefill = measured_context_attention(gpu.name, model.head_dim, group)
        decode = measured_decode_attention(gpu.name, group)
        bw, eta = (decode.efficiency if decode else None), 0.0
        sources = [curve.source for curve in (decode, prefill) if curve]
    if bw is not None:
        from llm_cost.counts import attention_flops_per_context_token, kv_bytes_per_token

        curve = (bw, eta)
        out.update(kv_curve=curve, kv_time_factor=kv_time_factor(
            gpu, bytes_per_s, curve, attention_flops_per_context_token(model), kv_bytes_per_token(model, kv_bytes)))
    if prefill is not None:
        out.update(pair_time_factor=flops_per_s / (gpu.peak_flops_per_s("bf16") * prefill.eta),
                   row_pairs=prefill.row_pairs)
    if sources:  # one table: "<source>: decode attention" and "<source>: context attention" share the source
        out.update(kv_source=sources[0] if len(sources) == 1 else sources[0] + " + context attention")
    return out
