"""`plan`: the best deployment for a workload and a latency target (accelerators, parallelism,
precision, batch and speculation searched at once; the Pareto frontier printed best first).

`c` is the draft's cost coefficient, a draft step over a target step (--c).
"""

from __future__ import annotations

from typing import Annotated, NamedTuple, Optional

import typer

from llm_cost.commands.engine_option import with_engine
from llm_cost.commands.app import command, emit, note
from llm_cost.commands.options import (Arrivals, BwEff, Concurrency, DEFAULT, Disaggregate, DpAttention, DraftC,
                                       DraftModel, EngineOpt, EpSearched, FixedMs, Format, Gpus, Isl,
                                       KvDtypes, KvOffloadBytes, MaybeBatches, MaybeGpus, MaybeJobs, MaybeModel, Mfu,
                                       MtpAlpha, Osl, OutputLen, PpSearched, PrefixCaching, prefix_options,
                                       Preset, PromptLen, Quiet, Rates, Ray, Requests, Seed, SloStat,
                                       SpecAlpha, TpotMs, TpSearched, Trace, TtftMs, UsableMemory, UsdPerGpuHours,
                                       WeightsSearched)
from llm_cost.commands.plan_build import build, caption_of, defaults_of, prices_of, profile_args, title_of
from llm_cost.commands.plan_options import PlanOptions  # the options as one typed record
from llm_cost.commands.options import ENERGY_PRICE_COLUMN, UsdPerKwh  # the energy estimate's price (plan_rows)
from llm_cost.errors import InvalidValueError
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
    max_gamma: Annotated[int, typer.Option("--max-gamma", help="Draft tokens per round searched: 1 .. this.")] = 8,
    mtp_alpha: MtpAlpha = 0.85,
    tp: TpSearched = None,
    pp: PpSearched = None,
    ep: EpSearched = None,
    dp_attention: DpAttention = False,
    max_tp: Annotated[int, typer.Option("--max-tp", help="Largest tensor-parallel degree searched by default (one NVLink domain).")] = 8,
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
    arrivals: Arrivals = "poisson",
    trace: Trace = None,
    requests: Requests = 2000,
    seed: Seed = 0,
    prefixes: PromptPrefixes = PromptPrefixes(),  # noqa: B008 (a NamedTuple, immutable)
    prefix_caching: PrefixCaching = False,
    kv_offload_bytes: KvOffloadBytes = 0.0,
    slo_stat: SloStat = "p99",
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
    _run(PlanOptions(
        model=model, gpu=gpu, gpus=gpus, isl=isl, osl=osl, ttft_ms=ttft_ms, tpot_ms=tpot_ms,
        tokens_per_s_per_user=tokens_per_s_per_user, usd_per_gpu_hour=usd_per_gpu_hour,
        usd_per_kwh=usd_per_kwh, spec_alpha=spec_alpha, c=c, draft=draft, max_gamma=max_gamma,
        mtp_alpha=mtp_alpha, tp=tp, pp=pp, ep=ep, dp_attention=dp_attention, max_tp=max_tp, weights=weights,
        kv_dtype=kv_dtype, batch=batch, disaggregate=disaggregate, preset=preset, mfu=mfu, bw_eff=bw_eff,
        fixed_ms=fixed_ms, engine=engine, usable_memory=usable_memory, verify=verify, rate=rate,
        concurrency=concurrency, prompt_len=prompt_len, output_len=output_len, arrivals=arrivals,
        trace=trace, requests=requests, seed=seed, prefixes=prefixes, prefix_caching=prefix_caching,
        kv_offload_bytes=kv_offload_bytes, slo_stat=slo_stat, jobs=jobs, ray=ray, emit_engine=emit_engine,
        emit_k8s=emit_k8s, served_model=served_model, quiet=quiet, fmt=fmt))


class _Search(NamedTuple):
    """What `_parsed` makes of the options: the model, the evaluated grid, the target, the names as given
    (refs), the prices, the checkpoints --emit names (the model's and each draft's by its name), and the
    defaults' note (said after the output: an error before it stays one line)."""

    spec: object
    grid: object
    target: object
    refs: dict
    prices: dict
    checkpoints: tuple  # (the model's checkpoint, {draft name: its checkpoint})
    said: object


def _run(options: PlanOptions) -> None:
    """`plan`'s phases: the options parsed into a search (`_parsed`), the search (`planner.plan`), the
    frontier's rows served (`_served`, with --verify), the table and what follows it (`_after_table`)."""
    from llm_cost.planner import plan

    search = _parsed(options)
    result = plan(search.grid, search.target, usd_per_gpu_hour=search.prices)
    if options.disaggregate and options.emit_engine is not None:
        raise InvalidValueError("--emit takes the colocated frontier (one replica's launch command); drop "
                                "--disaggregate", params=("disaggregate",))
    if options.disaggregate and options.verify is None:
        _disaggregated(search.grid, search.target, result, search.prices, search.refs, search.spec, options.fmt,
                       options.usd_per_kwh)
        search.said()
        return _unserved_note(options)
    emit_to = _emit_order(options, search)
    rows, columns, caption, stopped = _served(options, search, result)
    emit(rows, columns, options.fmt, title=title_of(search.spec, search.grid, search.target), caption=caption)
    search.said()
    _unserved_note(options)
    _after_table(rows, result, options.fmt, emit_to, stopped, options.verify is not None)


def _unserved_note(options: PlanOptions) -> None:
    """A note naming the serving options given without --verify: the static plan serves no workload."""
    if options.verify is not None:
        return
    import inspect

    from llm_cost.commands.plan_verify import SERVED_OPTIONS

    # as the flags name them
    given = {**{name: getattr(options, name) for name in SERVED_OPTIONS}, **options.prefixes._asdict()}
    defaults = inspect.signature(plan_cmd).parameters  # the options' declared defaults
    given = [name for name, value in given.items()
             if name in defaults and value not in (defaults[name].default, None, [], ())]
    if given:
        note(f"{', '.join('--' + flag.replace('_', '-') for flag in given)} change{'s' if len(given) == 1 else ''} "
             "nothing without --verify N (the static plan serves no workload)")


def _parsed(options: PlanOptions) -> _Search:
    """The options checked and turned into a search: the defaults of what was left out, the profile (its
    engine's fixed costs, the memory basis), the grid evaluated, the target, the prices."""
    from llm_cost.commands import parse

    model, gpu, gpus, isl, osl, said = defaults_of(options.model, options.gpu, options.gpus, options.isl, options.osl)
    if options.verify is not None:  # what the engine cannot serve, before any note
        from llm_cost.commands.plan_verify import serve_settings

        serve_settings(options)
    prof = with_engine(parse.profile(options.preset, mfu=options.mfu, bw_eff=options.bw_eff, fixed_ms=options.fixed_ms),
                       options.engine, options.fixed_ms, options.mfu, serves=options.verify is not None)
    if options.usable_memory is not None:  # the fits' memory, else the profile's
        prof = prof.with_(memory_basis="usable" if options.usable_memory else "marketed")
    keys = ("ttft_ms", "tpot_ms", "tokens_per_s_per_user", "spec_alpha", "c", "draft", "max_gamma", "mtp_alpha", "tp",
            "pp", "ep", "max_tp", "weights", "kv_dtype", "batch", "dp_attention")
    spec, grid, target, refs = build(model=model, gpu=gpu, gpus=gpus, isl=isl, osl=osl, profile=prof,
                                     **{key: getattr(options, key) for key in keys})
    refs["profile_args"] = profile_args(options.preset, options.mfu, options.bw_eff, options.fixed_ms, options.engine)
    prices = prices_of(options.usd_per_gpu_hour, grid.space)
    drafts = {variant.draft.name: _checkpoint(variant.draft, refs.get(variant.draft.name, variant.draft.name))
              for variant in grid.variants if getattr(variant, "draft", None) is not None}
    return _Search(spec, grid, target, refs, prices, (options.served_model or _checkpoint(spec, model), drafts), said)


def _served(options: PlanOptions, search: _Search, result) -> tuple:
    """(rows, columns, caption, (served, candidates) after a Ctrl-C or None): the frontier's rows, and with
    --verify its best rows served (`plan_verify.verified`), with --disaggregate the best splits too."""
    from llm_cost.planner.rows import plan_rows

    rows = plan_rows(result, search.refs, usd_per_kwh=options.usd_per_kwh)
    for row in rows:  # a static batch per replica, one in flight (a pipeline's stages do not fill with one)
        row["users_in_flight"] = row["batch"] * row["replicas"]
    columns = (PLAN_COLUMNS + ([PRICE_COLUMN] if search.prices else [])
               + ([ENERGY_PRICE_COLUMN] if options.usd_per_kwh is not None else []))
    if options.verify is None:
        return rows, columns, caption_of(result), None
    from llm_cost.commands.plan_verify import options_of, verified

    splits = (_splits(search.grid, search.target, search.prices, search.refs, options.usd_per_kwh)
              if options.disaggregate else None)
    return verified(result, rows, columns, caption_of(result), target=search.target,
                    options=options_of(options, search.grid.isl, search.grid.osl), splits=splits)


def _after_table(rows, result, fmt, emit_to, stopped, served) -> None:
    """What follows the table: the best row as commands (or why there is none), its launch files, and
    after a Ctrl-C (`stopped`: candidates served and in all) one line on stderr and exit 130 (the
    candidates that finished are printed); `served`: rows of --verify."""
    if not rows:
        note("no configuration meets the target: " + caption_of(result))
    elif fmt.lower() in ("table", "markdown"):
        _best_as_commands(rows[0], pipelined=any(int(row.get("pp") or 1) > 1 for row in rows), served=served)
    if emit_to is not None:
        _emit_best(rows, emit_to)
    if stopped:
        from llm_cost.commands.app import EXIT_INTERRUPTED, warn

        warn(f"interrupted: {stopped[0]} of {stopped[1]} candidates served; showing those")
        raise typer.Exit(EXIT_INTERRUPTED)


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


def _emit_choice(emit_engine: str | None, emit_k8s: bool) -> str | None:
    """--emit's engine, checked (None: nothing emitted); --emit-k8s needs one."""
    if emit_k8s and emit_engine is None:
        raise InvalidValueError("--emit-k8s needs --emit vllm|sglang|trtllm: the engine the manifest runs",
                                params=("emit",))
    if emit_engine is None:
        return None
    from llm_cost.errors import check_choice
    from llm_cost.planner.emit import ENGINES

    return check_choice("emit", str(emit_engine).lower(), ENGINES)


def _splits(grid, target, prices, refs, usd_per_kwh=None) -> tuple:
    """(the best prefill/decode splits, their `disaggregated_rows`) of `plan --disaggregate`."""
    from llm_cost.planner import best_split
    from llm_cost.planner.rows import disaggregated_rows

    splits, _ = best_split(grid, target)
    return splits, disaggregated_rows(grid, splits, prices, refs, usd_per_kwh=usd_per_kwh)


def _disaggregated(grid, target, result, prices, refs, spec, fmt, usd_per_kwh=None) -> None:
    """`plan --disaggregate`: the best prefill/decode split per accelerator, rendered (each row's energy
    as the frontier's rows: watts and J/token in JSON and CSV, its $ with --usd-per-kwh)."""
    from llm_cost.planner import best_split
    from llm_cost.planner.rows import disaggregated_rows

    splits, missing = best_split(grid, target)
    rows = disaggregated_rows(grid, splits, prices, refs, usd_per_kwh=usd_per_kwh)
    columns = (SPLIT_COLUMNS + ([PRICE_COLUMN] if prices else [])
               + ([ENERGY_PRICE_COLUMN] if usd_per_kwh is not None else []))
    emit(rows, columns, fmt, title="Disaggregated " + title_of(spec, grid, target),
         caption=caption_of(result) + "; prefill and decode pools of one accelerator, the K/V moved over its "
                 "interconnect; colocated: the best single pool on the same GPUs"
                 + ("; energy: both pools powered at the row's rate, their slack at idle power" if usd_per_kwh
                    is not None else "")
                 + (f"; {missing['no_split']} accelerator(s) with no split that meets both targets"
                    if missing["no_split"] else ""))
    if not rows:
        note("no split of the GPUs into a prefill and a decode pool meets the target: " + caption_of(result))


def _checkpoint(spec, model: str) -> str:
    """What `--emit` names as the engine's checkpoint (without --served-model; a draft's always): a
    catalog model's Hugging Face repo (its config's source), else the model as given (a path or a repo id)."""
    from llm_cost.planner.emit import hub_repo

    return hub_repo(spec.source) or model


class _EmitOrder(NamedTuple):
    """What `--emit` writes: the engine, a manifest or the command, the checkpoints (`_Search`), whether
    --served-model named the checkpoint (taken as in the row's weights), the grid (the row's GPU and
    ISL), and with --verify the `ServeSettings` the rows were served with and the SLO percentile."""

    engine: str
    k8s: bool
    checkpoints: tuple
    prequantized: bool
    grid: object
    settings: object = None
    slo_stat: str = "p99"


def _emit_order(options: PlanOptions, search: _Search) -> _EmitOrder | None:
    """--emit's order (None without --emit), checked before anything is served."""
    engine = _emit_choice(options.emit_engine, options.emit_k8s)
    if engine is None:
        return None
    settings = None
    if options.verify is not None:
        from llm_cost.commands.plan_verify import serve_settings

        settings = serve_settings(options)
    return _EmitOrder(engine, bool(options.emit_k8s), search.checkpoints, options.served_model is not None,
                      search.grid, settings, str(options.slo_stat))


def _emit_best(rows, to: _EmitOrder) -> None:
    """`plan --emit`: the best row's launch command or Kubernetes manifest, on stdout, as it was served
    with --verify (its prompt chunks, prefix caching), and what the command cannot say as notes (a
    checkpoint to fill in); nothing when no row meets the target, or no verified row the served SLO."""
    if not rows:
        raise InvalidValueError("--emit: no configuration meets the target, nothing to deploy", params=("emit",))
    best, served = rows[0], None
    if to.settings is not None:
        if not best.get("meets_served_slo"):  # the served ranking puts a row that meets it first
            raise InvalidValueError(f"--emit: no verified configuration meets the served SLO (the {to.slo_stat} of "
                                    "TTFT and TPOT within the target), nothing to deploy; verify more rows or "
                                    "lower the load", params=("emit",))
        gpu = next(group.gpu for group in to.grid.space.groups if group.gpu.name == best["gpu_name"])
        served = to.settings.config_fields(gpu)
    quant = getattr(to.grid.space.model, "quantization", None)
    if quant is not None and getattr(quant, "method", None) == best["weights"]:  # the repo ships it (DeepSeek-V3's FP8)
        best = dict(best, weights="checkpoint")
    from llm_cost.planner.emit import k8s_deployment, launch_command, launch_notes

    name, drafts = to.checkpoints
    kind = best.get("speculation") or ""
    draft = drafts.get(kind[len("draft "):]) if kind.startswith("draft ") else None
    how = dict(draft_model=draft, served=served, prequantized=to.prequantized)
    for line in launch_notes(best, to.engine, name, served=served, prequantized=to.prequantized):
        note(line)
    import sys

    if to.k8s:
        return sys.stdout.write(k8s_deployment(best, to.engine, name, to.grid.isl, **how))
    from llm_cost.report.render import print_command

    *before, command = launch_command(best, to.engine, name, to.grid.isl, **how).splitlines()
    sys.stdout.write("".join(line + "\n" for line in before))  # trtllm's options file, as written
    print_command(command)  # on a narrow terminal its options on lines joined by " \\", as plan's request line
