"""`request`: whole requests (TTFT, TPOT, e2e, throughput, dollars) on a deployment; `selective`:
the lecture's selective-batching ledger.

`c` is the draft's cost coefficient, a draft step over a target step (--c).
"""

from __future__ import annotations

from typing import Annotated, List, Optional

import typer

from llm_cost.commands.engine_option import with_engine
from llm_cost.commands.app import command, emit, note, warn_unfit
from llm_cost.commands.options import (AS_GIVEN, Batches, Breakdown, BwEff, DEFAULT, DEFAULT_ISL, DEFAULT_OSL,
                                       deployment_options, DeploymentArgs, DraftC, DraftModel, ENERGY_COLUMNS, ENERGY_PRICE_COLUMN,
                                       EngineOpt, FixedMs, Format, GpusOpt, Isls, MaybeModel, Mfu, ModelsOpt, Osls,
                                       PrefillChunk, Preset, SpecAlpha, SpecGammaSet, Tau, UsdPerGpuHour, UsdPerKwh,
                                       Weights)
from llm_cost.report.deployment_rows import deployed_columns
from llm_cost.report.render import Column, fixed

REQUEST_COLUMNS = [
    Column("batch", "batch"),
    Column("isl", "ISL"),
    Column("osl", "OSL"),
    Column("ttft_s", "TTFT (ms)", fixed(1, 1e-3)),
    Column("tpot_s", "TPOT (ms)", fixed(2, 1e-3)),
    Column("e2e_s", "e2e (s)", fixed(2)),
    Column("output_tokens_per_s_per_user", "tok/s/user", fixed(1)),
    Column("output_tokens_per_s_per_gpu", "tok/s/GPU", fixed(0)),
]
IMAGE_COLUMNS = [
    Column("image_tokens", "image tok"),
    Column("encoder_s", "encoder (ms)", fixed(1, 1e-3)),
]
PRICE_COLUMNS = [
    Column("usd_per_million_input_tokens", "$/M in", fixed(3)),
    Column("usd_per_million_output_tokens", "$/M out", fixed(2)),
]


@command("request", epilog="Example: llm-cost request --model llama-3-70b --tp 4 --batch 1 --batch 32 --isl 4096 "
                           "--osl 256 --usd-per-gpu-hour 2.5")
@deployment_options
def request_cmd(
    model: ModelsOpt = [DEFAULT.model],  # noqa: B006
    gpu: GpusOpt = [DEFAULT.gpu],  # noqa: B006
    batch: Batches = [1],  # noqa: B006
    isl: Isls = [DEFAULT_ISL],  # noqa: B006
    osl: Osls = [DEFAULT_OSL],  # noqa: B006
    prefill_chunk: PrefillChunk = None,
    usd_per_gpu_hour: UsdPerGpuHour = None,
    spec_alpha: SpecAlpha = None,
    spec_gamma: SpecGammaSet = 4,
    tau: Tau = None,
    c: DraftC = None,
    draft: DraftModel = None,
    images: Annotated[int, typer.Option("--images", help="Images in each prompt (a multimodal model): their tokens join the prefill, the vision tower's FLOPs the TTFT.")] = 0,
    image_size: Annotated[Optional[int], typer.Option("--image-size", help="Side of each image in pixels (default: the tower's own image size).")] = None,
    preset: Preset = DEFAULT.preset,
    mfu: Mfu = None,
    bw_eff: BwEff = None,
    fixed_ms: FixedMs = None,
    weights: Weights = "bf16",
    engine: EngineOpt = None,
    usd_per_kwh: UsdPerKwh = None,
    deploy: DeploymentArgs = AS_GIVEN,
    breakdown: Breakdown = False,
    fmt: Format = "table",
) -> None:
    """Whole requests: the prefill (TTFT), OSL - 1 decode steps at a growing context (TPOT), e2e,
    tokens per second per user and per GPU, and with a price dollars per million tokens.

    Default preset: measured (calibrated on published measurements, as `plan` and `validate` use it,
    so a plan row's request_args reproduce it); --preset lecture the lecture's setting, --preset
    article the bounds.
    """
    from llm_cost.catalog import load_accelerator, load_model
    from llm_cost.commands import parse
    from llm_cost.report.request_rows import request_rows
    from llm_cost.requests.request import speculation_from

    # --model and --gpu repeat: a row each (models outer)
    specs, accs = [load_model(name) for name in dict.fromkeys(model)], [load_accelerator(gpu_name) for gpu_name in dict.fromkeys(gpu)]
    prof = parse.profile(preset, mfu=mfu, bw_eff=bw_eff, fixed_ms=fixed_ms)
    prof = with_engine(prof, engine, fixed_ms, mfu)
    deployment = parse.deployment(deploy, prof)
    speculation = speculation_from(spec_alpha=spec_alpha, tau=tau, spec_gamma=spec_gamma, c=c, draft=draft)
    _note_ignored_image_size(specs, images, image_size)
    if breakdown:
        _breakdown(specs, accs, prof, batch, isl, osl, parse.weights(weights), deployment, prefill_chunk,
                   speculation, fmt, profile_words=parse.profile_title(preset, prof))
        return
    rows = [row for spec in specs for acc in accs
            for row in request_rows(spec, acc, prof, batches=batch, isls=isl, osls=osl, deployment=deployment,
                                    weights=parse.weights(weights), prefill_chunk=prefill_chunk,
                                    speculation=speculation, usd_per_gpu_hour=usd_per_gpu_hour, images=images,
                                    image_size=image_size)]
    for row in rows:
        row["spec_tau"] = tau  # the mean accepted length alpha was solved from (None without --tau)
    columns = _columns(rows, deployment, images=images, usd_per_gpu_hour=usd_per_gpu_hour, usd_per_kwh=usd_per_kwh)
    spec_text = ""
    if speculation:
        solved = f" (from tau {tau:g})" if tau is not None else ""
        draft_text = f", draft {draft}" if draft is not None else f", c {speculation.c:g}"
        spec_text = f"; decode speculative: alpha {speculation.alpha:.4f}{solved}, gamma {speculation.gamma}{draft_text}"
    lost = [row for row in rows if row["requests_lost_to_draft"] is not None]
    if lost:
        row = lost[0]
        spec_text += (f"; the draft's weights ({row['draft_weight_bytes_per_gpu'] / 1e9:.2f} GB per GPU) and K/V "
                      f"cost {row['requests_lost_to_draft']} of {row['max_batch_without_draft']} requests of ISL + OSL "
                      f"{row['isl'] + row['osl']:,} tokens")
    on = (specs[0].name if len(specs) == 1 else "the models") + (f" on {accs[0].name}" if len(accs) == 1 else "")
    emit(rows, columns, fmt, title=f"Requests: {on}{deployment.label}, "
                                   f"{weights.lower()}, KV {deployment.kv_dtype}, {parse.profile_title(preset, prof)}",
         caption="TTFT: the prefill of the batch; TPOT: mean decode step after the first token; "
                 f"e2e = TTFT + (OSL - 1) TPOT{spec_text}")
    warn_unfit(rows, deploy.strict)


def _note_ignored_image_size(models, images: int, image_size) -> None:
    """A note on stderr when --image-size changes nothing: no --images, or no model with a tower."""
    if image_size is None or images:
        return
    from llm_cost.errors import check_number

    check_number("image_size", image_size, low=1, high=1e5, integer=True)  # the library's range
    towerless = [model.name for model in models if model.vision is None]
    why = (f"{', '.join(towerless)} {'has' if len(towerless) == 1 else 'have'} no vision tower"
           if len(towerless) == len(models) else "no --images given; add --images N to count N images per prompt")
    note(f"--image-size {image_size} changes nothing here: {why}")


def _columns(rows, deployment, *, images, usd_per_gpu_hour, usd_per_kwh) -> list:
    """The request table's columns: a gpu column when the rows span GPUs, image, energy and price
    columns as asked; with `usd_per_kwh` the rows get their energy price (`roofline.energy`)."""
    from llm_cost.roofline.energy import add_energy_usd

    if usd_per_kwh is not None:
        add_energy_usd(rows, usd_per_kwh)
    columns = deployed_columns(REQUEST_COLUMNS[:3] + (IMAGE_COLUMNS if images else []) + REQUEST_COLUMNS[3:]
                               + ENERGY_COLUMNS + (PRICE_COLUMNS if usd_per_gpu_hour is not None else [])
                               + ([ENERGY_PRICE_COLUMN] if usd_per_kwh is not None else []), rows, deployment,
                               per_gpu=False)
    return (([Column("model", "model", str)] if len({row["model"] for row in rows}) > 1 else [])
            + ([Column("gpu", "gpu")] if len({row["gpu"] for row in rows}) > 1 else []) + columns)


def _breakdown(specs, accs, prof, batches, isls, osls, weight_format, deployment, prefill_chunk, speculation,
               fmt, profile_words: str = "") -> None:
    """`request --breakdown` (`profile_words`: the title's, `parse.profile_title`): the operator rows of each (batch, isl, osl)'s prefill and decode steps, a table
    per model and GPU (JSON and CSV: one document, each row naming its model and GPU)."""
    from itertools import product

    from llm_cost.commands.parse import choice
    from llm_cost.errors import InvalidValueError
    from llm_cost.report.breakdown_rows import BREAKDOWN_COLUMNS, request_breakdown_rows
    from llm_cost.report.render import FORMATS

    if speculation is not None:
        raise InvalidValueError("--breakdown shows plain passes: drop --spec-alpha / --tau (speculative rounds "
                                "are not broken down)")
    tables = choice("fmt", fmt, FORMATS) in ("table", "markdown")
    shapes = list(product(batches, isls, osls))
    # one (batch, ISL, OSL): the title says it, and the key is the pass and operator alone (80 columns)
    columns = ([Column("batch", "batch"), Column("isl", "ISL"), Column("osl", "OSL")] if len(shapes) > 1 or not tables
               else []) + BREAKDOWN_COLUMNS
    shape = f", batch {shapes[0][0]}, ISL {shapes[0][1]}, OSL {shapes[0][2]}" if len(shapes) == 1 else ""
    every = []
    for index, (spec, acc) in enumerate((model, gpu) for model in specs for gpu in accs):
        rows, caption = [], ""
        for batch, isl, osl in shapes:
            part, caption = request_breakdown_rows(spec, acc, prof, batch=batch, isl=isl, osl=osl, weights=weight_format,
                                                   deployment=deployment, prefill_chunk=prefill_chunk)
            rows += [{"model": spec.name, "gpu": acc.label, "batch": batch, "isl": isl, "osl": osl, **row} for row in part]
        if not tables:
            every += rows
            continue
        if index:
            print()
        emit(rows, columns, fmt, title=f"Request passes: {spec.name} on {acc.name}{deployment.label}, "
                                       f"{weight_format.name}, {profile_words or 'preset ' + prof.name}{shape}", caption=caption)
    if not tables:
        emit(every, columns, fmt)


@command("selective", epilog="Example: llm-cost selective --request 3:1 --request 1:1 --request 0:2 --request 0:3 "
                             "--model llama-3-8b")
def selective_cmd(
    request: Annotated[Optional[List[str]], typer.Option("--request", help="One request of the iteration as cached:new tokens (repeatable; default: the lecture's figure 5, 3:1 1:1 0:2 0:3).")] = None,
    model: MaybeModel = None,
    weights: Weights = "bf16",
    fmt: Format = "table",
) -> None:
    """Selective batching (Orca; the lecture §4): token positions and attention scores padded to
    [B, L] vs flattened, and the bytes one batched pass reads vs one pass per request."""
    from llm_cost.commands import parse
    from llm_cost.serving.selective import FIGURE5, selective_ledger

    pairs = [parse.cached_new(text) for text in request] if request else list(FIGURE5)
    ledger = selective_ledger(pairs, model=model, weights=parse.weights(weights) if model else None)
    rows = [
        {"quantity": "token positions", "padded": ledger.positions_padded, "selective": ledger.positions_useful},
        {"quantity": "attention scores (q x k per request)", "padded": ledger.scores_padded, "selective": ledger.scores_useful},
        {"quantity": "attention scores a causal mask keeps", "padded": ledger.scores_padded, "selective": ledger.scores_causal},
    ]
    columns = [Column("quantity", ""), Column("padded", "padded [B, L]", fixed(0)),
               Column("selective", "selective", fixed(0))]
    if model is not None:
        rows += [{"quantity": "weight bytes read (GB)", "padded": ledger.weight_bytes_per_request,
                  "selective": ledger.weight_bytes_selective},
                 {"quantity": "KV bytes read and written (GB)", "padded": ledger.kv_bytes, "selective": ledger.kv_bytes}]
        if ledger.state_bytes:  # a hybrid: each request's recurrent state, read and written back once
            rows.append({"quantity": "recurrent state read and written (GB)", "padded": ledger.state_bytes,
                         "selective": ledger.state_bytes})
        columns = [Column("quantity", ""), Column("padded", "padded / per request", _count_or_gb),
                   Column("selective", "selective", _count_or_gb)]
    emit(rows, columns, fmt, title="Selective batching: " + " ".join(f"{cached}:{new}" for cached, new in ledger.requests),
         caption="weights: one batched pass reads them once, one pass per request once each; KV bytes (and a "
                 "hybrid's recurrent state) are the same either way (attention has no weights)"
                 if model else "cached:new tokens per request")


def _count_or_gb(value) -> str:
    """Counts as integers; byte figures (large floats) in GB."""
    return f"{value:,}" if isinstance(value, int) else f"{value / 1e9:,.4f}"
