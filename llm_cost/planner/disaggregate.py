"""Disaggregated serving: a prefill pool and a decode pool of the same accelerator (DistServe, Zhong et
al., OSDI 2024, arXiv 2401.09670; NVIDIA Dynamo), each with its own split and batch.

    prefill replica (tp, pp, B):   requests/s = min(B / TTFT, B / t_kv)  (a static batch
                                   cannot fill pp stages: one in flight)
    t_kv = `parallel.send_s`(B x kv_bytes(ISL) / (tp pp))     the batch's K/V handed to the decode pool, each
                                                              of the replica's GPUs sending its share
    decode replica (tp, pp, B):    requests/s = B / (sum of its OSL - 1 decode tokens)
    a pool of n GPUs:              floor(n / (tp pp)) replicas of its best split
    rate(n_p)                      = min(prefill(n_p), decode(N - n_p)), the best n_p of 1 .. N - 1

The prefill pool meets the TTFT target, the decode pool the TPOT target (tokens/s per user as
1 / TPOT: the decode's own pace); both pools share the weight format and the K/V dtype (the cache
moves as it is). A user's e2e = TTFT + t_kv + (OSL - 1) TPOT. Dollars: both pools' GPU-hours over
the output tokens. The colocated best (`frontier.plan`) on the same N GPUs is beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llm_cost.counts import kv_bytes
from llm_cost.parallel import send_s
from llm_cost.planner.frontier import Target
from llm_cost.planner.search import Grid
from llm_cost.catalog.arguments import Spec, check_arguments


@dataclass(frozen=True)
class Disaggregated:
    """The best split of one accelerator's GPUs: grid indices of the prefill and decode configurations,
    the pools' GPUs, the rate (requests/s) and the K/V hand-off time; `colocated_requests_per_s` the
    best colocated configuration's rate meeting both targets (0: none). `gpu` is the accelerator's
    catalog key (`Accelerator.label`), as rows' gpu; `gpu_name` its display name (prices' key)."""

    gpu: str
    gpu_name: str
    prefill: int
    decode: int
    prefill_gpus: int
    decode_gpus: int
    requests_per_s: float
    kv_transfer_s: float
    colocated_requests_per_s: float


@check_arguments(target=Spec("Target"))
def best_split(grid: Grid, target: Target) -> tuple[list[Disaggregated], dict]:
    """The best prefill/decode split per accelerator (module doc), best rate first, and the counts:
    accelerators with no split that meets both targets."""
    space, osl, isl = grid.space, grid.osl, grid.isl
    budget = space.budget
    groups = space.groups
    tp = np.array([group.deployment.tp for group in groups])[grid.group]
    pp = np.array([group.deployment.pp for group in groups])[grid.group]
    per_replica = tp * pp
    plain = np.array([variant.kind == "none" for variant in grid.variants])[grid.variant]
    ttft_ok = grid.ttft_s <= target.ttft_s if target.ttft_s is not None else np.ones(len(grid), dtype=bool)
    tpot_cap = target.tpot_s if target.tpot_s is not None else (
        1.0 / target.tokens_per_s_per_user if target.tokens_per_s_per_user is not None else None)
    tpot_ok = grid.tpot_s <= tpot_cap if tpot_cap is not None else np.ones(len(grid), dtype=bool)
    # the K/V hand-off of a prefill batch, per configuration
    kv_req = np.array([kv_bytes(space.model, isl, group.deployment.kv_bytes_per_element) for group in groups])[grid.group]
    transfer = np.empty(len(grid))
    for gi, group in enumerate(groups):
        at = grid.group == gi
        transfer[at] = send_s(grid.batch[at] * kv_req[at] / per_replica[at], group.gpu)
    pre_rate = np.minimum(grid.batch / grid.ttft_s, grid.batch / transfer)
    dec_rate = grid.batch / grid.decode_s  # one static batch in flight per replica
    pre_ok = plain & grid.prefill_fits & ttft_ok
    dec_ok = grid.fits & tpot_ok
    key = np.array([f"{group.gpu.name}|{group.weights.name}|{group.deployment.kv_dtype}" for group in groups])[grid.group] \
        if len(grid) else np.zeros(0, dtype=str)
    meets = grid.fits & ttft_ok & tpot_ok
    best, missing = {}, set()
    pool_sizes = np.arange(1, budget)  # prefill pool sizes
    for cell in dict.fromkeys(key.tolist()):
        name = cell.split("|")[0]
        p_idx = np.flatnonzero((key == cell) & pre_ok)
        d_idx = np.flatnonzero((key == cell) & dec_ok)
        if not len(p_idx) or not len(d_idx) or budget < 2:
            missing.add(name)
            continue
        p_rates = np.floor(pool_sizes[:, None] / per_replica[p_idx][None, :]) * pre_rate[p_idx][None, :]
        d_rates = np.floor((budget - pool_sizes)[:, None] / per_replica[d_idx][None, :]) * dec_rate[d_idx][None, :]
        p_arg, d_arg = p_rates.argmax(axis=1), d_rates.argmax(axis=1)
        rate = np.minimum(p_rates[np.arange(len(pool_sizes)), p_arg], d_rates[np.arange(len(pool_sizes)), d_arg])
        best_at = int(rate.argmax())
        if rate[best_at] <= 0:
            missing.add(name)
            continue
        if name not in best or rate[best_at] > best[name].requests_per_s:
            pi, di = int(p_idx[p_arg[best_at]]), int(d_idx[d_arg[best_at]])
            colocated = grid.output_tokens_per_s[meets & (key == cell)]
            best[name] = Disaggregated(
                gpu=groups[grid.group[pi]].gpu.label, gpu_name=name, prefill=pi, decode=di,
                prefill_gpus=int(pool_sizes[best_at] // per_replica[pi] * per_replica[pi]),
                decode_gpus=int((budget - pool_sizes[best_at]) // per_replica[di] * per_replica[di]),
                requests_per_s=float(rate[best_at]), kv_transfer_s=float(transfer[pi]),
                colocated_requests_per_s=float(colocated.max() / osl) if len(colocated) else 0.0)
        missing.discard(name)
    rows = sorted(best.values(), key=lambda split: -split.requests_per_s)
    return rows, {"no_split": len(missing - set(best))}
