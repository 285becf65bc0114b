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

import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING

from llm_cost.catalog.arguments import MAX_TOKENS
from llm_cost.errors import InvalidValueError, check_all, check_choice, check_number, short_repr
from llm_cost.planner.build import DEFAULT_MAX_GAMMA, DEFAULT_MTP_ALPHA, MAX_GAMMA
from llm_cost.requests.request import MAX_C
from llm_cost.planner.space import DEFAULT_MAX_TP, MAX_BATCH, MAX_BUDGET, MIN_OSL
from llm_cost.specs.deployment import MAX_DEGREE
from llm_cost.specs.validate import check_fields

if TYPE_CHECKING:  # annotations only
    from llm_cost.serving.prefixes import PromptPrefixes
    from llm_cost.specs import ModelSpec, Profile

# The served workload's values when not given (`PlanRequest.served`): as `batching`'s, the p99 SLO
SERVED_DEFAULTS = dict(arrivals="poisson", requests=2000, seed=0, slo_stat="p99", prefix_caching=False,
                       kv_offload_bytes=0.0)
# The request's fields that only a served check (`verify`) reads, in the order a note names them
SERVED_FIELDS = ("rate", "concurrency", "prompt_len", "output_len", "arrivals", "trace", "requests", "seed",
                 "prefixes", "slo_stat", "jobs", "ray", "prefix_caching", "kv_offload_bytes")


MAX_PRICE = 1e6  # $ per GPU-hour (`plan_run.prices_of`'s bound)
KIND_WORDS = {"str": "name", "number": "price"}  # how a refusal names an item's kind
MAX_VERIFY = 10_000  # frontier rows a served check serves (`verify`)
DEGREES = ("tp", "pp", "ep")  # the space's parallel degrees searched
# what each item of a sequence field may be: names (or specs, by class name) and, for prices, numbers
ITEMS = {"gpu": ("str", "Accelerator"), "weights": ("str", "WeightFormat"), "kv_dtype": ("str",),
         "usd_per_gpu_hour": ("str", "number"), "profile_args": ("str",)}
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
    usd_per_gpu_hour: tuple[str | float, ...] = ()
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
        check_request(self)

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


def check_request(request: PlanRequest) -> None:
    """Refuse, naming the field, a value the plan would refuse later (in the search, the served check or
    after the rows, as a negative `usd_per_kwh` was): each range is the one the planner applies (`space`,
    `build`, `frontier.Target`, `verify`, the executor, the energy estimate), checked when the request
    is built. None is "not given" where a field takes it; a name's spelling (a model, a GPU, a format) is
    the catalog's to check when the plan loads it.

    >>> PlanRequest(gpus=0)
    Traceback (most recent call last):
    ...
    llm_cost.errors.InvalidValueError: gpus must be in [1, 4096], got 0
    """
    check_number("gpus", request.gpus, low=1, high=MAX_BUDGET, integer=True)
    check_number("max_tp", request.max_tp, low=1, high=MAX_DEGREE, integer=True)
    for name in DEGREES:
        if getattr(request, name):  # () or None: the space's defaults
            check_all(name, getattr(request, name), low=1, high=MAX_DEGREE, integer=True)
    if request.batch:
        check_all("batch", request.batch, low=1, high=MAX_BATCH, integer=True)
    check_number("isl", request.isl, low=1, high=MAX_TOKENS, integer=True)
    check_number("osl", request.osl, low=MIN_OSL, high=MAX_TOKENS, integer=True)
    if (request.ttft_s, request.tpot_s, request.tokens_per_s_per_user) != (None, None, None):
        from llm_cost.planner.frontier import Target  # its ranges, and tpot_s or tokens_per_s_per_user

        Target(ttft_s=request.ttft_s, tpot_s=request.tpot_s, tokens_per_s_per_user=request.tokens_per_s_per_user)
    _check_speculation(request)
    if request.usd_per_kwh is not None:
        from llm_cost.roofline.energy import MAX_USD_PER_KWH

        check_number("usd_per_kwh", request.usd_per_kwh, low=0, high=MAX_USD_PER_KWH)
    _check_served(request)
    check_fields(request)  # the other fields' kinds (their annotations): a bool, a string, a number, a spec
    for name, kinds in ITEMS.items():
        for item in getattr(request, name) or ():
            _check_item(name, item, kinds)
    emit_choice(request.emit_engine, request.emit_k8s)


def _check_item(name: str, item, kinds) -> None:
    """One item of the sequence field `name`: one of `kinds` (a price >= 0 where "number" is)."""
    if isinstance(item, str) and "str" in kinds:
        return
    if "number" in kinds and isinstance(item, numbers.Real) and not isinstance(item, bool):
        return check_number(name, item, low=0, high=MAX_PRICE)
    if not any(cls.__name__ in kinds for cls in type(item).__mro__):
        raise InvalidValueError(f"{name} takes {' or '.join(KIND_WORDS.get(kind, kind) for kind in kinds)} "
                                f"values, got {short_repr(item)}", params=(name,))


def _check_speculation(request: PlanRequest) -> None:
    """The speculation's ranges (`build.speculation_of`, `build.plan_grid`)."""
    if request.spec_alpha is not None:
        check_number("spec_alpha", request.spec_alpha, low=0, high=1)
    if request.c is not None:
        check_number("c", request.c, low=0, high=MAX_C)
    check_number("max_gamma", request.max_gamma, low=1, high=MAX_GAMMA, integer=True)
    check_number("mtp_alpha", request.mtp_alpha, low=0, high=1)


def _check_served(request: PlanRequest) -> None:
    """The served workload's ranges (`verify.WorkloadRecipe`, `verify.ServeSettings`, the executor's), those
    given; the values they take together (one rate, a rate or clients) are `plan_served.recipe_of`'s."""
    if request.verify is not None:
        check_number("verify", request.verify, low=1, high=MAX_VERIFY, integer=True)
    given = [name for name in ("rate", "requests", "concurrency", "seed", "jobs", "kv_offload_bytes", "slo_stat")
             if getattr(request, name) is not None]
    if not given:
        return
    from llm_cost.catalog.arguments import default_rules
    from llm_cost.executor import MAX_JOBS
    from llm_cost.planner.verify import MAX_CLIENTS, MAX_REQUESTS, SLO_STATS

    for rate in request.rate or ():
        check_number("rate", rate, low=0, low_open=True)  # req/s over the whole deployment
    ranges = dict(requests=dict(low=1, high=MAX_REQUESTS, integer=True),
                  concurrency=dict(low=1, high=MAX_CLIENTS, integer=True),
                  jobs=dict(low=1, high=MAX_JOBS, integer=True), kv_offload_bytes=dict(low=0))
    for name, limits in ranges.items():
        if getattr(request, name) is not None:
            check_number(name, getattr(request, name), **limits)
    if request.seed is not None:
        default_rules()["seed"].check("seed", request.seed)  # every public function's seed range
    if request.slo_stat is not None:
        check_choice("slo_stat", request.slo_stat, ("median", *SLO_STATS))


def emit_choice(emit_engine: str | None, emit_k8s: bool) -> str | None:
    """The launch's engine, checked (None: nothing emitted); `emit_k8s` needs one.

    >>> emit_choice("VLLM", False), emit_choice(None, False)
    ('vllm', None)
    """
    if emit_k8s and emit_engine is None:
        raise InvalidValueError("emit_k8s needs emit_engine vllm|sglang|trtllm: the engine the manifest runs",
                                params=("emit_k8s", "emit_engine"))
    if emit_engine is None:
        return None
    from llm_cost.planner.emit import ENGINES

    return check_choice("emit_engine", str(emit_engine).lower(), ENGINES)
