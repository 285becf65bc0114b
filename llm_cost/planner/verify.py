r"""Plans verified by simulation: the analytic frontier's best rows served by the engine.

Every candidate (one frontier row: accelerator, tp x pp x ep, weights, KV dtype, batch, speculation)
serves the same arrival stream (`WorkloadRecipe.stream`): `requests` requests over the whole deployment
at the total rate R (or from N clients), so every ranking compares the same window of arrivals. Its
replicas take the stream round-robin (`share`: a replica serves every r-th request at its own arrival
time, a closed loop ceil(N / r) clients); one replica (`Replica.from_specs` on its deployment) is
served. Prefixes (a system prompt, groups, sessions) are put on the stream first; sessions stay whole
on a replica when their number is a multiple of the replicas (otherwise round-robin splits a chat's
turns, as that router does). The engine runs paged K/V (vLLM's policy) with the candidate's batch as
its max sequences, pipeline stages in flight (`orca`) when pp > 1, the candidate's speculation inside
the batch (its gamma, alpha and draft cost ratio c), and `ServeSettings`: an engine's defaults
(tokens per iteration as prefill chunks, its K/V block), prefix caching, a host K/V tier.

Goodput per GPU (the ranking): requests per second that finished within both targets on one
replica, over the replica's GPUs:

.. math:: G_{gpu} = \frac{|\{i : \mathrm{TTFT}_i \le T_{ttft},\ \mathrm{TPOT}_i \le T_{tpot}\}|}
                         {\mathrm{span}} \cdot \frac{1}{tp \cdot pp}

A candidate meets the SLO when the stated percentile (p50, p90, p99) of TTFT and of TPOT is within
the target and every request finished; candidates that meet it rank first, each part by G_gpu.

A disaggregated candidate (a split plan's frontier row served: a `SplitCandidate`) is served by
`serving.disaggregated.serve_disaggregated`: P prefill and D decode replicas behind least-loaded
routers serving the whole stream (the same window as a colocated candidate), the K/V over the accelerator's
link. Each pool runs as planned: the prefill pool its own split and batch, the decode pool its split,
batch and speculation (`decode_replica`, `decode_config`); goodput per GPU is over both pools' GPUs.

Determinism: every candidate's task carries its own seed (the workload seed for the requests, common
to all candidates; the acceptance seed from a CRC-32 of the candidate's description), so a result
depends on the candidate alone, never on the order or the process that ran it.
"""

from __future__ import annotations

import functools
import math
import zlib
from dataclasses import dataclass

from llm_cost.errors import InvalidValueError, check_choice, check_number

SLO_STATS = ("p50", "p90", "p99")
MAX_REQUESTS = 10**8  # requests of the served workload
MAX_CLIENTS = 10**7  # a closed loop's clients (`concurrency`)


@dataclass(frozen=True)
class WorkloadRecipe:
    """The user's workload, one arrival stream for every candidate: `requests` requests over the whole
    deployment at the total rate (req/s) or from the total clients, length specs
    (`workload_spec.parse_length`), arrivals, or a trace; prompts sharing prefixes (`prefixes.PromptPrefixes`:
    a system prompt, groups or multi-turn sessions) as `batching` builds them."""

    requests: int = 2000
    rate_req_per_s: float | None = None
    concurrency: int | None = None
    prompt: str = "uniform:32:512"
    output: str = "uniform:1:128"
    arrivals: str = "poisson"
    seed: int = 0
    trace: object = None  # a Workload read from a CSV trace, replayed at rate_req_per_s (default its own)
    prefixes: object = None  # a `prefixes.PromptPrefixes`; None: no prefixes

    def __post_init__(self) -> None:
        check_number("requests", self.requests, low=1, high=MAX_REQUESTS, integer=True)
        if self.rate_req_per_s is not None:
            check_number("rate", self.rate_req_per_s, low=0, low_open=True)
        if self.concurrency is not None:
            check_number("concurrency", self.concurrency, low=1, high=MAX_CLIENTS, integer=True)
        if self.trace is not None and self.concurrency is not None:
            raise InvalidValueError("a trace has its own arrivals: serve trace alone or at a mean rate_req_per_s, "
                                    "not with concurrency", params=("trace", "rate_req_per_s", "concurrency"))
        if self.trace is None and (self.rate_req_per_s is None) == (self.concurrency is None):
            raise InvalidValueError("the served workload needs rate_req_per_s (req/s over the whole deployment) or "
                                    "concurrency (clients), one of them", params=("rate_req_per_s", "concurrency"))

    def stream(self):
        """The whole deployment's `Workload`, the same for every candidate: the trace at the rate (default
        its own), else `requests` drawn requests at the total rate (or from the total clients); prefixes on."""
        if self.trace is not None:
            return self._prefixed(self.trace.at_rate(self.rate_req_per_s or self.trace.rate_req_per_s))
        return _drawn(self)

    def _prefixed(self, wl):
        return wl if self.prefixes is None else self.prefixes.applied(wl, self.seed)

    def for_fleet(self, replicas: int):
        """The `Workload` a fleet serves as one (a disaggregated candidate's pools, `replicas` in all): the
        whole stream, over the same window as every colocated candidate's."""
        return self.stream()

    def for_replicas(self, replicas: int):
        """The `Workload` one of `replicas` replicas serves: its round-robin share of the stream (`share`)."""
        if self.trace is not None:
            return share(self.stream(), replicas)
        return _shared(self, replicas)


def share(wl, replicas: int, index: int = 0):
    """Replica `index`'s requests of `wl` when `replicas` replicas take the stream round-robin: requests
    index, index + replicas, ... at their own arrival times (so every replica, and every deployment,
    serves the stream's window), a closed loop's clients split ceil(C / replicas) each.

    >>> from llm_cost.serving.workload import fixed_workload
    >>> w = share(fixed_workload([(4, 5), (8, 2), (16, 3)], arrivals_s=[0.0, 1.0, 2.0]), 2)
    >>> w.prompt, w.arrival_s
    ((4, 16), (0.0, 2.0))
    """
    from dataclasses import replace

    if replicas == 1:
        return wl
    pick = slice(index, None, replicas)
    return replace(wl, unit_arrivals=wl.unit_arrivals[pick], prompt=wl.prompt[pick], output=wl.output[pick],
                   declared_gen=wl.declared_gen[pick], prefix=None if wl.prefix is None else wl.prefix[pick],
                   concurrency=None if wl.concurrency is None else math.ceil(wl.concurrency / replicas))


@functools.lru_cache(maxsize=8)
def _drawn(recipe: WorkloadRecipe):
    """`synthetic_workload` of a recipe without a trace, prefixes on, drawn once per process for the
    candidates that share it (a `Workload` is frozen: every candidate serves the same requests)."""
    from llm_cost.serving.workload_spec import synthetic_workload

    return recipe._prefixed(synthetic_workload(recipe.requests, recipe.rate_req_per_s or 1.0, seed=recipe.seed,
                                               prompt=recipe.prompt, output=recipe.output, arrivals=recipe.arrivals,
                                               concurrency=recipe.concurrency))


@functools.lru_cache(maxsize=16)
def _shared(recipe: WorkloadRecipe, replicas: int):
    return share(_drawn(recipe), replicas)


@dataclass(frozen=True)
class Candidate:
    """One frontier row to serve: everything a worker process needs (picklable); `c` the draft's cost ratio."""

    key: str  # the row's request_args: its identity and the source of its seed
    model: object
    gpu: object
    profile: object
    deployment: object
    weights: object
    batch: int
    gamma: int = 0
    alpha: float = 0.0
    c: float = 0.0

    @property
    def seed(self) -> int:
        """The candidate's own acceptance seed: CRC-32 of its key (independent of order)."""
        return zlib.crc32(self.key.encode())


@dataclass(frozen=True)
class ServeTask:
    """A candidate, the workload, the targets (s) and the percentile: one unit of the executor."""

    candidate: Candidate
    workload: WorkloadRecipe
    ttft_s: float | None
    tpot_s: float | None
    slo_stat: str = "p99"
    settings: "ServeSettings" = None  # None: ServeSettings() (no engine's defaults, no prefix cache)


@dataclass(frozen=True)
class ServeSettings:
    """How every candidate's engine runs beyond what its row sets (max sequences: the row's batch, as its
    launch command sets it): the serving engine whose defaults apply (`specs.engines`: tokens per
    iteration as prefill chunks where it chunks, its K/V block; None: whole prompts, 16-token blocks),
    prefix caching and a host K/V tier of `kv_offload_bytes` (`ServeConfig`)."""

    engine: str | None = None
    prefix_caching: bool = False
    kv_offload_bytes: float = 0.0

    def __post_init__(self) -> None:
        check_number("kv_offload_bytes", self.kv_offload_bytes, low=0)
        if self.engine is None:
            return
        from llm_cost.specs.engines import engine as named

        spec = named(self.engine)
        if not spec.continuous:
            raise InvalidValueError(f"engine {spec.name} runs static batches only: verify serves iteration-level "
                                    "batching (the plan's rows are its static batches already)", params=("engine",))
        if not spec.paged and (self.prefix_caching or self.kv_offload_bytes):
            raise InvalidValueError(f"prefix_caching and kv_offload_bytes need paged K/V: engine {spec.name} keeps "
                                    "each sequence's K/V contiguous", params=("prefix_caching", "kv_offload_bytes",
                                                                              "engine"))

    def config_fields(self, gpu) -> dict:
        """The `ServeConfig` fields these settings give on `gpu`: paged K/V (vLLM's policy) in the engine's
        blocks and its budget as prefill chunks where it chunks; an engine that does not page (llama.cpp's
        slots) reserves each sequence's max length."""
        out = dict(reservation="paged", prefix_caching=bool(self.prefix_caching),
                   kv_offload_bytes=float(self.kv_offload_bytes))
        if self.engine is None:
            return out
        from llm_cost.specs.engines import engine as named

        spec = named(self.engine)
        out["prefill_chunk"] = spec.budget(gpu)[0] if spec.chunked_prefill else None
        return {**out, "block_size": spec.kv_block_tokens} if spec.paged else {**out, "reservation": "max_len"}


@dataclass(frozen=True)
class SplitCandidate:
    """A disaggregated plan row (`planner.disaggregate`) to serve: `decode_replicas` replicas of
    `candidate` (the decode pool's split, batch and speculation) and `prefill_replicas` of `prefill` (the
    prefill pool's own split and batch), each pool as planned (`serve_disaggregated`'s `decode_replica`
    and `decode_config`); `simplified` says what serving changed from the plan ("" when nothing)."""

    candidate: Candidate
    prefill_replicas: int
    decode_replicas: int
    simplified: str = ""
    prefill: Candidate | None = None  # None: the prefill pool as `candidate`

    @property
    def key(self) -> str:
        return self.candidate.key

    @property
    def seed(self) -> int:
        return self.candidate.seed


def _candidate(grid, i: int, key: str) -> Candidate:
    """Grid configuration `i` as a candidate named `key`."""
    grp, variant = grid.space.groups[grid.group[i]], grid.variants[grid.variant[i]]
    cost = float(grid.c[i])
    return Candidate(key, grid.space.model, grp.gpu, grid.profile, grp.deployment, grp.weights, int(grid.batch[i]),
                     gamma=int(variant.gamma or 0) if variant.kind != "none" else 0,
                     alpha=float(variant.alpha or 0.0), c=0.0 if math.isnan(cost) else cost)


def candidates_of(result, rows: list[dict], n: int) -> list[Candidate]:
    """The first `n` rows of a `Plan`'s frontier (`plan_rows` order) as candidates."""
    return [_candidate(result.grid, int(at), row["request_args"]) for at, row in zip(result.frontier[:n], rows[:n])]


def split_candidates(grid, splits, rows: list[dict]) -> list[SplitCandidate]:
    """The disaggregated splits (`best_split`, with their `disaggregated_rows`) as candidates, each pool
    its planned configuration: the prefill pool's GPUs in replicas of its split, the decode pool's in its."""
    out = []
    for split, row in zip(splits, rows):
        key = f"{row['prefill_request_args']} | {row['decode_request_args']}"
        dec, pre = _candidate(grid, split.decode, key), _candidate(grid, split.prefill, key)
        n_pre = max(1, split.prefill_gpus // pre.deployment.gpus_per_replica)
        out.append(SplitCandidate(dec, n_pre, split.decode_gpus // dec.deployment.gpus_per_replica, "", prefill=pre))
    return out


def replica_and_config(cand: Candidate, settings: ServeSettings | None = None):
    """The candidate's `Replica` and `ServeConfig` (module doc) under `settings` (None: the defaults)."""
    from llm_cost.serving.replica import Replica
    from llm_cost.serving.serve_config import ServeConfig, SpecConfig, host_link_bytes_per_s

    dep = cand.deployment
    replica = Replica.from_specs(cand.model, cand.gpu, cand.profile, weights=cand.weights, deployment=dep)
    spec = SpecConfig(gamma=cand.gamma, alpha=cand.alpha, c=cand.c, seed=cand.seed) if cand.gamma else None
    config = ServeConfig(max_batch=cand.batch, spec=spec, pipeline="orca" if dep.pp > 1 else "serial",
                         host_bytes_per_s=host_link_bytes_per_s(cand.gpu),
                         **(settings or ServeSettings()).config_fields(cand.gpu))
    return replica, config


def _not_served(note: str) -> dict:
    return {"served": False, "serve_note": note, "goodput_req_per_s_per_gpu": 0.0, "meets_served_slo": False}


def served_fields(r, wl, task: ServeTask, gpus: int) -> dict:
    """A served run's figures (`ServeResult` `r` of workload `wl` on `gpus` GPUs) as a flat SI dict: the
    percentile of TTFT and TPOT, throughput and goodput per GPU, whether it meets the SLO, the requests
    and the arrival window served (first to last arrival: the stream's, whatever the replicas)."""
    stat, requests = task.slo_stat, len(wl)
    arrivals = wl.arrival_s
    ttft, tpot = r.percentile_s("ttft", stat), r.percentile_s("tpot", stat)
    meets = r.finished == requests and all(limit is None or (not math.isnan(value) and value <= limit)
                                           for value, limit in ((ttft, task.ttft_s), (tpot, task.tpot_s)))
    good = r.goodput_req_per_s(ttft_s=task.ttft_s, tpot_s=task.tpot_s)
    return {"served": True, "serve_note": "", f"served_ttft_{stat}_s": ttft, f"served_tpot_{stat}_s": tpot,
            "served_throughput_req_per_s_per_gpu": r.throughput_req_per_s / gpus,
            "goodput_req_per_s_per_gpu": good / gpus, "meets_served_slo": bool(meets),
            "served_requests": requests, "served_finished": int(r.finished), "served_preemptions": int(r.preemptions),
            "served_seed": task.candidate.seed, "served_window_s": None if wl.concurrency else float(arrivals[-1] - arrivals[0]),
            "stream_requests": task.workload.requests if task.workload.trace is None else len(task.workload.trace),
            "served_prefix_token_hit_rate": r.prefix_token_hit_rate if wl.prefix is not None else None}


def serve_task(task: ServeTask) -> dict:
    """Serve one candidate (module doc; a `SplitCandidate` disaggregated, `serve_split`); its served
    figures as a flat SI dict."""
    if isinstance(task.candidate, SplitCandidate):
        return serve_split(task)
    from llm_cost.serving.engine import serve

    cand = task.candidate
    replica, config = replica_and_config(cand, task.settings)
    wl = task.workload.for_replicas(cand.deployment.replicas)
    try:
        result = serve(wl, replica, config)
    except InvalidValueError as err:  # a request longer than the replica holds: it cannot serve this load
        return _not_served(str(err))
    return served_fields(result, wl, task, cand.deployment.gpus_per_replica)


def serve_split(task: ServeTask) -> dict:
    """Serve a `SplitCandidate` disaggregated (`serving.disaggregated.serve_disaggregated`): its prefill and
    decode replicas as one fleet under the whole workload (`WorkloadRecipe.for_fleet`), the K/V over the
    accelerator's link (`handoff_link`); goodput per GPU over both pools' GPUs."""
    from llm_cost.serving.disaggregated import handoff_link, serve_disaggregated

    split = task.candidate
    cand, n_pre, n_dec = split.candidate, split.prefill_replicas, split.decode_replicas
    pre = split.prefill or cand
    gpus = n_pre * pre.deployment.gpus_per_replica + n_dec * cand.deployment.gpus_per_replica
    wl = task.workload.for_fleet(n_pre + n_dec)
    try:
        replica, config = replica_and_config(pre, task.settings)
        decode_replica, decode_config = replica_and_config(cand, task.settings)
        bw, lat = handoff_link(cand.gpu, gpus)
        result = serve_disaggregated(wl, replica, config, prefill=n_pre, decode=n_dec, link_bytes_per_s=bw,
                                link_latency_s=lat, decode_replica=decode_replica, decode_config=decode_config)
    except InvalidValueError as err:  # a closed loop, a request longer than the replica holds, no link
        return {**_not_served(str(err)), "prefill_replicas": n_pre, "decode_replicas": n_dec, "served_gpus": gpus}
    out = served_fields(result.served, wl, task, gpus)
    out.update({"serve_note": split.simplified, "prefill_replicas": n_pre, "decode_replicas": n_dec,
                "served_gpus": gpus, "transfer_mean_s": result.transfer_mean_s})
    return out


def verify(tasks: list[ServeTask], *, jobs: int | None = 1, ray: str | None = None, on_done=None) -> list[dict]:
    """Serve every task through the executor (`executor.run_tasks`); results in task order."""
    from llm_cost.executor import run_tasks

    for task in tasks:
        check_choice("slo_stat", task.slo_stat, SLO_STATS)
    weights = [task_weight(task) for task in tasks]
    return run_tasks(serve_task, tasks, jobs=jobs, ray=ray, on_done=weighted_progress(on_done, weights),
                     weights=weights)


def weighted_progress(on_done, weights: list[float]):
    """`on_done(done, total, count=k)` in units of the tasks' weights, not their count, so that a progress
    bar's ETA counts a heavy task (a pipeline, a general-loop run) as the time it takes: after k tasks, the
    k heaviest (the executor takes them heaviest first), and k itself for the bar to show; None when
    `on_done` is.

    >>> seen = []
    >>> weighted_progress(lambda d, t, count: seen.append((d, t, count)), [1.0, 3.0])(1, 2); seen
    [(3.0, 4.0, 1)]
    """
    if on_done is None:
        return None
    done = [0.0]
    for weight in sorted(weights, reverse=True):
        done.append(done[-1] + weight)
    total = done[-1]
    return lambda finished, _count: on_done(done[min(finished, len(weights))], total, count=finished)


# CPU seconds per 20,000 requests (Llama-3-8B on H100, ISL 1024, OSL 128, bench/bench_verify.py, 2026-12-02):
# one GPU 0.2-0.47 s (the engine's fast path, inline roofline), tp 2 0.19-0.46 s (inlined collectives),
# pp 2 0.55-0.75 s since `fast_pipeline` runs Orca's pipeline by cohorts (4.3-5.5 s, 15x one GPU, in the
# general loop before it); measured one candidate at a time with process_time.
# Prompts in chunks (an engine's defaults, `engine` vllm) take the general loop: per 1,000 requests a
# replica serves, 0.159 CPU s on one GPU, 0.149 s at tp 2, 0.196 s at pp 2, against 0.021 s on the one-GPU
# fast path (bench/bench_verify_paths.py --requests 8000, main at 037c5e5, 2026-12-02): 7.5x, 7.0x, 9.2x
RELATIVE_COST = {"fast": 1.0, "deployed": 1.3, "pipeline": 2.0, "general": 7.5, "general pipeline": 9.2}


def task_weight(task: ServeTask) -> float:
    """A task's expected cost for the executor's order (heaviest first) and the progress bar's ETA: the
    requests it serves (one replica's share of the stream) times RELATIVE_COST of its path (prompts in
    chunks: the general loop's); a disaggregated candidate, the whole stream through both pools."""
    cand = task.candidate
    pools = 2.0 if isinstance(cand, SplitCandidate) else 1.0
    one = cand.candidate if pools > 1 else cand
    dep = one.deployment
    path = "pipeline" if dep.pp > 1 else "deployed" if dep.gpus_per_replica > 1 else "fast"
    if (task.settings or ServeSettings()).config_fields(one.gpu).get("prefill_chunk"):  # the general loop
        path = "general pipeline" if dep.pp > 1 else "general"
    wl = task.workload
    requests = len(wl.trace) if wl.trace is not None else wl.requests  # the stream: a fleet serves it all
    return pools * (requests if pools > 1 else math.ceil(requests / dep.replicas)) * RELATIVE_COST[path]


def served_ranking(served: list[dict]) -> list[int]:
    """Indices of `served` best first: meeting the SLO at the percentile first, then goodput per GPU
    (higher first, to 4 significant digits: a run's span differs by a few iterations between equally
    good rows), ties by the analytic order."""
    return sorted(range(len(served)), key=lambda at: (not served[at]["meets_served_slo"],
                                                      -float(f"{served[at]['goodput_req_per_s_per_gpu']:.4g}"), at))
