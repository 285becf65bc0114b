"""The highest arrival rate a scheduler sustains under a per-token latency target.

The lecture §3.3: "在每 token 延迟中位数 <= 45 ms（空载的 2 倍）的要求下二分查找最高速率：
请求级 bs=8 只能到 0.94 req/s，迭代级 bs=32 能到 12.4 req/s". A rate meets the target when
every request finishes (no deadlock) and the chosen statistic (`STATISTICS`: median = p50, p90
or p99) of per-token latency is at most the target. The same requests are replayed at every rate (`Workload.at_rate`),
so the search bisects a curve without sampling noise between rates.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Callable

from llm_cost.errors import check_choice, check_number
from llm_cost.serving.replica import IterationCost, Replica
from llm_cost.serving.serve_result import ServeResult
from llm_cost.serving.workload import MIN_RATE, Workload
from llm_cost.catalog.arguments import Number, check_arguments

ENGINE_STATISTICS = {"median": 50.0, "p50": 50.0, "p90": 90.0, "p99": 99.0}  # every run keeps every tail
STATISTICS = ENGINE_STATISTICS
OUTCOMES = ("found", "saturated", "never met")  # RateSearch.outcome
HOLD_FACTOR = 10  # a rate holds when it meets its target on a run this many times longer than it was found on
MAX_CHECK_REQUESTS = 2_000_000  # the longest check run by default: three lengthenings of the CLI's 2,000-request runs
# The bracket's top starts at 1.25 x the all-at-once throughput, which no rate sustains for long; it is
# served and doubled while it meets the target, at most this many rates (the last 1.25 x 2^7 = 160 x that
# throughput): a target still met there does not bind, and the search stops at that rate ("saturated")
MAX_DOUBLINGS = 8


@check_arguments()
def unloaded_latency_per_token(workload: Workload, cost: IterationCost) -> list[float]:
    r"""Per-token latency of each request served alone: (prefill(P) + decodes at P .. P+O-2) / O.

    GPT-3 13B on an A100 40GB, lecture preset, Orca's workload: median about 22 ms (the
    lecture's unloaded per-token latency, half of its 45 ms target).

    .. math:: \ell_i = \Big(T_{prefill}(P_i) + \sum_{c=P_i}^{P_i + O_i - 2} T_{decode}(c)\Big) / O_i

    Parameters
    ----------
    workload : Workload
        The requests (arrival times are not used).
    cost : IterationCost
        What one iteration costs.

    Returns
    -------
    list of float
        Seconds per token, one per request.

    Examples
    --------
    >>> import statistics
    >>> from llm_cost.catalog import load_model, load_accelerator
    >>> from llm_cost.serving.workload import poisson_workload
    >>> server = Replica.from_specs(load_model("gpt-3-13b"), load_accelerator("a100-40gb"))
    >>> wl = poisson_workload(1000, 1.0, seed=0)
    >>> round(statistics.median(unloaded_latency_per_token(wl, server.cost)) * 1e3, 1)
    22.2
    """
    import numpy as np

    prompt = np.asarray(workload.prompt, dtype=float)
    output = np.asarray(workload.output, dtype=np.int64)
    steps = output - 1  # decode iterations after the prefill
    owner = np.repeat(np.arange(len(workload)), steps)
    start = np.cumsum(steps) - steps
    ctx = prompt[owner] + (np.arange(owner.size) - start[owner])  # cached tokens before each step
    decode = cost.decode_s(ctx)
    total = cost.prefill_s(prompt) + np.bincount(owner, weights=decode, minlength=len(workload))
    return (total / output).tolist()


@dataclass(frozen=True)
class RateSearch:
    """The highest rate found that meets the target, and the simulation at that rate.

        rate = max { lambda : every request finishes and statistic(latency per token) <= slo_s }

    Attributes
    ----------
    slo_s, statistic
        The per-token latency target (seconds) and the statistic held to it ("median", "p90").
    rate_req_per_s
        The highest rate found, req/s; 0 when even an unloaded server misses the target.
    result
        The simulation at that rate (None when the rate is 0).
    unloaded_s
        The statistic with every request served alone (seconds).
    saturated_req_per_s
        Throughput with every request queued at time 0; None if that deadlocks.
    evaluations
        Simulations run.
    saturated_deadlock
        Whether the all-at-once run deadlocked (scheduler `none`): no saturated figure.
    requests, found_on_requests, held_on_requests, settled, shorter_rate_req_per_s
        With `longer`: the requests of the search's first runs; of the runs the reported rate was
        bisected on; of the longest run it was served on and met the target on (0: none); whether it
        settled (None: not checked; True: the rate found on n requests met the target on `HOLD_FACTOR` x
        n; False: no such run within `max_requests`); the rate the runs `HOLD_FACTOR` x shorter gave (None: not lengthened).
    outcome
        What the search found (`OUTCOMES`): "found", the highest rate meeting the target with a rate
        above it that missed; "saturated", no rate tried missed (the rate is the highest tried, a lower
        bound: the target does not bind); "never met", no rate met it (rate 0).
    metric
        The latency held to the target (ttft, tpot, e2e, latency_per_token).

    Examples
    --------
    See `highest_rate`.
    """

    slo_s: float
    statistic: str
    rate_req_per_s: float  # 0 when even an unloaded server misses the target
    result: ServeResult | None
    unloaded_s: float  # the statistic with every request served alone
    saturated_req_per_s: float | None  # throughput with every request queued at time 0; None if that deadlocks
    evaluations: int
    saturated_deadlock: bool = False  # the all-at-once run deadlocked (scheduler `none`): no saturated figure
    # with `longer` (see above): the runs' requests and whether the rate settled within `max_requests`
    requests: int = 0
    held_on_requests: int = 0
    settled: bool | None = None  # None: not checked (no `longer`)
    outcome: str = "found"  # one of OUTCOMES
    metric: str = "latency_per_token"
    found_on_requests: int = 0
    shorter_rate_req_per_s: float | None = None


def _meets(result: ServeResult, slo_s: float, stat: str, metric: str = "latency_per_token") -> bool:
    """True when every request finished and `stat` of `metric` (ttft, tpot, e2e, latency_per_token)
    is within the target."""
    return result.finished == result.requests and result.percentile_s(metric, stat) <= slo_s


@check_arguments(rel_tol=Number(0, 1, low_open=True, high_open=True), slo_s=Number(0, 1e6, low_open=True), max_requests=Number(1, 1e9, integer=True))
def highest_rate(workload: Workload, replica: Replica, *, scheduler: str, max_batch: int, slo_s: float,
                 statistic: str = "median", reservation: str | None = None, rel_tol: float = 0.01,
                 on_step: Callable[[int, int], None] | None = None, config=None,
                 metric: str = "latency_per_token", longer: Callable[[int], Workload] | None = None,
                 max_requests: int | None = None) -> RateSearch:
    r"""Bisect the arrival rate for the highest one whose per-token latency statistic <= slo_s.

    Bracket: the saturated throughput (all requests queued at once) bounds any sustainable rate; from
    1.25 x that (doubled while it still meets the target) bisect down to `rel_tol`. Without a reservation
    the all-at-once run can deadlock: its partial throughput only seeds the bracket (`saturated_deadlock`).

    .. math:: \lambda^* = \max\{\lambda : \text{all finish and } Q_q(\ell(\lambda)) \le
              \mathit{slo}\},\quad (\mathit{hi} - \mathit{lo}) \le \mathit{rel\_tol}\cdot\mathit{hi}

    (`q` the statistic's percentile.) `on_step(done, expected)` is called after each run (a progress bar).

    Parameters
    ----------
    workload : Workload
        The requests, replayed at every rate (`Workload.at_rate`).
    replica : Replica
        The server.
    scheduler : str
        "request", "iteration" or "none" (`serve_config.config_for`; unused with `config`).
    max_batch : int
        Most requests in the running batch, >= 1.
    slo_s : float
        Per-token latency target, seconds in (0, inf).
    statistic : str, optional
        "median" (default, = "p50"), "p90" or "p99".
    reservation : str or None, optional
        As in `serve_config.config_for` (unused with `config`).
    rel_tol : float, optional
        Relative width of the final bracket, in (0, 1) (default 0.01).
    on_step : callable or None, optional
        Called as on_step(done, expected) after each simulation.
    config : ServeConfig or None, optional
        Serve with it (`engine.serve`; scheduler and reservation then unused); where no step-level
        path runs it (`engine.runs_step_level`), the unloaded figure is a run with every request alone
        (arrivals 10^6 x further apart than the saturated service).
    longer : callable or None, optional
        longer(n): the same kind of workload with n requests (a longer draw). Given, the rate found
        is served on `HOLD_FACTOR` x as many requests; where it misses there, the search runs again on
        that longer workload below it, until the rate holds (`settled`) or the check would exceed
        `max_requests` (default the larger of 100 x the workload's and `MAX_CHECK_REQUESTS`; `settled`
        False: the metric did not settle). None (default): not lengthened, unlike the CLI's `--slo-ms`
        (a `Workload` holds its requests, not how they were drawn: e.g. ``lambda n: poisson_workload(n, 1.0)``).
        Near the knee a short run's queue has not reached its steady state: its tail flatters.
    max_requests : int or None, optional
        The longest check `longer` may build (default max(100 x len(workload), MAX_CHECK_REQUESTS)).
    metric : str, optional
        The latency held to the target: ttft, tpot, e2e or latency_per_token (default); other than
        latency_per_token, the unloaded figure is a run with every request alone.

    Returns
    -------
    RateSearch
        The rate (req/s), the simulation there, the unloaded and saturated figures.

    Examples
    --------
    The lecture §3.3: at a median per-token latency of 45 ms (2x unloaded), request-level bs 8
    reaches 0.94 req/s and iteration-level bs 32 12.4 req/s ("吞吐约 13 倍"). Ours, with 1000
    requests of Orca's workload:

    >>> from llm_cost.catalog import load_model, load_accelerator
    >>> from llm_cost.serving.workload import poisson_workload
    >>> server = Replica.from_specs(load_model("gpt-3-13b"), load_accelerator("a100-40gb"))
    >>> wl = poisson_workload(1000, 1.0, seed=0)
    >>> request = highest_rate(wl, server, scheduler="request", max_batch=8, slo_s=0.045)
    >>> iteration = highest_rate(wl, server, scheduler="iteration", max_batch=32, slo_s=0.045)
    >>> round(request.rate_req_per_s, 2), round(iteration.rate_req_per_s, 1)
    (0.99, 12.7)
    >>> round(iteration.rate_req_per_s / request.rate_req_per_s)
    13
    """
    q, stat, metric = _checked_target(workload, slo_s=slo_s, rel_tol=rel_tol, statistic=statistic,
                                      metric=metric, config=config)
    limit = max_requests if max_requests is not None else max(100 * len(workload), MAX_CHECK_REQUESTS)
    run = _Runs(replica, scheduler=scheduler, max_batch=max_batch, reservation=reservation, config=config,
                on_step=on_step, expected=3 + math.ceil(math.log2(1.25 / rel_tol)))

    meets = _Target(slo_s, stat, metric)
    everyone = run(workload, math.inf)
    unloaded = _unloaded(run, everyone, workload, replica, metric=metric, stat=stat, q=q)
    stuck = everyone.deadlock is not None
    # A deadlocked all-at-once run (no reservation) finished only some requests before it stopped:
    # its throughput is no saturated figure, so it is not reported, only used to seed the bracket.
    seed = everyone.throughput_req_per_s
    saturated = None if stuck else seed
    if unloaded > slo_s:
        return RateSearch(slo_s, statistic, 0.0, None, unloaded, saturated, run.done, stuck, outcome="never met",
                          metric=metric)
    lo, best = _bisect(lambda rate: run(workload, rate), meets, 1.25 * seed if seed > 0 else 1.0, rel_tol,
                       grow_up=True)
    rate, result, more = _lengthened(run, meets, workload, lo, best, longer, limit, rel_tol)
    outcome = "never met" if rate <= 0 else "found" if meets.missed else "saturated"
    return RateSearch(slo_s, statistic, rate, result, unloaded, saturated, run.done, stuck, outcome=outcome,
                      metric=metric, requests=len(workload) if longer else 0, **more)


class _Target:
    """`highest_rate`'s test of a run: every request finished and the statistic of the metric within the
    target; remembers the rates that missed (none: the search never bounded the rate from above)."""

    def __init__(self, slo_s: float, stat: str, metric: str):
        self.slo_s, self.stat, self.metric, self.missed = slo_s, stat, metric, []

    def __call__(self, result: ServeResult) -> bool:
        ok = _meets(result, self.slo_s, self.stat, self.metric)
        if not ok:
            self.missed.append(result.rate_req_per_s)
        return ok


def _checked_target(workload: Workload, *, slo_s: float, rel_tol: float, statistic: str, metric: str,
                    config) -> tuple[float, str, str]:
    """`highest_rate`'s target checked: (percentile `q` in [0, 100], its name "p50"/"p90"/"p99", the metric
    as spelled in METRICS). Raises when a closed loop (concurrency) is given a target with a config."""
    check_number("slo_s", slo_s, low=0, low_open=True)
    check_number("rel_tol", rel_tol, low=0, high=1, low_open=True, high_open=True)
    q = ENGINE_STATISTICS[check_choice("statistic", statistic, tuple(ENGINE_STATISTICS))]
    stat = {50.0: "p50", 90.0: "p90", 99.0: "p99"}[q]
    from llm_cost.serving.serve_result import METRICS

    metric = check_choice("slo_metric", metric, METRICS)  # as spelled in METRICS (names ignore case)
    if config is not None and workload.concurrency is not None:
        from llm_cost.errors import InvalidValueError

        raise InvalidValueError("a rate search needs an open loop: drop concurrency (a closed loop of clients sets its own rate)",
                                params=("concurrency", "slo_s"))
    return q, stat, metric


class _Runs:
    """Serves a workload at a rate with the search's settings and counts the search's evaluations
    (`done`), reporting each to `on_step(done, expected)`."""

    def __init__(self, replica: Replica, *, scheduler: str, max_batch: int, reservation: str | None, config,
                 on_step: Callable[[int, int], None] | None, expected: int):
        from llm_cost.serving.engine import serve
        from llm_cost.serving.serve_config import config_for

        self._serve = serve
        self.replica = replica
        self.config = config if config is not None else config_for(scheduler, max_batch, reservation)
        self.on_step, self.expected = on_step, expected
        self.done = 0

    def __call__(self, wl: Workload, rate: float, counted: bool = True) -> ServeResult:
        """Serve `wl` at `rate`; `counted`: one of the search's evaluations (the unloaded run is not)."""
        result = self._serve(wl.at_rate(rate), self.replica, self.config)
        if counted:
            self.done += 1
            if self.on_step:
                self.on_step(self.done, max(self.expected, self.done))
        return result


def _unloaded(run: _Runs, everyone: ServeResult, workload: Workload, replica: Replica, *, metric: str,
              stat: str, q: float) -> float:
    """The target's statistic (percentile `q`) with every request served alone: a run at 10^-6 x the
    saturated throughput where the engine serves or the metric is not latency_per_token, else
    `unloaded_latency_per_token`."""
    import numpy as np

    from llm_cost.serving.engine import runs_step_level

    if not runs_step_level(workload, replica, run.config) or metric != "latency_per_token":
        alone_rate = max(everyone.throughput_req_per_s, 1e-9) * 1e-6
        if metric == "ttft" and workload.prefix is None and workload.concurrency is None:
            # alone, a request's first token ends its prefill whatever it generates next: one token each
            # (no decode iterations to run; with prefixes, what a request leaves cached may matter)
            one = (1,) * len(workload)
            workload = dataclasses.replace(workload, output=one, declared_gen=one)
        return run(workload, alone_rate, counted=False).percentile_s(metric, stat)
    return float(np.percentile(unloaded_latency_per_token(workload, replica.cost), q))


def _lengthened(run, meets, workload: Workload, lo: float, best, longer, limit: int, rel_tol: float) -> tuple:
    """(rate, result, the `RateSearch` fields on the longer runs) after `highest_rate`'s `longer` checks:
    the rate found on `n` requests is served on `HOLD_FACTOR` x `n`; where it meets the target there it holds
    (the result: that run's); where it misses, the highest rate meeting it on that run is found just below
    (`_step_down`) and is checked in turn on a run `HOLD_FACTOR` x longer, until one meets (settled) or the
    next run would pass `limit` (not settled). Without `longer`, nothing is checked."""
    n, shorter = len(workload), None
    if longer is None or lo <= 0:
        return lo, best, {}
    while True:
        if HOLD_FACTOR * n > limit:
            return lo, best, {"found_on_requests": n, "settled": False, "shorter_rate_req_per_s": shorter}
        long_workload = longer(HOLD_FACTOR * n)
        result = run(long_workload, lo)
        if meets(result):
            return lo, result, {"found_on_requests": n, "held_on_requests": HOLD_FACTOR * n, "settled": True,
                                "shorter_rate_req_per_s": shorter}
        n, shorter = HOLD_FACTOR * n, lo  # it missed on the longer run: search again on it, just below
        lo, best = _step_down(lambda rate, wl=long_workload: run(wl, rate), meets, lo, rel_tol)
        if lo <= 0:  # nothing meets on the longer run
            return lo, best, {"found_on_requests": n, "held_on_requests": 0, "settled": False,
                              "shorter_rate_req_per_s": shorter}
        # the rate found there is checked in turn on a run HOLD_FACTOR x longer, as the first one was


def _step_down(run, meets, hi: float, rel_tol: float):
    """(highest rate that meets, its result) below `hi`, a rate that missed on this (longer) run: near
    the knee a longer run's rate is a few percent lower, so the rates hi (1 - 2^j 2 rel_tol), j = 0, 1, ...
    are tried until one meets, then that bracket is bisected (`_bisect`); (0, hi] bisected when none
    above 0 does. Fewer runs than a bisection from (0, hi], each of them on the long workload."""
    step, top = 2 * rel_tol, hi
    while step < 1:
        rate = top * (1 - step)
        result = run(rate)
        if meets(result):
            return _bisect(run, meets, hi, rel_tol, grow_up=False, lo=rate, best=result)
        hi, step = rate, step * 2
    return _bisect(run, meets, hi, rel_tol, grow_up=False)


def _bisect(run, meets, hi: float, rel_tol: float, *, grow_up: bool, lo: float = 0.0, best=None):
    """(highest rate that meets, its result) by bisection from (lo, hi] (`best`: the result at lo, which
    met): `grow_up` doubles hi while it still meets (`MAX_DOUBLINGS` rates at most; when all meet, the highest:
    no rate tried missed, the target does not bind); the bracket ends when hi - lo <= rel_tol x hi.
    (0, None) if none met."""
    for doubling in range(1, MAX_DOUBLINGS + 1 if grow_up else 0):
        result = run(hi)
        if not meets(result):
            break
        if doubling == MAX_DOUBLINGS:  # every rate tried met the target: the highest of them
            return hi, result
        lo, best, hi = hi, result, hi * 2
    for _ in range(60):
        if lo > 0 and hi - lo <= rel_tol * hi:
            break
        mid = (lo + hi) / 2
        if mid < MIN_RATE:  # nothing down to the lowest rate a workload takes met it: none (never met)
            break
        result = run(mid)
        if meets(result):
            lo, best = mid, result
        else:
            hi = mid
    return lo, best
