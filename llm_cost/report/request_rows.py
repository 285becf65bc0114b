"""Rows of `llm-cost request`: one per (batch, isl, osl), flat, SI, unit in the key."""

from __future__ import annotations

from itertools import product

from llm_cost.errors import check_all, check_number
from llm_cost.report.deployment_rows import deployment_fields
from llm_cost.requests.energy import request_energy
from llm_cost.specs import BF16, Accelerator, ModelSpec, Profile, WeightFormat
from llm_cost.specs.deployment import SINGLE_GPU, Deployment


def request_rows(model: ModelSpec, gpu: Accelerator, profile: Profile, *, batches, isls, osls,
                 deployment: Deployment = SINGLE_GPU, weights: WeightFormat = BF16, prefill_chunk=None,
                 speculation=None, usd_per_gpu_hour: float | None = None, images: int = 0,
                 image_size: int | None = None) -> list[dict]:
    """`requests.request_cost` for each combination of batch, isl and osl, as rows.

    Keys: ttft_s, tpot_s (mean after the first token), tpot_first_s, tpot_last_s, e2e_s,
    output_tokens_per_s_per_user (osl / e2e), output_tokens_per_s and _per_gpu, prefill_tokens_per_s,
    gpu_seconds_prefill / _decode per batch, and with a price usd_per_million_input_tokens (prefill
    GPU time over B x isl) and usd_per_million_output_tokens (decode GPU time over B x (osl - 1); the
    first output token is the prefill's), usd_per_request; images, image_tokens (per request, in `isl`,
    the prompt the text model prefills) and encoder_s (the vision tower's seconds, in ttft_s); plus
    the deployment's keys (fit at the peak:
    weights + K/V of isl + osl tokens + the larger workspace).
    """
    from llm_cost.requests.request import gpu_usd, request_cost

    batches = check_all("batches", batches, low=1, integer=True)
    isls = check_all("isls", isls, low=1, integer=True)
    osls = check_all("osls", osls, low=1, integer=True)
    if usd_per_gpu_hour is not None:
        check_number("usd_per_gpu_hour", usd_per_gpu_hour, low=0)
    deployment = deployment.following(profile)  # fits and draft memory on the profile's memory basis
    rows = []
    for batch, isl, osl in product(batches, isls, osls):
        cost = request_cost(model, gpu, profile, batch=batch, isl=isl, osl=osl, deployment=deployment, weights=weights,
                            prefill_chunk=prefill_chunk, speculation=speculation, images=images,
                            image_size=image_size)
        ph = cost.phases
        pre_gpu_s, dec_gpu_s = cost.gpu_seconds(ph.prefill_s), cost.gpu_seconds(ph.decode_s)
        row = {
            "model": model.name, "gpu": gpu.label, "gpu_name": gpu.name, "preset": profile.name, "weights": weights.name,
            "batch": cost.batch, "isl": cost.isl, "osl": cost.osl, "prefill_chunk": prefill_chunk,
            "prefill_passes": ph.prefill_passes, "prefill_bound": ph.prefill_bound, "decode_bound": ph.decode_bound,
            "images": cost.images, "image_tokens": cost.image_tokens, "encoder_s": cost.encoder_s,
            "spec_alpha": speculation.alpha if speculation else None,
            "spec_gamma": speculation.gamma if speculation else None,
            "spec_expected_tokens": cost.expected_tokens if speculation else None,
            "ttft_s": cost.ttft_s, "tpot_s": cost.tpot_s, "tpot_first_s": ph.tpot_first_s, "tpot_last_s": ph.tpot_last_s,
            "e2e_s": cost.e2e_s, "output_tokens_per_s_per_user": cost.osl / cost.e2e_s,
            "output_tokens_per_s": cost.output_tokens_per_s,
            "output_tokens_per_s_per_gpu": cost.output_tokens_per_s / deployment.total_gpus,
            "prefill_tokens_per_s": cost.prefill_tokens_per_s,
            "gpu_seconds_prefill": pre_gpu_s, "gpu_seconds_decode": dec_gpu_s,
            "usd_per_gpu_hour": usd_per_gpu_hour,
            "usd_per_million_input_tokens": None, "usd_per_million_output_tokens": None, "usd_per_request": None,
        }
        if usd_per_gpu_hour is not None:
            per_s = gpu_usd(1, usd_per_gpu_hour)  # one GPU-second's dollars (the price formula, bit for bit as before)
            row["usd_per_million_input_tokens"] = pre_gpu_s * per_s / (batch * isl) * 1e6
            row["usd_per_million_output_tokens"] = (dec_gpu_s * per_s / (batch * (osl - 1)) * 1e6 if osl > 1 else None)
            row["usd_per_request"] = (pre_gpu_s + dec_gpu_s) * per_s / batch
        row.update(request_energy(cost, gpu))
        row.update(_draft_keys(model, gpu, deployment, weights, speculation, isl, osl))
        row.update(deployment_fields(model, gpu, deployment, weights, cost.fit, comm_time_s=ph.prefill_comm_time_s + ph.decode_comm_time_s,
                                     step_s=cost.e2e_s, tokens=batch * osl))
        rows.append(row)
    return rows


def _draft_keys(model, gpu, deployment, weights, speculation, isl, osl) -> dict:
    """A draft model's memory beside the target (the lecture §9.3; `serving.draft_memory`, on the usable
    memory the fit checks): its weights and K/V per GPU, and the requests of isl + osl tokens the target
    can no longer hold (None without a draft model)."""
    keys = dict.fromkeys(("draft_weight_bytes_per_gpu", "draft_kv_bytes_per_request_per_gpu", "max_batch_without_draft",
                          "max_batch_with_draft", "requests_lost_to_draft"))
    if speculation is None or speculation.draft is None:
        return keys
    from llm_cost.serving.policies import requests_that_fit
    from llm_cost.serving.draft_memory import draft_memory

    memory = draft_memory(model, speculation.draft, gpu, weights=weights, deployment=deployment)
    tokens = isl + osl
    keys.update(draft_weight_bytes_per_gpu=memory.draft_weight_bytes,
                draft_kv_bytes_per_request_per_gpu=memory.draft_kv_bytes_per_token * tokens,
                max_batch_without_draft=requests_that_fit(memory.kv_tokens_without_draft, tokens),
                max_batch_with_draft=requests_that_fit(memory.kv_tokens, tokens), requests_lost_to_draft=memory.sequences_lost(tokens))
    return keys
