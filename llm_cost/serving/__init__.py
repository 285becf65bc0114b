"""Serving: KV capacity and reservation policies, workloads, a replica's cost, the serving engine.

`capacity` (KV tokens beside the weights), `policies` (requests per reservation policy),
`batch_waste` (padding, launches),
`workload` (Poisson arrivals, lengths), `replica` (one model replica: its iteration cost and KV
capacity), `reservations` (the policies, the deadlock report), `rate_search` (the highest rate under a
target); `engine` (`serve`, the one scheduler: Orca's reservations, request-level batches, paged KV
and preemption, chunked prefill, speculation in the batch, pipeline stages in flight) with its general
loop `engine_loop`, its fast paths `fast_reservations` and `fast_engine` (each an allow-list of
`ServeConfig` fields), `request_level` (the `request` admission policy), `serve_config`,
`serve_result`, `engine_state` (what one iteration hands the next, and what the fast path and the
general loop hand each other), `spec_batch`, `workload_spec` (any lengths, bursty and closed-loop
arrivals, traces), `setup` (specs and named settings to a replica and its `ServeConfig`), `retime` (a recorded schedule re-priced), `draft_memory` (the draft's share of
memory) and `batching_request` / `batching_run` (`batching` as one call: a `BatchingRequest` served
by `run_batching` in its mode, a `BatchingOutcome`).
"""

from llm_cost._exports import lazy_exports, names_from

_EXPORTS = {
    **names_from(".capacity", "DEFAULT_RESERVE", "kv_capacity", "KvCapacity", "sequences_that_fit"),
    **names_from(".policies", "requests_that_fit", "requests_by_policy", "RequestsFit", "model_max_len"),
    **names_from(".batch_waste", "padding_waste", "PaddingWaste", "attention_launches", "AttentionLaunches"),
    # the checked twins of what the simulators call per request or batch, unchecked (`terms`)
    **names_from(".terms", "padded_positions", "reservation_tokens"),
    **names_from(".workload", "Workload", "poisson_workload", "fixed_workload", "ORCA_PROMPT", "ORCA_OUTPUT"),
    **names_from(".replica", "Replica", "IterationCost"),
    **names_from(".reservations", "Deadlock", "Holder", "RESERVATIONS"),
    **names_from(".rate_search", "highest_rate", "RateSearch", "unloaded_latency_per_token"),
    **names_from(".engine", "serve", "path_of", "runs_step_level", "FAST_PATHS"),
    **names_from(".serve_config", "ServeConfig", "SpecConfig", "host_link_bytes_per_s", "config_for",
                 "LECTURE_SCHEDULERS"),
    **names_from(".serve_result", "ServeResult"),
    **names_from(".workload_spec", "synthetic_workload", "read_trace", "parse_length"),
    **names_from(".draft_memory", "DraftMemory"),  # the function: llm_cost.serving.draft_memory.draft_memory
    # `batching` as one call (issue 24.4): the request, its run in one of five modes, what it served
    **names_from(".batching_request", "BatchingRequest"),
    **names_from(".batching_run", "run_batching", "BatchingOutcome"),
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
