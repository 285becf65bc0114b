"""Commands for KV memory and scheduling: `capacity`, `waste`, `batching`.

`c` is the draft's cost coefficient, a draft step over a target step (--c).
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from llm_cost.commands.app import command, emit, warn_unfit
from llm_cost.commands.options import (Arrivals, AS_GIVEN, Concurrency, DEFAULT, deployment_options, DeploymentArgs,
                                       DisaggregateSplit, DraftC, DraftModel, EngineOpt, Format, GpuOpt, GpusOpt,
                                       KvTokens, MaxBatch, MaxGen, MaxGenTokens, MaxLen, MaybeIsls, MaybeKvBytes,
                                       MaybeOsls, ModelOpt, ModelsOpt, OutputLen, PrefillChunk, Preset, PromptLen,
                                       PromptTokens, Rates, Requests, Reserve, Scheduler, Seed, SloMs, SloStat,
                                       Quiet, SpecAlpha, SpecGamma, Trace, Weights)
from llm_cost.commands.options import DecodeMaxBatch, DecodeTp, UsdPerGpuHour, UsdPerKwh  # batching: decode pool, prices
from llm_cost.commands.options import KvOffloadBytes, PrefixCaching, prefix_options  # prefixes
from llm_cost.commands.progress import SweepProgress
from llm_cost.serving.capacity import DEFAULT_RESERVE
from llm_cost.commands.serving_common import FIT_COLUMN, kv_settings
from llm_cost.report.render import Column, fixed
from llm_cost.serving.prefixes import PromptPrefixes  # the prefix options' group (`options.prefix_options`)

# ---- memory and batching --------------------------------------------------------------------



CAPACITY_COLUMNS = [
    Column("model", "model"),
    Column("gpu", "gpu"),
    Column("weight_bytes", "weights (GB)", fixed(2, 1e9)),
    Column("usable_bytes", "usable (GB)", fixed(2, 1e9)),
    Column("shortfall_bytes", "shortfall (GB)", fixed(2, 1e9)),
    Column("kv_bytes_per_token", "KV/token (bytes)", fixed(0)),
    Column("kv_tokens", "KV tokens", fixed(0)),
    Column("requests_max_len", "reqs @ max len", fixed(0)),
    Column("requests_declared", "reqs @ prompt+max_gen", fixed(0)),
    Column("requests_none", "reqs @ no reservation", fixed(0)),
]
# shown when the deployment is more than one GPU (json and csv always carry every key)
CAPACITY_DEPLOYED_COLUMNS = [
    Column("replicas", "replicas", fixed(0)),
    Column("weight_bytes_per_gpu", "weights/GPU (GB)", fixed(2, 1e9)),
    Column("kv_bytes_per_token_per_gpu", "KV/token/GPU (bytes)", fixed(0)),
    Column("kv_tokens_total", "KV tokens (all)", fixed(0)),
    Column("requests_declared_total", "reqs @ prompt+max_gen (all)", fixed(0)),
]
CAPACITY_DRAFT_COLUMNS = [
    Column("draft_weight_bytes", "draft weights (GB)", fixed(2, 1e9)),
    Column("draft_kv_bytes_per_token", "draft KV/token (bytes)", fixed(0)),
    Column("kv_tokens_with_draft", "KV tokens with draft", fixed(0)),
    Column("sequences_lost_to_draft", "seqs lost to draft", fixed(0)),
]


def _capacity_row(spec, acc, deployment, kv_el, *, reserve, prompt, max_gen, gen, max_len, weights, draft) -> dict:
    """One (model, GPU) row of `capacity`, with the draft's fields when a draft is given."""
    from llm_cost.catalog import load_model
    from llm_cost.commands import parse
    from llm_cost.report.serving_rows import capacity_row

    row = capacity_row(spec, acc, reserve=reserve, prompt=prompt, max_gen=max_gen, gen=gen, max_len=max_len,
                       weights=parse.weights(weights), kv_bytes_per_element=kv_el, deployment=deployment)
    if draft is not None:
        from llm_cost.report.serving_rows import draft_fields
        from llm_cost.serving.draft_memory import draft_memory

        dmem = draft_memory(spec, load_model(draft), acc, reserve=reserve, weights=parse.weights(weights),
                            kv_bytes_per_element=kv_el, deployment=deployment)
        row.update(draft_fields(dmem, tokens_per_sequence=prompt + row["gen"]))
    return row


@command("capacity", epilog="Example: llm-cost capacity --model gpt-3-13b --gpu a100-40gb --reserve 0.1 "
                            "--prompt 272 --max-gen 512 --gen 64.5")
@deployment_options
def capacity_cmd(
    model: ModelsOpt = [DEFAULT.model],  # noqa: B006
    gpu: GpusOpt = [DEFAULT.gpu],  # noqa: B006
    reserve: Reserve = DEFAULT_RESERVE,
    prompt: PromptTokens = 272,
    max_gen: MaxGen = 64.5,
    gen: Annotated[Optional[float], typer.Option(help="Tokens it actually generates, for no reservation (default --max-gen).")] = None,
    max_len: MaxLen = None,
    weights: Weights = "bf16",
    kv_bytes: MaybeKvBytes = None,
    preset: Preset = DEFAULT.preset,
    deploy: DeploymentArgs = AS_GIVEN,
    draft: DraftModel = None,
    fmt: Format = "table",
) -> None:
    """KV tokens that fit beside the weights, and requests that fit per reservation policy; on
    --tp/--pp GPUs one replica's (per GPU: its share of the weights and of each token's K/V) and
    in all (x replicas = --gpus / (tp x pp)).

    Memory is the profile's (--preset; measured: usable, the lecture's: the marketed 40e9 bytes) unless
    --usable-memory or --marketed-memory says; the rows say which (memory_basis). --overlap-comm changes no capacity. A
    replica whose weights leave no K/V room says so (fits, fit_note) and warns on stderr; --strict
    then exits 2.

    Memory only: nothing is timed, so no energy (W, J/token) and no --usd-per-kwh; `request` and
    `batching` on the same model, GPU and split time it and give both.

    Defaults: Llama-3-8B on an H100 SXM under `measured`, as every command; the lecture's example
    (§3.3, Orca's setting) names its own: --model gpt-3-13b --gpu a100-40gb --preset lecture.
    """
    from llm_cost.commands import parse
    from llm_cost.catalog import load_accelerator, load_model

    specs = [load_model(model_name) for model_name in model]
    accs = [load_accelerator(gpu_name) for gpu_name in gpu]
    dtype, kv_el = kv_settings(deploy.kv_dtype, kv_bytes)
    prof = parse.profile(preset)
    deployment = parse.deployment(deploy, prof, reserve, kv_dtype=dtype)
    rows = [{**_capacity_row(spec, acc, deployment, kv_el, reserve=reserve, prompt=prompt, max_gen=max_gen, gen=gen,
                             max_len=max_len, weights=weights, draft=draft), "preset": prof.name}
            for spec in specs for acc in accs]
    first = rows[0]
    lengths = sorted({row["max_len"] for row in rows})
    at_max = f"{lengths[0]:g}" if len(lengths) == 1 else "each model's (the rows' max_len)"
    caption = (f"{reserve:.0%} of the {deployment.basis} memory held back. KV tokens a request holds: "
               f"at max len {at_max}; "
               f"at prompt+max_gen {prompt:g} prompt + {max_gen:g} declared = {prompt + max_gen:g}; "
               f"with no reservation it grows to {prompt:g} prompt + {first['gen']:g} generated = "
               f"{prompt + first['gen']:g}")
    short = [row for row in rows if row["shortfall_bytes"]]
    if short:
        caption = ("the weights do not fit: " + ", ".join(
            f"{row['model']} on {row['gpu_name']} {row['shortfall_bytes'] / 1e9:.2f} GB short" for row in short)
            + "; " + caption)
    from llm_cost.serving.replica import deployment_label

    split = deployment_label(deployment)
    columns = CAPACITY_COLUMNS + (CAPACITY_DEPLOYED_COLUMNS if split else [])
    if not all(row["fits"] for row in rows):
        columns = columns + [FIT_COLUMN]
    if draft is not None:
        columns = columns + CAPACITY_DRAFT_COLUMNS
        caption += "".join(
            f"; the draft {row['draft']} holds {row['draft_weight_bytes'] / 1e9:.2f} GB and "
            f"{row['draft_kv_bytes_per_token']:.0f} bytes of K/V a token beside {row['model']} on "
            f"{row['gpu_name']}: "
            f"{row['kv_tokens_with_draft']:,} tokens of both fit, {row['sequences_lost_to_draft']} sequences fewer "
            f"with no reservation" for row in rows)
    if split:
        caption += (f". Per GPU: 1/{deployment.gpus_per_replica} of the weights (plus replicated K/V projections) and its share of "
                    f"each token's K/V; KV tokens are one replica's, (all) x {deployment.replicas} replicas")
    on = (specs[0].name if len(specs) == 1 else "the models") + (f" on {accs[0].name}" if len(accs) == 1 else "")
    emit(rows, columns, fmt, title=f"KV capacity: {on}{split}, {weights.lower()} weights, "
                                   f"{parse.profile_title(preset, prof)} (GB = 1e9 bytes)", caption=caption)
    warn_unfit([first], deploy.strict, suffix="")


WASTE_COLUMNS = [
    Column("batch", "batch"),
    Column("prompt_max", "longest prompt"),
    Column("output_max", "longest output"),
    Column("positions_computed", "computed", fixed(0)),
    Column("positions_needed", "needed", fixed(0)),
    Column("positions_wasted", "wasted", fixed(0)),
    Column("waste_fraction", "waste (%)", fixed(1, 0.01)),
]
WASTE_SIM_COLUMNS = [
    Column("rate_req_per_s", "rate (req/s)", fixed(2)),
    Column("throughput_req_per_s", "throughput (req/s)", fixed(2)),
    Column("mean_batch", "mean batch", fixed(2)),
    Column("positions_computed", "computed", fixed(0)),
    Column("positions_needed", "needed", fixed(0)),
    Column("waste_fraction", "waste (%)", fixed(1, 0.01)),
]


@command("waste", epilog="Example: llm-cost waste --isl 100 --isl 300 --isl 200 --osl 10 "
                         "--osl 50 --osl 30 (exercise 1, the default); llm-cost waste --rate 0.5 --rate 2")
def waste_cmd(
    prompt: MaybeIsls = None,  # one request's tokens each (--isl, --osl: `request`'s names; --output is a file)
    output: MaybeOsls = None,
    rate: Rates = None,
    max_batch: MaxBatch = 8,
    requests: Requests = 2000,
    seed: Seed = 0,
    model: ModelOpt = DEFAULT.model,
    gpu: GpuOpt = DEFAULT.gpu,
    preset: Preset = DEFAULT.preset,
    reserve: Reserve = DEFAULT_RESERVE,
    quiet: Quiet = False,
    fmt: Format = "table",
) -> None:
    """Request-level padding: token positions computed vs needed, for one batch or a simulated load.

    Default: the lecture's exercise 1 batch. --rate simulates Orca's workload on Llama-3-8B on an H100 SXM
    under `measured`, as every command; the lecture's setting: --model gpt-3-13b --gpu a100-40gb --preset lecture.
    """
    from llm_cost.errors import InvalidValueError
    from llm_cost.report.serving_rows import waste_row

    if not rate:
        prompts, outputs = (prompt, output) if prompt or output else ([100, 300, 200], [10, 50, 30])
        emit([waste_row(prompts, outputs)], WASTE_COLUMNS, fmt,
             title="Request-level batch: prompts padded to the longest, rows run to the longest output")
        return
    if prompt or output:
        raise InvalidValueError("--rate simulates Orca's workload; give it without --isl and --osl")
    from llm_cost.catalog import load_accelerator, load_model
    from llm_cost.commands import parse
    from llm_cost.report.serving_rows import waste_sim_row
    from llm_cost.serving.batching_request import BatchingRequest
    from llm_cost.serving.batching_run import run_batching
    from llm_cost.specs.deployment import Deployment

    # Orca's workload (the request's default lengths, Poisson arrivals) on one GPU under request-level batching:
    # `batching --scheduler request` as one library call
    spec, acc, prof = load_model(model), load_accelerator(gpu), parse.profile(preset)  # as every command names them
    request = BatchingRequest(model=spec, gpu=acc, profile=prof, deployment=Deployment(reserve=reserve),
                              scheduler="request", max_batch=max_batch, rates=tuple(rate), requests=requests, seed=seed)
    with SweepProgress("simulating") as progress:
        out = run_batching(request, on_progress=progress)
    setting = {"model": spec.name, "gpu": acc.label, "gpu_name": acc.name, "preset": prof.name}
    from llm_cost.commands.serving_energy import served_energy_columns
    from llm_cost.specs.deployment import SINGLE_GPU

    rows = [{**setting, **waste_sim_row(result)} for result in out.results]
    energy = served_energy_columns(rows, list(out.results), acc, SINGLE_GPU)  # a served run's watts and J/token (one GPU)
    emit(rows, WASTE_SIM_COLUMNS + energy, fmt,
         title=f"Request-level batching, max batch {max_batch}: {out.replica.description}",
         caption=f"{requests:,} requests, {out.workload.description}, seed {seed}")
    if out.interrupted:  # Ctrl-C between rates: the rates served are printed
        from llm_cost.commands.app import interrupted

        interrupted(len(out.results), out.planned, "rates")


@command("batching", epilog="Example: llm-cost batching --scheduler iteration --max-batch 32 --rate 6 --rate 12 "
                            "--requests 2000 --seed 0; search: llm-cost batching --scheduler request "
                            "--max-batch 8 --slo-ms 45")
@deployment_options
@prefix_options
def batching_cmd(
    scheduler: Scheduler = "iteration",
    max_batch: MaxBatch = 32,
    rate: Rates = None,
    requests: Requests = 2000,
    seed: Seed = 0,
    slo_ms: SloMs = None,
    slo_stat: SloStat = "median",
    prompt_len: PromptLen = None,
    output_len: OutputLen = None,
    max_gen: MaxGenTokens = None,
    reservation: Annotated[Optional[str], typer.Option(help="iteration: declared (default), max_len or paged (KV blocks on demand, preemption).")] = None,
    trace: Trace = None,
    arrivals: Arrivals = "poisson",
    concurrency: Concurrency = None,
    block_size: Annotated[int, typer.Option("--block-size", help="paged: tokens per KV block.")] = 16,
    preemption: Annotated[str, typer.Option("--preemption", help="paged: recompute or swap (over the host link).")] = "recompute",
    watermark: Annotated[float, typer.Option("--watermark", help="paged: fraction of blocks admission leaves free.")] = 0.01,
    prefill_chunk: PrefillChunk = None,
    prefix_caching: PrefixCaching = False,
    compare_prefix_caching: Annotated[bool, typer.Option("--compare-prefix-caching", help="Serve each --rate twice, without and with --prefix-caching (the same requests): hit rates, prefill tokens saved, TTFT and throughput side by side.")] = False,
    kv_offload_bytes: KvOffloadBytes = 0.0,
    prefixes: PromptPrefixes = PromptPrefixes(),  # noqa: B008 (a NamedTuple, immutable)
    router: Annotated[Optional[str], typer.Option("--router", help="Simulate the --gpus / (tp x pp) replicas together behind a router: round-robin, least-loaded or prefix-affinity (--rate is then the fleet's).")] = None,
    disaggregate: DisaggregateSplit = None,
    decode_tp: DecodeTp = None,
    decode_max_batch: DecodeMaxBatch = None,
    spec_gamma: SpecGamma = None,
    spec_alpha: SpecAlpha = None,
    c: DraftC = None,
    draft: DraftModel = None,
    spec_acceptance: Annotated[str, typer.Option("--spec-acceptance", help="iid (Eq. 1: each draft accepted with --spec-alpha) or bursty:EASY:HARD:P_EH:P_HE (a two-state chain; --spec-alpha is then unused).")] = "iid",
    spec_policy: Annotated[str, typer.Option("--spec-policy", help="fixed, off-above-batch:N or adaptive (gamma per iteration for the most tokens/s).")] = "fixed",
    pipeline: Annotated[str, typer.Option("--pipeline", help="With --pp: serial (one batch in flight), orca (up to pp batches in flight) or microbatch.")] = "serial",
    slo_ttft_ms: Annotated[Optional[float], typer.Option("--slo-ttft-ms", help="Goodput: time-to-first-token target (ms).")] = None,
    slo_tpot_ms: Annotated[Optional[float], typer.Option("--slo-tpot-ms", help="Goodput: time-per-output-token target (ms).")] = None,
    slo_metric: Annotated[str, typer.Option("--slo-metric", help="--slo-ms applies to: latency_per_token, ttft, tpot or e2e.")] = "latency_per_token",
    usd_per_kwh: UsdPerKwh = None,
    usd_per_gpu_hour: UsdPerGpuHour = None,
    kv_tokens: KvTokens = None,
    max_len: MaxLen = None,
    model: ModelOpt = DEFAULT.model,
    gpu: GpuOpt = DEFAULT.gpu,
    preset: Preset = DEFAULT.preset,
    engine: EngineOpt = None,
    reserve: Reserve = DEFAULT_RESERVE,
    weights: Weights = "bf16",
    deploy: DeploymentArgs = AS_GIVEN,
    quiet: Quiet = False,
    fmt: Format = "table",
) -> None:
    """Simulate request-level or iteration-level batching: throughput, per-token latency, KV use.

    On --tp/--pp/--ep GPUs the simulated server is one replica: each iteration costs one GPU's share,
    pp stages one after another (one batch in flight, no microbatches) plus the collectives, and its
    KV capacity is one replica's. --rate is the arrival rate at that replica; the rows' totals
    (rate_total_req_per_s, throughput_total_req_per_s, tokens_per_s) are x replicas = --gpus / (tp x pp),
    with tokens_per_s_per_gpu beside them. Memory as in `capacity` (the profile's basis). Without --rate,
    --slo-ms searches the highest rate whose --slo-stat of --slo-metric meets it.

    Defaults: Llama-3-8B on an H100 SXM under `measured`, as every command; the lecture's Orca comparison
    (§3.3) names its own: --model gpt-3-13b --gpu a100-40gb --preset lecture.
    """
    from llm_cost.commands import parse
    from llm_cost.commands.engine_option import with_engine
    from llm_cost.commands.serving_energy import check_price
    from llm_cost.commands.serving_engine import PROGRESS, render_batching
    from llm_cost.catalog import load_accelerator, load_model
    from llm_cost.serving.batching_request import BatchingRequest
    from llm_cost.serving.batching_run import run_batching

    check_price(usd_per_kwh, usd_per_gpu_hour)  # before any simulation
    slo_s = parse.seconds("slo_ms", slo_ms, positive=True)
    profile = with_engine(parse.profile(preset), engine)
    weight_format, (kv_dtype, _) = parse.weights(weights), kv_settings(deploy.kv_dtype, None)
    policy, off_above = parse.spec_policy(spec_policy)
    model_spec, gpu_spec = load_model(model), load_accelerator(gpu)  # as every command loads them (one wording)
    draft_spec = load_model(draft) if draft is not None else None
    request = BatchingRequest(
        model=model_spec, gpu=gpu_spec, profile=profile, weights=weight_format,
        deployment=parse.deployment(deploy, profile, reserve, kv_dtype=kv_dtype), scheduler=scheduler,
        max_batch=max_batch, reservation=reservation, block_size=block_size, watermark=watermark,
        preemption=preemption, prefill_chunk=prefill_chunk, pipeline=pipeline, prefix_caching=prefix_caching,
        kv_offload_bytes=kv_offload_bytes, kv_tokens=kv_tokens, max_len=max_len, spec_gamma=spec_gamma,
        spec_alpha=spec_alpha, c=c, draft=draft_spec, spec_policy=policy, spec_off_above=off_above,
        spec_acceptance=parse.acceptance(spec_acceptance), rates=tuple(rate or ()), requests=requests, seed=seed,
        prompt=prompt_len or BatchingRequest.prompt, output=output_len or BatchingRequest.output, max_gen=max_gen,
        arrivals=arrivals, concurrency=concurrency, trace=trace, prefixes=prefixes, slo_s=slo_s, slo_stat=slo_stat,
        slo_metric=slo_metric, slo_ttft_s=parse.seconds("slo_ttft_ms", slo_ttft_ms, positive=True),
        slo_tpot_s=parse.seconds("slo_tpot_ms", slo_tpot_ms, positive=True), router=router,
        disaggregate=parse.split(disaggregate), decode_tp=decode_tp, decode_max_batch=decode_max_batch,
        compare_prefix_caching=compare_prefix_caching)
    with SweepProgress(PROGRESS[request.mode]) as progress:
        outcome = run_batching(request, on_progress=progress)
    render_batching(outcome, fmt, prices=(usd_per_kwh, usd_per_gpu_hour), slo_ms=slo_ms, strict=deploy.strict)
