"""`batching`'s work: its options parsed and given to `serving.setup.serving_setup` (the replica, one
`ServeConfig`, a draft's memory: the library builds the speculation and the draft's cost); each rate
is one `engine.serve` call (the library picks its step-level paths or the general loop by
allow-lists, never the command by the options given) or the rate search `highest_rate`; every run's
row comes from one builder (`serving_rows.serve_row`) with the same keys, columns and title whichever
path ran it (tails, goodput, K/V used, reserved and written, preemptions). Only `batching` calls it."""

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
    Column("deadlock", "deadlock", lambda v: "-" if v is None else ("yes" if v else "no")),
]
PREFIX_COLUMNS = [Column("prefix_token_hit_rate", "prefix hit (tok)", fixed(3)),
                  Column("prefix_request_hit_rate", "prefix hit (req)", fixed(3)),
                  Column("prefill_tokens_saved", "prefill tok saved", fixed(0))]
SPEC_COLUMNS = [Column("mean_gamma", "mean gamma", fixed(2)), Column("tokens_per_round", "tokens/round", fixed(2))]
DRAFT_COLUMNS = [Column("draft_weight_bytes", "draft weights (GB)", fixed(2, 1e9)),
                 Column("sequences_lost_to_draft", "seqs lost to draft", fixed(0))]


def setup(o: dict, target, acc, profile, weights, dep):
    """`serving.setup.serving_setup` of the `batching` options `o` on `dep` (the text options parsed)."""
    from llm_cost.catalog import load_model
    from llm_cost.commands import parse
    from llm_cost.commands.serving_prefix import implied_reservation  # prefix caching: paged unless told
    from llm_cost.serving.setup import serving_setup

    policy, off_above = parse.spec_policy(o["spec_policy"])
    return serving_setup(target, acc, profile, weights=weights, deployment=dep, reserve=o["reserve"],
                         kv_tokens=o["kv_tokens"], max_len=o["max_len"], scheduler=o["scheduler"],
                         reservation=o["reservation"] or implied_reservation(o, o["scheduler"]), max_batch=o["max_batch"], block_size=o["block_size"],
                         watermark=o["watermark"], preemption=o["preemption"], prefill_chunk=o["prefill_chunk"],
                         pipeline=o["pipeline"], prefix_caching=o["prefix_caching"],
                         kv_offload_bytes=o["kv_offload_bytes"], spec_gamma=o["spec_gamma"],
                         spec_alpha=o["spec_alpha"], c=o["c"],
                         draft=load_model(o["draft"]) if o["draft"] is not None else None, spec_policy=policy,
                         spec_off_above=off_above, spec_acceptance=parse.acceptance(o["spec_acceptance"]),
                         seed=o["seed"])


def run_batching(o: dict) -> None:
    """`batching`: the workload, replica and `ServeConfig` from the options `o`, one library call per
    rate (`engine.serve`) or the rate search (`highest_rate`), rendered."""
    from llm_cost.catalog import load_accelerator, load_model
    from llm_cost.commands import parse
    from llm_cost.commands.app import interrupted, warn_unfit
    from llm_cost.commands.progress import SweepProgress
    from llm_cost.commands.serving_common import kv_settings
    from llm_cost.errors import InvalidValueError
    from llm_cost.serving.workload_spec import read_trace, synthetic_workload

    slo_s = parse.seconds("slo_ms", o["slo_ms"], positive=True)
    if not o["rate"] and slo_s is None and o["trace"] is None and o["concurrency"] is None:
        raise InvalidValueError("give --rate R (req/s, repeatable) to simulate those rates, or --slo-ms T to "
                                "search the highest rate whose per-token latency meets T ms")
    if o["rate"] and slo_s is not None:
        raise InvalidValueError("give --rate R (repeatable) to simulate, or --slo-ms T to search the rate, not both")
    dtype, _ = kv_settings(o["deploy"].kv_dtype, None)
    from llm_cost.commands.engine_option import with_engine
    profile, weights = with_engine(parse.profile(o["preset"]), o["engine"]), parse.weights(o["weights"])
    dep = parse.deployment(o["deploy"], profile, o["reserve"], kv_dtype=dtype)
    if o["disaggregate"] is not None:  # one replica of a pool: the pools' GPUs are P:D's, a --gpus checked
        from llm_cost.commands.serving_pools import pools_deployment

        dep = pools_deployment(o, dep)
    target, acc = load_model(o["model"]), load_accelerator(o["gpu"])
    served = setup(o, target, acc, profile, weights, dep)
    replica, config, dmem = served.replica, served.config, served.draft
    rate = o["rate"]

    def prefixed(w):
        return o["prefixes"].applied(w, o["seed"])

    if o["trace"] is not None:
        longer = None  # a trace is as long as it is: the search cannot check a longer run
        wl = prefixed(read_trace(o["trace"]))
        rates = rate or [wl.rate_req_per_s]
    else:
        def longer(n: int):
            return prefixed(synthetic_workload(n, rate[0] if rate else 1.0, seed=o["seed"],
                                               prompt=o["prompt_len"] or "uniform:32:512",
                                               output=o["output_len"] or "uniform:1:128", max_gen=o["max_gen"],
                                               arrivals=o["arrivals"], concurrency=o["concurrency"]))

        wl = longer(o["requests"])
        rates = rate or [1.0]  # a closed loop (--concurrency) sets its own rate
    slo = {"slo_ttft_s": parse.seconds("slo_ttft_ms", o["slo_ttft_ms"], positive=True),
           "slo_tpot_s": parse.seconds("slo_tpot_ms", o["slo_tpot_ms"], positive=True)}
    caption = f"{len(wl):,} requests, {wl.description}, seed {o['seed']}" + _settings_caption(config)
    if o.get("router") and slo_s is not None:  # refused before any simulation, not after a search
        raise InvalidValueError("--router simulates the given --rate values; give --rate, not --slo-ms",
                                params=("router",))
    if o.get("compare_prefix_caching"):  # each rate without and with the cache (`serving_prefix`)
        from llm_cost.commands.serving_prefix import run_prefix_compare
        return run_prefix_compare(o, wl, rates, replica, config, slo, caption, (target, acc, profile, dep))
    if o["disaggregate"] is None and (o["decode_tp"] is not None or o["decode_max_batch"] is not None):
        from llm_cost.commands.serving_pools import pool_counts

        pool_counts(o)  # refuses the decode pool's options without --disaggregate
    if o["disaggregate"] is not None:
        return _run_disaggregated(o, wl, rates, replica, config, slo, caption, (target, acc, profile, weights, dep))
    if slo_s is not None:
        from llm_cost.serving.rate_search import highest_rate

        with SweepProgress("searching the rate") as progress:
            found = highest_rate(wl, replica, scheduler=o["scheduler"], max_batch=o["max_batch"], slo_s=slo_s,
                                 statistic=o["slo_stat"], config=config, metric=o["slo_metric"], on_step=progress,
                                 longer=longer)
        results = [found.result] if found.result else []
        caption += _search_caption(found, o)
        wl_at = [wl.at_rate(found.rate_req_per_s)] if found.result else []
    elif o.get("router"):
        wl_at = [wl.at_rate(r) for r in rates]
        fleets = _fleet_runs(wl_at, replica, config, dep.replicas, o["router"])
        results, found = [f.fleet for f in fleets], None
    else:
        from llm_cost.serving.engine import serve

        wl_at = [wl.at_rate(r) for r in rates]
        results = _runs(wl_at, "simulating", lambda one, inner: serve(one, replica, config, on_progress=inner))
        found = None
    total, wl_at = len(wl_at), wl_at[:len(results)]  # Ctrl-C: the rates that finished
    rows, columns, extra = _rendered(results, wl_at, wl, config, replica, dmem, slo, found, dep, o)
    rows = [{"model": target.name, "gpu": acc.label, "gpu_name": acc.name, "preset": profile.name, **r} for r in rows]
    from llm_cost.commands.serving_energy import served_energy_columns

    columns = columns + served_energy_columns(rows, results, acc, dep, fleets if o.get("router") else None,
                                              config.pipeline)
    for r in results:
        if r.deadlock is not None:
            caption += f"; at {r.rate_req_per_s:g} req/s {r.deadlock.describe(4)}"
    from llm_cost.commands.serving_fleet import emit_fleet, fleet_caption  # --router: the fleet's, each replica's

    emit_fleet(rows, columns, o, (fleets, dep) if o.get("router") else None,
               title=f"{replica.description}, KV {replica.kv_capacity_tokens:,} tokens" + extra,
         caption=caption + (fleet_caption(dep, o["router"]) if o.get("router") else _deployment_caption(dep, config.pipeline)))
    if len(results) < total:
        interrupted(len(results), total, "rates")
    warn_unfit(rows, o["deploy"].strict)


def _runs(workloads, label: str, each) -> list:
    """`[each(workload, on_progress) for workload in workloads]` under one progress bar (requests finished);
    Ctrl-C stops with the runs that finished (fewer than the workloads; none: exit 130 at once)."""
    from llm_cost.commands.app import interrupted
    from llm_cost.commands.progress import SweepProgress

    runs, m = [], len(workloads)
    with SweepProgress(label) as progress:
        try:
            for k, one in enumerate(workloads):
                runs.append(each(one, lambda d, t, k=k: progress(k * t + d, m * t)))
        except KeyboardInterrupt:
            pass
    if not runs and m:  # the bar stopped first: the warning on a line of its own
        interrupted(0, m, "rates")
    return runs


def _fleet_runs(workloads, replica, config, replicas: int, router: str) -> list:
    """`--router`: one `fleet.serve_fleet` run per rate, with a progress bar (Ctrl-C: those that finished)."""
    from llm_cost.serving.fleet import serve_fleet

    return _runs(workloads, "simulating the fleet",
                 lambda one, inner: serve_fleet(one, replica, config, replicas, router, on_progress=inner))


DISAGG_COLUMNS = [Column("prefill_replicas", "prefill replicas"), Column("decode_replicas", "decode replicas"),
                  Column("transfer_mean_s", "K/V hand-off mean (ms)", fixed(3, 1e-3))]


def _decode_pool(o: dict, specs, replica, config):
    """The decode pool's (Replica, ServeConfig, Deployment): its split from --decode-tp (its own K/V
    capacity, and a draft's cost and memory on it), its batch from --decode-max-batch; the prefill pool's
    where not given (`serving_pools`)."""
    from dataclasses import replace

    from llm_cost.commands.serving_pools import decode_deployment, decode_max_batch

    d_dep = decode_deployment(o, specs[4])
    if d_dep is not specs[4]:  # its own K/V capacity, a draft's cost and memory on its split
        pool = setup(o, *specs[:4], d_dep)
        replica, config = pool.replica, pool.config
    return replica, replace(config, max_batch=decode_max_batch(o, config), prefix_caching=False), d_dep  # K/V by hand-off


def _run_disaggregated(o: dict, wl, rates, replica, config, slo, caption, specs) -> None:
    """`batching --disaggregate P:D` (`serving.disaggregated`): prefills on P replicas, decodes on D of
    the decode pool's own split and batch (`_decode_pool`), the K/V over the datasheet's link
    (`handoff_link`); one row per rate, the fleet's, and the pools' rows under them (`serving_pools`)."""
    from llm_cost.commands.app import emit
    from llm_cost.commands.serving_pools import POOL_COLUMNS, POOL_NOTE, pool_counts, pool_fields, pool_rows, pools_gpus
    from llm_cost.commands.serving_fleet import plural
    from llm_cost.commands.serving_prefix import note_implied
    from llm_cost.serving.disaggregated import handoff_link, serve_disaggregated

    p, d = pool_counts(o)
    acc, dep = specs[1], specs[4]
    d_replica, d_config, d_dep = _decode_pool(o, specs, replica, config)
    gpus = (dep.gpus_per_replica, d_dep.gpus_per_replica)
    total = pools_gpus(o, dep)  # the pools' GPUs (`pools_deployment` refused a --gpus not this)
    bw, lat = handoff_link(acc, total)
    workloads = [wl.at_rate(r) for r in rates]
    runs = [serve_disaggregated(w, replica, config, prefill=p, decode=d, link_bytes_per_s=bw, link_latency_s=lat,
                                decode_replica=d_replica, decode_config=d_config) for w in workloads]
    results = [r.served for r in runs]
    rows, columns, extra = _rendered(results, workloads, wl, config, replica, None, slo, None, dep, o)
    pools = [pool_rows(r, p, d, gpus) for r in runs]
    for row, r, pool in zip(rows, runs, pools):
        row.update({"model": specs[0].name, "gpu": acc.label, "gpu_name": acc.name, "preset": specs[2].name,
                    "prefill_replicas": p, "decode_replicas": d, "transfer_mean_s": r.transfer_mean_s,
                    "gpus": total, "replicas": p + d,
                    "rate_total_req_per_s": r.served.rate_req_per_s,
                    "throughput_total_req_per_s": r.served.throughput_req_per_s, "tokens_per_s": r.served.tokens_per_s,
                    "tokens_per_s_per_gpu": r.served.tokens_per_s / total,
                    **pool_fields(pool, (dep.tp, d_dep.tp), (config.max_batch, d_config.max_batch))})
    for r in results:
        if r.deadlock is not None:
            caption += f"; at {r.rate_req_per_s:g} req/s {r.deadlock.describe(4)}"
    from llm_cost.commands.serving_energy import pools_energy_columns

    from llm_cost.commands.serving_energy import serial_stages

    columns = columns + pools_energy_columns(rows, runs, acc, gpus, o.get("usd_per_kwh"),
                                             (serial_stages(dep, config.pipeline), serial_stages(d_dep, d_config.pipeline)),
                                             o.get("usd_per_gpu_hour"))
    caption += (f"; disaggregated: prefills on {plural(p, 'replica')} of {plural(gpus[0], 'GPU')} (max batch "
                f"{config.max_batch}), decodes on {d} of {plural(gpus[1], 'GPU')} (max batch {d_config.max_batch}), "
                f"the K/V over {bw / 1e9:g} GB/s "
                "per GPU; TTFT at the prefill side, the hand-off in the TPOT; --rate is the fleet's")
    title = (f"{replica.description}, KV {replica.kv_capacity_tokens:,} tokens{extra}; {plural(total, 'GPU')} in "
             f"{p} prefill + {d} decode replicas")
    if o["fmt"] not in ("table", "markdown"):  # JSON, CSV: the pools as the fleet row's fields
        emit(rows, columns + DISAGG_COLUMNS, o["fmt"], title=title, caption=caption)
    else:
        emit(rows, columns + DISAGG_COLUMNS, o["fmt"], title=title)
        emit([row for pool in pools for row in pool], POOL_COLUMNS, o["fmt"], caption=caption + "; " + POOL_NOTE,
             title=f"pools; decode: {d_replica.description}, KV {d_replica.kv_capacity_tokens:,} tokens")
    note_implied(o)  # --prefix-caching's paged K/V, as on the aggregated path


def _settings_caption(config) -> str:
    """The serving settings a caption names (paged K/V, chunks, speculation)."""
    out = ""
    if config.reservation == "paged":
        out += f"; paged KV, blocks of {config.block_size}, {config.preemption} preemption"
    if config.prefill_chunk:
        out += f"; prefill chunks of {config.prefill_chunk} tokens"
    if config.prefix_caching:
        out += "; prefix caching"
    if config.kv_offload_bytes:
        out += f"; K/V offload to {config.kv_offload_bytes / 1e9:g} GB of host memory"
    spec = config.spec
    if spec:
        how = (f"alpha {spec.alpha:g}" if spec.bursty is None else
               f"bursty acceptance, stationary alpha {spec.bursty.stationary_alpha:.3g}")
        out += f"; speculation gamma {spec.gamma} {how} ({spec.policy})"
    return out


def _search_caption(found, o: dict) -> str:
    from llm_cost.report.serving_rows import search_caption

    saturated = ("all at once it deadlocks" if found.saturated_deadlock
                 else f"all at once {found.saturated_req_per_s:.2f} req/s" if found.saturated_req_per_s else "")
    what = "per-token latency" if o["slo_metric"] == "latency_per_token" else o["slo_metric"]
    return (f"; rate search for {o['slo_stat']} {what} <= {o['slo_ms']:g} ms (unloaded {o['slo_stat']} "
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


def _rendered(results, workloads, wl, config, replica, dmem, slo, found, dep, o):
    """(rows, columns, title suffix): one row per run by the one row builder (`serve_row`: the same keys
    whichever path of `serve` ran it), the same columns and title on every run (issue 24 review, 2)."""
    from llm_cost.commands.serving_common import BATCHING_DEPLOYED_COLUMNS, FIT_COLUMN
    from llm_cost.report.serving_rows import search_fields, serve_row, with_search_column

    rows = [serve_row(r, w, config, replica=replica, draft=dmem, **slo) for r, w in zip(results, workloads)]
    if not rows:  # no rate met the target: the same keys, the metrics empty
        rows = [serve_row(None, wl, config, replica=replica, draft=dmem, rate=0.0, **slo)]
    columns = (SERVE_COLUMNS + (PREFIX_COLUMNS if config.prefix_caching else []) + (SPEC_COLUMNS if config.spec else [])
               + (DRAFT_COLUMNS if dmem else [])
               + ([] if dep.is_single and dep.replicas == 1 else BATCHING_DEPLOYED_COLUMNS))
    suffix = ""
    if found is not None:
        columns = with_search_column(columns)  # found, a lower bound (saturated) or never met, beside the rate
        for row in rows:
            row.update({"slo_s": found.slo_s, "slo_stat": found.statistic, "slo_metric": o["slo_metric"],
                        "unloaded_latency_per_token_s": found.unloaded_s,
                        "saturated_throughput_req_per_s": found.saturated_req_per_s,
                        "saturated_deadlock": found.saturated_deadlock, **search_fields(found)})
    if any(r.get("fits") is False for r in rows):
        columns = columns + [FIT_COLUMN]
    return rows, columns, suffix
