"""Result rows for the CLI's `capacity`, `waste` and `batching` commands.

Flat dicts, SI values, the unit in the key (`kv_tokens`, `latency_per_token_median_s`); kept
out of cli.py so that they can be tested and reused without Typer.
"""

from __future__ import annotations

from typing import Callable, Sequence

from llm_cost.counts import BF16_BYTES
from llm_cost.serving.batch_waste import padding_waste
from llm_cost.serving.capacity import kv_capacity, model_max_len, requests_by_policy
from llm_cost.serving.rate_search import RateSearch, highest_rate
from llm_cost.serving.replica import Replica
from llm_cost.serving.sim_result import SimResult
from llm_cost.serving.simulator import simulate
from llm_cost.specs import BF16, Accelerator, ModelSpec, WeightFormat
from llm_cost.serving.workload import Workload


def capacity_row(model: ModelSpec, gpu: Accelerator, *, reserve: float, prompt: float, max_gen: float,
                 gen: float | None = None, max_len: int | None = None, weights: WeightFormat = BF16,
                 kv_bytes_per_element: float = BF16_BYTES) -> dict:
    """KV tokens beside the weights and the requests that fit under each reservation policy."""
    cap = kv_capacity(model, gpu, reserve=reserve, weights=weights, kv_bytes_per_element=kv_bytes_per_element)
    fit = requests_by_policy(cap.kv_tokens, max_len=model_max_len(model, max_len), prompt=prompt,
                             max_gen=max_gen, gen=gen)
    return {
        "model": model.name, "gpu": gpu.name, "weights": weights.name,
        "memory_bytes": cap.memory_bytes, "reserve_fraction": reserve, "usable_bytes": cap.usable_bytes,
        "weight_bytes": cap.weight_bytes, "kv_bytes_per_token": cap.kv_bytes_per_token,
        "kv_bytes_available": cap.kv_bytes_available, "shortfall_bytes": cap.shortfall_bytes,
        "kv_tokens": cap.kv_tokens, "max_len": fit.max_len, "prompt": prompt, "max_gen": max_gen,
        "gen": fit.gen, "requests_max_len": fit.requests_max_len,
        "requests_declared": fit.requests_declared, "requests_none": fit.requests_none,
    }


def waste_row(prompts: Sequence[int], outputs: Sequence[int]) -> dict:
    """One request-level batch: positions computed vs needed (exercise 1)."""
    w = padding_waste(prompts, outputs)
    return {
        "batch": w.batch, "prompt_max": w.prompt_max, "output_max": w.output_max,
        "positions_computed": w.positions_computed, "positions_needed": w.positions_needed,
        "positions_wasted": w.positions_wasted, "waste_fraction": w.waste_fraction,
    }


def waste_sim_row(result: SimResult) -> dict:
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


def batching_row(result: SimResult | None, workload: Workload, *, scheduler: str = "",
                 max_batch: int = 0, rate: float = 0.0) -> dict:
    """One simulation's metrics, flat; the deadlock (if any) as when, how much and how many.

    result None (no rate meets a target): the same keys with the metrics left empty.
    """
    r, d = result, result.deadlock if result else None
    row = {"scheduler": r.scheduler if r else scheduler, "max_batch": r.max_batch if r else max_batch,
           "rate_req_per_s": r.rate_req_per_s if r else rate}
    row.update({key: getattr(r, key) if r else None for key in _METRICS})
    row.update({
        "deadlock": d is not None if r else None,
        "deadlock_time_s": d.time_s if d else None,
        "deadlock_iterations_done": d.iterations_done if d else None,
        "deadlock_requests_holding": len(d.holders) if d else None,
        "deadlock_kv_held_tokens": d.kv_held_tokens if d else None,
        "workload": workload.description, "seed": workload.seed,
    })
    return row


def batching_rows(workload: Workload, replica: Replica, *, scheduler: str, max_batch: int,
                  rates: Sequence[float], reservation: str | None = None,
                  on_step: Callable[[int, int], None] | None = None) -> tuple[list[dict], list[SimResult]]:
    """One simulation per rate, the same requests replayed at each (common random numbers)."""
    rows, results = [], []
    for k, rate in enumerate(rates):
        r = simulate(workload.at_rate(rate), replica, scheduler=scheduler, max_batch=max_batch,
                     reservation=reservation)
        rows.append(batching_row(r, workload.at_rate(rate)))
        results.append(r)
        if on_step:
            on_step(k + 1, len(rates))
    return rows, results


def search_row(workload: Workload, replica: Replica, *, scheduler: str, max_batch: int, slo_s: float,
               statistic: str = "median", reservation: str | None = None,
               on_step: Callable[[int, int], None] | None = None) -> tuple[dict, RateSearch]:
    """The highest rate meeting the per-token latency target, with the metrics at that rate."""
    s = highest_rate(workload, replica, scheduler=scheduler, max_batch=max_batch, slo_s=slo_s,
                     statistic=statistic, reservation=reservation, on_step=on_step)
    row = batching_row(s.result, workload, scheduler=scheduler, max_batch=max_batch,
                       rate=s.rate_req_per_s)
    row.update({"slo_s": slo_s, "slo_stat": statistic, "unloaded_latency_per_token_s": s.unloaded_s,
                "saturated_throughput_req_per_s": s.saturated_req_per_s,
                "saturated_deadlock": s.saturated_deadlock, "evaluations": s.evaluations})
    return row, s
