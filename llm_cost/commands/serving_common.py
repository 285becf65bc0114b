"""What `capacity`, `batching` and its renderers (`serving_engine`, `serving_prefix`) share: the K/V
element setting, the batching table's columns and a run's caption, apart so the command modules do
not import each other."""

from __future__ import annotations

from llm_cost.report.render import Column, fixed


def kv_settings(kv_dtype: str | None, kv_bytes: float | None) -> tuple[str, float | None]:
    """(kv_dtype for the `Deployment`, bytes per element or None): --kv-dtype, --kv-bytes, or both
    when they agree; one error line when they do not."""
    from llm_cost.errors import InvalidValueError, check_choice, check_number
    from llm_cost.specs.deployment import KV_DTYPES

    if kv_bytes is not None:
        from llm_cost.specs.kv_dtypes import KV_BYTES_RANGE

        check_number("kv_bytes_per_element", kv_bytes, low=KV_BYTES_RANGE[0], high=KV_BYTES_RANGE[1])
    if kv_dtype is None:
        return "bf16", kv_bytes
    name = check_choice("kv_dtype", str(kv_dtype).lower(), tuple(KV_DTYPES))
    if kv_bytes is not None and kv_bytes != KV_DTYPES[name]:
        raise InvalidValueError(f"--kv-bytes {kv_bytes:g} disagrees with --kv-dtype {name} "
                                f"({KV_DTYPES[name]:g} bytes per element): give one of them")
    return name, None


FIT_COLUMN = Column("fits", "fits", lambda fits: "yes" if fits else "NO")
# the columns every served table shows (batching's here, the engine's `serving_engine.SERVE_COLUMNS`)
RATE_COLUMNS = [Column("rate_req_per_s", "rate (req/s)", fixed(2)),
                Column("throughput_req_per_s", "throughput (req/s)", fixed(2))]
LATENCY_COLUMNS = [Column("ttft_p50_s", "TTFT p50 (ms)", fixed(0, 1e-3)),
                   Column("ttft_p99_s", "TTFT p99 (ms)", fixed(0, 1e-3)),
                   Column("tpot_p50_s", "TPOT p50 (ms)", fixed(1, 1e-3)),
                   Column("tpot_p99_s", "TPOT p99 (ms)", fixed(1, 1e-3))]
BATCHING_COLUMNS = [
    Column("scheduler", "scheduler"),
    Column("max_batch", "max batch"),
    *RATE_COLUMNS,
    Column("latency_per_token_median_s", "median (ms/token)", fixed(1, 1e-3)),
    Column("latency_per_token_p90_s", "p90 (ms/token)", fixed(1, 1e-3)),
    Column("latency_per_token_p99_s", "p99 (ms/token)", fixed(1, 1e-3)),
    *LATENCY_COLUMNS,
    Column("kv_reserved_mean_tokens", "KV reserved (tokens)", fixed(0)),
    Column("kv_written_mean_tokens", "KV written (tokens)", fixed(0)),
    Column("kv_reserved_over_written", "reserved/written", fixed(2)),
    Column("mean_batch", "mean batch", fixed(1)),
    Column("finished", "finished", fixed(0)),
    Column("deadlock", "deadlock", lambda deadlock: "-" if deadlock is None else ("yes" if deadlock else "no")),
]
BATCHING_DEPLOYED_COLUMNS = [
    Column("comm_time_s", "comm/iter (ms)", fixed(3, 1e-3)),
    Column("tokens_per_s", "tok/s (all)", fixed(0)),
    Column("tokens_per_s_per_gpu", "tok/s/GPU", fixed(0)),
]


def run_caption(out) -> str:
    """A `BatchingOutcome`'s caption start: its requests (a rate search's: those of the run its row shows,
    the longer confirmation's where it ran one), their workload and seed, the serving settings."""
    wl, search = out.workload, out.search
    requests = search.result.requests if search is not None and search.result is not None else len(wl)
    return f"{requests:,} requests, {wl.description}, seed {out.request.seed}" + _settings_caption(out.config)


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
