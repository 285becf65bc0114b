"""What one plan is asked (`PlanRequest`, issue 24.4: `llm-cost plan` parses its options into it, calls
`plan_run.run_plan` once and renders the `PlanOutcome`): the model and the accelerators searched, the
workload's lengths, the target, the profile, the space's axes and speculation, the prices, and what to do
with the frontier (split it into prefill and decode pools, serve its best rows, emit the best one's launch
command). Library names and SI throughout (`ttft_s`, `kv_offload_bytes`); an error names the parameter,
which the CLI writes as its flag.

The served workload's fields (`rate` .. `ray`) are None where not given: `verify` None serves nothing,
and `served_options_given` names those given all the same (explicit state, not a comparison with
defaults); `served_defaults` are the values a served check takes for the ones left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from llm_cost.planner.build import DEFAULT_MAX_GAMMA, DEFAULT_MTP_ALPHA
from llm_cost.planner.space import DEFAULT_MAX_TP

if TYPE_CHECKING:  # annotations only
    from llm_cost.serving.prefixes import PromptPrefixes
    from llm_cost.specs import ModelSpec, Profile

# The served workload's values when not given (`PlanRequest.served`): as `batching`'s, the p99 SLO
SERVED_DEFAULTS = dict(arrivals="poisson", requests=2000, seed=0, slo_stat="p99", prefix_caching=False,
                       kv_offload_bytes=0.0)
# The request's fields that only a served check (`verify`) reads, in the order a note names them
SERVED_FIELDS = ("rate", "concurrency", "prompt_len", "output_len", "arrivals", "trace", "requests", "seed",
                 "prefixes", "slo_stat", "jobs", "ray", "prefix_caching", "kv_offload_bytes")


SEQUENCES = ("gpu", "usd_per_gpu_hour", "tp", "pp", "ep", "weights", "kv_dtype", "batch", "rate")  # several values
EMPTY_SEQUENCES = ("gpu", "usd_per_gpu_hour")  # () rather than None when not given


@dataclass(frozen=True)
class PlanRequest:
    """One plan (`run_plan`).

    Attributes
    ----------
    model, gpu, gpus
        The model (a spec or catalog name or path), the accelerators searched (names or specs, repeats
        dropped) and the GPU budget.
    isl, osl
        Prompt and output tokens per request.
    ttft_s, tpot_s, tokens_per_s_per_user
        The target (s, s, tokens/s; None: not bounded).
    profile, profile_args
        The `Profile` the times come from, and how a row's `request_args` name it (None: its preset).
    usd_per_gpu_hour, usd_per_kwh
        Prices: 'GPU=PRICE' texts, or one 'PRICE' when one accelerator is searched ($ per GPU-hour);
        $ per kWh for the energy estimate.
    spec_alpha, c, draft, max_gamma, mtp_alpha
        Speculation searched (`build.speculation_of`; `c` a draft step over a target step).
    tp, pp, ep, dp_attention, max_tp, weights, kv_dtype, batch
        The space's axes (`space.plan_space`; None: its defaults).
    disaggregate
        Also split the GPUs into a prefill and a decode pool (`best_split`).
    verify
        Serve the frontier's N best rows with the engine (None: none served).
    rate, concurrency, prompt_len, output_len, arrivals, trace, requests, seed, prefixes
        The served workload (`verify.WorkloadRecipe`; lengths default to `isl` and `osl`).
    engine, prefix_caching, kv_offload_bytes
        How the engine serves (`verify.ServeSettings`).
    slo_stat, jobs, ray
        The served SLO's percentile, the executor's processes and Ray address.
    emit_engine, emit_k8s, served_model
        The best row's launch command for this engine (a Kubernetes manifest with `emit_k8s`), the
        checkpoint it loads (None: the catalog model's repo, else `model` as given).

    Examples
    --------
    >>> asked = PlanRequest(model="llama-3-8b", gpu=("h100-sxm",), gpus=2, isl=1024, osl=128, rate=(2.0,))
    >>> asked.served_options_given, asked.served("requests"), asked.served("rate")
    (('rate',), 2000, (2.0,))
    >>> PlanRequest(model="llama-3-8b", gpu="h100-sxm", rate=2.0).gpu  # one value where several are taken
    ('h100-sxm',)
    """

    model: str | ModelSpec | None = None
    gpu: tuple = ()
    gpus: int = 8
    isl: int = 1024
    osl: int = 256
    ttft_s: float | None = None
    tpot_s: float | None = None
    tokens_per_s_per_user: float | None = None
    profile: str | Profile = "measured"
    profile_args: tuple[str, ...] | None = None
    usd_per_gpu_hour: tuple[str, ...] = ()
    usd_per_kwh: float | None = None
    spec_alpha: float | None = None
    c: float | None = None
    draft: str | ModelSpec | None = None
    max_gamma: int = DEFAULT_MAX_GAMMA
    mtp_alpha: float = DEFAULT_MTP_ALPHA
    tp: tuple | None = None
    pp: tuple | None = None
    ep: tuple | None = None
    dp_attention: bool = False
    max_tp: int = DEFAULT_MAX_TP
    weights: tuple | None = None
    kv_dtype: tuple | None = None
    batch: tuple | None = None
    disaggregate: bool = False
    verify: int | None = None
    rate: tuple[float, ...] | None = None
    concurrency: int | None = None
    prompt_len: str | None = None
    output_len: str | None = None
    arrivals: str | None = None
    trace: str | None = None
    requests: int | None = None
    seed: int | None = None
    prefixes: PromptPrefixes | None = None
    slo_stat: str | None = None
    jobs: int | None = None
    ray: str | None = None
    engine: str | None = None
    prefix_caching: bool | None = None
    kv_offload_bytes: float | None = None
    emit_engine: str | None = None
    emit_k8s: bool = False
    served_model: str | None = None

    def __post_init__(self) -> None:
        # one value where the field takes several: a name or number as a one-tuple (a str is not read
        # character by character), any other iterable as a tuple
        for name in SEQUENCES:
            value = getattr(self, name)
            if isinstance(value, str) or not hasattr(value, "__iter__"):
                value = None if value is None else (value,)
            else:
                value = tuple(value)
            object.__setattr__(self, name, () if value is None and name in EMPTY_SEQUENCES else value)

    def served(self, name: str):
        """The served field `name` as a served check takes it: as given, else `SERVED_DEFAULTS`' value."""
        value = getattr(self, name)
        return SERVED_DEFAULTS.get(name) if value is None else value

    @property
    def served_options_given(self) -> tuple[str, ...]:
        """The served fields given (not None, a rate list not empty), in `SERVED_FIELDS` order, the
        prefixes' own fields last: what a plan that serves nothing (`verify` None) ignores."""
        out = [name for name in SERVED_FIELDS if name != "prefixes"
               and getattr(self, name) is not None and getattr(self, name) not in ([], ())]
        prefixes = self.prefixes._asdict() if self.prefixes is not None else {}
        return tuple(out + [name for name, value in prefixes.items() if value is not None])
