"""The highest arrival rate a scheduler sustains under a per-token latency target.

The lecture §3.3: "在每 token 延迟中位数 <= 45 ms（空载的 2 倍）的要求下二分查找最高速率：
请求级 bs=8 只能到 0.94 req/s，迭代级 bs=32 能到 12.4 req/s". A rate meets the target when
every request finishes (no deadlock) and the chosen statistic (median or p90) of per-token
latency is at most the target. The same requests are replayed at every rate (`Workload.at_rate`),
so the search bisects a curve without sampling noise between rates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from llm_cost.errors import check_choice, check_number
from llm_cost.serving.replica import IterationCost, Replica
from llm_cost.serving.sim_result import SimResult
from llm_cost.serving.simulator import simulate
from llm_cost.serving.workload import Workload

STATISTICS = {"median": 50.0, "p90": 90.0}
ENGINE_STATISTICS = {"median": 50.0, "p50": 50.0, "p90": 90.0, "p99": 99.0}  # `engine.serve` keeps every tail


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

    Examples
    --------
    See `highest_rate`.
    """

    slo_s: float
    statistic: str
    rate_req_per_s: float  # 0 when even an unloaded server misses the target
    result: SimResult | None
    unloaded_s: float  # the statistic with every request served alone
    saturated_req_per_s: float | None  # throughput with every request queued at time 0; None if that deadlocks
    evaluations: int
    saturated_deadlock: bool = False  # the all-at-once run deadlocked (scheduler `none`): no saturated figure


def _meets(result, slo_s: float, q: float, metric: str = "latency_per_token") -> bool:
    """True when every request finished and the latency statistic is within the target
    (a `ServeResult`: of `metric`, ttft, tpot, e2e or latency_per_token)."""
    if result.finished != result.requests:
        return False
    if hasattr(result, "percentile_s"):
        stat = {50.0: "p50", 90.0: "p90", 99.0: "p99"}[q]
        return result.percentile_s(metric, stat) <= slo_s
    return result.latency_percentile_s(q) <= slo_s


def highest_rate(workload: Workload, replica: Replica, *, scheduler: str, max_batch: int, slo_s: float,
                 statistic: str = "median", reservation: str | None = None, rel_tol: float = 0.01,
                 on_step: Callable[[int, int], None] | None = None, config=None,
                 metric: str = "latency_per_token") -> RateSearch:
    r"""Bisect the arrival rate for the highest one whose per-token latency statistic <= slo_s.

    Bracket: the saturated throughput (all requests queued at once) bounds any sustainable rate;
    from 1.25 x that (doubled while it still meets the target) bisect down to `rel_tol`. Without a
    reservation the all-at-once run can deadlock; then its partial throughput only seeds the
    bracket and the result reports no saturated throughput (`saturated_deadlock`).
    `on_step(done, expected)` is called after each simulation (for a progress bar).

    .. math:: \lambda^* = \max\{\lambda : \text{all finish and } Q_q(\ell(\lambda)) \le
              \mathit{slo}\},\quad (\mathit{hi} - \mathit{lo}) \le \mathit{rel\_tol}\cdot\mathit{hi}

    Parameters
    ----------
    workload : Workload
        The requests, replayed at every rate (`Workload.at_rate`).
    replica : Replica
        The server.
    scheduler : str
        "request", "iteration" or "none" (see `simulate`).
    max_batch : int
        Most requests in the running batch, >= 1.
    slo_s : float
        Per-token latency target, seconds in (0, inf).
    statistic : str, optional
        "median" (default) or "p90".
    reservation : str or None, optional
        As in `simulate`.
    rel_tol : float, optional
        Relative width of the final bracket, in (0, 1) (default 0.01).
    on_step : callable or None, optional
        Called as on_step(done, expected) after each simulation.
    config : ServeConfig or None, optional
        Run `engine.serve` with it instead of `simulate` (scheduler and reservation then unused); the
        target applies to `metric` (ttft, tpot, e2e, latency_per_token) and the unloaded figure is a
        run with every request alone (arrivals 10^6 x further apart than the saturated service).
    metric : str, optional
        With `config`: the latency held to the target (default latency_per_token).

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
    import numpy as np

    check_number("slo_s", slo_s, low=0, low_open=True)
    check_number("relative tolerance", rel_tol, low=0, high=1, low_open=True, high_open=True)
    stats = STATISTICS if config is None else ENGINE_STATISTICS
    q = stats[check_choice("statistic", statistic, tuple(stats))]
    expected = 3 + math.ceil(math.log2(1.25 / rel_tol))
    done = 0

    def run(rate: float) -> SimResult:
        """Simulate the workload at `rate` and count the evaluation."""
        nonlocal done
        if config is not None:
            from llm_cost.serving.engine import serve

            r = serve(workload.at_rate(rate), replica, config)
        else:
            r = simulate(workload.at_rate(rate), replica, scheduler=scheduler, max_batch=max_batch,
                         reservation=reservation)
        done += 1
        if on_step:
            on_step(done, max(expected, done))
        return r

    if config is not None:
        from llm_cost.errors import InvalidValueError
        from llm_cost.serving.engine import serve
        from llm_cost.serving.serve_result import METRICS

        metric = check_choice("slo_metric", metric, METRICS)
        if workload.concurrency is not None:
            raise InvalidValueError("a closed loop sets its own rate: give --rate with --concurrency, not --slo-ms",
                                    params=("concurrency",))
    everyone = run(math.inf)
    if config is not None:
        alone_rate = max(everyone.throughput_req_per_s, 1e-9) * 1e-6
        stat = {50.0: "p50", 90.0: "p90", 99.0: "p99"}[q]
        unloaded = serve(workload.at_rate(alone_rate), replica, config).percentile_s(metric, stat)
    else:
        unloaded = float(np.percentile(unloaded_latency_per_token(workload, replica.cost), q))
    stuck = everyone.deadlock is not None
    # A deadlocked all-at-once run (no reservation) finished only some requests before it stopped:
    # its throughput is no saturated figure, so it is not reported, only used to seed the bracket.
    seed = everyone.throughput_req_per_s
    saturated = None if stuck else seed

    def found(rate: float, result: SimResult | None) -> RateSearch:
        """The search's result at `rate`, with the unloaded and saturated figures."""
        return RateSearch(slo_s, statistic, rate, result, unloaded, saturated, done, stuck)

    if unloaded > slo_s:
        return found(0.0, None)
    hi = 1.25 * seed if seed > 0 else 1.0
    lo, best = 0.0, None
    for _ in range(8):
        r = run(hi)
        if not _meets(r, slo_s, q, metric):
            break
        lo, best, hi = hi, r, hi * 2
    for _ in range(60):
        if lo > 0 and hi - lo <= rel_tol * hi:
            break
        mid = (lo + hi) / 2
        r = run(mid)
        if _meets(r, slo_s, q, metric):
            lo, best = mid, r
        else:
            hi = mid
    return found(lo, best)
