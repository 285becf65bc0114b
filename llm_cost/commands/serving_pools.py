"""`batching --disaggregate P:D`'s two pools (issue 25.3): P:D parsed, the decode pool's split from
`--decode-tp` and its batch from `--decode-max-batch` (each defaults to the prefill pool's, as
`plan --disaggregate` chooses them per pool), the per-pool fields on the fleet row and the per-pool rows
printed under it. `commands/serving_engine` builds the pools' replicas and serves them."""

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


def pool_counts(o: dict) -> tuple[int, int]:
    """(P, D) of `--disaggregate P:D`; refuses the decode-pool options without it and the options the
    pools do not take."""
    from llm_cost.errors import InvalidValueError

    if o.get("disaggregate") is None:
        raise InvalidValueError("--decode-tp and --decode-max-batch set the decode pool of --disaggregate P:D: "
                                "give --disaggregate", params=("decode_tp", "decode_max_batch"))
    text = str(o["disaggregate"])
    p, _, d = text.partition(":")
    if not (p.isdigit() and d.isdigit() and int(p) >= 1 and int(d) >= 1):
        raise InvalidValueError(f"--disaggregate takes P:D, prefill and decode replicas >= 1 each, got {text!r}",
                                params=("disaggregate",))
    if o["slo_ms"] is not None or o.get("router") or o["concurrency"] is not None:
        raise InvalidValueError("--disaggregate simulates the given --rate values of open-loop arrivals: give "
                                "--rate, not --slo-ms, --router or --concurrency", params=("disaggregate",))
    return int(p), int(d)


def pools_deployment(o: dict, dep):
    """One replica of the prefill pool: `dep` without --gpus (the pools' GPUs are P x tp x pp + D x
    decode-tp x pp, `pools_gpus`); a --gpus given that is not that total is refused, not reported."""
    from dataclasses import replace

    from llm_cost.errors import InvalidValueError

    p, d = pool_counts(o)
    one = replace(dep, gpus=0)
    total = pools_gpus(o, one)
    if dep.gpus and dep.gpus != total:
        per = (one.gpus_per_replica, decode_deployment(o, one).gpus_per_replica)
        raise InvalidValueError(f"--gpus {dep.gpus} is not the GPUs of --disaggregate {p}:{d}: {p} x {per[0]} (prefill) "
                                f"+ {d} x {per[1]} (decode) = {total} GPUs; give --gpus {total} or leave it out",
                                params=("gpus",))
    return one


def pools_gpus(o: dict, dep) -> int:
    """The pools' GPUs: P replicas of `dep`'s tp x pp and D of the decode pool's (`decode_deployment`)."""
    p, d = pool_counts(o)
    return p * dep.gpus_per_replica + d * decode_deployment(o, dep).gpus_per_replica


def decode_deployment(o: dict, dep):
    """The decode pool's `Deployment`: the prefill pool's `dep` with `--decode-tp` (its pp, ep, K/V dtype
    and memory basis); `dep` itself without the option."""
    from dataclasses import replace

    from llm_cost.errors import check_number

    tp = o.get("decode_tp")
    if tp is None or tp == dep.tp:
        return dep
    check_number("decode_tp", tp, low=1, integer=True)
    return replace(dep, tp=tp, gpus=0)


def decode_max_batch(o: dict, config) -> int:
    """`--decode-max-batch`, checked (>= 1), else the prefill pool's max_batch."""
    from llm_cost.errors import check_number

    n = o.get("decode_max_batch")
    if n is None:
        return config.max_batch
    check_number("decode_max_batch", n, low=1, integer=True)
    return n


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
