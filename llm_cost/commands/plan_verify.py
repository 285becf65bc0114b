"""`plan --verify N`: the frontier's N best rows served by the engine (`planner.verify`), ranked by
goodput per GPU at the SLO, the analytic figures beside the served ones and the rank change. Kept
out of `commands/plan.py` so that module stays readable; only `plan` calls it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from llm_cost.report.render import Column, fixed

if TYPE_CHECKING:  # annotations only
    from llm_cost.commands.plan_options import PlanOptions

VERIFY_COLUMNS = [
    Column("analytic_rank", "static rank", fixed(0)),
    Column("rank_change", "rank change", str),
    Column("served_ttft_s", "served TTFT ms", fixed(0, 1e-3)),
    Column("served_tpot_s", "served TPOT ms", fixed(2, 1e-3)),
    Column("goodput_req_per_s_per_gpu", "goodput req/s per GPU", fixed(3)),
    Column("meets_served_slo", "served SLO", lambda met: "yes" if met else "NO"),
]


@dataclass(frozen=True)
class VerifyOptions:
    """`plan --verify`'s options, as the library takes them: how many rows (`n`), the served workload (the
    planner's `WorkloadRecipe`), how the engine serves (`ServeSettings`: `--engine`'s defaults, prefix
    caching, offload), the SLO percentile and the executor (`jobs`, `ray`)."""

    n: int
    workload: object  # a planner.verify.WorkloadRecipe
    settings: object  # a planner.verify.ServeSettings
    slo_stat: str = "p99"
    jobs: int | None = None
    ray: str | None = None


# `plan`'s options that only --verify reads (`options_of`; `plan` names those given without --verify)
SERVED_OPTIONS = ("rate", "concurrency", "prompt_len", "output_len", "arrivals", "trace", "requests", "seed",
                  "prefixes", "slo_stat", "jobs", "ray", "prefix_caching", "kv_offload_bytes")


def options_of(options: PlanOptions, isl: int, osl: int) -> VerifyOptions:
    """The `VerifyOptions` of `plan`'s `options` (its parameters by name; --verify N is `verify`; the
    lengths default to --isl / --osl), checked: N and the percentile first, then the workload."""
    from llm_cost.errors import check_choice, check_number
    from llm_cost.planner.verify import SLO_STATS

    check_number("verify", options.verify, low=1, high=10_000, integer=True)
    stat = check_choice("slo_stat", options.slo_stat, ("median", *SLO_STATS))  # median: p50, as batching's
    stat = "p50" if stat == "median" else stat
    return VerifyOptions(int(options.verify), recipe_of(options, isl, osl), serve_settings(options), stat,
                         options.jobs, options.ray)


def serve_settings(options: PlanOptions):
    """The `planner.verify.ServeSettings` of `plan`'s `options` (--engine, --prefix-caching,
    --kv-offload-bytes), checked: the one place `plan` builds them."""
    from llm_cost.planner.verify import ServeSettings

    return ServeSettings(options.engine, options.prefix_caching, options.kv_offload_bytes)


def recipe_of(options: PlanOptions, isl: int, osl: int):
    """The `WorkloadRecipe` of `plan`'s workload `options` (lengths default to --isl / --osl)."""
    from llm_cost.errors import InvalidValueError
    from llm_cost.planner.verify import WorkloadRecipe

    rates = list(options.rate or [])
    if len(rates) > 1:
        raise InvalidValueError("--verify serves one workload: give --rate once", params=("rate",))
    if rates and options.concurrency is not None:
        raise InvalidValueError("give --rate (open loop) or --concurrency (closed loop), not both",
                                params=("rate", "concurrency"))
    trace = None
    if options.trace is not None:
        from llm_cost.serving.workload_spec import read_trace

        trace = read_trace(options.trace)
    return WorkloadRecipe(requests=options.requests, rate_req_per_s=rates[0] if rates else None,
                          concurrency=options.concurrency, prompt=options.prompt_len or str(isl),
                          output=options.output_len or str(osl), arrivals=options.arrivals, seed=options.seed,
                          trace=trace, prefixes=options.prefixes)


def settings_of(options: VerifyOptions, candidates) -> tuple:
    """(the `ServeSettings` of the options, the caption's part saying how the engine served), checked on
    the first candidate: an engine that cannot serve them, or prefix caching on unpaged K/V, is one line
    before anything is served."""
    from llm_cost.planner.verify import replica_and_config

    settings = options.settings
    if not candidates:
        return settings, ""
    first = getattr(candidates[0], "candidate", candidates[0])  # a split's decode pool
    _, config = replica_and_config(first, settings)
    out = (f"; served with {settings.engine}'s defaults on {first.gpu.name}" if settings.engine is not None
           else "; served")
    out += (f": K/V paged in blocks of {config.block_size}" if config.reservation == "paged"
            else ": K/V contiguous per sequence (its max length reserved)")
    out += f", prompts in chunks of {config.prefill_chunk} tokens" if config.prefill_chunk else ", whole prompts"
    out += ", max sequences the row's batch (as its launch command sets it)"
    if settings.prefix_caching:
        out += ", prefix caching"
    if settings.kv_offload_bytes:
        out += f", a host K/V tier of {settings.kv_offload_bytes / 1e9:g} GB"
    return settings, out


def past_context(recipe, model) -> str:
    """The warning (as `batching`'s) when requests of the served stream are longer, prompt + output,
    than the model's context (its max_position_embeddings; 0: unknown, not checked); "" when none is.
    They are served all the same, as `batching` serves them."""
    import numpy as np

    limit = int(getattr(model, "max_position_embeddings", 0) or 0)
    wl = recipe.stream()
    totals = np.asarray(wl.prompt, dtype=np.int64) + np.asarray(wl.output, dtype=np.int64)
    past = int((totals > limit).sum()) if limit else 0
    if not past:
        return ""
    return (f"does not fit: {past:,} of {len(totals):,} requests, of up to {int(totals.max()):,} tokens (prompt + "
            f"output), exceed the model's context of {limit:,} tokens (the times assume it does)")


def pools_label(prefill_replicas: int, pre, decode_replicas: int, dec) -> str:
    """A disaggregated row's "tp x pp" cell: both pools, replicas x their split ('P 3 x tp1, D 1 x tp2';
    a pool with pipeline stages adds 'pp N').

    >>> from llm_cost.specs.deployment import Deployment
    >>> pools_label(3, Deployment(tp=1), 1, Deployment(tp=2, pp=2))
    'P 3 x tp1, D 1 x tp2 pp2'
    """
    def one(replicas, dep):
        return f"{replicas} x tp{dep.tp}" + (f" pp{dep.pp}" if dep.pp > 1 else "")
    return f"P {one(prefill_replicas, pre)}, D {one(decode_replicas, dec)}"


def split_plan_row(row: dict, split, osl: int) -> dict:
    """A disaggregated plan row (`disaggregated_rows`) in the plan table's columns, as `split` (a
    `SplitCandidate`) serves it: P prefill replicas of the prefill pool's split and D decode replicas of
    the decode pool's (both labelled, `pools_label`), the decode's batch."""
    cand = split.candidate
    pre = (split.prefill or cand).deployment
    prefills, decodes = split.prefill_replicas, split.decode_replicas
    return {**row, "replicas": prefills + decodes, "prefill_replicas": prefills, "decode_replicas": decodes,
            "split": pools_label(prefills, pre, decodes, cand.deployment), "batch": cand.batch,
            "users_in_flight": decodes * cand.batch, "output_tokens_per_s_per_user": osl / row["e2e_s"],
            "request_args": None}


def verified(result, rows: list[dict], columns: list, caption: str, *, target, options: VerifyOptions,
             splits=None):
    """(rows reordered by the served ranking with the served fields, columns, caption, (served, candidates)
    after a Ctrl-C or None); `splits`: (`best_split`'s splits, their rows) served disaggregated after the
    frontier's rows and ranked with them. Ctrl-C keeps the candidates that finished (the caption says how
    many); before any finished, one line on stderr and exit 130."""
    from llm_cost.commands.progress import SweepProgress
    from llm_cost.errors import InvalidValueError
    from llm_cost.executor import Interrupted
    from llm_cost.planner.verify import ServeTask, candidates_of, split_candidates, verify

    stat, recipe = options.slo_stat, options.workload
    cands = candidates_of(result, rows, options.n)
    rows = rows[:options.n]
    if splits is not None:
        if recipe.concurrency is not None:
            raise InvalidValueError("--disaggregate --verify serves open-loop arrivals (the router of the pools): "
                                    "give --rate or --trace, not --concurrency", params=("disaggregate",))
        more = split_candidates(result.grid, *splits)
        cands += more
        rows = rows + [split_plan_row(row, candidate, result.grid.osl) for row, candidate in zip(splits[1], more)]
    settings, served_as = settings_of(options, cands)
    if cands and (past := past_context(recipe, getattr(cands[0], "candidate", cands[0]).model)):
        from llm_cost.commands.app import warn

        warn(past)
    tasks = [ServeTask(candidate, recipe, target.ttft_s, target.tpot_s, stat, settings) for candidate in cands]
    stopped, kept = None, list(range(len(tasks)))  # kept: the analytic ranks (0-based) served
    with SweepProgress(f"serving {len(tasks)} candidates") as progress:
        try:
            served = verify(tasks, jobs=options.jobs, ray=options.ray, on_done=progress)
        except Interrupted as stop:
            if not stop.done:
                import typer

                from llm_cost.commands.app import EXIT_INTERRUPTED, warn

                warn(f"interrupted: 0 of {len(tasks)} candidates served; nothing to show")
                raise typer.Exit(EXIT_INTERRUPTED)
            stopped, kept = (len(stop.done), len(tasks)), sorted(stop.done)
            served, rows = [stop.done[rank] for rank in kept], [rows[rank] for rank in kept]
    out = ranked(rows, served, kept, stat)
    caption += _caption(recipe, len(out), stat, splits is not None) + served_as
    if stopped:
        caption += f"; interrupted: {len(out)} of {stopped[1]} candidates served"
    cols = [Column("served_rank", "rank", fixed(0))] + columns + VERIFY_COLUMNS
    if any(row.get("serve_note") for row in out):
        cols.append(Column("serve_note", "served as", str))
    return out, cols, caption, stopped


def ranked(rows: list[dict], served: list[dict], kept: list[int], stat: str) -> list[dict]:
    """The rows with their served fields in the served ranking (`served_ranking`), each with its frontier
    rank (`kept`: the 0-based analytic ranks of the rows), its served rank and the change."""
    from llm_cost.planner.verify import served_ranking

    out = []
    for new, index in enumerate(served_ranking(served)):
        row, fields = dict(rows[index]), served[index]
        row.update(fields)
        row["served_ttft_s"] = fields.get(f"served_ttft_{stat}_s")
        row["served_tpot_s"] = fields.get(f"served_tpot_{stat}_s")
        row["analytic_rank"], row["served_rank"] = kept[index] + 1, new + 1  # the frontier's rank, not the kept list's
        moved = kept[index] - new
        row["rank_change"] = "=" if moved == 0 else (f"+{moved}" if moved > 0 else str(moved))
        out.append(row)
    return out


def _caption(wl, served: int, stat: str, split: bool) -> str:
    """The caption's part on how the candidates were served: one stream for all, the ranking."""
    load = (f"rate {wl.rate_req_per_s:g} req/s" if wl.rate_req_per_s is not None else
            f"{wl.concurrency} clients" if wl.concurrency is not None else "the trace's rate")
    stream = f"{wl.requests} requests" if wl.trace is None else f"the trace's {len(wl.trace)} requests"
    prefixed = any(getattr(wl.prefixes, field, None) is not None
                   for field in ("shared_prefix", "prefix_groups", "sessions"))
    stream += (" (the trace's prompt and output lengths" if wl.trace is not None else
               f" (prompt {wl.prompt} tokens, output {wl.output} tokens") + (
               ", prompts grown by their prefixes)" if prefixed else ")")
    text = (f"; verified: the {served} best served by the engine, "
            f"every one the same stream of {stream} at {load} (seed {wl.seed}), its replicas taking them "
            f"round-robin (one replica served); ranked by goodput per GPU (requests/s within TTFT and TPOT) with "
            f"the {stat} of TTFT and TPOT within the target first; served TTFT/TPOT are {stat}")
    if split:
        text += ("; disaggregated splits served as P prefill and D decode replicas behind least-loaded routers "
                 "(the whole stream, the K/V over the GPU's link), static rank after the frontier's")
    return text
