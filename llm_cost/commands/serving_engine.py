"""`batching` through the serving engine (`serving.engine.serve`): the options the plain simulator
does not have (paged KV, preemption, chunked prefill, speculation in the batch, pipeline in flight,
any workload, TTFT / TPOT / e2e tails and goodput). Kept out of `commands/serving.py` so that module
stays readable; only `batching` calls it."""

from __future__ import annotations

from llm_cost.report.render import Column, fixed

SERVE_COLUMNS = [
    Column("reservation", "KV policy"),
    Column("rate_req_per_s", "rate (req/s)", fixed(2)),
    Column("throughput_req_per_s", "throughput (req/s)", fixed(2)),
    Column("goodput_req_per_s", "goodput (req/s)", fixed(2)),
    Column("ttft_p50_s", "TTFT p50 (ms)", fixed(0, 1e-3)),
    Column("ttft_p99_s", "TTFT p99 (ms)", fixed(0, 1e-3)),
    Column("tpot_p50_s", "TPOT p50 (ms)", fixed(1, 1e-3)),
    Column("tpot_p99_s", "TPOT p99 (ms)", fixed(1, 1e-3)),
    Column("e2e_p99_s", "e2e p99 (s)", fixed(2)),
    Column("latency_per_token_p50_s", "median (ms/token)", fixed(1, 1e-3)),
    Column("kv_utilisation", "KV used (%)", fixed(1, 0.01)),
    Column("preemptions", "preempted", fixed(0)),
    Column("mean_batch", "mean batch", fixed(1)),
    Column("finished", "finished"),
]
SPEC_COLUMNS = [Column("mean_gamma", "mean gamma", fixed(2)), Column("tokens_per_round", "tokens/round", fixed(2))]
DRAFT_COLUMNS = [Column("draft_weight_bytes", "draft weights (GB)", fixed(2, 1e9)),
                 Column("sequences_lost_to_draft", "seqs lost to draft", fixed(0))]


def engine_wanted(*, reservation, trace, arrivals, concurrency, prefill_chunk, spec_gamma, spec_alpha, draft,
                  pipeline, slo_ttft_ms, slo_tpot_ms, slo_metric, prompt_len, output_len, c, slo_stat,
                  windowed: bool = False) -> bool:
    """Whether any option only the engine has was given, or the model has windowed layers (only the
    engine caps their K/V), or a statistic only the engine records (p50, p99); else `simulate`, bit
    for bit as before."""
    def plain_int(text):
        return text is None or str(text).strip().isdigit()

    return (reservation == "paged" or trace is not None or arrivals != "poisson" or concurrency is not None
            or prefill_chunk is not None or spec_gamma is not None or spec_alpha is not None or draft is not None
            or c is not None or pipeline is not None or slo_ttft_ms is not None or slo_tpot_ms is not None
            or slo_metric != "latency_per_token" or windowed or str(slo_stat).lower() in ("p50", "p99")
            or not plain_int(prompt_len) or not plain_int(output_len))


def _spec_policy(text: str) -> tuple[str, int]:
    from llm_cost.errors import InvalidValueError

    s = str(text).strip().lower()
    if s in ("fixed", "adaptive"):
        return s, 0
    if s.startswith("off-above-batch:"):
        try:
            return "off-above-batch", int(s.split(":", 1)[1])
        except ValueError:
            pass
    raise InvalidValueError(f"spec_policy must be fixed, off-above-batch:N or adaptive, got {text!r}",
                            params=("spec_policy",))


def _acceptance(text: str):
    """None for `iid`, a `rounds.BurstyAcceptance` for `bursty:EASY:HARD:P_EH:P_HE`."""
    from llm_cost.errors import InvalidValueError
    from llm_cost.speculative.rounds import BurstyAcceptance

    s = str(text).strip().lower()
    if s == "iid":
        return None
    parts = s.split(":")
    if parts[0] == "bursty" and len(parts) == 5:
        try:
            easy, hard, p_eh, p_he = (float(x) for x in parts[1:])
        except ValueError:
            pass
        else:
            try:
                return BurstyAcceptance(easy, hard, p_eh, p_he)
            except InvalidValueError as err:
                raise InvalidValueError(f"spec_acceptance: {err}", params=("spec_acceptance",)) from None
    raise InvalidValueError(f"spec_acceptance must be iid or bursty:EASY:HARD:P_EH:P_HE, got {text!r}",
                            params=("spec_acceptance",))


def run_engine(o: dict) -> None:
    """Build the workload, replica and `ServeConfig` from the `batching` options `o`, run, emit."""
    from llm_cost.catalog import load_accelerator, load_model
    from llm_cost.commands import parse
    from llm_cost.commands.app import emit, warn_unfit
    from llm_cost.commands.progress import SweepProgress
    from llm_cost.errors import InvalidValueError
    from llm_cost.report.serving_rows import search_caption, search_fields, serve_row, serve_rows
    from llm_cost.serving.draft_memory import draft_memory
    from llm_cost.serving.rate_search import highest_rate
    from llm_cost.serving.replica import IterationCost, Replica
    from llm_cost.serving.serve_config import ServeConfig, SpecConfig, host_link_bytes_per_s
    from llm_cost.serving.workload_spec import read_trace, synthetic_workload

    target, acc = load_model(o["model"]), load_accelerator(o["gpu"])
    profile, weights, dep = parse.profile(o["preset"]), parse.weights(o["weights"]), o["deployment"]
    gamma, alpha = o["spec_gamma"], o["spec_alpha"]
    bursty = _acceptance(o["spec_acceptance"])
    if bursty is not None and alpha is None:
        alpha = bursty.stationary_alpha  # the adaptive policy's Eq. 1 uses the long-run rate
    if (gamma is None) != (alpha is None):
        raise InvalidValueError("speculation needs both --spec-gamma and --spec-alpha", params=("spec_gamma", "spec_alpha"))
    if o["c"] is not None and o["draft"] is not None:
        raise InvalidValueError("give --c or --draft, not both", params=("c", "draft"))
    if (o["c"] is not None or o["draft"] is not None) and gamma is None:
        raise InvalidValueError("--c and --draft need --spec-gamma and --spec-alpha", params=("spec_gamma",))
    dmem = spec = None
    kv_tokens = o["kv_tokens"]
    if gamma is not None:
        draft_cost = None
        if o["draft"] is not None:
            from llm_cost.parallel import deployed_cost
            from llm_cost.speculative.fit import draft_deployment_for

            dspec = load_model(o["draft"])
            d_dep = draft_deployment_for(dspec, dep)
            draft_cost = deployed_cost(IterationCost.from_roofline(dspec, acc, profile), dspec, acc, parse.weights("bf16"),
                                       d_dep)
            dmem = draft_memory(target, dspec, acc, reserve=o["reserve"], weights=weights, deployment=dep)
            if kv_tokens is None:
                if dmem.kv_tokens < 1:
                    raise InvalidValueError(f"{dspec.name} beside {target.name} leaves no K/V room on {acc.name}",
                                            params=("draft",))
                kv_tokens = dmem.kv_tokens
        policy, off = _spec_policy(o["spec_policy"])
        spec = SpecConfig(gamma=gamma, alpha=alpha, c=o["c"] or 0.0, draft_cost=draft_cost, policy=policy,
                          off_above=off, seed=o["seed"], bursty=bursty)
    replica = Replica.from_specs(target, acc, profile, reserve=o["reserve"], weights=weights, kv_tokens=kv_tokens,
                                 max_len=o["max_len"], deployment=dep, windowed=True)
    config = ServeConfig(max_batch=o["max_batch"], reservation=o["reservation"] or "declared",
                         block_size=o["block_size"], watermark=o["watermark"], preemption=o["preemption"],
                         prefill_chunk=o["prefill_chunk"], spec=spec, pipeline=o["pipeline"] or "orca",
                         host_bytes_per_s=host_link_bytes_per_s(acc))
    rate = o["rate"]
    longer = None  # a trace is as long as it is: the search cannot check a longer run
    if o["trace"] is not None:
        wl = read_trace(o["trace"])
        rates = rate or [wl.rate_req_per_s]
    else:
        def longer(n: int):
            return synthetic_workload(n, rate[0] if rate else 1.0, seed=o["seed"],
                                      prompt=o["prompt_len"] or "uniform:32:512",
                                      output=o["output_len"] or "uniform:1:128", max_gen=o["max_gen"],
                                      arrivals=o["arrivals"], concurrency=o["concurrency"])

        wl = longer(o["requests"])
        rates = rate or [1.0]  # a closed loop (--concurrency) sets its own rate
    slo = {"slo_ttft_s": parse.seconds("slo_ttft_ms", o["slo_ttft_ms"], positive=True),
           "slo_tpot_s": parse.seconds("slo_tpot_ms", o["slo_tpot_ms"], positive=True), "draft": dmem}
    title = f"{replica.description}, KV {replica.kv_capacity_tokens:,} tokens, serving engine"
    caption = f"{len(wl)} requests, {wl.description}, seed {o['seed']}"
    if config.reservation == "paged":
        caption += f"; paged KV, blocks of {config.block_size}, {config.preemption} preemption"
    if config.prefill_chunk:
        caption += f"; prefill chunks of {config.prefill_chunk} tokens"
    if spec:
        how = (f"alpha {spec.alpha:g}" if spec.bursty is None else
               f"bursty acceptance, stationary alpha {spec.bursty.stationary_alpha:.3g}")
        caption += f"; speculation gamma {spec.gamma} {how} ({o['spec_policy']})"
    if o["slo_ms"] is not None:
        slo_s = parse.seconds("slo_ms", o["slo_ms"], positive=True)
        with SweepProgress("searching the rate") as progress:
            found = highest_rate(wl, replica, scheduler="iteration", max_batch=o["max_batch"], slo_s=slo_s,
                                 statistic=o["slo_stat"], config=config, metric=o["slo_metric"], on_step=progress,
                                 longer=longer)
        rows = [{**serve_row(found.result, wl.at_rate(found.rate_req_per_s), config, replica=replica, **slo),
                 **search_fields(found)}] if found.result else []
        caption += (f"; highest rate with {o['slo_stat']} {o['slo_metric']} <= {o['slo_ms']:g} ms: "
                    f"{found.rate_req_per_s:.2f} req/s (unloaded {found.unloaded_s * 1e3:.1f} ms, "
                    f"{found.evaluations} simulations){search_caption(found)}")
        results = [found.result] if found.result else []
    else:
        with SweepProgress("simulating") as progress:
            rows, results = serve_rows(wl, replica, config, rates=rates, on_step=progress, **slo)
    for r in results:
        if r.deadlock is not None:
            caption += f"; at {r.rate_req_per_s:g} req/s {r.deadlock.describe(4)}"
    columns = SERVE_COLUMNS + (SPEC_COLUMNS if spec else []) + (DRAFT_COLUMNS if dmem else [])
    emit(rows, columns, o["fmt"], title=title, caption=caption)
    warn_unfit(rows, o["deploy"].strict)
