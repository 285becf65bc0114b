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

Output: one flat row per model (`table_rows`), SI values, the unit in the key; `table_view`
turns the rows around (one column per model) for the human table and Markdown.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

from llm_cost.specs.profiles import ARTICLE_DRAFT
from llm_cost.counts import flops_per_token, kv_bytes, kv_bytes_per_token, param_counts, weight_bytes
from llm_cost.errors import InvalidValueError, check_all, check_number
from llm_cost.serving.capacity import DEFAULT_RESERVE, kv_capacity, sequences_that_fit
from llm_cost.speculative.mtp import MTP_ALPHA_REPORTED, MTP_GAMMA, MTP_TPS_REPORTED, mtp_params, mtp_speedup
from llm_cost.roofline import MAX_BATCH, step_time
from llm_cost.specs import BF16, INT4_G128, PRESETS, Accelerator, ModelSpec
from llm_cost.specs.deployment import SINGLE_GPU, Deployment

# The series' table (the article, §3.2): its models, accelerator, contexts and speculative draft.
DEFAULT_MODELS = ("llama-3-8b", "llama-3-70b", "deepseek-v3")
DEFAULT_GPU = "h100-sxm"
DEFAULT_CONTEXTS = (4096, 32768)
DEFAULT_ALPHA, DEFAULT_GAMMA, DEFAULT_C = ARTICLE_DRAFT.alpha, ARTICLE_DRAFT.gamma, ARTICLE_DRAFT.c
THEORETICAL = PRESETS["article"]


# ---- one row per model ---------------------------------------------------------------------

def _check_contexts(contexts) -> tuple[int, ...]:
    return tuple(int(n) for n in check_all("contexts", contexts, low=1, integer=True))


def cost_row(model: ModelSpec, gpu: Accelerator, *, alpha: float = DEFAULT_ALPHA, gamma: int = DEFAULT_GAMMA,
             c: float = DEFAULT_C,
             batch: int = 1, contexts: Sequence[int] = DEFAULT_CONTEXTS, reserve: float = DEFAULT_RESERVE,
             mtp_alphas: Sequence[float] = MTP_ALPHA_REPORTED, deployment: Deployment | None = None,
             isl: int | None = None, usd_per_gpu_hour: float | None = None) -> dict:
    """One model's column of the cost table as a flat row: SI values, the unit in each key.

    Keys: params_total, params_active, weight_bytes_bf16/int4, bits_int4, kv_bytes_per_token,
    kv_bytes_per_sequence_at_{n}, flops_per_token, decode_step_s_bf16/w4a16 (batch B),
    spec_* (the chain at batch B), mtp_* (None without an MTP module), fits_bf16/int4,
    max_batch_bf16/int4_at_{n} (0 when the weights do not fit), reserve_fraction, usable_bytes;
    the deployment (tp, pp, ep, gpus, kv_dtype: times, K/V and fits are one GPU's, the largest batch
    one replica's); with `isl`, ttft_s_bf16/w4a16 (the prefill of one prompt of isl tokens); with
    a price, usd_per_million_output_tokens_bf16/w4a16 (the decode step's GPU-seconds over its B
    tokens, `requests.request.gpu_seconds`).
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
    contexts = _check_contexts(contexts)
    check_all("mtp_alphas", mtp_alphas, low=0, high=1)
    deployment = dataclasses.replace(deployment or SINGLE_GPU, reserve=reserve)
    prof = THEORETICAL
    p = param_counts(model)
    bf16, int4 = weight_bytes(model, BF16), weight_bytes(model, INT4_G128)
    kv_el = deployment.kv_bytes_per_element
    kv = kv_bytes_per_token(model, kv_el)
    spec = roofline_speedup(model, gpu, prof, alpha=alpha, gamma=gamma, batch=batch, c=c, deployment=deployment)
    row = {
        "model": model.name, "gpu": gpu.name, "preset": prof.name,
        "tp": deployment.tp, "pp": deployment.pp, "ep": deployment.ep, "gpus": deployment.total_gpus,
        "kv_dtype": deployment.kv_dtype,
        "params_total": p.total, "params_active": p.active,
        "weight_bytes_bf16": bf16.total, "weight_bytes_int4": int4.total, "bits_int4": int4.effective_bits,
        "kv_bytes_per_token": kv,
    }
    # one sequence's K/V: context x kv, or less where sliding / chunked layers keep only their window
    row.update({f"kv_bytes_per_sequence_at_{n}": kv_bytes(model, n, kv_el) for n in contexts})
    steps = {name: deployed_step_time(model, gpu, prof, deployment, rows=batch, batch=batch, weights=w).total_s
             for name, w in (("bf16", BF16), ("w4a16", INT4_G128))}
    row.update({
        "flops_per_token": flops_per_token(model),
        "batch": batch,
        "decode_step_s_bf16": steps["bf16"],
        "decode_step_s_w4a16": steps["w4a16"],
        "spec_alpha": alpha, "spec_gamma": int(gamma), "spec_c": c,
        "spec_expected_tokens": float(spec.expected_tokens),
        "spec_verify_over_base": float(spec.verify_over_base),
        "spec_speedup": float(spec.speedup),
    })
    row.update(_mtp_keys(model, gpu, prof, model.mtp_layers, mtp_alphas, batch, deployment))
    row.update(_request_keys(model, gpu, prof, deployment, batch, steps, isl, usd_per_gpu_hour))
    row.update({"reserve_fraction": reserve, "memory_bytes": gpu.memory_bytes,
                "usable_bytes": gpu.memory_bytes * (1 - reserve)})
    for name, weights in (("bf16", BF16), ("int4", INT4_G128)):
        row[f"fits_{name}"] = kv_capacity(model, gpu, weights=weights, deployment=deployment).fits
        row.update({f"max_batch_{name}_at_{n}": sequences_that_fit(model, gpu, n, weights=weights, deployment=deployment)
                    for n in contexts})
    return row


def _request_keys(model, gpu, prof, deployment, batch, steps, isl, price) -> dict:
    """TTFT of one prompt of `isl` tokens and dollars per million output tokens of the decode steps."""
    from llm_cost.requests.request import gpu_seconds, request_cost

    keys = dict.fromkeys(("isl", "ttft_s_bf16", "ttft_s_w4a16", "usd_per_gpu_hour",
                          "usd_per_million_output_tokens_bf16", "usd_per_million_output_tokens_w4a16"))
    if isl is not None:
        keys["isl"] = int(isl)
        for name, w in (("bf16", BF16), ("w4a16", INT4_G128)):
            keys[f"ttft_s_{name}"] = request_cost(model, gpu, prof, isl=isl, osl=1, deployment=deployment,
                                                  weights=w).ttft_s
    if price is not None:
        keys["usd_per_gpu_hour"] = price
        for name in ("bf16", "w4a16"):
            keys[f"usd_per_million_output_tokens_{name}"] = (gpu_seconds(steps[name], deployment) * price / 3600
                                                             / batch * 1e6)
    return keys


MTP_KEYS = ("mtp_layers", "mtp_gamma", "mtp_alpha_low", "mtp_alpha_high", "mtp_expected_tokens_low",
            "mtp_expected_tokens_high", "mtp_params_own", "mtp_params_stored", "mtp_c",
            "mtp_verify_over_base", "mtp_speedup_verify_free_low", "mtp_speedup_verify_free_high",
            "mtp_speedup_low", "mtp_speedup_high")


def _mtp_keys(model, gpu, prof, layers, alphas, batch, deployment=None) -> dict:
    if not layers:
        return dict.fromkeys(MTP_KEYS)
    alphas = sorted(set(float(a) for a in alphas))
    lo_hi = [alphas[0], alphas[-1]]
    s = mtp_speedup(model, gpu, prof, alphas=lo_hi, batch=batch, deployment=deployment)
    n = mtp_params(model)
    return {
        "mtp_layers": int(layers), "mtp_gamma": MTP_GAMMA, "mtp_alpha_low": lo_hi[0], "mtp_alpha_high": lo_hi[1],
        "mtp_expected_tokens_low": s.expected_tokens[0], "mtp_expected_tokens_high": s.expected_tokens[1],
        "mtp_params_own": n.own, "mtp_params_stored": n.stored, "mtp_c": s.c,
        "mtp_verify_over_base": s.verify_over_base,
        "mtp_speedup_verify_free_low": s.speedup_verify_free[0],
        "mtp_speedup_verify_free_high": s.speedup_verify_free[1],
        "mtp_speedup_low": s.speedup[0], "mtp_speedup_high": s.speedup[1],
    }


def table_rows(models: Sequence[ModelSpec], gpu: Accelerator, *, alpha: float = DEFAULT_ALPHA,
               gamma: int = DEFAULT_GAMMA, c: float = DEFAULT_C, batch: int = 1,
               contexts: Sequence[int] = DEFAULT_CONTEXTS, reserve: float = DEFAULT_RESERVE,
               mtp_alphas: Sequence[float] = MTP_ALPHA_REPORTED, deployment: Deployment | None = None,
               isl: int | None = None, usd_per_gpu_hour: float | None = None) -> list[dict]:
    """`cost_row` for each model: the table's columns as flat rows (the options as in `cost_row`)."""
    if not models:
        raise InvalidValueError("models needs at least one value", params=("models",))
    return [cost_row(m, gpu, alpha=alpha, gamma=gamma, c=c, batch=batch, contexts=contexts, reserve=reserve,
                     mtp_alphas=mtp_alphas, deployment=deployment, isl=isl, usd_per_gpu_hour=usd_per_gpu_hour)
            for m in models]


# ---- the view: one column per model ----------------------------------------------------------

def _num(key: str, digits: int, scale: float = 1.0) -> Callable[[dict], str]:
    def text(row: dict) -> str:
        v = row.get(key)
        return "-" if v is None else f"{v / scale:,.{digits}f}"
    return text


def _span(low: str, high: str, digits: int) -> Callable[[dict], str]:
    def text(row: dict) -> str:
        a, b = row.get(low), row.get(high)
        if a is None:
            return "-"
        return f"{a:.{digits}f}" if f"{a:.{digits}f}" == f"{b:.{digits}f}" else f"{a:.{digits}f}–{b:.{digits}f}"
    return text


def _yes_no(key: str) -> Callable[[dict], str]:
    return lambda row: "yes" if row[key] else "no"


def _batch(weights: str, n: int) -> Callable[[dict], str]:
    return lambda row: f"{row[f'max_batch_{weights}_at_{n}']:,}" if row[f"fits_{weights}"] else "-"


def context_label(n: int) -> str:
    """4096 -> '4K', 32768 -> '32K', 1000 -> '1000' (tokens)."""
    return f"{n // 1024}K" if n % 1024 == 0 else f"{n:,}"


def _speculative_cell(row: dict) -> str:
    """The series' speculative row: the generic draft, or for a model with an MTP head (DeepSeek-V3)
    that head at its reported acceptance, verification free (the article §3.2: "DeepSeek-V3 的投机一行按
    其技术报告的 MTP 接受率转述"). The generic draft's figure stays in the JSON keys spec_*."""
    if row["mtp_layers"]:
        return _span("mtp_speedup_verify_free_low", "mtp_speedup_verify_free_high", 2)(row) + " (MTP)"
    return _num("spec_speedup", 2)(row)


def _lines(rows: Sequence[dict], contexts: Sequence[int]) -> list[tuple[str, Callable[[dict], str]]]:
    r = rows[0]
    b = r["batch"]
    lines = [
        ("parameters, total (B)", _num("params_total", 2, 1e9)),
        ("parameters, active per token (B)", _num("params_active", 2, 1e9)),
        ("weights, BF16 (GB)", _num("weight_bytes_bf16", 2, 1e9)),
        ("weights, INT4 g128 (GB)", _num("weight_bytes_int4", 2, 1e9)),
        ("INT4 g128, effective bits per weight", _num("bits_int4", 2)),
        (f"KV cache per token, {r['kv_dtype'].upper()} (bytes)", _num("kv_bytes_per_token", 0)),
    ]
    lines += [(f"KV cache at {context_label(n)} context (GB per sequence)",
               _num(f"kv_bytes_per_sequence_at_{n}", 2, 1e9)) for n in contexts]
    lines += [
        ("FLOPs per token, no context (GFLOP)", _num("flops_per_token", 1, 1e9)),
        (f"decode step lower bound, batch {b}, BF16 (ms)", _num("decode_step_s_bf16", 2, 1e-3)),
        (f"decode step lower bound, batch {b}, W4A16 (ms)", _num("decode_step_s_w4a16", 2, 1e-3)),
    ]
    if r["isl"] is not None:
        lines += [(f"time to first token, {r['isl']:,}-token prompt, BF16 (ms)", _num("ttft_s_bf16", 1, 1e-3)),
                  (f"time to first token, {r['isl']:,}-token prompt, W4A16 (ms)", _num("ttft_s_w4a16", 1, 1e-3))]
    if r["usd_per_gpu_hour"] is not None:
        price = f"${r['usd_per_gpu_hour']:g}/GPU-hour"
        lines += [(f"decode cost at batch {b}, BF16 ($ per million output tokens, {price})",
                   _num("usd_per_million_output_tokens_bf16", 2)),
                  (f"decode cost at batch {b}, W4A16 ($ per million output tokens, {price})",
                   _num("usd_per_million_output_tokens_w4a16", 2))]
    lines += [
        (f"speculative speedup, batch {b} (×): a draft with α {r['spec_alpha']:g}, γ {r['spec_gamma']}, "
         f"c {r['spec_c']:g}; MTP models: their MTP head", _speculative_cell),
    ]
    mtp = next((x for x in rows if x["mtp_layers"]), None)
    if mtp is not None:
        alpha = _span("mtp_alpha_low", "mtp_alpha_high", 2)(mtp)
        lines += [
            (f"MTP draft, γ 1, α {alpha}: tokens per step",
             _span("mtp_expected_tokens_low", "mtp_expected_tokens_high", 2)),
            ("MTP c: module step / model step", _num("mtp_c", 3)),
            ("MTP speedup, verification free: E / (1 + c) (×)",
             _span("mtp_speedup_verify_free_low", "mtp_speedup_verify_free_high", 2)),
            (f"MTP speedup on the roofline, batch {b} (×)", _span("mtp_speedup_low", "mtp_speedup_high", 2)),
        ]
    usable = f"{r['usable_bytes'] / 1e9:.0f} GB"
    split = r["tp"] * r["pp"] > 1
    per_gpu = f" per GPU (tp {r['tp']} x pp {r['pp']})" if split else ""
    lines += [
        (f"weights fit in {usable}{per_gpu} ({r['gpu']} less {r['reserve_fraction']:.0%}), BF16", _yes_no("fits_bf16")),
        (f"weights fit in {usable}{per_gpu}, INT4 g128", _yes_no("fits_int4")),
    ]
    replica = ", one replica" if split else ""
    for n in contexts:
        lines += [(f"largest batch at {context_label(n)} context{replica}, BF16 weights", _batch("bf16", n)),
                  (f"largest batch at {context_label(n)} context{replica}, INT4 weights", _batch("int4", n))]
    return lines


def table_view(rows: Sequence[dict], *, contexts: Sequence[int] = DEFAULT_CONTEXTS,
               ) -> tuple[list[dict], list[tuple[str, str]]]:
    """The rows turned around: one row per quantity, one column per model (cells as text).

    `contexts`: the contexts the rows were computed at (`table_rows(..., contexts=...)`).
    Returns the view rows (keys 'quantity', 'm0', 'm1', ...) and the (key, header) of each column.
    """
    if not rows:
        raise InvalidValueError("the cost table needs at least one model")
    contexts = _check_contexts(contexts)
    view = []
    for label, text in _lines(rows, contexts):
        cells = {"quantity": label}
        cells.update({f"m{i}": text(row) for i, row in enumerate(rows)})
        view.append(cells)
    return view, [("quantity", "")] + [(f"m{i}", row["model"]) for i, row in enumerate(rows)]


def table_notes(rows: Sequence[dict]) -> list[str]:
    """What the table assumes, and the notes a reader of the MTP and MoE rows needs (one per line)."""
    r = rows[0]
    notes = [
        f"Theoretical: {r['gpu']} at peak bandwidth and FLOP/s (article preset), every weight byte read "
        f"once per step (MoE: the routed experts the step's rows touch), no KV reads, no fixed cost. GB = 1e9 bytes. INT4 g128: 4-bit weights with a "
        f"16-bit scale and zero per group of 128, embeddings included; W4A16 decode reads them.",
        f"Largest batch: sequences of that context whose {r['kv_dtype'].upper()} KV cache (sliding and chunked layers "
        f"holding at most their window) fits in "
        f"{r['memory_bytes'] / 1e9:g} GB x (1 - {r['reserve_fraction']:g}) less the weights "
        f"(a dash where the weights do not fit).",
    ]
    if r["tp"] * r["pp"] > 1:
        notes.append(f"Deployment: {r['gpus']} GPUs, tp {r['tp']} x pp {r['pp']}"
                     + (f", ep {r['ep']}" if r["ep"] > 1 else "") + ": each decode step is one GPU's share of the "
                     "weights across the pipeline's stages plus two ring all-reduces per layer (and the MoE layers' "
                     "all-to-alls) over the datasheet's interconnect; the largest batch is one replica's.")
    for x in rows:
        if x["spec_verify_over_base"] > 1.0 + 1e-9 and x["params_active"] < x["params_total"]:  # a MoE
            verdict = "does not pay" if x["spec_speedup"] <= 1.0 else "pays less"
            notes.append(
                f"{x['model']}: verifying {x['spec_gamma'] + 1} rows per sequence at batch {x['batch']} reads "
                f"{x['spec_verify_over_base']:.2f}x the bytes of a decode step (each row routes to its "
                f"own experts), so the generic draft {verdict}.")
    low, high = (f"{a:.0%}" for a in MTP_ALPHA_REPORTED)
    for x in rows:
        if x["mtp_layers"]:
            given = (x["mtp_alpha_low"], x["mtp_alpha_high"])
            alpha = _span("mtp_alpha_low", "mtp_alpha_high", 2)(x)
            source = ("as the report gives it" if given == MTP_ALPHA_REPORTED
                      else f"as given; the report gives {low}-{high}")
            notes.append(
                f"{x['model']} MTP, its own draft (γ 1): acceptance α {alpha} ({source}; DeepSeek-V3 "
                f"Technical Report §5.4.3, which measures {MTP_TPS_REPORTED:g}x TPS). c = one MTP module "
                f"step over one model step on this roofline: one MoE block, the 2d x d projection and the "
                f"shared LM head read again, the embedding a lookup ({x['mtp_params_own'] / 1e9:.1f}B "
                f"parameters of its own, not in the weights above). E / (1 + c) = "
                f"{_span('mtp_speedup_verify_free_low', 'mtp_speedup_verify_free_high', 2)(x)}x against the "
                f"report's {MTP_TPS_REPORTED:g}x; the roofline row is batch {x['batch']} on "
                f"{'one GPU of the deployment' if x['tp'] * x['pp'] > 1 else 'one accelerator'}, "
                f"where verifying 2 rows reads {x['mtp_verify_over_base']:.2f}x the bytes of a step "
                f"(uniform top-k routing).")
    return notes
