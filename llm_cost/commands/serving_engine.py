"""`batching`'s rendering of what `serving.batching_run.run_batching` served (issue 24.4: the command
parses its options into a `BatchingRequest`, calls the library, and renders here): every run's row
from one builder (`serving_rows.serve_row`) with the same keys, columns and title whichever path of
`engine.serve` ran it (tails, goodput, K/V used, reserved and written, preemptions), the energy and
price columns, the title and caption; a fleet's replicas (`serving_fleet`), disaggregated pools
(`serving_pools`) and the prefix-caching comparison (`serving_prefix`) beside it. Only `batching` calls it."""

from __future__ import annotations

from llm_cost.commands.serving_common import LATENCY_COLUMNS, RATE_COLUMNS
from llm_cost.report.render import Column, fixed

# every run's columns, whichever path of `serve` ran it: the tails, goodput, K/V used, reserved and
# written ("-" where a quantity does not apply: reserved under paged), preemptions, the deadlock
SERVE_COLUMNS = [
    Column("scheduler", "scheduler"),
    Column("reservation", "KV policy"),
    Column("max_batch", "max batch"),
    *RATE_COLUMNS,
    Column("goodput_req_per_s", "goodput (req/s)", fixed(2)),
    *LATENCY_COLUMNS,
    Column("e2e_p99_s", "e2e p99 (s)", fixed(2)),
    Column("latency_per_token_median_s", "median (ms/token)", fixed(1, 1e-3)),
    Column("latency_per_token_p90_s", "p90 (ms/token)", fixed(1, 1e-3)),
    Column("latency_per_token_p99_s", "p99 (ms/token)", fixed(1, 1e-3)),
    Column("kv_utilisation", "KV used (%)", fixed(1, 0.01)),
    Column("kv_reserved_mean_tokens", "KV reserved (tokens)", fixed(0)),
    Column("kv_written_mean_tokens", "KV written (tokens)", fixed(0)),
    Column("kv_reserved_over_written", "reserved/written", fixed(2)),
    Column("preemptions", "preempted", fixed(0)),
    Column("mean_batch", "mean batch", fixed(1)),
    Column("finished", "finished", fixed(0)),
    Column("deadlock", "deadlock", lambda deadlock: "-" if deadlock is None else ("yes" if deadlock else "no")),
]
PREFIX_COLUMNS = [Column("prefix_token_hit_rate", "prefix hit (tok)", fixed(3)),
                  Column("prefix_request_hit_rate", "prefix hit (req)", fixed(3)),
                  Column("prefill_tokens_saved", "prefill tok saved", fixed(0))]
SPEC_COLUMNS = [Column("mean_gamma", "mean gamma", fixed(2)), Column("tokens_per_round", "tokens/round", fixed(2))]
DRAFT_COLUMNS = [Column("draft_weight_bytes", "draft weights (GB)", fixed(2, 1e9)),
                 Column("sequences_lost_to_draft", "seqs lost to draft", fixed(0))]


# each mode's progress bar (`BatchingRequest.mode`; disaggregated pools report none)
PROGRESS = {"rates": "simulating", "search": "searching the rate", "fleet": "simulating the fleet",
            "disaggregated": "simulating the pools", "compare": "simulating without and with prefix caching"}


def render_batching(out, fmt: str, *, prices=(None, None), slo_ms: float | None = None,
                    strict: bool = False) -> None:
    """`batching`'s output of a `BatchingOutcome` (`serving.batching_run`): each run's row by the one row
    builder, the energy and price columns (`prices`: $/kWh, $/GPU-hour, or None), the title and caption
    (`slo_ms`: the search's target as typed), then the notes; Ctrl-C's warning (exit 130) last."""
    from llm_cost.commands.app import interrupted, warn_unfit
    from llm_cost.commands.serving_common import run_caption

    if out.mode == "compare":  # each rate without and with the cache (`serving_prefix`)
        from llm_cost.commands.serving_prefix import render_compare

        return render_compare(out, fmt, prices)
    if out.mode == "disaggregated":
        return _render_disaggregated(out, fmt, prices)
    if not out.results and out.planned:  # Ctrl-C before any rate: the warning on a line of its own
        interrupted(0, out.planned, "rates")
    request, wl, config, dep, acc = out.request, out.workload, out.config, out.deployment, out.gpu
    slo = {"slo_ttft_s": request.slo_ttft_s, "slo_tpot_s": request.slo_tpot_s}
    caption = run_caption(out)
    if out.search is not None:
        caption += _search_caption(out.search, request, slo_ms if slo_ms is not None else request.slo_s * 1e3)
    results, fleets = list(out.results), out.fleets
    rows, columns, extra = _rendered(results, out.workloads, wl, config, out.replica, out.draft, slo, out.search,
                                     dep, request.slo_metric)
    rows = [{"model": out.model.name, "gpu": acc.label, "gpu_name": acc.name, "preset": out.profile.name, **row}
            for row in rows]
    from llm_cost.commands.serving_energy import served_energy_columns

    columns = columns + served_energy_columns(rows, results, acc, dep, fleets, config.pipeline)
    for res in results:
        if res.deadlock is not None:
            caption += f"; at {res.rate_req_per_s:g} req/s {res.deadlock.describe(4)}"
    from llm_cost.commands.serving_fleet import emit_fleet, fleet_caption  # --router: the fleet's, each replica's

    emit_fleet(out, rows, columns, fmt, prices, (fleets, dep) if fleets is not None else None,
               title=f"{out.replica.description}, KV {out.replica.kv_capacity_tokens:,} tokens" + extra,
               caption=caption + (fleet_caption(dep, request.router) if fleets is not None
                                  else _deployment_caption(dep, config.pipeline)))
    if out.interrupted:
        interrupted(len(results), out.planned, "rates")
    warn_unfit(rows, strict)


DISAGG_COLUMNS = [Column("prefill_replicas", "prefill replicas"), Column("decode_replicas", "decode replicas"),
                  Column("transfer_mean_s", "K/V hand-off mean (ms)", fixed(3, 1e-3))]


def _render_disaggregated(out, fmt: str, prices) -> None:
    """`batching --disaggregate P:D` (`serving.disaggregated`): one row per rate, the fleet's, and the
    pools' rows under them (`serving_pools`)."""
    from llm_cost.commands.app import emit
    from llm_cost.commands.serving_pools import POOL_COLUMNS, POOL_NOTE, pool_fields, pool_rows
    from llm_cost.commands.serving_fleet import plural
    from llm_cost.commands.serving_common import run_caption
    from llm_cost.commands.serving_prefix import note_implied

    pools, request, acc, dep, config = out.pools, out.request, out.gpu, out.deployment, out.config
    prefill, decode, total, bw = pools.prefill, pools.decode, pools.gpus, pools.link_bytes_per_s
    d_dep, d_config = pools.decode_deployment, pools.decode_config
    gpus = (dep.gpus_per_replica, d_dep.gpus_per_replica)
    slo = {"slo_ttft_s": request.slo_ttft_s, "slo_tpot_s": request.slo_tpot_s}
    results, runs, wl = list(out.results), pools.runs, out.workload
    caption = run_caption(out)
    rows, columns, extra = _rendered(results, out.workloads, wl, config, out.replica, None, slo, None, dep,
                                     request.slo_metric)
    pool_tables = [pool_rows(run, prefill, decode, gpus) for run in runs]
    for row, run, pool in zip(rows, runs, pool_tables):
        row.update({"model": out.model.name, "gpu": acc.label, "gpu_name": acc.name, "preset": out.profile.name,
                    "prefill_replicas": prefill, "decode_replicas": decode, "transfer_mean_s": run.transfer_mean_s,
                    "gpus": total, "replicas": prefill + decode,
                    "rate_total_req_per_s": run.served.rate_req_per_s,
                    "throughput_total_req_per_s": run.served.throughput_req_per_s,
                    "tokens_per_s": run.served.tokens_per_s, "tokens_per_s_per_gpu": run.served.tokens_per_s / total,
                    **pool_fields(pool, (dep.tp, d_dep.tp), (config.max_batch, d_config.max_batch))})
    for res in results:
        if res.deadlock is not None:
            caption += f"; at {res.rate_req_per_s:g} req/s {res.deadlock.describe(4)}"
    from llm_cost.commands.serving_energy import pools_energy_columns, serial_stages

    columns = columns + pools_energy_columns(rows, runs, acc, gpus, prices[0],
                                             (serial_stages(dep, config.pipeline), serial_stages(d_dep, d_config.pipeline)),
                                             prices[1])
    caption += (f"; disaggregated: prefills on {plural(prefill, 'replica')} of {plural(gpus[0], 'GPU')} (max batch "
                f"{config.max_batch}), decodes on {decode} of {plural(gpus[1], 'GPU')} (max batch {d_config.max_batch}), "
                f"the K/V over {bw / 1e9:g} GB/s "
                "per GPU; TTFT at the prefill side, the hand-off in the TPOT; --rate is the fleet's")
    title = (f"{out.replica.description}, KV {out.replica.kv_capacity_tokens:,} tokens{extra}; {plural(total, 'GPU')} in "
             f"{prefill} prefill + {decode} decode replicas")
    if fmt not in ("table", "markdown"):  # JSON, CSV: the pools as the fleet row's fields
        emit(rows, columns + DISAGG_COLUMNS, fmt, title=title, caption=caption)
    else:
        emit(rows, columns + DISAGG_COLUMNS, fmt, title=title)
        emit([row for pool in pool_tables for row in pool], POOL_COLUMNS, fmt, caption=caption + "; " + POOL_NOTE,
             title=(f"pools; decode: {pools.decode_replica.description}, "
                    f"KV {pools.decode_replica.kv_capacity_tokens:,} tokens"))
    note_implied(out)  # --prefix-caching's paged K/V, as on the aggregated path


def _search_caption(found, request, slo_ms: float) -> str:
    """The caption's part on a rate search: its target (`slo_ms` as typed), the unloaded and saturated
    figures, the simulations run."""
    from llm_cost.report.serving_rows import search_caption

    saturated = ("all at once it deadlocks" if found.saturated_deadlock
                 else f"all at once {found.saturated_req_per_s:.2f} req/s" if found.saturated_req_per_s else "")
    what = "per-token latency" if request.slo_metric == "latency_per_token" else request.slo_metric
    stat = request.slo_stat
    return (f"; rate search for {stat} {what} <= {slo_ms:g} ms (unloaded {stat} "
            f"{found.unloaded_s * 1e3:.1f} ms, {saturated + ', ' if saturated else ''}{found.evaluations} "
            f"simulations){search_caption(found)}")


def _deployment_caption(dep, pipeline: str) -> str:
    from llm_cost.report.serving_rows import PIPELINE_NOTE

    if dep.is_single and dep.replicas == 1:
        return ""
    from llm_cost.commands.serving_fleet import plural

    out = f"; one replica simulated ({plural(dep.gpus_per_replica, 'GPU')}"
    out += f"), tok/s (all) x {dep.replicas} replicas" if dep.replicas > 1 else ")"
    if dep.pp > 1 and pipeline == "serial":  # the config's, never the path that ran it
        out += f"; pipeline: {PIPELINE_NOTE}"
    return out


def _rendered(results, workloads, wl, config, replica, dmem, slo, found, dep, slo_metric: str):
    """(rows, columns, title suffix): one row per run by the one row builder (`serve_row`: the same keys
    whichever path of `serve` ran it), the same columns and title on every run (issue 24 review, 2)."""
    from llm_cost.commands.serving_common import BATCHING_DEPLOYED_COLUMNS, FIT_COLUMN
    from llm_cost.report.serving_rows import search_fields, serve_row, with_search_column

    rows = [serve_row(result, workload, config, replica=replica, draft=dmem, **slo)
            for result, workload in zip(results, workloads)]
    if not rows:  # no rate met the target: the same keys, the metrics empty
        rows = [serve_row(None, wl, config, replica=replica, draft=dmem, rate=0.0, **slo)]
    columns = (SERVE_COLUMNS + (PREFIX_COLUMNS if config.prefix_caching else []) + (SPEC_COLUMNS if config.spec else [])
               + (DRAFT_COLUMNS if dmem else [])
               + ([] if dep.is_single and dep.replicas == 1 else BATCHING_DEPLOYED_COLUMNS))
    suffix = ""
    if found is not None:
        columns = with_search_column(columns)  # found, a lower bound (saturated) or never met, beside the rate
        for row in rows:
            row.update({"slo_s": found.slo_s, "slo_stat": found.statistic, "slo_metric": slo_metric,
                        "unloaded_latency_per_token_s": found.unloaded_s,
                        "saturated_throughput_req_per_s": found.saturated_req_per_s,
                        "saturated_deadlock": found.saturated_deadlock, **search_fields(found)})
    if any(row.get("fits") is False for row in rows):
        columns = columns + [FIT_COLUMN]
    return rows, columns, suffix
