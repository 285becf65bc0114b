"""Request-level batching (FasterTransformer), the admission policy `ServeConfig(scheduler="request")`.

`engine.serve` runs it for that policy; its features are an allow-list (`FEATURES`), anything else
under `scheduler="request"` is refused in one line. The rules (the lecture §2-§3, Orca §2):
when the engine is idle it takes up to `max_batch` queued requests, no more than fit with a
maximum-length K/V reservation each (GPT-3 13B on an A100 40GB: 12,564 // 2048 = 6). Prompts are
padded to the longest, every row runs to the longest output, and the whole batch returns at the end.

An iteration costs `PassCost.time` (the prefill: b x lmax rows, b x causal_pairs(lmax) pairs; each
decode step: b rows over the padded contexts, by `fast_reservations.decode_stretch`), so a batch costs
one prefill and one stretch. Per-token latency = (finish - arrival) / output (the lecture §3.3).
"""

from __future__ import annotations

import math
from collections import deque

from llm_cost.roofline import causal_pairs
from llm_cost.serving.batch_waste import padded_positions
from llm_cost.serving import eligibility
from llm_cost.serving.eligibility import any_value as _any
from llm_cost.serving.fast_reservations import COST_FEATURES, decode_stretch, finished_result
from llm_cost.serving.iteration import compute_bound_rows
from llm_cost.serving.run_stats import RunStats
from llm_cost.serving.serve_result import ServeResult


# The `ServeConfig` features request-level batching runs, field by field: a field missing here, or
# a value it does not support, is refused (`covers` False; `engine.serve` says so in one line).
FEATURES = {
    "max_batch": _any,
    "reservation": lambda value, cfg: value == "max_len",  # whole batches reserve the maximum length
    "block_size": _any,  # paged only
    "watermark": _any,  # paged only
    "preemption": _any,  # paged only
    "prefill_chunk": lambda value, cfg: value is None,
    "spec": lambda value, cfg: value is None,
    "pipeline": _any,  # with stages: `serial` only (`covers`)
    "host_bytes_per_s": _any,
    "scheduler": lambda value, cfg: value == "request",
    "prefix_caching": lambda value, cfg: not value,
    "kv_offload_bytes": lambda value, cfg: not value,
}


def covers(workload, replica, cfg) -> bool:
    """Whether request-level batching runs `cfg` (`FEATURES`; the pass cost's fields as
    `fast_reservations.COST_FEATURES`: K/V without windows or per-sequence state, one stage or a
    `serial` pipeline; open-loop arrivals)."""
    return eligibility.covers(workload, replica, cfg, config=FEATURES, cost=COST_FEATURES,
                              own_time=True)  # its passes: `fast_reservations.decode_stretch`, by the cost's time


def serve_request_level(workload, replica, cfg, on_progress=None) -> ServeResult:
    """`engine.serve` under `scheduler="request"` (module doc)."""
    stats, first = RunStats(), [math.nan] * len(workload)
    finish = _batches(workload, replica, min(cfg.max_batch, replica.kv_capacity_tokens // replica.max_len), stats,
                      first)
    if on_progress:
        on_progress(len(workload), len(workload))
    return finished_result(workload, replica, cfg, first, finish, None, stats, "request_level")


def _batches(workload, replica, batch_cap: int, stats: RunStats, first: list) -> list[float]:
    """Batches run to completion; rows padded to the longest prompt and the longest output. Finish
    times; the first tokens' to `first`, the statistics to `stats`."""
    cost = replica.cost
    bound_rows = compute_bound_rows(cost)
    prompt, output, n_requests, arrivals = workload.prompt, workload.output, len(workload), workload.arrival_s
    finish = [math.nan] * n_requests
    queue: deque[int] = deque()
    now, arrived, left = 0.0, 0, n_requests
    while left:
        while arrived < n_requests and arrivals[arrived] <= now:
            queue.append(arrived)
            arrived += 1
        if not queue:
            now = arrivals[arrived]
            continue
        batch = [queue.popleft() for _ in range(min(batch_cap, len(queue)))]
        size = len(batch)
        lmax = max(prompt[req] for req in batch)
        omax = max(output[req] for req in batch)
        reserved = size * replica.max_len
        prefill = cost.time(size * lmax, size * lmax, size * causal_pairs(lmax))
        _, span, written_area, _ = decode_stretch(cost, size, size * lmax, omax - 1)  # every row to the longest output
        for req in batch:
            first[req] = now + prefill  # the batch's prefill emits every row's first token
        if cost.deployed:
            stats.comm_s += cost.comm_time_s(size * lmax) + (omax - 1) * cost.comm_time_s(size)
        seconds = prefill + span
        stats.kv_used_area += written_area - size * span  # each decode step's start holds `size` fewer, a prefill none
        stats.peak_kv_used = max(stats.peak_kv_used, size * (lmax + omax - 2) if omax > 1 else 0)
        written_area += prefill * size * lmax
        now += seconds
        for req in batch:
            finish[req] = now
        left -= size
        stats.busy_s += seconds
        stats.compute_bound_s += (prefill if size * lmax >= bound_rows else 0.0) + (span if size >= bound_rows else 0.0)
        stats.batch_area += seconds * size
        stats.kv_reserved_area += seconds * reserved
        stats.kv_written_area += written_area
        stats.peak_kv_reserved = max(stats.peak_kv_reserved, reserved)
        positions = padded_positions(size, lmax, omax)  # also the KV the batch holds at its end
        stats.peak_kv_written = max(stats.peak_kv_written, positions)
        stats.iterations += omax
        stats.rows += positions
    return finish
