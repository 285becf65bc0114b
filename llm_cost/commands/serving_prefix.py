"""`batching`'s prefix caching from the command line (issue 25.1): `--prefix-caching` implies paged K/V
(the cache is block-level), and `--compare-prefix-caching` serves each rate twice, without and with the
cache, the same requests, and shows hit rates, prefill tokens saved, TTFT and throughput side by side.

A flag of its own rather than `--prefix-caching compare`: `--prefix-caching` stays the plain on/off flag
it is everywhere it is declared (`batching`, and `plan --verify`, which passes it to each candidate's
run), and a run that is asked to compare is not asked to cache. The library serves both
(`serving.batching_run`, the reservation from `batching_request.implied_reservation`); this module
renders the comparison (`render_compare`) and says what the options implied (`note_implied`)."""

from __future__ import annotations

from llm_cost.report.render import Column, fixed

COMPARE_COLUMNS = [Column("prefix_caching", "prefix caching", lambda caching: "on" if caching else "off"),
                   Column("throughput_req_per_s", "served (req/s)", fixed(2)),
                   Column("tokens_per_s", "tok/s (all)", fixed(0)),
                   Column("ttft_p50_s", "TTFT p50 (ms)", fixed(0, 1e-3)),
                   Column("ttft_p99_s", "TTFT p99 (ms)", fixed(0, 1e-3)),
                   Column("tpot_p50_s", "TPOT p50 (ms)", fixed(1, 1e-3)),
                   Column("prefix_token_hit_rate", "prefix hit (tok)", fixed(3)),
                   Column("prefill_tokens_saved", "prefill tok saved", fixed(0))]
COMPARE_NOTE = ("off and on serve the same requests; prefix hit: prompt tokens found cached / looked up "
                "(JSON: by requests too); prefill tok saved: prompt tokens not prefilled again")


def note_implied(out) -> None:
    """The one-line notes once the run of the `BatchingOutcome` `out` has printed (none with --quiet): the
    reservation prefix caching implied (`batching_request.implied_reservation`), and a `--preemption swap`
    that changed nothing (only paged K/V preempts: declared, max_len and none reserve or stall instead)."""
    from llm_cost.commands.app import note

    implied, request = out.implied_reservation, out.request
    if implied:
        note("prefix caching keeps K/V blocks: served with --reservation paged (blocks on demand, preemption)")
    if request.preemption == "swap" and (request.reservation or implied) != "paged":
        note("--preemption swap changed nothing: only --reservation paged preempts")


def render_compare(out, fmt: str, prices) -> None:
    """`batching --compare-prefix-caching`'s output of the `BatchingOutcome` `out`: two rows per rate (the
    uncached run, then the cached), a table per rate, and the ratios on both rows
    (`ttft_p50_over_uncached`, `tokens_per_s_over_uncached`: 1 on the uncached); `prices` ($/kWh,
    $/GPU-hour) as elsewhere."""
    from llm_cost.commands.app import emit, interrupted
    from llm_cost.report.serving_rows import fleet_fields, serve_row

    rates = out.planned // 2
    if not out.results and out.planned:  # Ctrl-C before a pair finished: the warning on a line of its own
        interrupted(0, rates, "rates")
    request, acc, dep, replica, fleets = out.request, out.gpu, out.deployment, out.replica, out.fleets
    slo = {"slo_ttft_s": request.slo_ttft_s, "slo_tpot_s": request.slo_tpot_s}
    from llm_cost.commands.serving_common import run_caption

    caption = run_caption(out)
    rows = []
    for index, (result, workload, config) in enumerate(zip(out.results, out.workloads, out.configs)):
        row = {"model": out.model.name, "gpu": acc.label, "gpu_name": acc.name, "preset": out.profile.name,
               **serve_row(result, workload, config, replica=replica, **slo)}
        if fleets:
            row.update(fleet_fields(fleets[index], dep))
        rows.append(row)
    for off, on in zip(rows[::2], rows[1::2]):
        for row in (off, on):
            row["ttft_p50_over_uncached"] = _ratio(row["ttft_p50_s"], off["ttft_p50_s"])
            row["tokens_per_s_over_uncached"] = _ratio(row["tokens_per_s"], off["tokens_per_s"])
    from llm_cost.commands.serving_energy import priced, served_energy_columns

    energy = served_energy_columns(rows, list(out.results), acc, dep, fleets, out.config.pipeline)
    energy += priced(rows, prices[0], prices[1])
    title = f"{replica.description}, KV {replica.kv_capacity_tokens:,} tokens, serving engine"
    if fmt in ("json", "csv"):
        emit(rows, COMPARE_COLUMNS + energy, fmt, title=title, caption=caption)
    else:
        pairs = list(zip(rows[::2], rows[1::2]))
        for index, (off, on) in enumerate(pairs):
            head = (f"{title}; at {off['rate_req_per_s']:g} req/s without and with prefix caching: TTFT p50 "
                    f"x{on['ttft_p50_over_uncached']:.2f}, tok/s x{on['tokens_per_s_over_uncached']:.2f}")
            emit([off, on], COMPARE_COLUMNS + energy[1:], fmt, title=head,  # J/token, not W: 80 columns
                 caption=caption + "; " + COMPARE_NOTE if index == len(pairs) - 1 else "")
    note_implied(out)
    if out.interrupted:
        interrupted(len(out.results) // 2, rates, "rates")


def _ratio(value, base):
    """value / base, None where either is missing or base is 0."""
    return value / base if value is not None and base else None
