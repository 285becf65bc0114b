"""Which runs a fast path of `engine.serve` takes: allow-lists, field by field, never exclusions.

A path declares the `ServeConfig` fields it supports (its `FEATURES`), and here the fields of the
`Replica`, of its pass cost (`PassCost`) and of the `Workload` it supports, each with a test of
the value: `(value, config) -> bool`. A field a path does not list (a new feature's, until someone
adds it to a path that handles it) takes the general loop (`engine_loop`), which runs everything.

The cost's fields whose only effect is the pass time (`TIMED`) are supported by every path: each
times an iteration by `PassCost.time` or by its `inline_coefficients`, which says where it has none.
What the paths tell apart is how K/V is held (windows, a hybrid's recurrent state: the general loop
counts `iteration.held_tokens_fn`), how many pipeline stages a pass crosses and how requests arrive.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass


def any_value(value, cfg) -> bool:
    """An allow-list entry for a field whose every value a path supports."""
    return True


def off(value, cfg) -> bool:
    """An allow-list entry for a feature a path runs only when it is off (0, (), None, False)."""
    return not value


def one_stage(value, cfg) -> bool:
    """`PassCost.stages`: one pipeline stage."""
    return value == 1


def allowed(features: dict, obj, cfg=None) -> bool:
    """Whether every field of the dataclass `obj` is in `features` with a supported value
    (`features[name](value, cfg)`, `cfg` the `ServeConfig`, `obj` itself when None); False for an
    object that is not a dataclass (a cost that times a pass its own way)."""
    if not is_dataclass(obj):
        return False
    cfg = obj if cfg is None else cfg
    return all(field.name in features and features[field.name](getattr(obj, field.name), cfg)
               for field in fields(obj))


# `Replica` fields: the cost is checked by its own list (below); the rest every path reads the same way.
REPLICA = dict.fromkeys(("cost", "kv_capacity_tokens", "max_len", "description", "deployment", "capacity",
                         "compute_dtype", "context_limit"), any_value)
# `PassCost` fields whose only effect is the pass time (`PassCost.time`, `inline_coefficients`).
TIMED = dict.fromkeys((
    "weight_bytes", "kv_token_bytes", "row_flops", "pair_flops", "bytes_per_s", "flops_per_s", "fixed_s",
    "expert_bytes", "num_experts", "experts_per_token", "num_layers", "expert_rows_scale", "comm_fixed_s",
    "comm_row_s", "handoff_fixed_s", "handoff_row_s", "overlap_comm", "small_gemm_factor", "gemm_half_rows",
    "expert_flops_share", "expert_parallel", "attention_dp", "kernel_source", "expert_curve", "kv_time_factor",
    "expert_source", "kv_source", "pair_time_factor", "row_pairs", "kv_curve", "gemm_half_width", "dense_width",
    "expert_width"), any_value)
# K/V held as the tokens written (no windows, no recurrent state), one stage.
FLAT_KV_ONE_STAGE = {**TIMED, "kv_windows": off, "state_tokens": off, "stages": one_stage}
# `Workload` fields of open-loop arrivals (a closed loop sends on finishes: the general loop).
OPEN_LOOP = {**dict.fromkeys(("rate_req_per_s", "unit_arrivals", "prompt", "output", "declared_gen", "seed",
                              "description", "prefix"), any_value),
             "concurrency": lambda value, cfg: value is None, "client_round_trip": off}


def covers(workload, replica, cfg, *, config: dict, cost: dict, arrivals: dict = OPEN_LOOP,
           own_time: bool = False) -> bool:
    """Whether a path with these allow-lists (`config` of `ServeConfig` fields, `cost` of the pass cost's,
    `arrivals` of the workload's; `REPLICA` for the replica's) runs `workload` on `replica` under `cfg`, on a
    cost that times its passes as `PassCost` does (`times_as_defined`), or any (`own_time`: a path that
    calls the cost's own `time` for every pass)."""
    return (allowed(config, cfg) and allowed(REPLICA, replica, cfg) and allowed(cost, replica.cost, cfg)
            and (own_time or times_as_defined(replica.cost)) and allowed(arrivals, workload, cfg))


def times_as_defined(cost) -> bool:
    """Whether `cost` times a pass as `PassCost` defines it (`PassCost.times_as_defined`): a subclass that
    overrides `time` or a term of it is run by the general loop, which calls its `time` each iteration."""
    check = getattr(cost, "times_as_defined", None)
    return bool(check and check())
