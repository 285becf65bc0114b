"""`plan`'s options as one typed, frozen record (`PlanOptions`), built field by field from the command's
parameters (no `locals()` dict): its phases (`plan._run`, `plan_verify.options_of`, ...) read them by
name. The options keep their CLI names and units (milliseconds, prices as typed); `plan._parsed` turns
them into the planner's grid, target and prices."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only
    from llm_cost.serving.prefixes import PromptPrefixes


@dataclass(frozen=True)
class PlanOptions:
    """Every option of `plan` as Typer parsed it (repeatables as lists, None where not given), the prefix
    options as one `PromptPrefixes`; `c` is --c, the draft's cost coefficient. Defaults and checks are the
    command's and the planner's."""

    model: str | None
    gpu: list[str] | None
    gpus: int | None
    isl: int | None
    osl: int | None
    ttft_ms: float | None
    tpot_ms: float | None
    tokens_per_s_per_user: float | None
    usd_per_gpu_hour: list[str] | None
    usd_per_kwh: float | None
    spec_alpha: float | None
    c: float | None
    draft: str | None
    max_gamma: int
    mtp_alpha: float
    tp: list[int] | None
    pp: list[int] | None
    ep: list[int] | None
    dp_attention: bool
    max_tp: int
    weights: list[str] | None
    kv_dtype: list[str] | None
    batch: list[int] | None
    disaggregate: bool
    preset: str
    mfu: float | None
    bw_eff: float | None
    fixed_ms: float | None
    engine: str | None
    usable_memory: bool | None
    verify: int | None
    rate: list[float] | None
    concurrency: int | None
    prompt_len: str | None
    output_len: str | None
    arrivals: str
    trace: str | None
    requests: int
    seed: int
    prefixes: PromptPrefixes
    prefix_caching: bool
    kv_offload_bytes: float
    slo_stat: str
    jobs: int | None
    ray: str | None
    emit_engine: str | None
    emit_k8s: bool
    served_model: str | None
    quiet: bool
    fmt: str
