"""`plan --verify N`: the frontier's N best rows served by the engine (`planner.verify`), ranked by
goodput per GPU at the SLO, the analytic figures beside the served ones and the rank change. Kept
out of `commands/plan.py` so that module stays readable; only `plan` calls it."""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.report.render import Column, fixed

VERIFY_COLUMNS = [
    Column("analytic_rank", "static rank", fixed(0)),
    Column("rank_change", "rank change", str),
    Column("served_ttft_s", "served TTFT ms", fixed(0, 1e-3)),
    Column("served_tpot_s", "served TPOT ms", fixed(2, 1e-3)),
    Column("goodput_req_per_s_per_gpu", "goodput req/s per GPU", fixed(3)),
    Column("meets_served_slo", "served SLO", lambda v: "yes" if v else "NO"),
]


@dataclass(frozen=True)
class VerifyOptions:
    """`plan --verify`'s options as given: how many rows, the served workload (rates in req/s, clients,
    length specs, arrivals, a trace path, requests per replica, seed), the SLO percentile, the executor."""

    n: int
    rate: tuple = ()
    concurrency: int | None = None
    prompt_len: str | None = None
    output_len: str | None = None
    arrivals: str = "poisson"
    trace: str | None = None
    requests: int = 2000
    seed: int = 0
    slo_stat: str = "p99"
    jobs: int | None = None
    ray: str | None = None


def recipe_of(o: VerifyOptions, isl: int, osl: int):
    """The `WorkloadRecipe` of the plan's workload options (lengths default to --isl / --osl)."""
    from llm_cost.errors import InvalidValueError
    from llm_cost.planner.verify import WorkloadRecipe

    rates = list(o.rate or [])
    if len(rates) > 1:
        raise InvalidValueError("--verify serves one workload: give --rate once", params=("rate",))
    if rates and o.concurrency is not None:
        raise InvalidValueError("give --rate (open loop) or --concurrency (closed loop), not both",
                                params=("rate", "concurrency"))
    trace = None
    if o.trace is not None:
        from llm_cost.serving.workload_spec import read_trace

        trace = read_trace(o.trace)
    return WorkloadRecipe(requests=o.requests, rate_req_per_s=rates[0] if rates else None,
                          concurrency=o.concurrency, prompt=o.prompt_len or str(isl),
                          output=o.output_len or str(osl), arrivals=o.arrivals, seed=o.seed, trace=trace)


def split_plan_row(row: dict, split, osl: int) -> dict:
    """A disaggregated plan row (`disaggregated_rows`) in the plan table's columns, as `split` (a
    `SplitCandidate`) serves it: P + D replicas of one tp x pp, the decode's batch."""
    cand = split.candidate
    dep, p, d = cand.deployment, split.prefill_replicas, split.decode_replicas
    return {**row, "replicas": p + d, "split": f"P:D {p}:{d} of {dep.tp} x {dep.pp}", "batch": cand.batch,
            "users_in_flight": d * cand.batch, "output_tokens_per_s_per_user": osl / row["e2e_s"],
            "request_args": None}


def verified(result, rows: list[dict], columns: list, caption: str, *, target, o: VerifyOptions, splits=None):
    """(rows reordered by the served ranking with the served fields, columns, caption); `splits`:
    (`best_split`'s splits, their rows) served disaggregated after the frontier's rows and ranked with
    them. Ctrl-C keeps the candidates that finished (the caption says how many)."""
    from llm_cost.commands.app import note
    from llm_cost.commands.progress import SweepProgress
    from llm_cost.errors import InvalidValueError, check_choice, check_number
    from llm_cost.executor import Interrupted
    from llm_cost.planner.verify import (SLO_STATS, ServeTask, candidates_of, served_ranking, split_candidates,
                                         verify)

    check_number("verify", o.n, low=1, high=10_000, integer=True)
    n = int(o.n)
    stat = check_choice("slo_stat", o.slo_stat, SLO_STATS)
    recipe = recipe_of(o, result.grid.isl, result.grid.osl)
    cands = candidates_of(result, rows, n)
    rows = rows[:n]
    if splits is not None:
        if recipe.concurrency is not None:
            raise InvalidValueError("--disaggregate --verify serves open-loop arrivals (the router of the pools): "
                                    "give --rate or --trace, not --concurrency", params=("disaggregate",))
        more = split_candidates(result.grid, *splits)
        cands += more
        rows = rows + [split_plan_row(r, c, result.grid.osl) for r, c in zip(splits[1], more)]
    tasks = [ServeTask(c, recipe, target.ttft_s, target.tpot_s, stat) for c in cands]
    interrupted, kept = False, list(range(len(tasks)))  # kept: the analytic ranks (0-based) served
    with SweepProgress(f"serving {len(tasks)} candidates") as progress:
        try:
            served = verify(tasks, jobs=o.jobs, ray=o.ray, on_done=progress)
        except Interrupted as stop:
            interrupted, done = True, stop.done
            kept = sorted(done)
            served = [done[k] for k in kept]
            tasks = [tasks[k] for k in kept]
            rows = [rows[k] for k in kept]
            if not done:
                note("interrupted before any candidate finished")
                raise SystemExit(130)
    picked = rows[:len(tasks)] if not interrupted else rows
    out = []
    order = served_ranking(served)
    for new, k in enumerate(order):
        row = dict(picked[k])
        s = served[k]
        row.update(s)
        row["served_ttft_s"], row["served_tpot_s"] = s.get(f"served_ttft_{stat}_s"), s.get(f"served_tpot_{stat}_s")
        row["analytic_rank"], row["served_rank"] = kept[k] + 1, new + 1  # the frontier's rank, not the kept list's
        moved = kept[k] - new
        row["rank_change"] = "=" if moved == 0 else (f"+{moved}" if moved > 0 else str(moved))
        out.append(row)
    wl = tasks[0].workload if tasks else recipe
    load = (f"rate {wl.rate_req_per_s:g} req/s" if wl.rate_req_per_s is not None else
            f"{wl.concurrency} clients" if wl.concurrency is not None else "the trace's rate")
    caption += (f"; verified: the {len(out)} best served by the engine (paged K/V, the row's batch as max sequences) "
                f"under {load} split evenly over the replicas, {wl.requests if wl.trace is None else 'the trace'} "
                f"requests per replica, seed {wl.seed}; ranked by goodput per GPU (requests/s within TTFT and TPOT) "
                f"with the {stat} of TTFT and TPOT within the target first; served TTFT/TPOT are {stat}")
    if interrupted:
        caption += f"; interrupted: {len(out)} candidate(s) finished"
        note(f"interrupted: showing the {len(out)} candidate(s) that finished")
    if splits is not None:
        caption += ("; disaggregated splits served as P prefill and D decode replicas behind least-loaded routers "
                    f"(the whole rate, {wl.requests if wl.trace is None else 'the trace'} requests per replica, the "
                    "K/V over the GPU's link), static rank after the frontier's")
    cols = [Column("served_rank", "rank", fixed(0))] + columns + VERIFY_COLUMNS
    if any(r.get("serve_note") for r in out):
        cols.append(Column("serve_note", "served as", str))
    return out, cols, caption, interrupted
