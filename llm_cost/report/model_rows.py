"""Result rows for the CLI's `model` and `roofline` commands: flat dicts, SI values, unit in the key.

Kept out of cli.py so that the rows can be tested and reused without Typer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llm_cost.counts.lora import LORA_RANK
from llm_cost.counts.parts import checkpoint_params
from llm_cost.counts.recurrent import state_bytes_per_sequence
from llm_cost.counts import BF16_BYTES
from llm_cost.counts import (LORA_TARGETS_ATTN, flops_per_token,
                             kv_bytes, kv_bytes_per_token, lora_params, param_counts, weight_bytes)
from llm_cost.errors import LlmCostError, check_number
from llm_cost.specs.weights import BF16, INT4_G128, WeightFormat
from llm_cost.specs.model import ModelSpec

if TYPE_CHECKING:  # annotations only: the spec modules load where they are used
    from llm_cost.specs import Accelerator, Profile


def model_row(model: ModelSpec, *, context: int = 0, lora_rank: int = LORA_RANK,
              kv_bytes_per_element: float = BF16_BYTES) -> dict:
    """One model's counts: params, weight bytes (BF16, INT4 g128, as shipped), KV and FLOPs per
    token, LoRA.

    The checkpoint's parts, counted apart (`counts.parts`): `params_text` (the text model, what
    runs per token: DeepSeek-V3 671B), `params_vision` (the vision tower and projector:
    Llama-4-Maverick 0.87B), `params_mtp` (the multi-token-prediction modules as the checkpoint
    stores them: DeepSeek-V3 13.5B, the README's "14B") and `params_total`, their sum, the
    checkpoint's total as the Hub's safetensors total reports it ("685B"). `params_active`,
    `params_per_layer`, `params_embedding` and `params_lm_head` are the text model's.

    `weight_bytes_checkpoint`: every weight byte the checkpoint ships, in `checkpoint_format`
    (`llm_cost.counts.checkpoint`: FP8 blocks, MXFP4 experts, else torch_dtype), MTP modules included
    (DeepSeek-V3: 688.57 GB, of which MTP 15.42 GB); None, with the quant_method named in
    `checkpoint_format`, for a quantization it does not count (GPTQ, AWQ, ...).

    `kv_bytes_per_token` counts the attention layers only (`attention_layers`); a hybrid's
    `recurrent_layers` keep `state_bytes_per_sequence` instead, whatever the context (Qwen3-Next:
    24,576 B/token over 12 layers, 39.5 MB per sequence over 36).

    `kv_bytes_per_sequence`: the K/V (and recurrent state) one sequence of `kv_context` tokens holds, each sliding or
    chunked layer at most its window (`counts.kv_bytes`; gpt-oss-20b at its 131,072: 3.22 GB,
    not the 6.44 GB of kv_bytes_per_token x context). `kv_context` is `context`, or the model's
    max_position_embeddings when `context` is 0; both None when neither is known.
    """
    check_number("context", context, low=0, integer=True)
    check_number("lora_rank", lora_rank, low=1, integer=True)
    from llm_cost.specs.kv_dtypes import KV_BYTES_RANGE  # not deployment: the `model` command needs none

    check_number("kv_bytes", kv_bytes_per_element, low=KV_BYTES_RANGE[0], high=KV_BYTES_RANGE[1])
    counts = param_counts(model)
    parts = checkpoint_params(model)
    int4 = weight_bytes(model, INT4_G128)
    shipped_format, shipped_bytes = _as_shipped(model)
    lora_ok = model.mla is None and model.recurrent is None  # LoRA counts every layer's attention
    kv_context = context or model.max_position_embeddings or None
    return {
        "name": model.name,
        "family": model.family,
        "params_total": parts.total,
        "params_active": counts.active,
        "params_per_layer": counts.per_layer,
        "params_embedding": counts.embedding,
        "params_lm_head": counts.lm_head,
        "params_text": parts.text,
        "params_vision": parts.vision,
        "params_mtp": parts.mtp,
        "weight_bytes_bf16": weight_bytes(model, BF16).total,
        "weight_bytes_int4": int4.total,
        "bits_int4": int4.effective_bits,
        "checkpoint_format": shipped_format,
        "weight_bytes_checkpoint": shipped_bytes,
        "kv_bytes_per_token": kv_bytes_per_token(model, kv_bytes_per_element),
        "attention_layers": model.num_attention_layers,
        "recurrent_layers": model.num_recurrent_layers,
        "state_bytes_per_sequence": state_bytes_per_sequence(model, kv_bytes_per_element),
        "kv_context": kv_context,
        "kv_bytes_per_sequence": None if kv_context is None else kv_bytes(model, kv_context, kv_bytes_per_element),
        "context": context,
        "flops_per_token": flops_per_token(model, context),
        "lora_rank": lora_rank,
        "lora_params_attn": lora_params(model, lora_rank, LORA_TARGETS_ATTN) if lora_ok else None,
        "lora_params_all": (lora_params(model, lora_rank, LORA_TARGETS_ATTN + model.mlp_projections)
                            if lora_ok else None),
    }


def _as_shipped(model: ModelSpec) -> tuple[str, float | None]:
    """(checkpoint format, bytes as shipped), or (what the config says, None) when not counted."""
    from llm_cost.counts.checkpoint import checkpoint_bytes

    try:
        shipped = checkpoint_bytes(model)
    except LlmCostError:  # a quantization or torch_dtype the checkpoint rules do not count
        said = model.quantization.method if model.quantization else model.checkpoint_dtype
        return f"{said} (not counted)", None
    return shipped.format, shipped.total


def catalog_rows() -> list[dict]:
    """The shipped catalog: each model with its text-model, checkpoint-total (`params_text`,
    `params_total`, as `model_row` names them) and active parameters and its context limit
    (`max_position_embeddings`, None when the config has none), then each accelerator with its
    memory (marketed and usable), bandwidth, dense BF16 / FP8 / INT8 / FP4 peaks (None where the chip
    has none), interconnect (per GPU per direction, and its latency per collective step) and ridge
    point; every row names its source and has every
    key (None where it does not apply), so that csv has one header."""
    from llm_cost.catalog import catalog_names, load_accelerator, load_model

    rows = []
    for name in catalog_names("models"):
        model = load_model(name)
        counts = param_counts(model)
        rows.append({"kind": "model", "name": name, "source": model.source, "params_text": counts.total,
                     "params_total": checkpoint_params(model).total, "params_active": counts.active, "max_position_embeddings": model.max_position_embeddings or None,
                     **dict.fromkeys(GPU_FIGURES)})
    empty = {"params_text": None, "params_total": None, "params_active": None, "max_position_embeddings": None}
    for name in catalog_names("hardware"):
        acc = load_accelerator(name)
        figures = {key: getattr(acc, key) or None for key in GPU_FIGURES[:-2]}  # 0 (absent) -> None
        rows.append({"kind": "gpu", "name": name, "source": acc.source, **empty, **figures,
                     "interconnect": acc.interconnect or None, "ridge_flops_per_byte": acc.ridge_flops_per_byte})
    return rows


GPU_FIGURES = ("memory_bytes", "usable_memory_bytes", "bandwidth_bytes_per_s", "bf16_flops_per_s", "fp8_flops_per_s",
               "int8_ops_per_s", "fp4_flops_per_s", "interconnect_bytes_per_s", "interconnect_latency_s",
               "interconnect", "ridge_flops_per_byte")


def energy_fields(step, gpu, gpus: int, *, tokens) -> dict:
    """watts and joules_per_token (estimates, `roofline.energy`) of one step on `gpus` GPUs over the
    `tokens` rows it produces; None for both when the datasheet gives no board power."""
    from llm_cost.roofline.energy import has_power, step_energy

    if not has_power(gpu):
        return {"watts": None, "joules_per_token": None, "joules": None}
    energy = step_energy(step, gpu, gpus)
    return {"watts": energy.watts, "joules_per_token": energy.joules / tokens, "joules": energy.joules}


def roofline_rows(model: ModelSpec, gpu: Accelerator, profile: Profile, *, rows, batch: int,
                  context: int, weights: WeightFormat = BF16, deployment=None) -> tuple[list[dict], str]:
    """T(m) for each row count `m` of `rows` on one GPU of `deployment` (default one GPU), with its collectives,
    per-GPU memory and fit (`report.deployment_rows`), and a caption with the ridge point and the
    critical row count."""
    from llm_cost.parallel import deployed_step_time, step_fit  # the `model` command needs none
    from llm_cost.report.deployment_rows import deployment_fields
    from llm_cost.roofline import critical_rows, ridge_point
    from llm_cost.specs.deployment import SINGLE_GPU

    deployment = (deployment or SINGLE_GPU).following(profile)  # the fit on the profile's memory basis
    out = []
    for m in rows:
        step = deployed_step_time(model, gpu, profile, deployment, rows=m, batch=batch, context=context, weights=weights)
        fit = step_fit(model, gpu, deployment, rows=m, batch=batch, context=context, weights=weights)
        out.append({
            "model": model.name, "gpu": gpu.label, "gpu_name": gpu.name, "preset": profile.name, "weights": weights.name,
            # the knobs in force, the profile's overrides included (compute_efficiency, bw_efficiency, ...)
            "bw_efficiency": profile.bw_efficiency, "compute_efficiency": profile.compute_efficiency,
            "read_input_embedding": profile.read_input_embedding, "count_kv": profile.count_kv,
            "rows": m, "batch": batch, "context": context,
            "step_time_s": step.step_time_s, "memory_time_s": step.memory_time_s, "compute_time_s": step.compute_time_s,
            "fixed_time_s": step.fixed_time_s, "bound": step.bound,
            "weight_bytes_read": step.weight_bytes_read, "kv_bytes": step.kv_bytes, "flops": step.flops,
            **deployment_fields(model, gpu, deployment, weights, fit, comm_time_s=float(step.comm_time_s),
                                step_s=step.step_time_s, tokens=m),
            **energy_fields(step, gpu, deployment.gpus_per_replica, tokens=m),
        })
    from llm_cost.roofline.pass_terms import gemm_precision

    ridge = ridge_point(gpu, profile, gemm_precision(model, weights))
    crit = critical_rows(model, gpu, profile, batch=batch, context=context, weights=weights)
    caption = (f"ridge {ridge:.1f} FLOP/byte; compute-bound from {crit:.1f} rows "
               f"(batch {batch}, context {context})")
    if deployment.pp > 1:
        caption += f"; memory and compute are one stage's, T(m) crosses {deployment.pp}"
    return out, caption
