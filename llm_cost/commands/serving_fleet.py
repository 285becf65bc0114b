"""`batching --router R`'s per-replica rows (issue 25.2): each replica's requests, its share of the load,
throughput, TTFT/TPOT tails, prefix hit rate and K/V use, beside the fleet's row. A table under the
fleet's (one per rate); in JSON and CSV the same rows after the fleet's, each with a `replica` key
(the fleet's row has `replica` None). `serving.batching_run` serves the fleet, `commands/serving_engine` calls `emit_fleet`."""

from __future__ import annotations

from llm_cost.commands.serving_common import LATENCY_COLUMNS
from llm_cost.report.render import Column, fixed

FLEET_COLUMNS = [Column("router", "router"), Column("replicas", "replicas"),
                 Column("imbalance", "imbalance (max/mean)", fixed(3))]
# narrow headers: ten columns in one table at 80 (a replica's load over the mean is its requests over the
# mean, in JSON as load_over_mean, the largest in the title as the imbalance)
REPLICA_COLUMNS = [Column("replica", "replica"), Column("requests", "requests", fixed(0)),
                   Column("throughput_req_per_s", "served (req/s)", fixed(2)), *LATENCY_COLUMNS,
                   Column("prefix_token_hit_rate", "prefix hit (tok)", fixed(3)),
                   Column("kv_utilisation", "KV used (%)", fixed(1, 0.01))]
REPLICA_KEYS = ("requests", "throughput_req_per_s", "ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s",
                "prefix_token_hit_rate", "kv_utilisation")
REPLICA_NOTE = ("replicas: each one's own requests; imbalance = the most requests on one replica / the mean "
                "(JSON, CSV: each one's load_over_mean); a replica handed none idles")


def plural(count: int, noun: str) -> str:
    """`count` and `noun`, plural past one: the captions' "4 replicas of 1 GPU".

    >>> plural(1, "GPU"), plural(4, "replica")
    ('1 GPU', '4 replicas')
    """
    return f"{count} {noun}" + ("" if count == 1 else "s")


def fleet_caption(dep, router: str) -> str:
    """The caption's part on a `--router` fleet: its replicas and their GPUs, the router, the rate's meaning."""
    return (f"; {plural(dep.replicas, 'replica')} of {plural(dep.gpus_per_replica, 'GPU')} simulated together "
            f"behind {router} routing, --rate is the fleet's")


def replica_rows(fleet, fleet_row: dict) -> list[dict]:
    """One row per replica of `fleet` (a `fleet.FleetResult`), every replica in index order (one handed
    no request: requests 0, its figures None), with the fleet row's identity (model, GPU, preset, rate,
    router) so that a JSON or CSV reader can group them."""
    counts = fleet.requests_per_replica
    mean = sum(counts) / len(counts) if counts else 0.0
    results = iter(fleet.replicas)  # only the replicas handed requests have a result, in index order
    ident = {key: fleet_row.get(key) for key in ("model", "gpu", "gpu_name", "preset", "rate_req_per_s", "router")}
    cached = bool(fleet_row.get("prefix_caching"))
    rows = []
    for index, handed in enumerate(counts):
        res = next(results) if handed else None
        row = {**ident, "replica": index, "requests": handed, "load_over_mean": handed / mean if mean else None}
        row.update({key: None for key in REPLICA_KEYS[1:]})
        if res is not None:
            row.update({"throughput_req_per_s": res.throughput_req_per_s,
                        "ttft_p50_s": res.percentile_s("ttft", "p50"), "ttft_p99_s": res.percentile_s("ttft", "p99"),
                        "tpot_p50_s": res.percentile_s("tpot", "p50"), "tpot_p99_s": res.percentile_s("tpot", "p99"),
                        "prefix_token_hit_rate": res.prefix_token_hit_rate if cached else None,
                        "kv_utilisation": res.kv_utilisation})
        rows.append(row)
    return rows


def emit_fleet(out, rows, columns, fmt: str, prices, fleet=None, *, title: str = "", caption: str = "") -> None:
    """`batching`'s output of the `BatchingOutcome` `out` in `fmt` (`_emit_fleet`) with the price columns
    (`prices`: $/kWh, $/GPU-hour), then the note of a paged reservation that prefix caching implied
    (`serving_prefix.note_implied`: after the output, so a refusal stays one line)."""
    from llm_cost.commands.serving_energy import priced
    from llm_cost.commands.serving_prefix import note_implied

    if fleet is not None:  # the fleet's totals first: its prices are of all its GPUs' tokens
        from llm_cost.report.serving_rows import fleet_fields

        for row, fleet_result in zip(rows, fleet[0]):
            row.update(fleet_fields(fleet_result, fleet[1]))
    columns = columns + priced(rows, prices[0], prices[1])  # $ per million tokens
    _emit_fleet(rows, columns, fmt, fleet, title=title, caption=caption)
    note_implied(out)


def _emit_fleet(rows, columns, fmt: str, fleet, *, title: str, caption: str) -> None:
    """`emit` of the rows; with `fleet` = (one `FleetResult` per row, the `Deployment`), the fleet's fields'
    columns (`fleet_fields`: router, replicas, imbalance, its totals, set by `emit_fleet`), then each rate's
    replica rows: a table of its own per rate under the fleet's (the caption after the last; the imbalance
    in its title, not a column of the fleet's table), or in JSON and CSV the same rows after the fleet's,
    each with a `replica` key (the fleet's: None) and the imbalance on the fleet's."""
    from llm_cost.commands.app import emit

    if fleet is None:
        return emit(rows, columns, fmt, title=title, caption=caption)
    fleets, dep = fleet  # the rows carry the fleet's fields (`emit_fleet`)
    per = [replica_rows(fleet_result, row) for fleet_result, row in zip(fleets, rows)]
    if fmt in ("json", "csv"):  # CSV takes the first row's keys: every replica key is on the fleet's row
        fleet_rows = [{**row, "replica": None, "load_over_mean": None} for row in rows]
        return emit(fleet_rows + [replica_row for rs in per for replica_row in rs], columns + FLEET_COLUMNS, fmt,
                    title=title, caption=caption)
    # the table: the imbalance is each replica table's title, not a column of the fleet's (at 80 columns a
    # table of its own, the KV policy and one figure)
    emit(rows, columns + [column for column in FLEET_COLUMNS if column.key != "imbalance"], fmt, title=title)
    for index, (fleet_result, rs) in enumerate(zip(fleets, per)):
        cols = [column for column in REPLICA_COLUMNS
                if column.key != "prefix_token_hit_rate" or rows[index].get("prefix_caching")]
        emit(rs, cols, fmt, title=f"replicas at {rows[index]['rate_req_per_s']:g} req/s, {fleet_result.router} "
                                  f"routing, imbalance {fleet_result.imbalance:.3f} (max/mean requests)",
             caption=caption + "; " + REPLICA_NOTE if index == len(fleets) - 1 else "")
