"""`plan`: the best deployment for a workload and a latency target (accelerators, parallelism,
precision, batch and speculation searched at once; the Pareto frontier printed best first).

`c` is the draft's cost coefficient, a draft step over a target step (--c).
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from llm_cost.commands.engine_option import with_engine
from llm_cost.commands.app import command, emit, given, note  # given: None where Typer filled the default
from llm_cost.commands.options import (Arrivals, BwEff, Concurrency, DEFAULT, Disaggregate, DpAttention, DraftC,
                                       DraftModel, EngineOpt, EpSearched, FixedMs, Format, Gpus, Isl,
                                       KvDtypes, KvOffloadBytes, MaybeBatches, MaybeGpus, MaybeJobs, MaybeModel, Mfu,
                                       MtpAlpha, Osl, OutputLen, PpSearched, PrefixCaching, prefix_options,
                                       Preset, PromptLen, Quiet, Rates, Ray, Requests, Seed, SloStat,
                                       SpecAlpha, TpotMs, TpSearched, Trace, TtftMs, UsableMemory, UsdPerGpuHours,
                                       WeightsSearched)
from llm_cost.commands.plan_build import caption_of, defaults_of, profile_args, title_of
from llm_cost.commands.options import ENERGY_PRICE_COLUMN, UsdPerKwh  # the energy estimate's price (plan_rows)
from llm_cost.planner.build import DEFAULT_MAX_GAMMA, DEFAULT_MTP_ALPHA  # the library's defaults, shown in --help
from llm_cost.planner.plan_request import SERVED_DEFAULTS
from llm_cost.planner.space import DEFAULT_MAX_TP
from llm_cost.report.render import Column, fixed
from llm_cost.serving.prefixes import PromptPrefixes  # the prefix options' group (`options.prefix_options`)

DEFAULT_PRESET = DEFAULT.preset  # every prediction's profile (options.DEFAULT), as `request`

# The table's columns (narrow enough for 80 columns without prices); every key is in the JSON and CSV
# rows, with gpus, replicas, tp and pp, gamma, bound, e2e and the request_args.
PLAN_COLUMNS = [
    Column("gpu", "GPU", str),
    Column("gpus", "GPUs", fixed(0)),
    Column("replicas", "replicas", fixed(0)),
    Column("split", "tp x pp", str),
    Column("weights", "weights", str),
    Column("kv_dtype", "KV", str),
    Column("batch", "batch per replica", fixed(0)),
    Column("users_in_flight", "users in flight", fixed(0)),
    Column("decoding", "decoding", str),
    Column("ttft_s", "TTFT ms", fixed(0, 1e-3)),
    Column("tpot_s", "TPOT ms", fixed(2, 1e-3)),
    Column("output_tokens_per_s_per_user", "tok/s per user", fixed(1)),
    Column("output_tokens_per_s_per_gpu", "tok/s per GPU", fixed(0)),
]
PRICE_COLUMN = Column("usd_per_million_output_tokens", "$/M out", fixed(3))
# What a pipeline's row holds (the model `plan` and `request` price: `Deployment.batches_in_flight`).
PIPELINE_NOTE = ("users in flight = replicas x batch per replica: a row with pp > 1 holds one static batch per "
                 "replica, which crosses its pp stages one after another (as `request` times it), not pp batches")
SERVED_PIPELINE_NOTE = ("; served (--verify), the engine's pipeline (Orca's) may hold up to pp batches of that size "
                        "per replica")
SPLIT_COLUMNS = [
    Column("gpu", "GPU", str),
    Column("prefill_gpus", "prefill GPUs"),
    Column("decode_gpus", "decode GPUs"),
    Column("weights", "weights", str),
    Column("kv_dtype", "KV", str),
    Column("prefill_tp", "P tp"),
    Column("prefill_batch", "P batch"),
    Column("decode_tp", "D tp"),
    Column("decode_batch", "D batch"),
    Column("decoding", "decoding", str),
    Column("ttft_s", "TTFT ms", fixed(0, 1e-3)),
    Column("kv_transfer_s", "KV move ms", fixed(2, 1e-3)),
    Column("tpot_s", "TPOT ms", fixed(2, 1e-3)),
    Column("requests_per_s", "req/s", fixed(2)),
    Column("colocated_requests_per_s", "colocated req/s", fixed(2)),
]


@command("plan", epilog="Example: llm-cost plan --model llama-3-70b --gpu h100-sxm --gpu a100-80gb --gpus 8 --isl 2048 "
                        "--osl 256 --ttft-ms 1000 --tpot-ms 30 --spec-alpha 0.7")
@prefix_options
def plan_cmd(
    model: MaybeModel = None,
    gpu: MaybeGpus = None,
    gpus: Gpus = None,
    isl: Isl = None,
    osl: Osl = None,
    ttft_ms: TtftMs = None,
    tpot_ms: TpotMs = None,
    tokens_per_s_per_user: Annotated[Optional[float], typer.Option("--tokens-per-s-per-user", help="Target: output tokens per second per user (OSL / e2e) at least this; instead of --tpot-ms.")] = None,
    usd_per_gpu_hour: UsdPerGpuHours = None,
    usd_per_kwh: UsdPerKwh = None,
    spec_alpha: SpecAlpha = None,
    c: DraftC = None,
    draft: DraftModel = None,
    max_gamma: Annotated[int, typer.Option("--max-gamma", help="Draft tokens per round searched: 1 .. this.")] = DEFAULT_MAX_GAMMA,
    mtp_alpha: MtpAlpha = DEFAULT_MTP_ALPHA,
    tp: TpSearched = None,
    pp: PpSearched = None,
    ep: EpSearched = None,
    dp_attention: DpAttention = False,
    max_tp: Annotated[int, typer.Option("--max-tp", help="Largest tensor-parallel degree searched by default (one NVLink domain).")] = DEFAULT_MAX_TP,
    weights: WeightsSearched = None,
    kv_dtype: KvDtypes = None,
    batch: MaybeBatches = None,
    disaggregate: Disaggregate = False,
    preset: Preset = DEFAULT_PRESET,
    mfu: Mfu = None,
    bw_eff: BwEff = None,
    fixed_ms: FixedMs = None,
    engine: EngineOpt = None,
    usable_memory: UsableMemory = None,
    verify: Annotated[Optional[int], typer.Option("--verify", help="Serve the N best frontier rows with the engine under the workload (--rate or --concurrency) and rank them by goodput per GPU at the SLO. N is required (10 is a good start: --verify 10).")] = None,
    rate: Rates = None,
    concurrency: Concurrency = None,
    prompt_len: PromptLen = None,
    output_len: OutputLen = None,
    arrivals: Arrivals = SERVED_DEFAULTS["arrivals"],
    trace: Trace = None,
    requests: Requests = SERVED_DEFAULTS["requests"],
    seed: Seed = SERVED_DEFAULTS["seed"],
    prefixes: PromptPrefixes = PromptPrefixes(),  # noqa: B008 (a NamedTuple, immutable)
    prefix_caching: PrefixCaching = SERVED_DEFAULTS["prefix_caching"],
    kv_offload_bytes: KvOffloadBytes = SERVED_DEFAULTS["kv_offload_bytes"],
    slo_stat: SloStat = SERVED_DEFAULTS["slo_stat"],
    jobs: MaybeJobs = None,
    ray: Ray = None,
    emit_engine: Annotated[Optional[str], typer.Option("--emit", help="Print the best row's launch command for vllm, sglang or trtllm (one engine, max(tp, ep) x pp GPUs; stdout, after the table).")] = None,
    emit_k8s: Annotated[bool, typer.Option("--emit-k8s", help="With --emit: a Kubernetes Deployment manifest (YAML) of the best row instead of the command.")] = False,
    served_model: Annotated[Optional[str], typer.Option("--served-model", help="With --emit: the checkpoint the engine loads (a Hugging Face repo id; default a catalog model's repo from its config's source, else the --model as given).")] = None,
    quiet: Quiet = False,
    fmt: Format = "table",
) -> None:
    """The Pareto frontier of tokens/s per user against tokens/s per GPU (or $ per million output
    tokens with prices) over accelerators, tp, pp, weights, KV dtype, batch and speculation, under a
    TTFT and TPOT target. Each row is a static batch as `llm-cost request` times it (its request_args
    give the same TTFT and TPOT there). Left out, the model, GPU, ISL and OSL are every command's
    (llama-3-8b, h100-sxm, 1024, 256, as `request`) and --gpus is 8 (one node); a note names them.
    --osl is >= 2 here: a plan ranks decoding, one decode step at least.
    """
    from llm_cost.planner.plan_request import PlanRequest

    model, gpu, gpus, isl, osl, said = defaults_of(model, gpu, gpus, isl, osl)
    request = PlanRequest(
        model=model, gpu=tuple(gpu), gpus=gpus, isl=isl, osl=osl, ttft_s=None, tpot_s=None,
        tokens_per_s_per_user=tokens_per_s_per_user, usd_per_gpu_hour=tuple(usd_per_gpu_hour or ()),
        usd_per_kwh=usd_per_kwh, spec_alpha=spec_alpha, c=c, draft=draft, max_gamma=max_gamma, mtp_alpha=mtp_alpha,
        tp=tp, pp=pp, ep=ep, dp_attention=dp_attention, max_tp=max_tp, weights=weights, kv_dtype=kv_dtype, batch=batch,
        disaggregate=disaggregate, verify=verify, rate=tuple(rate) if rate else None, concurrency=concurrency,
        prompt_len=prompt_len, output_len=output_len, arrivals=given("arrivals", arrivals), trace=trace,
        requests=given("requests", requests), seed=given("seed", seed), prefixes=_given_prefixes(prefixes),
        slo_stat=given("slo_stat", slo_stat), jobs=jobs, ray=ray, engine=engine,
        prefix_caching=given("prefix_caching", prefix_caching),
        kv_offload_bytes=given("kv_offload_bytes", kv_offload_bytes), emit_engine=emit_engine, emit_k8s=emit_k8s,
        served_model=served_model)
    _render(_planned(request, preset, mfu, bw_eff, fixed_ms, ttft_ms, tpot_ms, usable_memory), fmt, said)


def _given_prefixes(prefixes: PromptPrefixes) -> PromptPrefixes | None:
    """The prefix options as given (None: none of them)."""
    return prefixes if any(value is not None for value in prefixes) else None


def _planned(request, preset, mfu, bw_eff, fixed_ms, ttft_ms, tpot_ms, usable_memory):
    """`planner.run_plan` of `request` with the profile and the target parsed (milliseconds to seconds);
    what the engine cannot serve is refused first, before the profile's notes."""
    from dataclasses import replace

    from llm_cost.commands import parse
    from llm_cost.commands.progress import SweepProgress
    from llm_cost.planner.frontier import MAX_SECONDS  # the target's bound (`Target`)
    from llm_cost.planner.plan_run import run_plan
    from llm_cost.planner.plan_served import serve_settings

    if request.verify is not None:
        serve_settings(request)
    prof = with_engine(parse.profile(preset, mfu=mfu, bw_eff=bw_eff, fixed_ms=fixed_ms), request.engine, fixed_ms,
                       mfu, serves=request.verify is not None)
    if usable_memory is not None:  # the fits' memory, else the profile's
        prof = prof.with_(memory_basis="usable" if usable_memory else "marketed")
    request = replace(request, profile=prof, profile_args=tuple(profile_args(preset, mfu, bw_eff, fixed_ms,
                                                                             request.engine)),
                      ttft_s=parse.seconds("ttft_ms", ttft_ms, positive=True, most_s=MAX_SECONDS),
                      tpot_s=parse.seconds("tpot_ms", tpot_ms, positive=True, most_s=MAX_SECONDS))
    from llm_cost.commands.app import warn

    return run_plan(request, progress=SweepProgress, on_warning=warn)  # a warning as it arises, before the serving


def _render(out, fmt: str, said) -> None:
    """`plan`'s output from the library's `PlanOutcome` (its warnings were said as they arose): the table
    (the frontier, the served ranking or the splits), the defaults' and the unserved options' notes, then
    what follows the table."""
    from llm_cost.commands.app import EXIT_INTERRUPTED, warn

    stopped = out.served.stopped if out.served is not None else None
    if stopped and not stopped[0]:
        warn(f"interrupted: 0 of {stopped[1]} candidates served; nothing to show")
        raise typer.Exit(EXIT_INTERRUPTED)
    if out.split_rows is not None:
        _disaggregated(out, fmt)
        said()
        return _unserved_note(out.request)
    columns = (PLAN_COLUMNS + ([PRICE_COLUMN] if out.prices else [])
               + ([ENERGY_PRICE_COLUMN] if out.request.usd_per_kwh is not None else []))
    caption = caption_of(out.result)
    if out.served is not None:
        from llm_cost.commands.plan_verify import verified_table

        columns, caption = verified_table(out, columns, caption)
    emit(out.rows, columns, fmt, title=title_of(out.model, out.grid, out.target), caption=caption)
    said()
    _unserved_note(out.request)
    _after_table(out, fmt)


def _unserved_note(request) -> None:
    """A note naming the serving options given without --verify: the static plan serves no workload."""
    given = request.served_options_given if request.verify is None else ()
    if given:
        note(f"{', '.join('--' + flag.replace('_', '-') for flag in given)} change{'s' if len(given) == 1 else ''} "
             "nothing without --verify N (the static plan serves no workload)")


def _after_table(out, fmt: str) -> None:
    """What follows the table: the best row as commands (or why there is none), its launch (or why there
    is none), and after a Ctrl-C (candidates served and in all) one line on stderr and exit 130 (the
    candidates that finished are printed)."""
    rows = out.rows
    if not rows:
        note("no configuration meets the target: " + caption_of(out.result))
    elif fmt.lower() in ("table", "markdown"):
        _best_as_commands(rows[0], pipelined=any(int(row.get("pp") or 1) > 1 for row in rows),
                          served=out.served is not None)
    if out.launch_refusal is not None:
        for line in getattr(out.launch_refusal, "launch_notes", ()):
            note(line)
        raise out.launch_refusal
    if out.launch is not None:
        _print_launch(out.launch)
    if out.interrupted:
        from llm_cost.commands.app import EXIT_INTERRUPTED, warn

        warn(f"interrupted: {out.served.stopped[0]} of {out.served.stopped[1]} candidates served; showing those")
        raise typer.Exit(EXIT_INTERRUPTED)


def _print_launch(launch) -> None:
    """`plan --emit`: the best row's launch on stdout, what it cannot say as notes first; the command on a
    narrow terminal with its options on lines joined by " \\", as plan's request line."""
    import sys

    for line in launch.notes:
        note(line)
    if launch.k8s:
        return sys.stdout.write(launch.text)
    from llm_cost.report.render import print_command

    *before, command = launch.text.splitlines()
    sys.stdout.write("".join(line + "\n" for line in before))  # trtllm's options file, as written
    print_command(command)


def _best_as_commands(best: dict, pipelined: bool = False, served: bool = False) -> None:
    """The notes under the table: what a pipeline's row holds in flight, and the best row as `llm-cost
    request` (a disaggregated row: one per pool), each command by `print_command`: one line, or on a
    narrow terminal lines joined by ` \\` (a line wrapped any other way, pasted, runs only its first part)."""
    from llm_cost.report.render import print_command, print_notes

    if pipelined:
        print_notes([PIPELINE_NOTE + (SERVED_PIPELINE_NOTE if served else "")])
    if best.get("request_args"):
        print_notes(["The best row as one command:"])
        print_command(f"llm-cost request {best['request_args']}")
        return
    print_notes(["The best row's pools as commands (prefill, then decode):"])
    print_command(f"llm-cost request {best['prefill_request_args']}")
    print_command(f"llm-cost request {best['decode_request_args']}")



def _disaggregated(out, fmt) -> None:
    """`plan --disaggregate`: the best prefill/decode split per accelerator, rendered (each row's energy
    as the frontier's rows: watts and J/token in JSON and CSV, its $ with --usd-per-kwh)."""
    rows, missing, usd_per_kwh = out.split_rows, out.missing, out.request.usd_per_kwh
    columns = (SPLIT_COLUMNS + ([PRICE_COLUMN] if out.prices else [])
               + ([ENERGY_PRICE_COLUMN] if usd_per_kwh is not None else []))
    emit(rows, columns, fmt, title="Disaggregated " + title_of(out.model, out.grid, out.target),
         caption=caption_of(out.result) + "; prefill and decode pools of one accelerator, the K/V moved over its "
                 "interconnect; colocated: the best single pool on the same GPUs"
                 + ("; energy: both pools powered at the row's rate, their slack at idle power" if usd_per_kwh
                    is not None else "")
                 + (f"; {missing['no_split']} accelerator(s) with no split that meets both targets"
                    if missing["no_split"] else ""))
    if not rows:
        note("no split of the GPUs into a prefill and a decode pool meets the target: " + caption_of(out.result))
