"""`batching --disaggregate P:D`'s two pools (issue 25.3) as rendered: the per-pool fields on the fleet
row and the per-pool rows printed under it. `serving.batching_run` builds the pools (the decode pool's
split from `decode_tp` and its batch from `decode_max_batch`, each the prefill pool's where not given,
as `plan --disaggregate` chooses them per pool) and serves them; `parse.split` reads P:D."""

from __future__ import annotations

from llm_cost.report.render import Column, fixed

POOL_COLUMNS = [Column("pool", "pool"), Column("rate_req_per_s", "rate (req/s)", fixed(2)),
                Column("replicas", "replicas"), Column("gpus", "GPUs"),
                Column("ttft_p50_s", "TTFT p50 (ms)", fixed(0, 1e-3)),
                Column("tpot_p50_s", "TPOT p50 (ms)", fixed(1, 1e-3)),
                Column("throughput_req_per_s", "throughput (req/s)", fixed(2)),
                Column("kv_utilisation", "KV used (%)", fixed(1, 0.01))]
POOL_NOTE = ("pools: each pool's own requests; the decode pool's TPOT its own pace from its first token on "
             "(the fleet's TPOT adds the hand-off and the decode queue)")


def pool_rows(run, prefill: int, decode: int, gpus: tuple[int, int]) -> list[dict]:
    """A disaggregated run's two pool rows (`DisaggregatedResult`): replicas, GPUs (`gpus` per replica of
    each pool), the prefill pool's TTFT p50 (the requests' own: the first token is the prefill side's),
    the decode pool's TPOT p50 over its own requests (its pace from its first token on), each pool's
    throughput (req/s) and mean K/V used (a fraction of one replica's capacity)."""
    rate = run.served.rate_req_per_s
    pre, dec = run.prefill.fleet, run.decode.fleet if run.decode is not None else None
    rows = [{"pool": "prefill", "rate_req_per_s": rate, "replicas": prefill, "gpus": prefill * gpus[0],
             "ttft_p50_s": run.served.percentile_s("ttft", "p50"), "tpot_p50_s": None,
             "throughput_req_per_s": pre.throughput_req_per_s, "kv_utilisation": pre.kv_utilisation},
            {"pool": "decode", "rate_req_per_s": rate, "replicas": decode, "gpus": decode * gpus[1],
             "ttft_p50_s": None, "tpot_p50_s": dec.percentile_s("tpot", "p50") if dec else None,
             "throughput_req_per_s": dec.throughput_req_per_s if dec else 0.0,
             "kv_utilisation": dec.kv_utilisation if dec else 0.0}]
    return rows


def pool_fields(pools: list[dict], tp: tuple[int, int], max_batch: tuple[int, int]) -> dict:
    """The pool rows as flat fields of the fleet row (JSON, CSV): `prefill_gpus`, `decode_tpot_p50_s`, ...,
    and each pool's tp and max_batch."""
    out = {"prefill_tp": tp[0], "decode_tp": tp[1], "prefill_max_batch": max_batch[0],
           "decode_max_batch": max_batch[1]}
    for row in pools:
        for key in ("gpus", "ttft_p50_s", "tpot_p50_s", "throughput_req_per_s", "kv_utilisation"):
            if row[key] is not None:
                out[f"{row['pool']}_{key}"] = row[key]
    return out
