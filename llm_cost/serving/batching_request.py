"""What one `batching` run is asked: the model on its GPUs, the engine's settings, the workload and
the mode, as one frozen `BatchingRequest` (issue 24.4: the command parses its options into it, calls
`batching_run.run_batching` and renders). Library names throughout (`rates`, `slo_s`, seconds); the
options that exclude each other are refused when the request is built, each error naming the
parameters (`params`), which the CLI writes as its flags.

The modes (`BatchingRequest.mode`), in the order they are told apart:

- `compare`: each rate served twice, without and with prefix caching (`compare_prefix_caching`);
- `disaggregated`: prefills on P replicas, decodes on D (`disaggregate` = (P, D));
- `search`: the highest rate whose latency meets `slo_s` (`rate_search.highest_rate`);
- `fleet`: the deployment's replicas together behind a `router` (`fleet.serve_fleet`);
- `rates`: one `engine.serve` run per rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from llm_cost.errors import InvalidValueError, check_choice, check_number
from llm_cost.serving.prefixes import PromptPrefixes
from llm_cost.specs.validate import check_fields

if TYPE_CHECKING:  # annotations only (`check_fields` reads their names): the specs load where they are used
    from llm_cost.specs import Accelerator, ModelSpec, Profile, WeightFormat  # noqa: F401
    from llm_cost.specs.deployment import Deployment  # noqa: F401
    from llm_cost.speculative.rounds import BurstyAcceptance  # noqa: F401

MODES = ("rates", "search", "fleet", "disaggregated", "compare")
MAX_CLIENTS = 1e9  # a closed loop's clients, as `workload_spec.synthetic_workload` bounds them


@dataclass(frozen=True)
class BatchingRequest:
    """One `batching` run (`run_batching`): what is served, how, on which workload, in which mode.

    Attributes
    ----------
    model, gpu, profile, weights
        Specs or catalog names (`"llama-3-8b"`, `"h100-sxm"`, `"measured"`, `"bf16"`); a name becomes
        the spec it loads when the request is built.
    deployment
        The `Deployment` of one replica (tp, pp, ep, gpus, K/V dtype, reserve); None: one GPU.
    scheduler, max_batch, reservation, block_size, watermark, preemption, prefill_chunk, pipeline
        The engine's settings (`setup.serving_setup`, `ServeConfig`); `reservation` None: the
        scheduler's default, paged when prefix caching is asked for (`implied_reservation`).
    prefix_caching, kv_offload_bytes
        Prefix caching (paged K/V, recompute) and the host memory (bytes) for K/V offload (0: none).
    kv_tokens, max_len
        The replica's K/V capacity in tokens and a max-length reservation's tokens (None: from memory,
        the model's context).
    spec_gamma, spec_alpha, c, draft, spec_policy, spec_off_above, spec_acceptance
        Speculation (`setup.speculation`): `draft` a model spec or name, `spec_acceptance` a
        `rounds.BurstyAcceptance` or None (independent acceptance).
    rates
        Arrival rates (req/s, inf: all at once), one run each; () with a trace (its own rate), a closed
        loop (`concurrency`) or a search (`slo_s`).
    requests, seed, prompt, output, max_gen, arrivals, concurrency
        The drawn workload (`workload_spec.synthetic_workload`).
    trace
        A CSV trace's path (`workload_spec.read_trace`) instead of the drawn workload.
    prefixes
        The prompts' shared prefixes (`prefixes.PromptPrefixes`).
    slo_s, slo_stat, slo_metric
        A rate search's target (s), its statistic and metric (`rate_search.highest_rate`).
    slo_ttft_s, slo_tpot_s
        Goodput's targets (s), or None.
    router
        Serve the deployment's replicas together behind this router (`fleet.serve_fleet`).
    disaggregate, decode_tp, decode_max_batch
        (P, D) prefill and decode replicas (`disaggregated.serve_disaggregated`), the decode pool's
        tensor-parallel degree and batch (None: the prefill pool's).
    compare_prefix_caching
        Serve each rate without and with prefix caching.

    Examples
    --------
    >>> asked = BatchingRequest(rates=(2.0, 4.0), requests=100)
    >>> asked.mode, asked.scheduler, asked.max_batch
    ('rates', 'iteration', 32)
    >>> BatchingRequest(rates=(2.0,), slo_s=0.05)
    Traceback (most recent call last):
    ...
    llm_cost.errors.InvalidValueError: give rates R (repeatable) to simulate, or slo_s T to search the rate, not both
    """

    model: str | ModelSpec = "llama-3-8b"
    gpu: str | Accelerator = "h100-sxm"
    profile: str | Profile = "measured"
    weights: str | WeightFormat = "bf16"
    deployment: Deployment | None = None
    scheduler: str = "iteration"
    max_batch: int = 32
    reservation: str | None = None
    block_size: int = 16
    watermark: float = 0.01
    preemption: str = "recompute"
    prefill_chunk: int | None = None
    pipeline: str = "serial"
    prefix_caching: bool = False
    kv_offload_bytes: float = 0.0
    kv_tokens: int | None = None
    max_len: int | None = None
    spec_gamma: int | None = None
    spec_alpha: float | None = None
    c: float | None = None
    draft: str | ModelSpec | None = None
    spec_policy: str = "fixed"
    spec_off_above: int = 0
    spec_acceptance: BurstyAcceptance | None = None
    rates: tuple[float, ...] = ()
    requests: int = 2000
    seed: int = 0
    prompt: str = "uniform:32:512"
    output: str = "uniform:1:128"
    max_gen: int | None = None
    arrivals: str = "poisson"
    concurrency: int | None = None
    trace: str | None = None
    prefixes: PromptPrefixes = PromptPrefixes()
    slo_s: float | None = None
    slo_stat: str = "median"
    slo_metric: str = "latency_per_token"
    slo_ttft_s: float | None = None
    slo_tpot_s: float | None = None
    router: str | None = None
    disaggregate: tuple[int, ...] | None = None
    decode_tp: int | None = None
    decode_max_batch: int | None = None
    compare_prefix_caching: bool = False

    def __post_init__(self) -> None:
        from llm_cost.catalog.arguments import default_rules

        _check_ranges(self)
        check_fields(self, infinite=("rates",))
        _check_modes(self)
        # a catalog name is the spec it loads (an unknown one refused naming the field): the request by
        # name equals the request by spec
        rules = default_rules()
        for field in ("profile", "weights", "model", "gpu", "draft"):
            if getattr(self, field) is not None:
                object.__setattr__(self, field, rules[field].check(field, getattr(self, field)))

    @property
    def mode(self) -> str:
        """Which run this is (`MODES`, the module doc)."""
        if self.compare_prefix_caching:
            return "compare"
        if self.disaggregate is not None:
            return "disaggregated"
        if self.slo_s is not None:
            return "search"
        return "fleet" if self.router else "rates"


def implied_reservation(request: BatchingRequest) -> str | None:
    """"paged" when prefix caching is asked for (`prefix_caching` or `compare_prefix_caching`) under the
    iteration scheduler without a `reservation` (the cache holds K/V blocks); None otherwise (an explicit
    reservation stays, and a non-paged one is refused by `ServeConfig` in one line).

    >>> implied_reservation(BatchingRequest(rates=(1.0,), prefix_caching=True))
    'paged'
    """
    if request.reservation or request.scheduler != "iteration" or not (
            request.prefix_caching or request.compare_prefix_caching):
        return None
    return "paged"


def _check_ranges(request: BatchingRequest) -> None:
    """The ranges of their own, before `check_fields`' generic one (a negative max_batch is told
    [1, inf), not [0, inf)): the engine's settings by `ServeConfig` itself, the rates by `check_rate`,
    the seed by the library's rule for every seed (`catalog.arguments.default_rules`)."""
    from llm_cost.serving.serve_config import ServeConfig
    from llm_cost.serving.workload import check_rate

    ServeConfig(max_batch=request.max_batch, block_size=request.block_size, watermark=request.watermark,
                prefill_chunk=request.prefill_chunk)
    check_number("requests", request.requests, low=1, integer=True)
    from llm_cost.catalog.arguments import default_rules

    default_rules()["seed"].check("seed", request.seed)  # every public function's seed range
    for name in ("decode_tp", "decode_max_batch"):
        if getattr(request, name) is not None:
            check_number(name, getattr(request, name), low=1, integer=True)
    if request.concurrency is not None:  # the clients' range `workload_spec.synthetic_workload` takes
        check_number("concurrency", request.concurrency, low=1, high=MAX_CLIENTS, integer=True)
    if request.max_len is not None:
        from llm_cost.serving.policies import MAX_LEN_TOKENS  # `model_max_len`'s range

        check_number("max_len", request.max_len, low=1, high=MAX_LEN_TOKENS, integer=True)
    if not isinstance(request.rates, tuple):
        raise InvalidValueError(f"rates must be a tuple of rates (req/s), got {type(request.rates).__name__}",
                                params=("rates",))
    for rate in request.rates:
        try:
            check_rate(rate)
        except InvalidValueError as err:
            raise InvalidValueError(str(err), params=("rate", "rates")) from None
    for name in ("slo_s", "slo_ttft_s", "slo_tpot_s"):
        if getattr(request, name) is not None:
            check_number(name, getattr(request, name), low=0, low_open=True)
    from llm_cost.serving.rate_search import STATISTICS
    from llm_cost.serving.serve_result import METRICS
    from llm_cost.serving.workload_spec import parse_length

    check_choice("slo_stat", request.slo_stat, tuple(STATISTICS))  # checked unused too: a typo is told
    check_choice("slo_metric", request.slo_metric, METRICS)
    parse_length("prompt", request.prompt)  # the drawn lengths' specs, named as the request's fields
    parse_length("output", request.output)
    split = request.disaggregate
    if split is not None and not (isinstance(split, tuple) and len(split) == 2 and all(
            isinstance(count, int) and not isinstance(count, bool) and count >= 1 for count in split)):
        raise InvalidValueError(f"disaggregate must be (P, D), prefill and decode replicas >= 1 each, got "
                                f"{request.disaggregate!r}", params=("disaggregate",))


def _check_modes(request: BatchingRequest) -> None:
    """The options that exclude each other, in the order the modes are told apart (module doc)."""
    if not request.rates and request.slo_s is None and request.trace is None and request.concurrency is None:
        raise InvalidValueError("give rates R (req/s, one run each) to simulate, slo_s T to search the highest "
                                "rate whose latency meets T, trace (a CSV path) to replay, or concurrency N for a "
                                "closed loop", params=("rates", "slo_s", "trace", "concurrency"))
    if request.rates and request.slo_s is not None:
        raise InvalidValueError("give rates R (repeatable) to simulate, or slo_s T to search the rate, not both",
                                params=("rates", "slo_s"))
    closed_or_searched = request.slo_s is not None or request.router or request.concurrency is not None
    if request.disaggregate is not None and closed_or_searched:
        raise InvalidValueError("disaggregate simulates the given rates values of open-loop arrivals: give "
                                "rates, not slo_s, router or concurrency",
                                params=("disaggregate", "rates", "slo_s", "router", "concurrency"))
    if request.router and request.concurrency is not None:  # `fleet.serve_fleet`'s refusal, when built
        raise InvalidValueError("a fleet (router) routes open-loop arrivals; give no concurrency",
                                params=("router", "concurrency"))
    if request.router and request.slo_s is not None:
        raise InvalidValueError("router simulates the given rates values; give rates, not slo_s",
                                params=("router", "rates", "slo_s"))
    if request.compare_prefix_caching and (request.slo_s is not None or request.disaggregate is not None):
        raise InvalidValueError("compare_prefix_caching serves the given rates values on one pool: give rates, "
                                "not slo_s or disaggregate", params=("compare_prefix_caching", "rates", "slo_s",
                                                                     "disaggregate"))
    if request.disaggregate is None and (request.decode_tp is not None or request.decode_max_batch is not None):
        raise InvalidValueError("decode_tp and decode_max_batch set the decode pool of disaggregate P:D: "
                                "give disaggregate", params=("decode_tp", "decode_max_batch", "disaggregate"))
