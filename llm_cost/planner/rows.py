"""A plan's rows (`llm-cost plan` prints them): the frontier (one per configuration, best first) and the disaggregated
splits, flat, SI, unit in the key; `request_args` is the `llm-cost request` line that gives the same
TTFT and TPOT."""

from __future__ import annotations

import math
import shlex

from llm_cost.planner.search import bound_of
from llm_cost.requests.request import usd_per_million_tokens


def _spec_args(variant, c, refs) -> list[str]:
    """`request`'s speculation options for a variant (MTP: its cost ratio `c` at this batch as --c)."""
    if variant.kind == "none":
        return []
    args = ["--spec-alpha", repr(float(variant.alpha)), "--spec-gamma", str(variant.gamma)]
    if variant.draft is not None:
        return args + ["--draft", refs.get(variant.draft.name, variant.draft.name)]
    return args + ["--c", repr(float(c))]


# The memory the plan's fits counted, stated in request_args so that `request` counts the same
_MEMORY_FLAG = {"usable": "--usable-memory", "marketed": "--marketed-memory"}


def config_fields(grid, i: int, refs: dict | None = None) -> dict:
    """The configuration of grid row `i` and its times and throughput (`c` its draft's cost ratio); `refs` maps a model's or
    accelerator's name to what the user typed for it (a catalog name or a path), for request_args."""
    refs = refs or {}
    grp, variant = grid.space.groups[grid.group[i]], grid.variants[grid.variant[i]]
    dep = grp.deployment
    c = float(grid.c[i])
    args = ["--model", refs.get(grid.space.model.name, grid.space.model.name), "--gpu", refs.get(grp.gpu.name, grp.gpu.name), "--tp", str(dep.tp), "--pp", str(dep.pp), "--ep", str(dep.ep),
            *(["--dp-attention"] if dep.dp_attention else []), "--gpus", str(dep.total_gpus), "--weights", grp.weights.name, "--kv-dtype", dep.kv_dtype,
            "--batch", str(int(grid.batch[i])), "--isl", str(grid.isl), "--osl", str(grid.osl),
            *refs.get("profile_args", ["--preset", grid.profile.name]), _MEMORY_FLAG[grid.profile.memory_basis], *_spec_args(variant, c, refs)]
    return {
        "model": grid.space.model.name, "gpu": grp.gpu.label, "gpu_name": grp.gpu.name, "gpus": dep.total_gpus, "tp": dep.tp, "pp": dep.pp, "ep": dep.ep, "dp_attention": dep.dp_attention, "replicas": dep.replicas,
        "weights": grp.weights.name, "kv_dtype": dep.kv_dtype, "batch": int(grid.batch[i]),
        "speculation": variant.kind if variant.draft is None else f"draft {variant.draft.name}",
        "gamma": variant.gamma, "spec_alpha": variant.alpha, "split": f"{dep.tp}x{dep.pp}" + (f" ep {dep.ep}" if dep.ep > 1 else "") + (" dp-attn" if dep.dp_attention else ""),
        "decoding": "none" if variant.kind == "none" else f"{variant.kind if variant.draft is None else variant.draft.name} γ{variant.gamma}", "spec_c": None if math.isnan(c) else c,
        "ttft_s": float(grid.ttft_s[i]), "tpot_s": float(grid.tpot_s[i]), "e2e_s": float(grid.e2e_s[i]),
        "output_tokens_per_s_per_user": float(grid.output_tokens_per_s_per_user[i]),
        "output_tokens_per_s_per_gpu": float(grid.output_tokens_per_s_per_gpu[i]),
        "output_tokens_per_s": float(grid.output_tokens_per_s[i]),
        "memory_needed_bytes": float(grid.needed_bytes[i]), "memory_available_bytes": float(grid.available_bytes[i]),
        "request_args": shlex.join(args),
    }


def plan_rows(result, refs: dict | None = None, *, usd_per_kwh: float | None = None) -> list[dict]:
    """One row per frontier configuration of a `plan.Plan`, best first (`refs`: `config_fields`), each
    with its energy (`energy_fields`; with `usd_per_kwh`, $/kWh, its cost per million output tokens)."""
    grid = result.grid
    usd = result.usd_per_million_output_tokens
    rows = []
    for index in result.frontier:
        row = config_fields(grid, int(index), refs)
        price = float(usd[index])
        row.update({"usd_per_million_output_tokens": None if math.isnan(price) else price,
                    "meets_slo": bool(result.meets[index]), "bound": bound_of(grid, int(index)), "preset": grid.profile.name})
        row.update(energy_fields(grid, int(index)))
        rows.append(row)
    if usd_per_kwh is not None:
        from llm_cost.roofline.energy import add_energy_usd

        add_energy_usd(rows, usd_per_kwh)
    return rows


def energy_fields(grid, i: int) -> dict:
    """watts, joules and joules_per_token (estimates) of configuration `i`: those of `llm-cost request`
    with its request_args (`requests.energy.request_energy` of `requests.request_cost` on the same model,
    GPU, profile, deployment, weights, batch, ISL, OSL and speculation), evaluated for the rows printed
    only; None without the datasheet's board power."""
    from llm_cost.requests.energy import request_energy
    from llm_cost.roofline.energy import has_power

    gpu = grid.space.groups[grid.group[i]].gpu
    if not has_power(gpu):
        return {"watts": None, "joules": None, "joules_per_token": None}
    return request_energy(_request_of(grid, i), gpu)


def _request_of(grid, i: int):
    """`requests.request_cost` of configuration `i` (its model, GPU, profile, deployment, weights, batch,
    ISL, OSL and speculation): what `request` times with its request_args."""
    from llm_cost.requests import Speculation, request_cost

    grp, variant = grid.space.groups[grid.group[i]], grid.variants[grid.variant[i]]
    spec = None if variant.kind == "none" else Speculation(alpha=float(variant.alpha), gamma=int(variant.gamma), draft=variant.draft,
                                                           c=None if variant.draft is not None else float(grid.c[i]))
    return request_cost(grid.space.model, grp.gpu, grid.profile, batch=int(grid.batch[i]), isl=grid.isl, osl=grid.osl,
                        deployment=grp.deployment, weights=grp.weights, speculation=spec)


def split_energy(grid, d) -> dict:
    """watts, joules_per_request and joules_per_token (estimates) of a prefill/decode split `d`
    (`planner.disaggregate.Disaggregated`) serving its rate R, both pools powered all the time:

        W_pool = P_idle x G_pool + R x (E_phase - P_idle x g_phase) / B
        W = W_prefill + W_decode;   J/request = W / R;   J/token = W / (R x OSL)

    E_phase and g_phase: the joules and GPU-seconds of one batch's own phase (the prefill pool's
    configuration's prefill, the decode pool's decode: `requests.energy.phase_energy`, the power model of
    every plan row), B its batch, G_pool the pool's GPUs; the rest of a pool's GPU-time (launch overhead,
    a replica waiting on the hand-off, the slack of the pool that is not the bottleneck) draws idle power.
    The hand-off's own draw is not counted beyond that (the link's power is not modelled). Also
    prefill_watts and decode_watts; None without the datasheet's board power."""
    from llm_cost.requests.energy import phase_energy
    from llm_cost.roofline.energy import has_power

    gpu = grid.space.groups[grid.group[d.prefill]].gpu
    keys = ("watts", "prefill_watts", "decode_watts", "joules_per_request", "joules_per_token")
    if not has_power(gpu) or d.requests_per_s <= 0:
        return dict.fromkeys(keys)
    pools = []
    for config, phase, gpus in ((d.prefill, 0, d.prefill_gpus), (d.decode, 1, d.decode_gpus)):
        request = _request_of(grid, config)
        seconds = (request.phases.prefill_s, request.phases.decode_s)[phase]
        above_idle = phase_energy(request, gpu)[phase] - gpu.idle_power_w * request.gpu_seconds(seconds)
        pools.append(gpu.idle_power_w * gpus + d.requests_per_s * above_idle / request.batch)
    watts = sum(pools)
    return dict(zip(keys, (watts, pools[0], pools[1], watts / d.requests_per_s,
                           watts / (d.requests_per_s * grid.osl))))


def disaggregated_rows(grid, splits, prices: dict, refs: dict | None = None, *,
                       usd_per_kwh: float | None = None) -> list[dict]:
    """One row per accelerator's best prefill/decode split (`plan.disaggregate`), each with its energy
    (`split_energy`; with `usd_per_kwh`, $/kWh, its cost per million output tokens), as the frontier's rows."""
    rows = []
    for split in splits:
        pre, dec = config_fields(grid, split.prefill, refs), config_fields(grid, split.decode, refs)
        used = split.prefill_gpus + split.decode_gpus
        tokens_per_s = split.requests_per_s * grid.osl
        price = prices.get(split.gpu_name)
        rows.append({
            "model": pre["model"], "gpu": pre["gpu"], "gpu_name": pre["gpu_name"], "preset": grid.profile.name, "gpus": used, "prefill_gpus": split.prefill_gpus, "decode_gpus": split.decode_gpus,
            "weights": pre["weights"], "kv_dtype": pre["kv_dtype"],
            "prefill_tp": pre["tp"], "prefill_pp": pre["pp"], "prefill_batch": pre["batch"],
            "decode_tp": dec["tp"], "decode_pp": dec["pp"], "decode_batch": dec["batch"],
            "speculation": dec["speculation"], "gamma": dec["gamma"], "decoding": dec["decoding"],
            "ttft_s": pre["ttft_s"], "kv_transfer_s": split.kv_transfer_s, "tpot_s": dec["tpot_s"],
            "e2e_s": pre["ttft_s"] + split.kv_transfer_s + dec["tpot_s"] * (grid.osl - 1),
            "requests_per_s": split.requests_per_s, "output_tokens_per_s": tokens_per_s,
            "output_tokens_per_s_per_gpu": tokens_per_s / used,
            "colocated_requests_per_s": split.colocated_requests_per_s,
            "usd_per_million_output_tokens": usd_per_million_tokens(used, tokens_per_s, price) if price is not None else None,
            "prefill_request_args": pre["request_args"], "decode_request_args": dec["request_args"],
            **split_energy(grid, split),
        })
    if usd_per_kwh is not None:
        from llm_cost.roofline.energy import add_energy_usd

        add_energy_usd(rows, usd_per_kwh)
    return rows
