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
from llm_cost.serving.fast_reservations import COST_FEATURES, StepStats, decode_stretch, step_result
from llm_cost.serving.iteration import compute_bound_rows
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
    return eligibility.covers(workload, replica, cfg, config=FEATURES, cost=COST_FEATURES)


def serve_request_level(workload, replica, cfg, on_progress=None) -> ServeResult:
    """`engine.serve` under `scheduler="request"` (module doc)."""
    st = StepStats(len(workload))
    finish = _batches(workload, replica, min(cfg.max_batch, replica.kv_capacity_tokens // replica.max_len), st)
    if on_progress:
        on_progress(len(workload), len(workload))
    return step_result(workload, replica, cfg, finish, None, st, sum(workload.kv_tokens_written), "request_level")


def _batches(wl, replica, batch_cap: int, st: StepStats) -> list[float]:
    """Batches run to completion; rows padded to the longest prompt and the longest output."""
    cost = replica.cost
    bound_rows = compute_bound_rows(cost)
    prompt, output, n, arrivals = wl.prompt, wl.output, len(wl), wl.arrival_s
    finish = [math.nan] * n
    queue: deque[int] = deque()
    t, nxt, left = 0.0, 0, n
    while left:
        while nxt < n and arrivals[nxt] <= t:
            queue.append(nxt)
            nxt += 1
        if not queue:
            t = arrivals[nxt]
            continue
        batch = [queue.popleft() for _ in range(min(batch_cap, len(queue)))]
        b = len(batch)
        lmax = max(prompt[i] for i in batch)
        omax = max(output[i] for i in batch)
        reserved = b * replica.max_len
        prefill = cost.time(b * lmax, b * lmax, b * causal_pairs(lmax))
        _, span, area_w, _ = decode_stretch(cost, b, b * lmax, omax - 1)  # every row to the longest output
        for i in batch:
            st.first[i] = t + prefill  # the batch's prefill emits every row's first token
        if cost.deployed:
            st.comm += cost.comm_time_s(b * lmax) + (omax - 1) * cost.comm_time_s(b)
        dt = prefill + span
        st.area_u += area_w - b * span  # each decode step's start holds b fewer; the prefill's nothing
        st.peak_u = max(st.peak_u, b * (lmax + omax - 2) if omax > 1 else 0)
        area_w += prefill * b * lmax
        t += dt
        for i in batch:
            finish[i] = t
        left -= b
        st.busy += dt
        st.compute_bound += (prefill if b * lmax >= bound_rows else 0.0) + (span if b >= bound_rows else 0.0)
        st.area_n += dt * b
        st.area_r += dt * reserved
        st.area_w += area_w
        st.peak_r = max(st.peak_r, reserved)
        positions = padded_positions(b, lmax, omax)  # also the KV the batch holds at its end
        st.peak_w = max(st.peak_w, positions)
        st.iterations += omax
        st.rows += positions
    return finish
