"""Disaggregated prefill and decode, simulated (issue 25.3; DistServe, Zhong et al., OSDI 2024,
arXiv 2401.09670 §2-3; NVIDIA Dynamo): a prefill pool of P replicas and a decode pool of D replicas,
each pool its own `Replica` (its tp x pp, its K/V capacity) and `ServeConfig` (max_batch, blocks,
speculation), as DistServe and the planner's split search (`planner.disaggregate`) choose them per
pool; each replica its own general loop (`engine_loop.EngineLoop`) behind a least-loaded router
(`fleet`), the K/V moved between the pools over a link. The decode pool's replica and config default to the prefill pool's.

- The prefill pool serves each request's prompt and stops at its first token (output 1).
- The hand-off: request i's K/V leaves the prefill replica at its first token and reaches the decode
  pool after  t_kv,i = link_latency_s + K(P_i) x kv_bytes_per_token / link_bytes_per_s  (seconds;
  K(P) the all-layer K/V tokens a context of P holds: P, fewer with windowed layers, `held_tokens_fn`).
  Each GPU of the prefill replica sends its own share (its heads of its stage's layers) and each GPU of
  the decode replica receives its own share, each over its own link, as `planner.disaggregate` and
  `parallel.send_s`. When the pools' splits differ the shares differ (tp 1 -> tp 2: one GPU sends all
  of a token's K/V, two GPUs receive half each), and the rule here is that the larger per-GPU share
  over its link sets the time: `kv_bytes_per_token` defaults to
  max(prefill `cost.kv_token_bytes`, decode `cost.kv_token_bytes`), the per-GPU bytes of one token.
  Links are not shared: no transfer waits for another (an approximation).
- The hand-off's memory (`handoff_pools`, vLLM's and DistServe's pull): at its first token request i
  is routed to a decode replica (least-loaded) and queues there; when that replica admits it (the
  blocks of its P_i + 1 tokens fit: its receive buffer), the transfer runs for t_kv,i, and only then
  may it decode, while the prefill replica keeps the request's K/V blocks until the transfer has ended.
  A saturated decode pool thus fills the prefill pool's memory and slows its admissions. The decode
  request is one of prompt P_i + 1 (the prompt and the first token) whose first P_i tokens are cached
  (`pre` = P_i: no prefill compute for them); its first iteration feeds the first token (one row over
  P_i cached tokens: a decode step), exactly as the aggregated engine's second token; it generates the
  O_i - 1 remaining tokens. Requests of one output token never reach the decode pool. Decode-side
  preemption recomputes (or swaps) there.
- Prefix caching runs on the prefill pool (its cached blocks held through the hand-off count once);
  the decode pool gets each request's whole K/V by hand-off and caches nothing.

The request's timeline: TTFT = the prefill pool's first token - arrival (the first token is streamed
from the prefill side: the hand-off is not in the TTFT); TPOT = (decode finish - first token) /
(O - 1), so the decode queue and the hand-off fall in the TPOT; e2e = decode finish - arrival.
Approximation: a busy prefill replica frees a transfer's blocks at its first iteration boundary after
the transfer ended (`handoff_pools`: its memory errs high by less than one iteration).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from llm_cost.errors import InvalidValueError, check_number
from llm_cost.serving.fleet import FleetResult, route_one, fleet_result
from llm_cost.serving.handoff_pools import serve_pools
from llm_cost.serving.iteration import held_tokens_fn
from llm_cost.serving.run_stats import RunStats
from llm_cost.serving.serve_result import ServeResult
from llm_cost.serving.workload import Workload


@dataclass(frozen=True)
class DisaggregatedResult:
    """A disaggregated run: each pool's `FleetResult` (the decode pool's requests in arrival order,
    `decode_of` the workload's index of each), the hand-off seconds per request (nan: none, one output
    token), and `served`: every request's timeline as one `ServeResult` (module doc; statistics of both
    pools summed; its K/V capacity and settings the prefill pool's). Seconds."""

    prefill: FleetResult
    decode: FleetResult | None  # None: no request had a second token
    decode_of: tuple  # workload index of each decode-pool request
    transfer_s: tuple  # per workload request; nan where it did not move
    served: ServeResult

    @property
    def transfer_mean_s(self) -> float:
        """Mean hand-off time over the requests that moved (s; 0 when none did)."""
        seconds = np.asarray(self.transfer_s, dtype=float)
        seconds = seconds[~np.isnan(seconds)]
        return float(seconds.mean()) if seconds.size else 0.0

    @property
    def transfer_max_s(self) -> float:
        """Longest hand-off (s; 0 when none moved)."""
        seconds = np.asarray(self.transfer_s, dtype=float)
        seconds = seconds[~np.isnan(seconds)]
        return float(seconds.max()) if seconds.size else 0.0

    @property
    def deadlock(self):
        """The first pool's deadlock, or None: a run that cannot finish is never silent."""
        return self.served.deadlock


def handoff_link(gpu, gpus: int) -> tuple[float, float]:
    """(bytes/s, latency s) of the K/V hand-off between pools of `gpus` GPUs in all: the datasheet's
    interconnect (`Accelerator.interconnect_bytes_per_s`, per GPU per direction) when they fit one
    scale-up domain (`scale_up_gpus`; 0: unbounded), else the scale-out network where it is given (as
    `parallel.send_s(across=True)`). Raises when the link is unknown (0)."""
    across = bool(gpu.scale_up_gpus) and gpus > gpu.scale_up_gpus and gpu.scale_out_bytes_per_s > 0
    bw, lat = ((gpu.scale_out_bytes_per_s, gpu.scale_out_latency_s) if across
               else (gpu.interconnect_bytes_per_s, gpu.interconnect_latency_s))
    if not bw > 0:
        raise InvalidValueError(f"{gpu.name} has no GPU-to-GPU link bandwidth in its datasheet entry "
                                "(interconnect_bytes_per_s): the K/V hand-off cannot be timed", params=("gpu",))
    return bw, lat


def _progress(p_loops, p_assign, d_loops, d_assign, order, requests: int) -> tuple[list, list]:
    """Per workload request, (tokens generated, prompt tokens prefilled) over both pools: its first token
    on its prefill replica, the rest on its decode replica (decode request `slot` is `order[slot]`), for
    `run_stats.positions_needed` when a pool deadlocked."""
    generated = [p_loops[p_assign[req]].state.gen[req] for req in range(requests)]
    prefilled = [p_loops[p_assign[req]].state.pre[req] for req in range(requests)]
    for slot, req in enumerate(order):
        if d_loops:
            generated[req] += d_loops[d_assign[slot]].state.gen[slot]
    return generated, prefilled


def _routed_only(config, d_config) -> None:
    """The pools are iteration-level general loops (`handoff_pools`): `scheduler="request"` is refused."""
    for name, cfg in (("config", config), ("decode_config", d_config)):
        if cfg.scheduler == "request":
            raise InvalidValueError("disaggregated pools route requests to iteration-level engines: give "
                                    "scheduler iteration", params=(name, "scheduler"))


def serve_disaggregated(workload: Workload, replica, config, *, prefill: int, decode: int,
                        link_bytes_per_s: float, link_latency_s: float = 0.0,
                        kv_bytes_per_token: float | None = None, decode_replica=None,
                        decode_config=None) -> DisaggregatedResult:
    """Serve `workload` on `prefill` prefill replicas of `replica` under `config` and `decode` decode
    replicas of `decode_replica` under `decode_config` (None: the prefill pool's; the same model and
    K/V dtype, the caller's to keep), the K/V handed over a link of `link_bytes_per_s` (bytes/s per GPU
    per direction, e.g. the datasheet's `Accelerator.interconnect_bytes_per_s`, or
    `scale_out_bytes_per_s` across domains) and `link_latency_s` (s):
    t_kv = latency + K(prompt) x kv_bytes_per_token / link, the larger of the pools' per-GPU shares
    (module doc).

    >>> from llm_cost.serving.replica import IterationCost, Replica
    >>> from llm_cost.serving.serve_config import ServeConfig
    >>> from llm_cost.serving.workload import fixed_workload
    >>> d = serve_disaggregated(fixed_workload([(4, 5)] * 2), Replica(IterationCost.unit(), 100, 2048),
    ...                         ServeConfig(reservation="paged"), prefill=1, decode=1,
    ...                         link_bytes_per_s=4.0, kv_bytes_per_token=1.0)
    >>> d.served.first_token_s, d.transfer_s, d.served.finish_s
    ((1.0, 1.0), (1.0, 1.0), (6.0, 6.0))
    """
    from llm_cost.serving.engine import checked

    check_number("prefill", prefill, low=1, integer=True)
    check_number("decode", decode, low=1, integer=True)
    check_number("link_bytes_per_s", link_bytes_per_s, low=0.0, low_open=True)
    check_number("link_latency_s", link_latency_s, low=0.0)
    if workload.concurrency is not None:
        raise InvalidValueError("disaggregated serving routes open-loop arrivals; give no concurrency",
                                params=("concurrency",))
    d_replica = replica if decode_replica is None else decode_replica
    d_config = replace(config, prefix_caching=False) if decode_config is None else decode_config
    if d_config.prefix_caching:
        raise InvalidValueError("disaggregated serving runs without prefix caching (the decode pool's K/V "
                                "arrives by hand-off, not by cache)", params=("decode_config",))
    kvb = (max(replica.cost.kv_token_bytes, d_replica.cost.kv_token_bytes) if kv_bytes_per_token is None
           else kv_bytes_per_token)
    check_number("kv_bytes_per_token", kvb, low=0.0)
    held = held_tokens_fn(replica.cost) or (lambda context: context)  # windowed layers hold (and move) less
    requests = len(workload)
    one = [1] * requests
    pre_wl = replace(workload, output=tuple(one), declared_gen=tuple(one))
    order = tuple(req for req in range(requests) if workload.output[req] > 1)  # the requests whose K/V moves
    transfer = [math.nan] * requests
    for req in order:
        transfer[req] = link_latency_s + held(workload.prompt[req]) * kvb / link_bytes_per_s
    d_wl = Workload(1.0, tuple(0.0 for _ in order), tuple(workload.prompt[req] + 1 for req in order),
                    tuple(workload.output[req] - 1 for req in order),
                    tuple(workload.declared_gen[req] - 1 for req in order),
                    workload.seed, f"decode pool of {workload.description}".strip())
    reserved = (checked(pre_wl, replica, config),  # serve's own checks of every request, on each pool
                checked(d_wl, d_replica, d_config) if order else [])
    _routed_only(config, d_config)
    p_loops, p_assign, d_loops, d_assign, handed = serve_pools(
        pre_wl, d_wl, replica, config, prefill, d_replica, d_config, decode, order, [transfer[req] for req in order],
        lambda loops, req: route_one("least-loaded", loops, req, req), reserved)
    for slot, handed_s in enumerate(handed):
        if handed_s != handed_s:  # never handed over (its prefill did not finish): nothing moved
            transfer[order[slot]] = math.nan
    p_fleet = fleet_result(pre_wl, replica, config, "least-loaded", p_loops, p_assign)
    first = list(p_fleet.fleet.first_token_s)
    fin = [first[req] if workload.output[req] == 1 else math.nan for req in range(requests)]
    loops, d_fleet = list(p_loops), None
    if order:
        last = max((at for at in handed if at == at), default=0.0)  # a request never handed over (a deadlock)
        d_wl = replace(d_wl, unit_arrivals=tuple(at if at == at else last for at in handed))
        d_fleet = fleet_result(d_wl, d_replica, d_config, "least-loaded", d_loops, d_assign)
        for slot, req in enumerate(order):
            fin[req] = d_fleet.fleet.finish_s[slot]
        loops += d_loops
    deadlock = next((lp.state.deadlock for lp in loops if lp.state.deadlock), None)
    generated, prefilled = _progress(p_loops, p_assign, d_loops, d_assign, order, requests)
    served = ServeResult.build(workload, replica, config, list(workload.arrival_s), first, fin,
                               sum((loop.state.stats for loop in loops), RunStats()), deadlock,
                               generated=generated, prefilled=prefilled)
    return DisaggregatedResult(p_fleet, d_fleet, order, tuple(transfer), served)
