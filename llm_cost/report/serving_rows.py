"""Result rows for the CLI's `capacity`, `waste` and `batching` commands.

Flat dicts, SI values, the unit in the key (`kv_tokens`, `latency_per_token_median_s`); kept
out of cli.py so that they can be tested and reused without Typer.

On a deployment (tp, pp, ep, replicas, kv_dtype) the capacity row is one replica's KV tokens with
the total over the replicas beside it, and a batching row one simulated replica's metrics with the
deployment's totals (x replicas) and per-GPU figures beside them (`REPLICA_KEYS`, `CAPACITY_KEYS`).
A replica that cannot hold its weights (or not one token's K/V beside them) says so in `fits` and
`fit_note`: its capacity is 0, never negative.
"""

from __future__ import annotations

import operator

from typing import Sequence

from llm_cost.report.render import Column
from llm_cost.serving.batch_waste import padding_waste
from llm_cost.serving.capacity import capacity_settings, kv_capacity
from llm_cost.serving.policies import context_max_len, requests_by_policy
from llm_cost.serving.rate_search import RateSearch
from llm_cost.serving.replica import Replica
from llm_cost.serving.serve_config import config_for
from llm_cost.serving.serve_result import ServeResult
from llm_cost.specs import BF16, Accelerator, ModelSpec, WeightFormat
from llm_cost.specs.deployment import Deployment
from llm_cost.serving.workload import Workload

# The deployment's columns of a capacity row (after the seeds' columns)
CAPACITY_KEYS = ("tp", "pp", "ep", "gpus", "replicas", "kv_dtype", "kv_bytes_per_element", "memory_basis",
                 "weight_bytes_per_gpu", "kv_bytes_per_token_per_gpu", "memory_available_bytes",
                 "kv_tokens_total", "requests_max_len_total", "requests_declared_total", "requests_none_total",
                 "fits", "fit_note")
# ... and of a batching row
REPLICA_KEYS = ("tp", "pp", "ep", "gpus", "replicas", "kv_dtype", "compute_dtype", "memory_basis",
                "weight_bytes_per_gpu", "kv_bytes_per_gpu", "memory_available_bytes", "fits", "fit_note",
                "pipeline", "comm_time_s", "comm_fraction", "rate_total_req_per_s", "throughput_total_req_per_s",
                "tokens_per_s", "tokens_per_s_per_gpu")
SERVE_STATS = ("p50", "p90", "p99")  # the tails every batching and serving row carries
PIPELINE_NOTE = "one batch in flight: an iteration crosses the stages one after another"


def capacity_row(model: ModelSpec, gpu: Accelerator, *, reserve: float | None = None, prompt: float,
                 max_gen: float, gen: float | None = None, max_len: int | None = None,
                 weights: WeightFormat = BF16, kv_bytes_per_element: float | None = None,
                 deployment: Deployment | None = None) -> dict:
    """KV tokens beside the weights and the requests that fit under each reservation policy: one
    replica's (the seeds' columns), in all (x replicas, `*_total`), and the deployment's columns
    (`CAPACITY_KEYS`). reserve and kv_bytes_per_element default to the deployment's."""
    cap = kv_capacity(model, gpu, reserve=reserve, weights=weights, kv_bytes_per_element=kv_bytes_per_element,
                      deployment=deployment)
    resolved, _, kv_el, _ = capacity_settings(deployment, reserve, kv_bytes_per_element)
    reserve = cap.reserve_fraction
    from llm_cost.counts.per_token import state_in_kv_tokens

    fit = requests_by_policy(cap.kv_tokens, max_len=context_max_len(model, max_len), prompt=prompt,
                             max_gen=max_gen, gen=gen, state_tokens=state_in_kv_tokens(model, kv_el))
    return {
        "model": model.name, "gpu": gpu.label, "gpu_name": gpu.name, "weights": weights.name,
        "memory_bytes": cap.memory_bytes, "reserve_fraction": reserve, "usable_bytes": cap.usable_bytes,
        "weight_bytes": cap.weight_bytes, "kv_bytes_per_token": cap.kv_bytes_per_token,
        "kv_bytes_available": cap.kv_bytes_available, "shortfall_bytes": cap.shortfall_bytes,
        "kv_tokens": cap.kv_tokens, "max_len": fit.max_len, "prompt": prompt, "max_gen": max_gen,
        "gen": fit.gen, "requests_max_len": fit.requests_max_len,
        "requests_declared": fit.requests_declared, "requests_none": fit.requests_none,
        "tp": resolved.tp, "pp": resolved.pp, "ep": resolved.ep, "gpus": resolved.total_gpus, "replicas": resolved.replicas,
        "kv_dtype": cap.kv_dtype or "custom", "kv_bytes_per_element": kv_el,
        "memory_basis": cap.memory_basis, "weight_bytes_per_gpu": cap.weight_bytes_per_gpu,
        "kv_bytes_per_token_per_gpu": cap.kv_bytes_per_token_per_gpu, "memory_available_bytes": cap.usable_bytes,
        "kv_tokens_total": cap.kv_tokens_total, "requests_max_len_total": fit.requests_max_len * resolved.replicas,
        "requests_declared_total": fit.requests_declared * resolved.replicas,
        "requests_none_total": fit.requests_none * resolved.replicas,
        "fits": cap.runs, "fit_note": cap.note,
    }


def waste_row(prompts: Sequence[int], outputs: Sequence[int]) -> dict:
    """One request-level batch: positions computed vs needed (exercise 1)."""
    waste = padding_waste(prompts, outputs)
    return {
        "batch": waste.batch, "prompt_max": waste.prompt_max, "output_max": waste.output_max,
        "positions_computed": waste.positions_computed, "positions_needed": waste.positions_needed,
        "positions_wasted": waste.positions_wasted, "waste_fraction": waste.waste_fraction,
    }


def waste_sim_row(result: ServeResult) -> dict:
    """Request-level batching on a workload: positions computed vs needed over the whole run."""
    computed, needed = result.positions_computed, result.positions_needed
    return {
        "rate_req_per_s": result.rate_req_per_s, "max_batch": result.max_batch,
        "requests": result.requests, "mean_batch": result.mean_batch,
        "throughput_req_per_s": result.throughput_req_per_s,
        "positions_computed": computed, "positions_needed": needed,
        "positions_wasted": computed - needed,
        "waste_fraction": (computed - needed) / computed if computed else 0.0,
    }


_METRICS = ("reservation", "requests", "finished", "throughput_req_per_s",
            "latency_per_token_median_s", "latency_per_token_p90_s", "kv_capacity_tokens",
            "kv_reserved_mean_tokens", "kv_written_mean_tokens", "kv_reserved_over_written",
            "kv_reserved_peak_tokens", "kv_written_peak_tokens", "mean_batch", "iterations",
            "positions_computed", "positions_needed")
# the engine's statistics beside them (`ServeResult` fields)
_ENGINE = ("preemptions", "swap_bytes", "mean_in_system", "busy_s", "mean_gamma", "tokens_per_round", "draft_s")


def replica_fields(replica: Replica, result: ServeResult | None) -> dict:
    """The deployment's columns of a batching row (`REPLICA_KEYS`): the split, one GPU's memory, the
    collectives' mean time per iteration and share of the busy time, and the totals over replicas.

    tokens_per_s = replicas x one replica's generated tokens / (last finish - first arrival); the
    pipeline holds one batch in flight (`PIPELINE_NOTE`), so unlike a roofline row no x pp.
    """
    dep, cap = replica.deployment, replica.capacity
    per_token_gpu = cap.kv_bytes_per_token_per_gpu if cap else None
    rate = result.tokens_per_s * dep.replicas if result else None
    return {
        "tp": dep.tp, "pp": dep.pp, "ep": dep.ep, "gpus": dep.total_gpus, "replicas": dep.replicas,
        "kv_dtype": (cap.kv_dtype or "custom") if cap else dep.kv_dtype, "compute_dtype": replica.compute_dtype,
        "memory_basis": cap.memory_basis if cap else None,
        "weight_bytes_per_gpu": cap.weight_bytes_per_gpu if cap else None,
        "kv_bytes_per_gpu": replica.kv_capacity_tokens * per_token_gpu if cap else None,
        "memory_available_bytes": cap.usable_bytes if cap else None,
        "fits": cap.runs if cap else True, "fit_note": cap.note if cap else "",
        "pipeline": PIPELINE_NOTE if dep.pp > 1 else "",
        "comm_time_s": result.comm_time_s if result else None,
        "comm_fraction": (result.comm_total_s / result.busy_s if result.busy_s else 0.0) if result else None,
        "rate_total_req_per_s": result.rate_req_per_s * dep.replicas if result else None,
        "throughput_total_req_per_s": result.throughput_req_per_s * dep.replicas if result else None,
        "tokens_per_s": rate, "tokens_per_s_per_gpu": rate / dep.total_gpus if result else None,
    }


def batching_row(result: ServeResult | None, workload: Workload, *, scheduler: str = "",
                 max_batch: int = 0, rate: float = 0.0, replica: Replica | None = None) -> dict:
    """One run of one of the lecture's schedulers (`config_for`), flat: `serve_row` of its config.

    result None (no rate meets a target): the same keys with the metrics left empty.
    """
    config = config_for(result.scheduler if result else scheduler, result.max_batch if result else max_batch,
                        result.reservation if result else None)
    return serve_row(result, workload, config, replica=replica, rate=rate)


def tail_fields(result: ServeResult | None, slo_ttft_s: float | None = None,
                slo_tpot_s: float | None = None) -> dict:
    """TTFT / TPOT / e2e / latency per token at p50, p90, p99 and their means (seconds), goodput
    (req/s within both SLOs) and K/V use (mean, peak, fraction of capacity) of any run; the same keys
    left empty (None) without one."""
    row = {"goodput_req_per_s": result.goodput_req_per_s(slo_ttft_s, slo_tpot_s) if result else None,
           "slo_ttft_s": slo_ttft_s, "slo_tpot_s": slo_tpot_s}
    for metric in ("ttft", "tpot", "e2e", "latency_per_token"):
        for stat in SERVE_STATS:
            row[f"{metric}_{stat}_s"] = result.percentile_s(metric, stat) if result else None
        row[f"{metric}_mean_s"] = result.percentile_s(metric, "mean") if result else None
    row.update({"kv_used_mean_tokens": result.kv_used_mean_tokens if result else None,
                "kv_used_peak_tokens": result.kv_used_peak_tokens if result else None,
                "kv_utilisation": result.kv_utilisation if result else None})
    return row


def context_fields(replica: Replica, workload: Workload, row: dict) -> dict:
    """`fits` False and a `fit_note` when a request's prompt + output exceeds the model's context
    (`Replica.context_limit`): the simulation still runs, its rows say it cannot be served."""
    limit = replica.context_limit
    longest = max(map(operator.add, workload.prompt, workload.output), default=0)
    if not limit or longest <= limit:
        return {}
    note = f"requests of up to {longest:,} tokens (prompt + output) exceed the model's context of {limit:,} tokens"
    return {"fits": False, "fit_note": "; ".join(part for part in (row.get("fit_note"), note) if part)}


def search_verdict(search: RateSearch) -> str:
    """What a rate search's row says beside its rate (`SEARCH_COLUMN`): "found", "never met" (the rate 0
    is none) or "lower bound" (saturated: no rate tried missed, the rate is the highest tried, not a found
    one), with ", unsettled" where the longer runs' metric did not settle (the rate may not hold).

    >>> search_verdict(RateSearch(0.5, "p99", 12.0, None, 0.1, 3.0, 9, outcome="saturated"))
    'lower bound'
    """
    verdict = {"saturated": "lower bound"}.get(search.outcome, search.outcome)
    return verdict + (", unsettled" if search.settled is False and search.outcome != "never met" else "")


# the column a searched rate's row adds after its rate (`with_search_column`)
SEARCH_COLUMN = Column("search_verdict", "search", whole=True)  # "lower bound" on one line


def with_search_column(columns: Sequence[Column]) -> list[Column]:
    """`columns` with `SEARCH_COLUMN` right after the rate's (`rate_req_per_s`): a searched rate says
    whether it was found, is a lower bound or was never met (`search_verdict`)."""
    at = next(index for index, column in enumerate(columns) if column.key == "rate_req_per_s") + 1
    return [*columns[:at], SEARCH_COLUMN, *columns[at:]]


def search_fields(search: RateSearch) -> dict:
    """How far a rate search went: its simulations, what it found (`RateSearch.outcome`, and as the row says
    it, `search_verdict`), the requests of its first runs and of those the rate was found on, the run it met
    the target on, whether it settled (None: not checked) and the rate of the runs ten times shorter."""
    return {"evaluations": search.evaluations, "search_outcome": search.outcome,
            "search_verdict": search_verdict(search), "search_requests": search.requests or None,
            "found_on_requests": search.found_on_requests or None, "held_on_requests": search.held_on_requests or None,
            "settled": search.settled, "shorter_rate_req_per_s": search.shorter_rate_req_per_s}


def search_caption(search: RateSearch) -> str:
    """One clause on what a rate search found (`RateSearch.outcome`): found, saturated (no rate tried
    missed: a lower bound) or never met, and on the longer runs whether it was confirmed, settled, not
    not checked or did not settle (`rate_search.HOLD_FACTOR`).

    >>> search_caption(RateSearch(0.5, "p99", 0.0, None, 0.8, 3.0, 0, outcome="never met", metric="ttft"))
    '; never met: served alone the p99 ttft is 800.0 ms, over the 500 ms target'
    """
    target = f"{search.statistic} {search.metric.replace('_', ' ')}"
    if search.outcome == "never met":
        if search.unloaded_s > search.slo_s:
            return (f"; never met: served alone the {target} is {search.unloaded_s * 1e3:.1f} ms, over the "
                    f"{search.slo_s * 1e3:g} ms target")
        return f"; never met: no rate tried has its {target} within {search.slo_s * 1e3:g} ms"
    rate = f"{search.rate_req_per_s:.3g} req/s"
    if search.outcome == "saturated":
        over = (f", {search.rate_req_per_s / search.saturated_req_per_s:.3g} x the all-at-once throughput"
                if search.saturated_req_per_s else "")
        return (f"; saturated: even the highest rate tried ({rate}{over}) meets the target, a lower bound (the "
                "target does not bind)") + _settling(search)
    return f"; found: {rate} is the highest rate meeting the target" + _settling(search)


def _settling(search: RateSearch) -> str:
    """`search_caption`'s part on the longer runs: confirmed, not checked or did not settle."""
    from llm_cost.serving.rate_search import HOLD_FACTOR

    found_on = search.found_on_requests or search.requests or (search.result.requests if search.result is not None else 0)
    moved = (f" ({1 - search.rate_req_per_s / search.shorter_rate_req_per_s:.1%} below the {search.shorter_rate_req_per_s:.3g} "
             f"req/s of runs {HOLD_FACTOR} times shorter)" if search.shorter_rate_req_per_s else "")
    if search.settled:
        return (f" on runs of {found_on:,} requests, confirmed on a run {HOLD_FACTOR} times longer "
                f"({search.held_on_requests:,} requests){moved}")
    if search.settled is None:
        return f" on runs of {found_on:,} requests, not checked on a longer run"
    return (f" on runs of {found_on:,} requests, but the metric did not settle{moved}: a run {HOLD_FACTOR} times "
            f"longer ({HOLD_FACTOR * found_on:,} requests) passes the longest allowed; the rate may not hold on "
            "longer runs")


# ---- the serving engine (`engine.serve`): tails, goodput, paged KV, speculation in the batch ----


def serve_row(result: ServeResult | None, workload: Workload, config, *, replica: Replica | None = None,
              slo_ttft_s: float | None = None, slo_tpot_s: float | None = None, draft=None,
              rate: float = 0.0) -> dict:
    """One run of `engine.serve`, flat, the same keys whichever path ran it (issue 24 review, 2):
    TTFT / TPOT / e2e / latency per token at p50, p90, p99 (seconds), throughput and goodput (req/s;
    goodput within both SLOs), K/V used (a fraction), reserved and written (tokens; None under paged),
    positions computed and needed, preemptions, swap bytes, speculation (mean gamma per decode row,
    tokens per round), the deadlock (if any) as when, how much and how many, the settings; with a
    `replica` the deployment's columns (`replica_fields`); with `draft` (a `DraftMemory`) its memory
    columns. result None (no rate meets a target): the same keys with the metrics left empty; `rate`
    then the rate named."""
    spec, paged = config.spec, config.reservation == "paged"
    deadlock = result.deadlock if result else None
    row = {"scheduler": ServeResult.scheduler_of(config), "reservation": config.reservation,
           "max_batch": config.max_batch,
           "rate_req_per_s": None if workload.concurrency else (result.rate_req_per_s if result else rate),
           "concurrency": workload.concurrency}
    row.update({key: getattr(result, key) if result else None for key in _METRICS if key not in row})
    row.update(tail_fields(result, slo_ttft_s, slo_tpot_s))
    row.update({"tokens_per_s_replica": result.tokens_per_s if result else None,
                "latency_per_token_median_s": row["latency_per_token_p50_s"]})
    row.update({key: getattr(result, key) if result else None for key in _ENGINE})
    row.update({
        "block_size": config.block_size if paged else None,
        "preemption": config.preemption if paged else None,
        "watermark": config.watermark if paged else None,
        "prefill_chunk": config.prefill_chunk, "pipeline": config.pipeline,
        "spec_gamma": spec.gamma if spec else 0, "spec_alpha": spec.alpha if spec else None,
        "spec_policy": spec.policy if spec else None, "spec_c": spec.c if spec and spec.draft_cost is None else None,
        "prefix_caching": config.prefix_caching,  # the hit rates null without the cache, as a replica row's
        "prefix_token_hit_rate": result.prefix_token_hit_rate if config.prefix_caching and result else None,
        "prefix_request_hit_rate": result.prefix_request_hit_rate if config.prefix_caching and result else None,
        "prefill_tokens_saved": result.prefill_tokens_saved if result else None,
        "kv_offload_bytes": config.kv_offload_bytes,
        "deadlock": deadlock is not None if result else None,
        "deadlock_time_s": deadlock.time_s if deadlock else None,
        "deadlock_iterations_done": deadlock.iterations_done if deadlock else None,
        "deadlock_requests_holding": len(deadlock.holders) if deadlock else None,
        "deadlock_kv_held_tokens": deadlock.kv_held_tokens if deadlock else None,
        "workload": workload.description, "seed": workload.seed,
    })
    if draft is not None:
        row.update(draft_fields(draft, workload))
    if replica is not None:
        fields = replica_fields(replica, result)
        if replica.deployment.pp > 1 and config.pipeline != "serial":  # serial: `PIPELINE_NOTE`
            fields["pipeline"] = config.pipeline
        row.update(fields)
        row.update(context_fields(replica, workload, row))
    return row


def draft_fields(draft, workload: Workload | None = None, tokens_per_sequence: float | None = None) -> dict:
    """The draft's memory columns: its weights and K/V per token (one GPU), the target's tokens with
    and without it, and the sequences it costs at the workload's mean prompt + output (or given)."""
    if tokens_per_sequence is None and workload is not None:
        tokens_per_sequence = (sum(workload.prompt) + sum(workload.output)) / len(workload)
    return {"draft": draft.draft, "draft_weight_bytes": draft.draft_weight_bytes,
            "draft_kv_bytes_per_token": draft.draft_kv_bytes_per_token,
            "kv_tokens_without_draft": draft.kv_tokens_without_draft, "kv_tokens_with_draft": draft.kv_tokens,
            "sequences_lost_to_draft": draft.sequences_lost(tokens_per_sequence) if tokens_per_sequence else None}


def fleet_fields(fleet, dep) -> dict:
    """A fleet run's columns (`fleet.FleetResult`): the router, replicas, imbalance (max / mean requests
    per replica), and the deployment's totals as the fleet served them (its rate is the fleet's, not
    x replicas)."""
    whole = fleet.fleet
    return {"router": fleet.router, "replicas": fleet.replica_count, "imbalance": fleet.imbalance,
            "requests_per_replica": list(fleet.requests_per_replica),
            "rate_total_req_per_s": whole.rate_req_per_s, "throughput_total_req_per_s": whole.throughput_req_per_s,
            "tokens_per_s": whole.tokens_per_s, "tokens_per_s_per_gpu": whole.tokens_per_s / dep.total_gpus,
            "tokens_per_s_replica": whole.tokens_per_s / fleet.replica_count}  # the mean replica's, not the fleet's


