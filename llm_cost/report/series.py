"""The numbers behind `llm-cost plot`: each figure's series, computed by the library, SI units.

No matplotlib here (`figures` draws); every series is a call into `roofline`, `speculative`
(`batched`, `trees`) or `serving.engine.serve`, so a figure shows exactly what the matching
table command prints. Sizes are bounded so that no figure takes more than a moment.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from typing import Sequence

import numpy as np

from llm_cost import speculative as speculative
from llm_cost.speculative.batched import ROOFLINE_GAMMA_MAX
from llm_cost.errors import InvalidValueError, check_all, check_number
from llm_cost.roofline import MAX_BATCH, critical_rows
from llm_cost.specs import BF16, INT4_G128, Accelerator, ModelSpec, Profile, WeightFormat
from llm_cost.specs.deployment import SINGLE_GPU, Deployment
from llm_cost.speculative.trees import TreeSpeedup, tree_speedup

MAX_CURVES = 12  # beyond this a figure is unreadable
POINTS = 200  # samples of a continuous axis
MAX_SIM_REQUESTS = 400_000  # requests x rates x curves of one batching figure (~5 ms per 500)


def _some(name: str, values, *, limit: int = MAX_CURVES, **bounds) -> list:
    """`values` as a list: at least one, at most `limit` in one figure, each within `bounds`."""
    return check_all(name, values, most=limit, numbers=bool(bounds), **bounds)


def _curves(count: int) -> None:
    if count > MAX_CURVES:
        raise InvalidValueError(f"that is {count} curves; a figure shows at most {MAX_CURVES}: "
                                f"give fewer values")


# ---- roofline: T(m) for BF16 and W4A16 -------------------------------------------------------

@dataclass(frozen=True)
class RooflineSeries:
    """T(m) of one weight format over `rows`, its knee, and the decode / verify operating points."""

    weights: WeightFormat
    rows: np.ndarray
    time_s: np.ndarray
    knee_rows: float  # compute time reaches memory time (critical_rows)
    points: tuple[tuple[int, int, float], ...]  # (batch, rows, T) for B rows and B (gamma + 1) rows


def roofline_series(model: ModelSpec, gpu: Accelerator, profile: Profile, *, gamma: int = 4,
                    batches: Sequence[int] = (1, 64), context: int = 0, max_rows: int = 16384,
                    formats: Sequence[WeightFormat] = (BF16, INT4_G128),
                    deployment: Deployment = SINGLE_GPU) -> list[RooflineSeries]:
    """The article §2.4's figure: quantization lowers the plateau, speculation moves the point right.

    On `deployment` T(m) is one GPU's (`parallel.deployed_step_time`: its share, collectives, stages);
    the critical row count marked stays the one-GPU figure."""
    from llm_cost.parallel import deployed_step_time

    check_number("gamma", gamma, low=0, high=1024, integer=True)
    check_number("context", context, low=0, integer=True)
    check_number("max_rows", max_rows, low=2, high=1e9, integer=True)
    batches = [int(batch) for batch in _some("batches", batches, limit=4, low=1, high=1e9, integer=True)]
    rows = np.unique(np.geomspace(1, max_rows, POINTS).round())
    out = []
    for weights in formats:
        def at(pass_rows, batch):
            return deployed_step_time(model, gpu, profile, deployment, rows=pass_rows, batch=batch, context=context,
                                      weights=weights).step_time_s

        times = at(rows, 1)
        points = tuple((batch, pass_rows, at(pass_rows, batch)) for batch in batches for pass_rows in (batch, batch * (gamma + 1)))
        out.append(RooflineSeries(weights, rows, times, critical_rows(model, gpu, profile, context=context, weights=weights),
                                  points))
    return out


# ---- speculative speedup against batch --------------------------------------------------------

@dataclass(frozen=True)
class SpecBatchCurve:
    """Roofline speedup of one (alpha, gamma, `c` the draft's cost ratio, MFU) against batch, and where it turns."""

    alpha: float
    gamma: int
    c: float
    mfu: float
    batch: np.ndarray
    speedup: np.ndarray
    marks: tuple[tuple[int, float], ...]  # (batch, speedup) at the batches asked for (`spec_vs_batch`'s marks)
    turning_batch: float  # verification turns compute-bound (turning_batch)
    break_even_batch: float  # the speedup falls to 1 (inf: never in range)


def spec_vs_batch(model: ModelSpec, gpu: Accelerator, profiles: Sequence[Profile], *, alphas, gammas, cs,
                  marks: Sequence[int] = (1, 8, 32, 64, 128, 256), batch_max: int = 1024, context: int = 0,
                  weights: WeightFormat = BF16, deployment: Deployment = SINGLE_GPU) -> list[SpecBatchCurve]:
    """The article §2.4's table as curves: 2.40 flat to about ridge / (gamma + 1), then falling.

    One curve per profile (its MFU) and (alpha, gamma, `c`) of `alphas`, `gammas` and `cs`, `c` the
    draft's cost coefficient.

    The batch axis runs from 1 to `batch_max` or the largest marked batch, whichever is larger. On
    `deployment` the speedup is one GPU's (`roofline_speedup`); the turning and break-even batches
    marked stay the one-GPU figures.
    """
    from llm_cost.speculative import break_even_batch, roofline_speedup, turning_batch

    check_number("batch_max", batch_max, low=2, high=1e7, integer=True)
    check_number("context", context, low=0, integer=True)
    alphas, cs = _some("alphas", alphas, low=0, high=1), _some("cs", cs, low=0)
    gammas = [int(gamma) for gamma in _some("gammas", gammas, low=0, high=1e6, integer=True)]
    marks = [int(mark) for mark in _some("marks", marks, limit=32, low=1, high=1e7, integer=True)]
    batch_max = max(batch_max, *marks)  # the axis reaches every marked batch
    _curves(len(alphas) * len(gammas) * len(cs) * len(profiles))
    batch = np.unique(np.geomspace(1, batch_max, POINTS).round())
    out = []
    for prof, alpha, gamma, c in product(profiles, alphas, gammas, cs):
        kw = dict(alpha=alpha, gamma=gamma, c=c, context=context, weights=weights)
        speedup = roofline_speedup(model, gpu, prof, batch=batch, deployment=deployment, **kw)
        at = roofline_speedup(model, gpu, prof, batch=np.array(marks, dtype=float), deployment=deployment, **kw)
        out.append(SpecBatchCurve(
            alpha=float(alpha), gamma=int(gamma), c=float(c), mfu=prof.compute_efficiency, batch=batch,
            speedup=np.asarray(speedup.speedup), marks=tuple(zip(marks, np.asarray(at.speedup).tolist(), strict=True)),
            turning_batch=turning_batch(model, gpu, prof, gamma=gamma, context=context, weights=weights).batch,
            break_even_batch=break_even_batch(model, gpu, prof, batch_max=batch_max, **kw)))
    return out


# ---- speedup against gamma ---------------------------------------------------------------------

@dataclass(frozen=True)
class GammaCurve:
    """Leviathan's E / (gamma `c` + 1) over gamma = 0..gamma_max, and its integer optimum."""

    alpha: float
    c: float
    gamma: np.ndarray
    speedup: np.ndarray
    gamma_opt: int
    speedup_opt: float
    capped: bool  # the optimum lies beyond gamma_max


def gamma_curves(*, alphas, cs, gamma_max: int = ROOFLINE_GAMMA_MAX) -> list[GammaCurve]:
    """One curve per (alpha, `c`), `c` the draft's cost coefficient, verification free (Theorem 3.8); optimum from `optimal_gamma`."""
    check_number("gamma_max", gamma_max, low=1, high=1024, integer=True)
    alphas, cs = _some("alphas", alphas, limit=8, low=0, high=1), _some("cs", cs, limit=4, low=0)
    _curves(len(alphas) * len(cs))
    gamma_axis = np.arange(gamma_max + 1, dtype=float)
    out = []
    for alpha, c in product(alphas, cs):
        best = speculative.optimal_gamma(alpha, c, gamma_max=gamma_max)
        out.append(GammaCurve(alpha=float(alpha), c=float(c), gamma=gamma_axis, speedup=np.asarray(speculative.speedup(alpha, gamma_axis, c)),
                              gamma_opt=int(best.gamma), speedup_opt=float(best.speedup),
                              capped=bool(best.capped)))
    return out


# ---- token trees ---------------------------------------------------------------------------------

DEFAULT_TREES = ((1, 1, 1, 1), (2, 1, 1, 1), (2, 2, 1, 1), (4, 2, 1, 1), (4, 2, 2, 1), (8, 2, 2, 1),
                 (8, 4, 2, 1), (8, 4, 2, 2), (8, 8, 4, 2))


def tree_points(model: ModelSpec, gpu: Accelerator, profile: Profile, *, widths_list=DEFAULT_TREES, hits,
                batches: Sequence[int] = (1, 32), c: float = 0.05, context: int = 0,
                weights: WeightFormat = BF16, deployment: Deployment = SINGLE_GPU) -> list[TreeSpeedup]:
    """The lecture §10.3: trees raise tau; verification is free at batch 1 and costly at batch 32
    (on `deployment`: one GPU's passes, `trees.tree_speedup`); `c` the draft's cost coefficient.

    One `trees.TreeSpeedup` per tree (all at the same batches), sorted by size."""
    widths_list = _some("widths_list", widths_list, limit=24)
    batches = [int(batch) for batch in _some("batches", batches, limit=6, low=1, high=MAX_BATCH, integer=True)]
    check_number("c", c, low=0)
    check_number("context", context, low=0, integer=True)
    out = []
    for widths in widths_list:
        hits.require(widths)
        out.append(tree_speedup(model, gpu, profile, widths=widths, hits=hits,
                                batch=np.array(batches, dtype=float), c=c, context=context, weights=weights, deployment=deployment))
    return sorted(out, key=lambda point: (point.nodes, point.tau))


# ---- latency against throughput ------------------------------------------------------------------

@dataclass(frozen=True)
class BatchingCurve:
    """One scheduler and batch limit over the arrival rates: throughput and per-token latency."""

    scheduler: str
    max_batches: tuple[int, ...]  # request-level limits that end up the same batch share a curve
    effective_batch: int
    rate: tuple[float, ...]
    throughput_req_per_s: tuple[float, ...]
    latency_median_s: tuple[float, ...]
    latency_p90_s: tuple[float, ...]
    latency_p99_s: tuple[float, ...] = ()  # the tail panel
    ttft_median_s: tuple[float, ...] = ()  # time to first token, queueing included
    ttft_p99_s: tuple[float, ...] = ()


BATCHING_SCHEDULERS = ("request", "iteration")  # `none` can deadlock: no curve to draw
DEFAULT_RATES = (0.25, 0.5, 1, 1.5, 2, 3, 4, 5, 6, 8, 10, 12, 14, 16, 20)


def batching_curves(workload, replica, *, schedulers=("request", "iteration"), max_batches=(8, 32),
                    rates=DEFAULT_RATES) -> list[BatchingCurve]:
    """The lecture §3.3 (Orca Figure 10): the same requests replayed at each rate, per scheduler.

    A request-level batch also holds at most KV capacity // max_len requests (GPT-3 13B on an
    A100 40GB: 6), so limits above that draw one curve.
    """
    from llm_cost.serving.engine import serve
    from llm_cost.serving.serve_config import config_for

    schedulers = _some("schedulers", schedulers, limit=2)
    for scheduler in schedulers:
        if scheduler not in BATCHING_SCHEDULERS:
            raise InvalidValueError(f"schedulers must be among {', '.join(BATCHING_SCHEDULERS)}, got {scheduler!r}",
                                    params=("schedulers",))
    max_batches = [int(limit) for limit in _some("max_batches", max_batches, limit=6, low=1, high=4096, integer=True)]
    rates = _some("rates", rates, limit=50)
    for rate in rates:
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not rate > 0:  # NaN fails rate > 0
            raise InvalidValueError(f"rates must be in (0, inf], got {rate!r}", params=("rates",))
    groups: dict[tuple[str, int], list[int]] = {}
    for scheduler, limit in product(schedulers, max_batches):
        eff = min(limit, replica.kv_capacity_tokens // replica.max_len) if scheduler == "request" else limit
        groups.setdefault((scheduler, eff), []).append(limit)
    _curves(len(groups))
    total = len(workload) * len(rates) * len(groups)
    if total > MAX_SIM_REQUESTS:
        raise InvalidValueError(f"requests x rates x curves = {total:,} simulated requests; "
                                f"keep it under {MAX_SIM_REQUESTS:,} for a figure", params=("requests", "rates"))
    out = []
    for (scheduler, eff), limits in groups.items():
        config = config_for(scheduler, limits[0])
        results = [serve(workload.at_rate(float(rate)), replica, config) for rate in rates]
        out.append(BatchingCurve(
            scheduler=scheduler, max_batches=tuple(limits), effective_batch=eff, rate=tuple(float(rate) for rate in rates),
            throughput_req_per_s=tuple(result.throughput_req_per_s for result in results),
            latency_median_s=tuple(result.latency_per_token_median_s for result in results),
            latency_p90_s=tuple(result.latency_per_token_p90_s for result in results),
            latency_p99_s=tuple(result.latency_percentile_s(99) for result in results),
            ttft_median_s=tuple(result.ttft_percentile_s(50) for result in results),
            ttft_p99_s=tuple(result.ttft_percentile_s(99) for result in results)))
    return out
