"""`batching`'s prefix caching from the command line (issue 25.1): `--prefix-caching` implies paged K/V
(the cache is block-level), and `--compare-prefix-caching` serves each rate twice, without and with the
cache, the same requests, and shows hit rates, prefill tokens saved, TTFT and throughput side by side.

A flag of its own rather than `--prefix-caching compare`: `--prefix-caching` stays the plain on/off flag
it is everywhere it is declared (`batching`, and `plan --verify`, which passes it to each candidate's
run), and a run that is asked to compare is not asked to cache. `commands/serving_engine` calls
`implied_reservation` while building the `ServeConfig` and `run_prefix_compare` for the flag."""

from __future__ import annotations

from llm_cost.report.render import Column, fixed

COMPARE_COLUMNS = [Column("prefix_caching", "prefix caching", lambda v: "on" if v else "off"),
                   Column("throughput_req_per_s", "served (req/s)", fixed(2)),
                   Column("tokens_per_s", "tok/s (all)", fixed(0)),
                   Column("ttft_p50_s", "TTFT p50 (ms)", fixed(0, 1e-3)),
                   Column("ttft_p99_s", "TTFT p99 (ms)", fixed(0, 1e-3)),
                   Column("tpot_p50_s", "TPOT p50 (ms)", fixed(1, 1e-3)),
                   Column("prefix_token_hit_rate", "prefix hit (tok)", fixed(3)),
                   Column("prefill_tokens_saved", "prefill tok saved", fixed(0))]
COMPARE_NOTE = ("off and on serve the same requests; prefix hit: prompt tokens found cached / looked up "
                "(JSON: by requests too); prefill tok saved: prompt tokens not prefilled again")


def implied_reservation(o: dict, scheduler: str) -> str | None:
    """"paged" when prefix caching is asked for (`--prefix-caching` or `--compare-prefix-caching`)
    under the iteration scheduler without a `--reservation` (the cache holds K/V blocks); None otherwise
    (an explicit reservation stays, and a non-paged one is refused by the library in one line). The note
    that says so comes after the output (`note_implied`): a refusal later on stays one line."""
    if o.get("reservation") or scheduler != "iteration" or not (o.get("prefix_caching") or o.get("compare_prefix_caching")):
        return None
    return "paged"


def note_implied(o: dict) -> None:
    """The one-line notes, once the run has printed (none with --quiet): `implied_reservation`'s choice,
    and a `--preemption swap` that changed nothing (only paged K/V preempts: declared, max_len and
    none reserve or stall instead)."""
    from llm_cost.commands.app import note

    implied = implied_reservation(o, o.get("scheduler", "iteration"))
    if implied:
        note("prefix caching keeps K/V blocks: served with --reservation paged (blocks on demand, preemption)")
    if o.get("preemption") == "swap" and (o.get("reservation") or implied) != "paged":
        note("--preemption swap changed nothing: only --reservation paged preempts")


def run_prefix_compare(o: dict, wl, rates, replica, config, slo: dict, caption: str, specs) -> None:
    """`batching --compare-prefix-caching`: each rate served without and with prefix caching (`engine.serve`,
    or `fleet.serve_fleet` behind `--router`), the same requests; two rows per rate, a table per rate, and
    the ratios on both rows (`ttft_p50_over_uncached`, `tokens_per_s_over_uncached`: 1 on the uncached)."""
    from dataclasses import replace

    from llm_cost.commands.app import emit
    from llm_cost.errors import InvalidValueError
    from llm_cost.report.serving_rows import fleet_fields, serve_row

    if o["slo_ms"] is not None or o.get("disaggregate") is not None:
        raise InvalidValueError("--compare-prefix-caching serves the given --rate values on one pool: give --rate, "
                                "not --slo-ms or --disaggregate", params=("compare_prefix_caching",))
    target, acc, profile, dep = specs
    configs = (replace(config, prefix_caching=False), replace(config, prefix_caching=True))
    runs = [(w, c) for w in (wl.at_rate(r) for r in rates) for c in configs]
    if o.get("router"):
        from llm_cost.serving.fleet import serve_fleet

        fleets = _served(runs, lambda w, c, inner: serve_fleet(w, replica, c, dep.replicas, o["router"],
                                                               on_progress=inner))
        results = [f.fleet for f in fleets]
    else:
        from llm_cost.serving.engine import serve

        fleets, results = None, _served(runs, lambda w, c, inner: serve(w, replica, c, on_progress=inner))
    runs = runs[:len(results)]
    rows = []
    for k, (result, (w, c)) in enumerate(zip(results, runs)):
        row = {"model": target.name, "gpu": acc.label, "gpu_name": acc.name, "preset": profile.name,
               **serve_row(result, w, c, replica=replica, **slo)}
        if fleets:
            row.update(fleet_fields(fleets[k], dep))
        rows.append(row)
    for off, on in zip(rows[::2], rows[1::2]):
        for row in (off, on):
            row["ttft_p50_over_uncached"] = _ratio(row["ttft_p50_s"], off["ttft_p50_s"])
            row["tokens_per_s_over_uncached"] = _ratio(row["tokens_per_s"], off["tokens_per_s"])
    from llm_cost.commands.serving_energy import priced, served_energy_columns

    energy = served_energy_columns(rows, results, acc, dep, fleets, config.pipeline)
    energy += priced(rows, o.get("usd_per_kwh"), o.get("usd_per_gpu_hour"))
    title = f"{replica.description}, KV {replica.kv_capacity_tokens:,} tokens, serving engine"
    if o["fmt"] in ("json", "csv"):
        emit(rows, COMPARE_COLUMNS + energy, o["fmt"], title=title, caption=caption)
    else:
        pairs = list(zip(rows[::2], rows[1::2]))
        for k, (off, on) in enumerate(pairs):
            head = (f"{title}; at {off['rate_req_per_s']:g} req/s without and with prefix caching: TTFT p50 "
                    f"x{on['ttft_p50_over_uncached']:.2f}, tok/s x{on['tokens_per_s_over_uncached']:.2f}")
            emit([off, on], COMPARE_COLUMNS + energy[1:], o["fmt"], title=head,  # J/token, not W: 80 columns
                 caption=caption + "; " + COMPARE_NOTE if k == len(pairs) - 1 else "")
    note_implied(o)
    if len(results) < 2 * len(rates):
        from llm_cost.commands.app import interrupted

        interrupted(len(results) // 2, len(rates), "rates")


def _served(runs, each) -> list:
    """`[each(workload, config, on_progress) for workload, config in runs]` under one progress bar (requests
    finished); Ctrl-C stops with the rates whose two runs finished (none: exit 130 at once)."""
    from llm_cost.commands.app import interrupted
    from llm_cost.commands.progress import SweepProgress

    out, m = [], len(runs)
    with SweepProgress("simulating without and with prefix caching") as progress:
        try:
            for k, (w, c) in enumerate(runs):
                out.append(each(w, c, lambda d, t, k=k: progress(k * t + d, m * t)))
        except KeyboardInterrupt:
            pass
    if len(out) < 2 and m:  # the bar stopped first: the warning on a line of its own
        interrupted(0, m // 2, "rates")
    return out[:len(out) // 2 * 2]


def _ratio(a, b):
    """a / b, None where either is missing or b is 0."""
    return a / b if a is not None and b else None
