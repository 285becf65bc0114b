"""A plan's served check (`PlanRequest.verify` N): the frontier's N best rows, and with `disaggregate` the
best prefill/decode splits, served by the engine under one workload (`verify.verify`), their rows given the
served fields and put in the served ranking (`ranked`). `plan_run.run_plan` calls `served_check`; what
it served comes back as a `ServedCheck` for the caller to render (the caption's words are the CLI's)."""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

from llm_cost.errors import InvalidValueError, check_choice


@dataclass(frozen=True)
class ServedCheck:
    """What a served check did: the `verify.WorkloadRecipe` served, the `verify.ServeSettings`, the
    first candidate's `ServeConfig` and accelerator (None without candidates: how the engine served),
    the SLO percentile, whether splits were served, and after a Ctrl-C (served, candidates)."""

    recipe: object
    settings: object
    config: object
    gpu: object
    slo_stat: str
    splits: bool
    stopped: tuple[int, int] | None = None


def serve_settings(request):
    """The `verify.ServeSettings` of a `PlanRequest` (`engine`, `prefix_caching`, `kv_offload_bytes`),
    checked: the one place a plan builds them.

    >>> from llm_cost.planner.plan_request import PlanRequest
    >>> serve_settings(PlanRequest(engine="vllm", prefix_caching=True))
    ServeSettings(engine='vllm', prefix_caching=True, kv_offload_bytes=0.0)
    """
    from llm_cost.planner.verify import ServeSettings

    return ServeSettings(request.engine, request.served("prefix_caching"), request.served("kv_offload_bytes"))


def recipe_of(request, isl: int, osl: int):
    """The `verify.WorkloadRecipe` of a `PlanRequest`'s served workload (lengths default to `isl` and
    `osl`; what is not given, `plan_request.SERVED_DEFAULTS`).

    >>> from llm_cost.planner.plan_request import PlanRequest
    >>> wl = recipe_of(PlanRequest(rate=(2.0,), requests=50), 1024, 128)
    >>> wl.rate_req_per_s, wl.requests, wl.prompt, wl.output, wl.arrivals, wl.seed
    (2.0, 50, '1024', '128', 'poisson', 0)
    """
    from llm_cost.planner.verify import WorkloadRecipe
    from llm_cost.serving.prefixes import PromptPrefixes

    rates = list(request.rate or [])
    if len(rates) > 1:
        raise InvalidValueError("verify serves one workload: give rate once", params=("verify", "rate"))
    if rates and request.concurrency is not None:
        raise InvalidValueError("give rate (open loop) or concurrency (closed loop), not both",
                                params=("rate", "concurrency"))
    trace = None
    if request.trace is not None:
        from llm_cost.serving.workload_spec import read_trace

        trace = read_trace(request.trace)
    return WorkloadRecipe(requests=request.served("requests"), rate_req_per_s=rates[0] if rates else None,
                          concurrency=request.concurrency, prompt=request.prompt_len or str(isl),
                          output=request.output_len or str(osl), arrivals=request.served("arrivals"),
                          seed=request.served("seed"), trace=trace, prefixes=request.prefixes or PromptPrefixes())


def slo_stat_of(request) -> str:
    """The served SLO's percentile (median: p50, as batching's; not given: p99), `verify`'s N checked
    before it.

    >>> from llm_cost.planner.plan_request import PlanRequest
    >>> slo_stat_of(PlanRequest(verify=3)), slo_stat_of(PlanRequest(verify=3, slo_stat="median"))
    ('p99', 'p50')
    """
    from llm_cost.planner.verify import SLO_STATS

    # `verify` and `slo_stat` were checked when the request was built (`plan_request.check_request`);
    # check_choice here gives the statistic's canonical spelling
    stat = check_choice("slo_stat", request.served("slo_stat"), ("median", *SLO_STATS))
    return "p50" if stat == "median" else stat


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


def served_check(request, result, rows: list[dict], target, settings, *, splits=None, progress=None,
                 on_warning=None) -> tuple[list[dict], ServedCheck]:
    """(rows served, in the served ranking with the served fields; the `ServedCheck`) of a `PlanRequest`
    with `verify` N: the first N of the frontier's `rows` (`result` a `Plan`), and `splits` ((`best_split`'s
    splits, their `disaggregated_rows`)) served disaggregated after them. `progress(label)` gives the
    context whose value is told (done, total) as tasks finish; `on_warning(line)` is told a past-context
    warning before anything is served. A Ctrl-C keeps the candidates that finished (`ServedCheck.stopped`); none: no rows."""
    from llm_cost.executor import Interrupted
    from llm_cost.planner.verify import ServeTask, candidates_of, replica_and_config, split_candidates, verify

    stat = slo_stat_of(request)
    recipe = recipe_of(request, result.grid.isl, result.grid.osl)
    cands = candidates_of(result, rows, request.verify)
    rows = rows[:request.verify]
    if splits is not None:
        if recipe.concurrency is not None:
            raise InvalidValueError("disaggregate verify serves open-loop arrivals (the router of the pools): "
                                    "give rate or trace, not concurrency",
                                    params=("disaggregate", "verify", "rate", "trace", "concurrency"))
        more = split_candidates(result.grid, *splits)
        cands += more
        rows = rows + [split_plan_row(row, candidate, result.grid.osl) for row, candidate in zip(splits[1], more)]
    first = getattr(cands[0], "candidate", cands[0]) if cands else None  # a split's decode pool
    check = ServedCheck(recipe, settings, replica_and_config(first, settings)[1] if first else None,
                        first.gpu if first else None, stat, splits is not None)
    if first is not None and (past := past_context(recipe, first.model)) and on_warning is not None:
        on_warning(past)
    tasks = [ServeTask(candidate, recipe, target.ttft_s, target.tpot_s, stat, settings) for candidate in cands]
    kept = list(range(len(tasks)))  # the analytic ranks (0-based) served
    with (progress or (lambda label: nullcontext()))(f"serving {len(tasks)} candidates") as on_done:
        try:
            served = verify(tasks, jobs=request.jobs, ray=request.ray, on_done=on_done)
        except Interrupted as stop:
            check = ServedCheck(**{**check.__dict__, "stopped": (len(stop.done), len(tasks))})
            if not stop.done:
                return [], check
            kept = sorted(stop.done)
            served, rows = [stop.done[rank] for rank in kept], [rows[rank] for rank in kept]
    return ranked(rows, served, kept, stat), check
