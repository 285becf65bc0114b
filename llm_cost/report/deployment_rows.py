"""The columns every timing row of a deployment carries: the split, the collectives, per-GPU memory
and whether it fits, and throughput. Flat, SI, unit in the key."""

from __future__ import annotations

from llm_cost.parallel.fit import Fit
from llm_cost.report.render import Column, fixed
from llm_cost.roofline.pass_terms import gemm_precision
from llm_cost.specs import Accelerator, ModelSpec, WeightFormat
from llm_cost.specs.deployment import Deployment

# Every row of a deployment has these keys (csv needs one header), in this order
DEPLOYMENT_KEYS = ("tp", "pp", "ep", "gpus", "replicas", "kv_dtype", "compute_dtype", "comm_time_s",
                   "weight_bytes_per_gpu", "kv_bytes_per_gpu", "workspace_bytes_per_gpu", "memory_needed_bytes",
                   "memory_available_bytes", "memory_basis", "fits", "fit_note", "tokens_per_s", "tokens_per_s_per_gpu")


def deployment_fields(model: ModelSpec, gpu: Accelerator, deployment: Deployment, weights: WeightFormat,
                      fit: Fit, *, comm_time_s: float, step_s: float, tokens: float) -> dict:
    """The deployment's columns for one pass of `step_s` seconds that yields `tokens` tokens per replica
    and stage (decode: the batch; a verification: the accepted tokens).

    tokens_per_s = replicas x tokens / step_s: a static batch cannot fill pp stages (one batch in
    flight per replica: `Deployment.batches_in_flight`), replicas add up.
    """
    rate = deployment.batches_in_flight * tokens / step_s
    return {
        "tp": deployment.tp, "pp": deployment.pp, "ep": deployment.ep, "gpus": deployment.total_gpus,
        "replicas": deployment.replicas, "kv_dtype": deployment.kv_dtype,
        "compute_dtype": gpu.compute_precision(gemm_precision(model, weights)),
        "comm_time_s": comm_time_s,
        "weight_bytes_per_gpu": fit.weight_bytes, "kv_bytes_per_gpu": fit.kv_bytes,
        "workspace_bytes_per_gpu": fit.workspace_bytes,
        "memory_needed_bytes": fit.needed_bytes, "memory_available_bytes": fit.available_bytes,
        "memory_basis": fit.memory_basis, "fits": fit.fits, "fit_note": fit.reason,
        "tokens_per_s": rate, "tokens_per_s_per_gpu": rate / deployment.total_gpus,
    }


# The human table's deployment columns: comm, memory and throughput per GPU on more than one GPU, and
# `fits` only when some row does not (json and csv always carry every key)
DEPLOYED_COLUMNS = [
    Column("comm_time_s", "comm (ms)", fixed(3, 1e-3)),
    Column("memory_needed_bytes", "GB/GPU", fixed(1, 1e9)),
    Column("tokens_per_s_per_gpu", "tok/s/GPU", fixed(0)),
]
FIT_COLUMN = Column("fits", "fits", lambda value: "yes" if value else "NO")


def deployed_columns(columns, rows, deployment: Deployment, *, per_gpu: bool = True):
    """`columns`, then DEPLOYED_COLUMNS on more than one GPU (`per_gpu`), then `fits` when a row does not fit."""
    columns = list(columns) + (DEPLOYED_COLUMNS if per_gpu and not deployment.is_single else [])
    return columns + ([FIT_COLUMN] if any(not row["fits"] for row in rows) else [])
