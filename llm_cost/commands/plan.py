"""`plan`: the best deployment for a workload and a latency target (accelerators, parallelism,
precision, batch and speculation searched at once; the Pareto frontier printed best first)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from llm_cost.commands.engine_option import with_engine
from llm_cost.commands.app import command, emit, note
from llm_cost.commands.options import (Arrivals, BwEff, Concurrency, DEFAULT, DEFAULT_ISL, DEFAULT_OSL,
                                       DEFAULT_PLAN_GPUS, Disaggregate, DpAttention, DraftC, DraftModel,
                                       EngineOpt, EpSearched, FixedMs, Format, Gpus, Isl, KvDtypes, MaybeBatches,
                                       MaybeGpus, MaybeJobs, MaybeModel, Mfu, MtpAlpha, Osl, OutputLen, PpSearched,
                                       Preset, PromptLen, Rates, Ray, Requests, Seed, SloStat, SpecAlpha, TpotMs,
                                       TpSearched, Trace, TtftMs, UsableMemory, UsdPerGpuHours, WeightsSearched)
from llm_cost.errors import InvalidValueError
from llm_cost.report.render import Column, fixed

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
    verify: Annotated[Optional[int], typer.Option("--verify", help="Serve the N best frontier rows with the engine under the workload (--rate or --concurrency) and rank them by goodput per GPU at the SLO.")] = None,
    rate: Rates = None,
    concurrency: Concurrency = None,
    prompt_len: PromptLen = None,
    output_len: OutputLen = None,
    arrivals: Arrivals = "poisson",
    trace: Trace = None,
    requests: Requests = 2000,
    seed: Seed = 0,
    slo_stat: SloStat = "p99",
    jobs: MaybeJobs = None,
    ray: Ray = None,
    emit_engine: Annotated[Optional[str], typer.Option("--emit", help="Print the best row's launch command for vllm, sglang or trtllm (one replica; stdout, after the table).")] = None,
    emit_k8s: Annotated[bool, typer.Option("--emit-k8s", help="With --emit: a Kubernetes Deployment manifest (YAML) of the best row instead of the command.")] = False,
    served_model: Annotated[Optional[str], typer.Option("--served-model", help="With --emit: the checkpoint the engine loads (a Hugging Face repo id; default a catalog model's repo from its config's source, else the --model as given).")] = None,
    fmt: Format = "table",
) -> None:
    """The Pareto frontier of tokens/s per user against tokens/s per GPU (or $ per million output
    tokens with prices) over accelerators, tp, pp, weights, KV dtype, batch and speculation, under a
    TTFT and TPOT target. Each row is a static batch as `llm-cost request` times it (its request_args
    give the same TTFT and TPOT there). Left out, the model, GPU, ISL and OSL are every command's
    (llama-3-8b, h100-sxm, 1024, 256, as `request`) and --gpus is 8 (one node); a note names them.
    """
    from llm_cost.commands import parse

    model, gpu, gpus, isl, osl, said = _defaults(model, gpu, gpus, isl, osl)  # `said` after the output: errors stay one line
    prof = with_engine(parse.profile(preset, mfu=mfu, bw_eff=bw_eff, fixed_ms=fixed_ms), engine, fixed_ms, mfu)
    if usable_memory is not None:  # the fits' memory, else the profile's
        prof = prof.with_(memory_basis="usable" if usable_memory else "marketed")
    spec, grid, target, refs = build(model=model, gpu=gpu, gpus=gpus, isl=isl, osl=osl, ttft_ms=ttft_ms, tpot_ms=tpot_ms,
                               tokens_per_s_per_user=tokens_per_s_per_user, spec_alpha=spec_alpha, c=c, draft=draft,
                               max_gamma=max_gamma, mtp_alpha=mtp_alpha, tp=tp, pp=pp, ep=ep, max_tp=max_tp,
                               weights=weights, kv_dtype=kv_dtype, batch=batch, profile=prof, dp_attention=dp_attention)
    refs["profile_args"] = _profile_args(preset, mfu, bw_eff, fixed_ms, engine)
    prices = prices_of(usd_per_gpu_hour, grid.space)
    from llm_cost.planner import plan

    result = plan(grid, target, usd_per_gpu_hour=prices)
    if disaggregate and emit_engine is not None:
        raise InvalidValueError("--emit takes the colocated frontier (one replica's launch command); drop "
                                "--disaggregate", params=("disaggregate",))
    if disaggregate and verify is None:
        _disaggregated(grid, target, result, prices, refs, spec, fmt)
        said()
        return
    from llm_cost.report.plan_rows import plan_rows

    emit_engine = _emit_choice(emit_engine, emit_k8s)
    rows = plan_rows(result, refs)
    for r in rows:  # a static batch per replica, one in flight (a pipeline's stages do not fill with one)
        r["users_in_flight"] = r["batch"] * r["replicas"]
    columns = PLAN_COLUMNS + ([PRICE_COLUMN] if prices else [])
    caption, interrupted = caption_of(result), False
    if verify is not None:
        from llm_cost.commands.plan_verify import VerifyOptions, verified

        o = VerifyOptions(verify, tuple(rate or ()), concurrency, prompt_len, output_len, arrivals, trace, requests,
                          seed, slo_stat, jobs, ray)
        splits = _splits(grid, target, prices, refs) if disaggregate else None
        rows, columns, caption, interrupted = verified(result, rows, columns, caption, target=target, o=o, splits=splits)
    emit(rows, columns, fmt, title=title_of(spec, grid, target), caption=caption)
    said()
    checkpoint = served_model or _checkpoint(spec, model)
    _after_table(rows, result, fmt, emit_engine, emit_k8s, checkpoint, grid.isl, interrupted, verify is not None)


def _after_table(rows, result, fmt, emit_engine, emit_k8s, served_model, isl, interrupted, served) -> None:
    """What follows the table: the best row as commands (or why there is none), its launch files, and
    exit 130 after a Ctrl-C (the candidates that finished are printed); `served`: rows of --verify."""
    if not rows:
        note("no configuration meets the target: " + caption_of(result))
    elif fmt.lower() in ("table", "markdown"):
        _best_as_commands(rows[0], pipelined=any(int(r.get("pp") or 1) > 1 for r in rows), served=served)
    if emit_engine is not None:
        _emit_best(rows, emit_engine, emit_k8s, served_model, isl)
    if interrupted:
        raise SystemExit(130)


def _profile_args(preset, mfu, bw_eff, fixed_ms, engine) -> list[str]:
    """request_args' profile: the preset (or file) as given, with the knobs given over it and the engine
    (`request --engine` prices the same fixed costs)."""
    args = ["--preset", preset] + [x for flag, v in (("--mfu", mfu), ("--bw-eff", bw_eff), ("--fixed-ms", fixed_ms))
                                   if v is not None for x in (flag, f"{v:g}")]
    return args + (["--engine", engine] if engine is not None else [])


def _defaults(model, gpu, gpus, isl, osl) -> tuple:
    """(model, gpu, gpus, isl, osl) with the ones left out set to every command's default (options.DEFAULT,
    DEFAULT_ISL and DEFAULT_OSL as `request`; DEFAULT_PLAN_GPUS, one node), and a function printing the
    note that names those used (called after the output: an error before it stays one line)."""
    given = dict(model=model, gpu=gpu or None, gpus=gpus, isl=isl, osl=osl)
    default = dict(model=DEFAULT.model, gpu=[DEFAULT.gpu], gpus=DEFAULT_PLAN_GPUS, isl=DEFAULT_ISL, osl=DEFAULT_OSL)
    used = " ".join(f"--{k} {v[0] if isinstance(v, list) else v}" for k, v in default.items() if given[k] is None)

    def said() -> None:
        if used:
            note(f"defaults used: {used} (give any of them to change it)")
    return (*(default[k] if given[k] is None else given[k] for k in default), said)


def _best_as_commands(best: dict, pipelined: bool = False, served: bool = False) -> None:
    """The notes under the table: what a pipeline's row holds in flight, and the best row as `llm-cost
    request` (a disaggregated row: one per pool), each command whole on its own line, never wrapped (a
    wrapped line pasted into a shell runs only its first part)."""
    import sys

    from llm_cost.report.render import print_notes

    if pipelined:
        print_notes([PIPELINE_NOTE + (SERVED_PIPELINE_NOTE if served else "")])
    if best.get("request_args"):
        print_notes(["The best row as one command:"])
        sys.stdout.write(f"llm-cost request {best['request_args']}\n")
        return
    print_notes(["The best row's pools as commands (prefill, then decode):"])
    sys.stdout.write(f"llm-cost request {best['prefill_request_args']}\n"
                     f"llm-cost request {best['decode_request_args']}\n")


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


def _splits(grid, target, prices, refs) -> tuple:
    """(the best prefill/decode splits, their `disaggregated_rows`) of `plan --disaggregate`."""
    from llm_cost.planner import best_split
    from llm_cost.report.plan_rows import disaggregated_rows

    splits, _ = best_split(grid, target)
    return splits, disaggregated_rows(grid, splits, prices, refs)


def _disaggregated(grid, target, result, prices, refs, spec, fmt) -> None:
    """`plan --disaggregate`: the best prefill/decode split per accelerator, rendered."""
    from llm_cost.planner import best_split
    from llm_cost.report.plan_rows import disaggregated_rows

    splits, missing = best_split(grid, target)
    rows = disaggregated_rows(grid, splits, prices, refs)
    columns = SPLIT_COLUMNS + ([PRICE_COLUMN] if prices else [])
    emit(rows, columns, fmt, title="Disaggregated " + title_of(spec, grid, target),
         caption=caption_of(result) + "; prefill and decode pools of one accelerator, the K/V moved over its "
                 "interconnect; colocated: the best single pool on the same GPUs"
                 + (f"; {missing['no_split']} accelerator(s) with no split that meets both targets"
                    if missing["no_split"] else ""))
    if not rows:
        note("no split of the GPUs into a prefill and a decode pool meets the target: " + caption_of(result))


def _checkpoint(spec, model: str) -> str:
    """What `--emit` names as the engine's checkpoint without --served-model: a catalog model's Hugging
    Face repo (its config's source), else the --model as given (a path or a repo id)."""
    from llm_cost.planner.emit import hub_repo

    return hub_repo(spec.source) or model


def _emit_best(rows, emit_engine, emit_k8s, name, isl) -> None:
    """`plan --emit`: the best row's launch command or Kubernetes manifest, on stdout."""
    if not rows:
        raise InvalidValueError("--emit: no configuration meets the target, nothing to deploy", params=("emit",))
    from llm_cost.planner.emit import k8s_deployment, launch_command

    text = (k8s_deployment(rows[0], emit_engine, name, isl) if emit_k8s
            else launch_command(rows[0], emit_engine, name, isl) + "\n")
    import sys

    sys.stdout.write(text)


def build(*, model, gpu, gpus, isl, osl, ttft_ms, tpot_ms, tokens_per_s_per_user, spec_alpha, c, draft, max_gamma,
          mtp_alpha, tp, pp, max_tp, weights, kv_dtype, batch, profile, ep=None, dp_attention=False):
    """(model spec, evaluated `plan.Grid`, `plan.Target`, refs) from the command's options; refs maps each
    model's and accelerator's name to the text the user gave for it."""
    from llm_cost.catalog import load_accelerator, load_model
    from llm_cost.commands import parse
    from llm_cost.errors import check_number
    from llm_cost.planner import Target, evaluate, plan_space
    from llm_cost.planner.space import DEFAULT_BATCHES, DEFAULT_KV_DTYPES, DEFAULT_WEIGHTS, SpecOption

    for name, value in (("model", model), ("gpu", gpu), ("gpus", gpus), ("isl", isl), ("osl", osl)):
        if value is None or value == []:
            raise InvalidValueError(f"{name} is required: the plan needs " + {
                "model": "a model to serve", "gpu": "at least one accelerator to search",
                "gpus": "the number of GPUs it may use", "isl": "the prompt length",
                "osl": "the output length"}[name], params=(name,))
    target = Target(ttft_s=parse.seconds("ttft_ms", ttft_ms, positive=True),
                    tpot_s=parse.seconds("tpot_ms", tpot_ms, positive=True),
                    tokens_per_s_per_user=tokens_per_s_per_user)
    spec = load_model(model)
    accelerators = [load_accelerator(g) for g in dict.fromkeys(gpu)]
    refs = {spec.name: model, **{a.name: g for a, g in zip(accelerators, dict.fromkeys(gpu))}}
    speculation = []
    if spec_alpha is not None:
        check_number("max_gamma", max_gamma, low=1, high=64, integer=True)
        if c is not None and draft is not None:
            raise InvalidValueError("--c and --draft exclude each other: the draft's cost is one or the other")
        from llm_cost.speculative import check_alpha

        check_alpha(spec_alpha)
        draft_spec = load_model(draft) if draft is not None else None
        if draft_spec is not None:
            refs[draft_spec.name] = draft
        if c is not None:
            check_number("c", c, low=0, high=10)
        speculation.append(SpecOption("draft", float(spec_alpha), tuple(range(1, int(max_gamma) + 1)),
                                      c=None if draft_spec else (0.1 if c is None else float(c)), draft=draft_spec))
    elif c is not None or draft is not None:
        raise InvalidValueError("--c and --draft describe the draft of speculative decoding: add --spec-alpha")
    if spec.mtp_layers:
        check_number("mtp_alpha", mtp_alpha, low=0, high=1)
        speculation.append(SpecOption("mtp", float(mtp_alpha), (1,)))
    space = plan_space(spec, accelerators, gpus, tps=tp, pps=pp, max_tp=max_tp, weights=weights or DEFAULT_WEIGHTS,
                       kv_dtypes=kv_dtype or DEFAULT_KV_DTYPES, batches=batch or DEFAULT_BATCHES,
                       speculation=speculation, eps=ep, dp_attention=dp_attention)
    return spec, evaluate(space, profile, isl=isl, osl=osl), target, refs


def prices_of(texts, space) -> dict:
    """`--usd-per-gpu-hour GPU=PRICE ...` as {accelerator name: price}: each GPU one of the search's
    (catalog name or datasheet name), PRICE alone when the search has one accelerator."""
    from llm_cost.catalog import load_accelerator
    from llm_cost.errors import check_number

    names = list(dict.fromkeys(g.gpu.name for g in space.groups))
    searched = {g.gpu.name for g in space.groups}
    out = {}
    for text in texts or []:
        key, sep, value = str(text).rpartition("=")
        if not sep:
            if len(names) != 1:
                raise InvalidValueError(f"--usd-per-gpu-hour {text}: name the accelerator, GPU=PRICE, when the "
                                        f"search has several")
            key, value = names[0], text
        try:
            price = float(value)
        except ValueError:
            raise InvalidValueError(f"--usd-per-gpu-hour must be GPU=PRICE like h100-sxm=2.5, got {text!r}") from None
        check_number(f"--usd-per-gpu-hour {text}: the price", price, low=0, high=1e6)
        try:
            name = load_accelerator(key).name if key not in searched else key
        except InvalidValueError:
            name = key
        if name not in searched:
            raise InvalidValueError(f"--usd-per-gpu-hour {text}: {key} is not an accelerator of the search "
                                    f"({', '.join(sorted(searched))})")
        out[name] = price
    if out and set(out) != searched:
        missing = sorted(searched - set(out))
        raise InvalidValueError(f"--usd-per-gpu-hour: give a price for every accelerator searched or none; "
                                f"missing {', '.join(missing)}")
    return out


def title_of(spec, grid, target) -> str:
    gpus = ", ".join(dict.fromkeys(g.gpu.name for g in grid.space.groups)) or "no accelerator that runs it"
    bounds = []
    if target.ttft_s is not None:
        bounds.append(f"TTFT <= {target.ttft_s * 1e3:g} ms")
    if target.tpot_s is not None:
        bounds.append(f"TPOT <= {target.tpot_s * 1e3:g} ms")
    if target.tokens_per_s_per_user is not None:
        bounds.append(f">= {target.tokens_per_s_per_user:g} tok/s/user")
    return (f"Plan: {spec.name}, ISL {grid.isl}, OSL {grid.osl}, up to {grid.space.budget} x {gpus}; "
            f"target {', '.join(bounds) or 'none'}")


def caption_of(result) -> str:
    """How many configurations were searched, did not fit, missed the target (and which part), met
    it; what the space left out; which profile the times come from."""
    k, p = result.counts, result.grid.profile
    left = []
    if k.get("left_out_split"):
        left.append(f"{k['left_out_split']:,} on splits the model or chip cannot take")
    if k.get("left_out_format"):
        left.append(f"{k['left_out_format']:,} in formats the chip does not run")
    ranked = "$ per million output tokens" if result.usd_per_gpu_hour else "tokens/s per GPU"
    text = (f"searched {k['searched']:,} configurations: {k['not_fit']:,} do not fit, {k['missed']:,} miss the target "
            f"(TTFT {k['missed_ttft']:,}, TPOT or tok/s/user {k['missed_decode']:,}), {k['meet']:,} meet it; "
            f"frontier {k['frontier']} (tokens/s per user against {ranked}, best first)")
    if left:
        text += "; left out " + ", ".join(left)
    return (text + f"; times from preset {p.name} (bandwidth {p.bw_efficiency:g}, MFU {p.compute_efficiency:g}, "
                   f"{p.fixed_time_s * 1e3:g} ms per pass), static batches as `llm-cost request` times them")
