"""From specs and named settings to what `engine.serve` takes: the replica, the `ServeConfig`, a draft.

`serving_setup` is the first step of `batching_run.run_batching` (issue 24.4: the command parses its
options into a `BatchingRequest`, the library sets up and serves, the command renders): the admission policy and its reservation (`SCHEDULER_RESERVATION`: each
scheduler's default), the speculation config with the draft model's own pass cost on the target's
GPUs (`speculative.fit.draft_deployment_for`) and its memory beside the target (`draft_memory`: the
K/V tokens left), and the replica holding them. Errors name the parameters (`spec_gamma`, `draft`,
...), which the CLI writes as its flags.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.errors import InvalidValueError, check_choice
from llm_cost.serving.draft_memory import DraftMemory, draft_memory
from llm_cost.serving.replica import IterationCost, Replica
from llm_cost.serving.serve_config import ServeConfig, SpecConfig, host_link_bytes_per_s
from llm_cost.specs import BF16

SCHEDULER_RESERVATION = {"request": "max_len", "iteration": "declared", "none": "none"}  # each one's default


@dataclass(frozen=True)
class ServingSetup:
    """What `serving_setup` builds: the replica served, its `ServeConfig`, the draft's memory (or None)."""

    replica: Replica
    config: ServeConfig
    draft: DraftMemory | None = None


def speculation(target, gpu, profile, *, weights=BF16, deployment=None, reserve=None, spec_gamma=None,
                spec_alpha=None, c=None, draft=None, spec_policy="fixed", spec_off_above=0, spec_acceptance=None,
                seed=0) -> tuple[SpecConfig | None, DraftMemory | None]:
    """(`SpecConfig` or None, the draft's `DraftMemory` or None) of the speculation settings.

    `spec_gamma` and `spec_alpha` come together (with `spec_acceptance`, a `rounds.BurstyAcceptance`,
    `spec_alpha` defaults to its stationary rate, which the adaptive policy's Eq. 1 uses); the draft's
    cost is `c` x the target's decode step or, with `draft` (a model spec), that model's own pass on
    the target's GPUs, its weights and K/V beside the target's (`draft_memory`).

    >>> from llm_cost.catalog import load_accelerator, load_model
    >>> from llm_cost.specs import PRESETS
    >>> spec, dmem = speculation(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"), PRESETS["lecture"],
    ...                          spec_gamma=4, spec_alpha=0.8, draft=load_model("llama-3.2-1b"))
    >>> spec.gamma, spec.draft_cost is not None, dmem.kv_tokens < dmem.kv_tokens_without_draft
    (4, True, True)
    """
    if spec_acceptance is not None and spec_alpha is None:
        spec_alpha = spec_acceptance.stationary_alpha  # the adaptive policy's Eq. 1 uses the long-run rate
    if (spec_gamma is None) != (spec_alpha is None):
        raise InvalidValueError("speculation needs both spec_gamma and spec_alpha", params=("spec_gamma", "spec_alpha"))
    if c is not None and draft is not None:
        raise InvalidValueError("give c or draft, not both", params=("c", "draft"))
    if (c is not None or draft is not None) and spec_gamma is None:
        raise InvalidValueError("c and draft need spec_gamma and spec_alpha", params=("c", "draft", "spec_gamma", "spec_alpha"))
    if spec_gamma is None:
        return None, None
    draft_cost = dmem = None
    if draft is not None:
        from llm_cost.parallel import deployed_cost
        from llm_cost.specs.deployment import Deployment
        from llm_cost.speculative.fit import draft_deployment_for

        on = draft_deployment_for(draft, deployment if deployment is not None else Deployment())
        draft_cost = deployed_cost(IterationCost.from_roofline(draft, gpu, profile), draft, gpu, BF16, on)
        dmem = draft_memory(target, draft, gpu, reserve=reserve, weights=weights, deployment=deployment)
    spec = SpecConfig(gamma=spec_gamma, alpha=spec_alpha, c=c or 0.0, draft_cost=draft_cost, policy=spec_policy,
                      off_above=spec_off_above, seed=seed, bursty=spec_acceptance)
    return spec, dmem


def serving_setup(target, gpu, profile, *, weights=BF16, deployment=None, reserve=None, kv_tokens=None,
                  max_len=None, scheduler="iteration", reservation=None, max_batch=32, block_size=16,
                  watermark=0.01, preemption="recompute", prefill_chunk=None, pipeline="serial",
                  prefix_caching=False, kv_offload_bytes=0.0, spec_gamma=None, spec_alpha=None, c=None, draft=None,
                  spec_policy="fixed", spec_off_above=0, spec_acceptance=None, seed=0) -> ServingSetup:
    """The replica of `target` on `gpu` (windowed K/V where the model has windows) and its `ServeConfig`.

    `scheduler`: `request`, `iteration` or `none` (iteration-level without a reservation), each with its
    default `reservation` (`SCHEDULER_RESERVATION`); `spec_gamma`, `spec_alpha`, `c`, `draft`,
    `spec_policy`, `spec_off_above`, `spec_acceptance` and `seed` as in `speculation`. With a draft and no `kv_tokens`, the replica holds
    the tokens left beside the draft (`DraftMemory.kv_tokens`). Swaps cross the GPU's host link
    (`host_link_bytes_per_s`).

    >>> from llm_cost.catalog import load_accelerator, load_model
    >>> from llm_cost.specs import PRESETS
    >>> s = serving_setup(load_model("gpt-3-13b"), load_accelerator("a100-40gb"), PRESETS["lecture"], max_batch=8)
    >>> s.config.reservation, s.config.max_batch, s.replica.kv_capacity_tokens > 0, s.draft
    ('declared', 8, True, None)
    """
    scheduler = check_choice("scheduler", scheduler, tuple(SCHEDULER_RESERVATION))
    reservation = reservation or SCHEDULER_RESERVATION[scheduler]
    if scheduler == "none" and reservation != "none":
        raise InvalidValueError(f"scheduler none is iteration-level with reservation none: give scheduler "
                                f"iteration with reservation {reservation}", params=("scheduler", "reservation"))
    spec, dmem = speculation(target, gpu, profile, weights=weights, deployment=deployment, reserve=reserve,
                             spec_gamma=spec_gamma, spec_alpha=spec_alpha, c=c, draft=draft, spec_policy=spec_policy,
                             spec_off_above=spec_off_above, spec_acceptance=spec_acceptance, seed=seed)
    if dmem is not None and kv_tokens is None:
        if dmem.kv_tokens < 1:
            raise InvalidValueError(f"{dmem.draft} beside {target.name} leaves no K/V room on {gpu.name}",
                                    params=("draft",))
        kv_tokens = dmem.kv_tokens
    replica = Replica.from_specs(target, gpu, profile, reserve=reserve, weights=weights, kv_tokens=kv_tokens,
                                 max_len=max_len, deployment=deployment)
    config = ServeConfig(max_batch=max_batch, reservation=reservation, block_size=block_size, watermark=watermark,
                         preemption=preemption, prefill_chunk=prefill_chunk, spec=spec, pipeline=pipeline,
                         host_bytes_per_s=host_link_bytes_per_s(gpu),
                         scheduler="request" if scheduler == "request" else "iteration",
                         prefix_caching=prefix_caching, kv_offload_bytes=kv_offload_bytes)
    return ServingSetup(replica, config, dmem)
