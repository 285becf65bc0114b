"""The series' cost table (the article, §3.2 "文本模型的成本表"): one column per model.

"前面各篇的数字合到一张表（H100 SXM，理论值；DeepSeek-V3 列用第八、十篇的 MLA 与 MoE 版本函数）":
parameters, weight bytes (BF16, INT4 g128), KV per token and per sequence, FLOPs per token, the
decode bound in BF16 and W4A16, the speculative speedup, and whether the weights fit on one
accelerator. Every figure comes from the library (`counts`, `roofline`, `speculative.batched`,
`serving.capacity`); this module only gathers them. Theoretical means the `article` preset: peak bandwidth
and FLOP/s, every weight byte read once per pass (MoE: the experts the rows touch), no KV
reads, no fixed cost.

The speculative row is the article's chain (alpha 0.8, gamma 4, c 0.1) on the roofline at batch B
(`roofline_speedup`): 2.40 for a dense model at batch 1. DeepSeek-V3's own draft is its MTP module
(Technical Report §2.2, §5.4.3; the article §2.5): gamma 1, second-token acceptance 85-90%, so
E = 1 + alpha = 1.85-1.90 tokens per step, reported as 1.8x TPS. We give it three ways:

- E, the reported range;
- E / (1 + c), verification free (Leviathan Theorem 3.8), with c = one MTP module step over one
  model step on the same roofline (`mtp_step_time`);
- the roofline speedup at batch B, where verifying 2 rows reads the experts both rows route to.

The MTP module's size and step time are in `mtp`.

Output: one flat row per model (`table_rows`), SI values, the unit in the key;
`cost_table_view.table_view` turns the rows around (one column per model) for the human table and
Markdown, and `table_notes` says what the table assumes.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from llm_cost.specs.profiles import ARTICLE_DRAFT
from llm_cost.counts import flops_per_token, kv_bytes, kv_bytes_per_token, param_counts, weight_bytes
from llm_cost.errors import InvalidValueError, check_all, check_number
from llm_cost.parallel.fit import largest_batch
from llm_cost.serving.capacity import DEFAULT_RESERVE, kv_capacity
from llm_cost.speculative.mtp import MTP_ALPHA_REPORTED, MTP_GAMMA, mtp_params, mtp_speedup
from llm_cost.roofline import MAX_BATCH
from llm_cost.specs import BF16, INT4_G128, PRESETS, Accelerator, ModelSpec
from llm_cost.specs.deployment import SINGLE_GPU, Deployment

# The series' table (the article, §3.2): its models, accelerator, contexts and speculative draft.
DEFAULT_MODELS = ("llama-3-8b", "llama-3-70b", "deepseek-v3")
DEFAULT_GPU = "h100-sxm"
DEFAULT_CONTEXTS = (4096, 32768)
DEFAULT_ALPHA, DEFAULT_GAMMA, DEFAULT_C = ARTICLE_DRAFT.alpha, ARTICLE_DRAFT.gamma, ARTICLE_DRAFT.c
THEORETICAL = PRESETS["article"]


# ---- one row per model ---------------------------------------------------------------------

def check_contexts(contexts) -> tuple[int, ...]:
    return tuple(int(context) for context in check_all("contexts", contexts, low=1, integer=True))


def cost_row(model: ModelSpec, gpu: Accelerator, *, alpha: float = DEFAULT_ALPHA, gamma: int = DEFAULT_GAMMA,
             c: float = DEFAULT_C,
             batch: int = 1, contexts: Sequence[int] = DEFAULT_CONTEXTS, reserve: float = DEFAULT_RESERVE,
             mtp_alphas: Sequence[float] = MTP_ALPHA_REPORTED, deployment: Deployment | None = None,
             isl: int | None = None, usd_per_gpu_hour: float | None = None, usd_per_kwh: float | None = None) -> dict:
    """One model's column of the cost table as a flat row: SI values, the unit in each key.

    The speculative chain is `alpha`, `gamma` and `c`, the draft's step over the model's step.

    Keys: params_text (the text model, what runs per token: the article's DeepSeek-V3 671 B; the
    MTP modules and a vision tower are `model`'s params_total), params_active, weight_bytes_bf16/int4, bits_int4, kv_bytes_per_token,
    kv_bytes_per_sequence_at_{n}, flops_per_token, decode_step_s_bf16/w4a16 (batch B),
    spec_* (the chain at batch B), mtp_* (None without an MTP module), fits_bf16/int4,
    max_batch_bf16/int4_at_{n} (the most sequences of n tokens whose decode step fits: weights, K/V and
    activations, `parallel.fit.largest_batch`; 0 when the weights do not fit), reserve_fraction,
    usable_bytes; fits and fit_note (`_fit_keys`: what cannot run, said), context_limit,
    memory_needed_bytes and memory_available_bytes (the BF16 decode step's);
    the deployment (tp, pp, ep, gpus, kv_dtype: times, K/V and fits are one GPU's, the largest batch
    one replica's; its memory basis, else the article's marketed 80 GB: `Deployment.following`); with
    `isl`, ttft_s_bf16/w4a16 (the prefill of one prompt of isl tokens); with
    a price, usd_per_million_output_tokens_bf16/w4a16 (the decode step's GPU-seconds over its B
    tokens, `requests.request.gpu_seconds`); a format whose weights do not fit (fits_bf16/int4
    false) is not priced: its $ keys, and with `usd_per_kwh` its energy's, are None.
    """
    from llm_cost.parallel import deployed_step_time
    from llm_cost.speculative import roofline_speedup

    check_number("alpha", alpha, low=0, high=1)
    check_number("gamma", gamma, low=0, integer=True)
    check_number("c", c, low=0)
    check_number("batch", batch, low=1, high=MAX_BATCH, integer=True)
    check_number("reserve", reserve, low=0, high=1, high_open=True)
    if isl is not None:
        check_number("isl", isl, low=1, integer=True)
    if usd_per_gpu_hour is not None:
        check_number("usd_per_gpu_hour", usd_per_gpu_hour, low=0)
    contexts = check_contexts(contexts)
    check_all("mtp_alphas", mtp_alphas, low=0, high=1)
    prof = THEORETICAL
    deployment = dataclasses.replace(deployment or SINGLE_GPU, reserve=reserve).following(prof)
    counts = param_counts(model)
    bf16, int4 = weight_bytes(model, BF16), weight_bytes(model, INT4_G128)
    kv_el = deployment.kv_bytes_per_element
    kv = kv_bytes_per_token(model, kv_el)
    spec = roofline_speedup(model, gpu, prof, alpha=alpha, gamma=gamma, batch=batch, c=c, deployment=deployment)
    row = {
        "model": model.name, "gpu": gpu.label, "gpu_name": gpu.name, "preset": prof.name,
        "tp": deployment.tp, "pp": deployment.pp, "ep": deployment.ep, "gpus": deployment.total_gpus,
        "kv_dtype": deployment.kv_dtype,
        "params_text": counts.total, "params_active": counts.active,
        "weight_bytes_bf16": bf16.total, "weight_bytes_int4": int4.total, "bits_int4": int4.effective_bits,
        "kv_bytes_per_token": kv,
    }
    # one sequence's K/V: context x kv, or less where sliding / chunked layers keep only their window
    row.update({f"kv_bytes_per_sequence_at_{tokens}": kv_bytes(model, tokens, kv_el) for tokens in contexts})
    timed = {name: deployed_step_time(model, gpu, prof, deployment, rows=batch, batch=batch, weights=weight_format)
             for name, weight_format in (("bf16", BF16), ("w4a16", INT4_G128))}
    steps = {name: step.step_time_s for name, step in timed.items()}
    row.update({
        "flops_per_token": flops_per_token(model),
        "batch": batch,
        "decode_step_s_bf16": steps["bf16"],
        "decode_step_s_w4a16": steps["w4a16"],
        **_energy_keys(timed, gpu, deployment, batch, usd_per_kwh),
        "spec_alpha": alpha, "spec_gamma": int(gamma), "spec_c": c,
        "spec_expected_tokens": float(spec.expected_tokens),
        "spec_verify_over_base": float(spec.verify_over_base),
        "spec_speedup": float(spec.speedup),
    })
    row.update(_mtp_keys(model, gpu, prof, model.mtp_layers, mtp_alphas, batch, deployment))
    row.update(_request_keys(model, gpu, prof, deployment, batch, steps, isl, usd_per_gpu_hour))
    memory, basis = deployment.memory_bytes(gpu), deployment.basis
    row.update({"reserve_fraction": reserve, "memory_bytes": memory, "memory_basis": basis,
                "usable_bytes": memory * (1 - reserve)})
    for name, weights in (("bf16", BF16), ("int4", INT4_G128)):
        row[f"fits_{name}"] = kv_capacity(model, gpu, weights=weights, deployment=deployment).fits
        row.update({f"max_batch_{name}_at_{tokens}": largest_batch(model, gpu, deployment, weights=weights, tokens=tokens)
                    for tokens in contexts})
    row.update(_fit_keys(model, gpu, deployment, batch, contexts, row))
    for name, fits in (("bf16", "fits_bf16"), ("w4a16", "fits_int4")):  # nothing runs: nothing to price
        if not row[fits]:
            row[f"usd_per_million_output_tokens_{name}"] = row[f"usd_per_million_tokens_energy_{name}"] = None
    return row


def _energy_keys(timed, gpu, deployment, batch, usd_per_kwh) -> dict:
    """Decode energy per output token at the row's batch, BF16 and W4A16 (J, an estimate:
    `roofline.energy.step_energy` on the deployment's GPUs over the batch's tokens), None where the
    datasheet gives no board power; with `usd_per_kwh` its $ per million tokens."""
    from llm_cost.roofline.energy import energy_usd, has_power, step_energy

    keys = {}
    for name, step in timed.items():
        joules = (step_energy(step, gpu, deployment.gpus_per_replica).joules / batch) if has_power(gpu) else None
        keys[f"decode_joules_per_token_{name}"] = joules
        keys[f"usd_per_million_tokens_energy_{name}"] = (energy_usd(joules * 1e6, usd_per_kwh)
                                                         if joules is not None and usd_per_kwh is not None else None)
    return keys


def _fit_keys(model, gpu, deployment, batch, contexts, row) -> dict:
    """Whether what the table prints can run, as every timing row says it (`fits`, `fit_note`, the
    BF16 decode step's memory): each decode step (batch B, the article's context 0) fits, B is within
    the largest batch at each of `contexts`, and each context within the model's limit
    (`max_position_embeddings`; its largest batch is then memory arithmetic only)."""
    from llm_cost.parallel import step_fit

    notes = []
    fits = {}
    for name, weights, kv_name in (("BF16", BF16, "bf16"), ("W4A16", INT4_G128, "int4")):
        fit = fits[name] = step_fit(model, gpu, deployment, rows=batch, batch=batch, weights=weights)
        if not fit.fits_memory:
            short = fit.weight_bytes > fit.available_bytes
            notes.append(f"{name} weights do not fit ({row[f'weight_bytes_{kv_name}'] / 1e9:.1f}"
                         f" GB in all)" if short else f"{name} decode at batch {batch}: {fit.reason}")
            continue
        over = [context for context in contexts if batch > row[f"max_batch_{kv_name}_at_{context}"]]
        if over:
            notes.append(f"batch {batch} exceeds the largest {name} batch at {over[0]:,} tokens "
                         f"({row[f'max_batch_{kv_name}_at_{over[0]}']})")
    limit = model.max_position_embeddings
    past = [context for context in contexts if limit and context > limit]
    if past:
        notes.append(f"context {past[0]:,} exceeds the model's limit of {limit:,} tokens")
    bf16 = fits["BF16"]
    return {"context_limit": limit, "fits": not notes, "fit_note": f"{model.name} on {gpu.name}{deployment.label}: " + "; ".join(notes) if notes else "",
            "memory_needed_bytes": bf16.needed_bytes, "memory_available_bytes": bf16.available_bytes}


def _request_keys(model, gpu, prof, deployment, batch, steps, isl, price) -> dict:
    """TTFT of one prompt of `isl` tokens and dollars per million output tokens of the decode steps."""
    from llm_cost.requests.request import gpu_seconds, request_cost, usd_per_million_tokens

    keys = dict.fromkeys(("isl", "ttft_s_bf16", "ttft_s_w4a16", "usd_per_gpu_hour",
                          "usd_per_million_output_tokens_bf16", "usd_per_million_output_tokens_w4a16"))
    if isl is not None:
        keys["isl"] = int(isl)
        for name, weight_format in (("bf16", BF16), ("w4a16", INT4_G128)):
            keys[f"ttft_s_{name}"] = request_cost(model, gpu, prof, isl=isl, osl=1, deployment=deployment,
                                                  weights=weight_format).ttft_s
    if price is not None:
        keys["usd_per_gpu_hour"] = price
        for name in ("bf16", "w4a16"):
            keys[f"usd_per_million_output_tokens_{name}"] = usd_per_million_tokens(gpu_seconds(steps[name], deployment), batch, price)
    return keys


MTP_KEYS = ("mtp_layers", "mtp_gamma", "mtp_alpha_low", "mtp_alpha_high", "mtp_expected_tokens_low",
            "mtp_expected_tokens_high", "mtp_params_own", "mtp_params_stored", "mtp_c",
            "mtp_verify_over_base", "mtp_speedup_verify_free_low", "mtp_speedup_verify_free_high",
            "mtp_speedup_low", "mtp_speedup_high")


def _mtp_keys(model, gpu, prof, layers, alphas, batch, deployment=None) -> dict:
    if not layers:
        return dict.fromkeys(MTP_KEYS)
    alphas = sorted(set(float(alpha) for alpha in alphas))
    lo_hi = [alphas[0], alphas[-1]]
    speedup = mtp_speedup(model, gpu, prof, alphas=lo_hi, batch=batch, deployment=deployment)
    params = mtp_params(model)
    return {
        "mtp_layers": int(layers), "mtp_gamma": MTP_GAMMA, "mtp_alpha_low": lo_hi[0], "mtp_alpha_high": lo_hi[1],
        "mtp_expected_tokens_low": speedup.expected_tokens[0], "mtp_expected_tokens_high": speedup.expected_tokens[1],
        "mtp_params_own": params.own, "mtp_params_stored": params.stored, "mtp_c": speedup.c,
        "mtp_verify_over_base": speedup.verify_over_base,
        "mtp_speedup_verify_free_low": speedup.speedup_verify_free[0],
        "mtp_speedup_verify_free_high": speedup.speedup_verify_free[1],
        "mtp_speedup_low": speedup.speedup[0], "mtp_speedup_high": speedup.speedup[1],
    }


def table_rows(models: Sequence[ModelSpec], gpu: Accelerator, *, alpha: float = DEFAULT_ALPHA,
               gamma: int = DEFAULT_GAMMA, c: float = DEFAULT_C, batch: int = 1,
               contexts: Sequence[int] = DEFAULT_CONTEXTS, reserve: float = DEFAULT_RESERVE,
               mtp_alphas: Sequence[float] = MTP_ALPHA_REPORTED, deployment: Deployment | None = None,
               isl: int | None = None, usd_per_gpu_hour: float | None = None,
               usd_per_kwh: float | None = None) -> list[dict]:
    """`cost_row` for each model: the table's columns as flat rows (the options as in `cost_row`;
    `c` the draft's step over the model's step)."""
    if not models:
        raise InvalidValueError("models needs at least one value", params=("models",))
    return [cost_row(model, gpu, alpha=alpha, gamma=gamma, c=c, batch=batch, contexts=contexts, reserve=reserve,
                     mtp_alphas=mtp_alphas, deployment=deployment, isl=isl, usd_per_gpu_hour=usd_per_gpu_hour,
                     usd_per_kwh=usd_per_kwh)
            for model in models]
