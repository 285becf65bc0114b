"""`run_batching(request)`: one `BatchingRequest` served (issue 24.4, the library half of `batching`).

The specs resolved (names or specs), the replica and its `ServeConfig` from `setup.serving_setup`,
the workload drawn (`workload_spec.synthetic_workload`) or read (`read_trace`) with its prefixes,
then the request's mode (`BatchingRequest.mode`): one `engine.serve` run per rate, the rate search
`rate_search.highest_rate`, a fleet behind a router (`fleet.serve_fleet`), disaggregated pools
(`disaggregated.serve_disaggregated`) or each rate without and with prefix caching. What ran comes
back as one `BatchingOutcome`; rendering it (rows, captions, prices) is the caller's.

Ctrl-C (KeyboardInterrupt) between the runs of a rate list, a fleet or a comparison keeps the runs
that finished: the outcome then holds fewer `results` than `planned` (a comparison: whole pairs).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from llm_cost.errors import InvalidValueError
from llm_cost.serving.batching_request import BatchingRequest, implied_reservation

if TYPE_CHECKING:  # annotations only: the engine's modules load where they are used
    from llm_cost.serving.disaggregated import DisaggregatedResult
    from llm_cost.serving.draft_memory import DraftMemory
    from llm_cost.serving.fleet import FleetResult
    from llm_cost.serving.rate_search import RateSearch
    from llm_cost.serving.replica import Replica
    from llm_cost.serving.serve_config import ServeConfig
    from llm_cost.serving.serve_result import ServeResult
    from llm_cost.serving.workload import Workload
    from llm_cost.specs import Accelerator, ModelSpec, Profile
    from llm_cost.specs.deployment import Deployment


@dataclass(frozen=True)
class DisaggregatedPools:
    """A disaggregated run's pools: `prefill` and `decode` replicas, the decode pool's `decode_deployment`,
    `decode_replica` and `decode_config` (its own split and batch; the prefill pool's where not given),
    the pools' `gpus` in all, the K/V hand-off link (bytes/s, s) and one `DisaggregatedResult` per rate
    (`runs`)."""

    prefill: int
    decode: int
    decode_deployment: Deployment
    decode_replica: Replica
    decode_config: ServeConfig
    gpus: int
    link_bytes_per_s: float
    link_latency_s: float
    runs: tuple[DisaggregatedResult, ...] = ()


@dataclass(frozen=True)
class BatchingOutcome:
    """What `run_batching` served.

    Attributes
    ----------
    request
        The `BatchingRequest`.
    mode
        Its mode (`BatchingRequest.mode`).
    model, gpu, profile
        The specs served (`ModelSpec`, `Accelerator`, `Profile`).
    deployment
        One replica's `Deployment` (disaggregated: one of the prefill pool's).
    replica, config, draft
        `setup.serving_setup`'s replica, `ServeConfig` and draft memory (or None).
    workload
        The workload at its own rate (drawn or read, prefixes on).
    workloads, results, configs
        Per finished run: the workload at its rate, the `ServeResult` (a fleet's or pools' as one)
        and the `ServeConfig` it ran under (a comparison: without, then with prefix caching).
    planned
        The runs asked for; fewer `results` after Ctrl-C (`interrupted`).
    fleets
        Behind a router: each run's `FleetResult`; else None.
    search
        A rate search's `RateSearch`; else None.
    pools
        Disaggregated: its `DisaggregatedPools`; else None.
    implied_reservation
        "paged" when prefix caching chose the reservation (`batching_request.implied_reservation`).

    Examples
    --------
    `run_batching` gives it. Llama-3.2-1B on an H100 (lecture preset) at 2 and 4 requests a
    second, 50 requests each: one workload, config and result per rate, in the rates' order.

    >>> import llm_cost as lc
    >>> out = lc.run_batching(lc.BatchingRequest(model="llama-3.2-1b", profile="lecture", rates=(2.0, 4.0),
    ...                                          requests=50))
    >>> out.mode, out.model.name, out.gpu.label, out.config.reservation, out.planned, out.interrupted
    ('rates', 'llama-3.2-1b', 'h100-sxm', 'declared', 2, False)
    >>> [(wl.rate_req_per_s, run.finished, round(run.throughput_req_per_s, 2))
    ...  for wl, run in zip(out.workloads, out.results)]
    [(2.0, 50, 1.81), (4.0, 50, 3.62)]
    >>> out.search is None and out.fleets is None and out.pools is None
    True
    """

    request: BatchingRequest
    mode: str
    model: ModelSpec
    gpu: Accelerator
    profile: Profile
    deployment: Deployment
    replica: Replica
    config: ServeConfig
    draft: DraftMemory | None
    workload: Workload
    workloads: tuple[Workload, ...]
    results: tuple[ServeResult, ...]
    configs: tuple[ServeConfig, ...]
    planned: int
    fleets: tuple[FleetResult, ...] | None = None
    search: RateSearch | None = None
    pools: DisaggregatedPools | None = None
    implied_reservation: str | None = None

    @property
    def interrupted(self) -> bool:
        """Whether Ctrl-C stopped the runs before all of them finished."""
        return len(self.results) < self.planned


def run_batching(request: BatchingRequest, *, on_progress=None) -> BatchingOutcome:
    """Serve `request` in its mode (module doc); `on_progress(done, total)` after each step (requests
    finished, or a search's simulations; none for disaggregated pools).

    Parameters
    ----------
    request : BatchingRequest
        What to serve, how and in which mode.
    on_progress : callable, optional
        Called with (done, total) as the runs progress (a progress bar).

    Returns
    -------
    BatchingOutcome
        The replica, its `ServeConfig`, the workloads and each run's result.

    Examples
    --------
    >>> out = run_batching(BatchingRequest(model="llama-3.2-1b", profile="lecture", rates=(2.0, 4.0),
    ...                                    requests=50))
    >>> out.mode, len(out.results), [run.finished for run in out.results], out.interrupted
    ('rates', 2, [50, 50], False)
    """
    if not isinstance(request, BatchingRequest):
        raise InvalidValueError(f"request must be a BatchingRequest, got {type(request).__name__}",
                                params=("request",))
    from llm_cost.catalog.loader import as_accelerator, as_model, as_profile
    from llm_cost.specs.deployment import Deployment
    from llm_cost.specs.weights import as_weights

    dep = request.deployment if request.deployment is not None else Deployment()
    profile, weights = as_profile(request.profile), as_weights(request.weights)
    if request.disaggregate is not None:  # one replica of the prefill pool; a deployment's gpus not the pools' refused
        dep = _prefill_deployment(request, dep)
    target, gpu = as_model(request.model), as_accelerator(request.gpu)
    served = _setup(request, target, gpu, profile, weights, dep)
    wl, longer = _workload(request)
    _check_prefixes(request, wl)
    # a trace at its own rate; a closed loop (concurrency) sets its own
    rates = request.rates or ((wl.rate_req_per_s,) if request.trace is not None else (1.0,))
    base = dict(request=request, mode=request.mode, model=target, gpu=gpu, profile=profile, deployment=dep,
                replica=served.replica, config=served.config, draft=served.draft, workload=wl,
                implied_reservation=implied_reservation(request))
    config, replica = served.config, served.replica
    if request.mode == "compare":
        return _compare(request, base, rates, on_progress)
    if request.mode == "disaggregated":
        pools = _pools(request, dict(target=target, gpu=gpu, profile=profile, weights=weights, dep=dep), served, rates, wl)
        return BatchingOutcome(**base, workloads=tuple(wl.at_rate(rate) for rate in rates),
                               results=tuple(run.served for run in pools.runs), configs=(config,) * len(rates),
                               planned=len(rates), pools=pools)
    if request.mode == "search":
        from llm_cost.serving.rate_search import highest_rate

        found = highest_rate(wl, replica, scheduler=request.scheduler, max_batch=request.max_batch, slo_s=request.slo_s,
                             statistic=request.slo_stat, config=config, metric=request.slo_metric, on_step=on_progress,
                             longer=longer)
        results = (found.result,) if found.result else ()
        return BatchingOutcome(**base, workloads=(wl.at_rate(found.rate_req_per_s),) if found.result else (),
                               results=results, configs=(config,) * len(results), planned=len(results), search=found)
    workloads = [wl.at_rate(rate) for rate in rates]
    if request.mode == "fleet":
        from llm_cost.serving.fleet import serve_fleet

        fleets = _each(workloads, on_progress, lambda one, inner: serve_fleet(
            one, replica, config, dep.replicas, request.router, on_progress=inner))
        return BatchingOutcome(**base, workloads=tuple(workloads[:len(fleets)]),
                               results=tuple(fleet.fleet for fleet in fleets), configs=(config,) * len(fleets),
                               planned=len(workloads), fleets=tuple(fleets))
    from llm_cost.serving import engine  # looked up at the call: a test patches engine.serve

    results = _each(workloads, on_progress, lambda one, inner: engine.serve(one, replica, config, on_progress=inner))
    return BatchingOutcome(**base, workloads=tuple(workloads[:len(results)]), results=tuple(results),
                           configs=(config,) * len(results), planned=len(workloads))


def _check_prefixes(request: BatchingRequest, wl) -> None:
    """Prefix caching (`prefix_caching`, `compare_prefix_caching`) refused on a workload without prefixes,
    named as the request's fields (the engine's own refusal, `PrefixCache`, names `PromptPrefixes`')."""
    asked = [name for name in ("compare_prefix_caching", "prefix_caching") if getattr(request, name)]
    if asked and wl.prefix is None:
        raise InvalidValueError(f"{asked[0]} needs a workload with prefixes: give prefixes (its shared_prefix, "
                                "prefix_groups or sessions) or a trace with a prefix_id column",
                                params=(asked[0], "prefixes", "shared_prefix", "prefix_groups", "sessions", "trace"))


def _setup(request: BatchingRequest, target, gpu, profile, weights, dep):
    """`setup.serving_setup` of the request's engine settings on `dep` (the reservation prefix caching
    implies when none is given)."""
    from llm_cost.catalog.loader import as_model
    from llm_cost.serving.setup import serving_setup

    return serving_setup(target, gpu, profile, weights=weights, deployment=dep, reserve=dep.reserve,
                         kv_tokens=request.kv_tokens, max_len=request.max_len, scheduler=request.scheduler,
                         reservation=request.reservation or implied_reservation(request), max_batch=request.max_batch,
                         block_size=request.block_size, watermark=request.watermark, preemption=request.preemption,
                         prefill_chunk=request.prefill_chunk, pipeline=request.pipeline, prefix_caching=request.prefix_caching,
                         kv_offload_bytes=request.kv_offload_bytes, spec_gamma=request.spec_gamma, spec_alpha=request.spec_alpha,
                         c=request.c, draft=as_model(request.draft) if request.draft is not None else None,
                         spec_policy=request.spec_policy, spec_off_above=request.spec_off_above,
                         spec_acceptance=request.spec_acceptance, seed=request.seed)


def _workload(request: BatchingRequest):
    """(the workload at its own rate, prefixes on; `longer(n)`: the same drawn with n requests, for the
    rate search's longer runs, or None for a trace, as long as it is)."""
    from llm_cost.serving.workload_spec import read_trace, synthetic_workload

    if request.trace is not None:
        return request.prefixes.applied(read_trace(request.trace), request.seed), None

    def longer(count: int):
        drawn = synthetic_workload(count, request.rates[0] if request.rates else 1.0, seed=request.seed,
                                   prompt=request.prompt, output=request.output, max_gen=request.max_gen,
                                   arrivals=request.arrivals, concurrency=request.concurrency)
        return request.prefixes.applied(drawn, request.seed)

    return longer(request.requests), longer


def _each(workloads, on_progress, each) -> list:
    """`[each(workload, inner) for workload in workloads]`, `inner(done, total)` reporting to `on_progress`
    over all of them (run `index` of `count`: index x total + done of count x total); Ctrl-C stops with
    the runs that finished."""
    runs, count = [], len(workloads)
    try:
        for index, one in enumerate(workloads):
            inner = None if on_progress is None else (
                lambda done, total, index=index: on_progress(index * total + done, count * total))
            runs.append(each(one, inner))
    except KeyboardInterrupt:
        pass
    return runs


def _compare(request: BatchingRequest, base: dict, rates, on_progress) -> BatchingOutcome:
    """Each rate without and with prefix caching, the same requests (behind the router if given); whole
    pairs kept after Ctrl-C."""
    config, replica, dep, wl = base["config"], base["replica"], base["deployment"], base["workload"]
    pair = (replace(config, prefix_caching=False), replace(config, prefix_caching=True))
    runs = [(at, setting) for at in (wl.at_rate(rate) for rate in rates) for setting in pair]
    if request.router:
        from llm_cost.serving.fleet import serve_fleet

        def each(run, inner):
            return serve_fleet(run[0], replica, run[1], dep.replicas, request.router, on_progress=inner)
    else:
        from llm_cost.serving import engine

        def each(run, inner):
            return engine.serve(run[0], replica, run[1], on_progress=inner)
    done = _each(runs, on_progress, each)
    done = done[:len(done) // 2 * 2]
    fleets = tuple(done) if request.router else None
    results = tuple(fleet.fleet for fleet in done) if request.router else tuple(done)
    return BatchingOutcome(**base, workloads=tuple(at for at, _ in runs[:len(done)]), results=results,
                           configs=tuple(setting for _, setting in runs[:len(done)]), planned=len(runs), fleets=fleets)


def _prefill_deployment(request: BatchingRequest, dep):
    """One replica of the prefill pool: `dep` without its gpus (the pools' GPUs are P x tp x pp + D x
    decode_tp x pp, `_pools_gpus`); gpus given that are not that total are refused, not reported."""
    prefill, decode = request.disaggregate
    one = replace(dep, gpus=0)
    total = _pools_gpus(request, one)
    if dep.gpus and dep.gpus != total:
        per = (one.gpus_per_replica, decode_deployment(request, one).gpus_per_replica)
        raise InvalidValueError(f"gpus {dep.gpus} is not the GPUs of disaggregate {prefill}:{decode}: {prefill} x {per[0]} "
                                f"(prefill) + {decode} x {per[1]} (decode) = {total} GPUs; give gpus {total} or leave it out",
                                params=("gpus", "disaggregate"))
    return one


def _pools_gpus(request: BatchingRequest, dep) -> int:
    """The pools' GPUs: P replicas of `dep`'s tp x pp and D of the decode pool's (`decode_deployment`)."""
    prefill, decode = request.disaggregate
    return prefill * dep.gpus_per_replica + decode * decode_deployment(request, dep).gpus_per_replica


def decode_deployment(request: BatchingRequest, dep):
    """The decode pool's `Deployment`: the prefill pool's `dep` with the request's `decode_tp` (its pp,
    ep, K/V dtype and memory basis); `dep` itself without one.

    >>> from llm_cost.specs.deployment import Deployment
    >>> pools = BatchingRequest(rates=(1.0,), disaggregate=(1, 1), decode_tp=2)
    >>> decode_deployment(pools, Deployment()).tp
    2
    """
    tp = request.decode_tp
    return dep if tp is None or tp == dep.tp else replace(dep, tp=tp, gpus=0)


def _pools(request: BatchingRequest, specs: dict, served, rates, wl) -> DisaggregatedPools:
    """The disaggregated run (`serve_disaggregated`): prefills on P replicas, decodes on D of the decode
    pool's own split (its own K/V capacity, a draft's cost and memory on it) and batch, the K/V over the
    datasheet's link (`handoff_link`), one run per rate. `specs`: `_setup`'s target, gpu, profile,
    weights and dep (the prefill pool's deployment) by name."""
    from llm_cost.serving.disaggregated import handoff_link, serve_disaggregated

    prefill, decode = request.disaggregate
    prefill_dep = specs["dep"]
    decode_dep = decode_deployment(request, prefill_dep)
    decode_replica, decode_config = served.replica, served.config
    if decode_dep is not prefill_dep:
        decode_pool = _decode_setup(request, {**specs, "dep": decode_dep})
        decode_replica, decode_config = decode_pool.replica, decode_pool.config
    decode_config = replace(decode_config, max_batch=request.decode_max_batch or decode_config.max_batch,
                            prefix_caching=False)  # the K/V comes by hand-off
    total = _pools_gpus(request, prefill_dep)
    link_bytes_per_s, link_latency_s = handoff_link(specs["gpu"], total)
    runs = tuple(serve_disaggregated(wl.at_rate(rate), served.replica, served.config, prefill=prefill, decode=decode,
                                     link_bytes_per_s=link_bytes_per_s, link_latency_s=link_latency_s,
                                     decode_replica=decode_replica, decode_config=decode_config) for rate in rates)
    return DisaggregatedPools(prefill, decode, decode_dep, decode_replica, decode_config, total,
                              link_bytes_per_s, link_latency_s, runs)


def _decode_setup(request: BatchingRequest, specs: dict):
    """`_setup` of the decode pool: a refusal of its split (`tp`, the request's `decode_tp` there) names
    `decode_tp`."""
    import re

    from llm_cost.errors import LlmCostError

    try:
        return _setup(request, **specs)
    except LlmCostError as err:
        if "tp" not in err.params:
            raise
        message = re.sub(r"(?<![\w`-])tp(?![\w-])", "decode_tp", str(err))
        raise type(err)(message, params=tuple("decode_tp" if name == "tp" else name for name in err.params)) from err
