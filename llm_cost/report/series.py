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
    batches = [int(b) for b in _some("batches", batches, limit=4, low=1, high=1e9, integer=True)]
    rows = np.unique(np.geomspace(1, max_rows, POINTS).round())
    out = []
    for weights in formats:
        def at(m, b):
            return deployed_step_time(model, gpu, profile, deployment, rows=m, batch=b, context=context,
                                      weights=weights).step_time_s

        t = at(rows, 1)
        points = tuple((b, m, at(m, b)) for b in batches for m in (b, b * (gamma + 1)))
        out.append(RooflineSeries(weights, rows, t, critical_rows(model, gpu, profile, context=context, weights=weights),
                                  points))
    return out


# ---- speculative speedup against batch --------------------------------------------------------

@dataclass(frozen=True)
class SpecBatchCurve:
    """Roofline speedup of one (alpha, gamma, c, MFU) against batch, and where it turns."""

    alpha: float
    gamma: int
    c: float
    mfu: float
    batch: np.ndarray
    speedup: np.ndarray
    marks: tuple[tuple[int, float], ...]  # (batch, speedup) at the --batch points
    turning_batch: float  # verification turns compute-bound (turning_batch)
    break_even_batch: float  # the speedup falls to 1 (inf: never in range)


def spec_vs_batch(model: ModelSpec, gpu: Accelerator, profiles: Sequence[Profile], *, alphas, gammas, cs,
                  marks: Sequence[int] = (1, 8, 32, 64, 128, 256), batch_max: int = 1024, context: int = 0,
                  weights: WeightFormat = BF16, deployment: Deployment = SINGLE_GPU) -> list[SpecBatchCurve]:
    """The article §2.4's table as curves: 2.40 flat to about ridge / (gamma + 1), then falling.

    The batch axis runs from 1 to `batch_max` or the largest marked batch, whichever is larger. On
    `deployment` the speedup is one GPU's (`roofline_speedup`); the turning and break-even batches
    marked stay the one-GPU figures.
    """
    from llm_cost.speculative import break_even_batch, roofline_speedup, turning_batch

    check_number("batch_max", batch_max, low=2, high=1e7, integer=True)
    check_number("context", context, low=0, integer=True)
    alphas, cs = _some("alphas", alphas, low=0, high=1), _some("cs", cs, low=0)
    gammas = [int(g) for g in _some("gammas", gammas, low=0, high=1e6, integer=True)]
    marks = [int(b) for b in _some("marks", marks, limit=32, low=1, high=1e7, integer=True)]
    batch_max = max(batch_max, *marks)  # the axis reaches every marked batch
    _curves(len(alphas) * len(gammas) * len(cs) * len(profiles))
    batch = np.unique(np.geomspace(1, batch_max, POINTS).round())
    out = []
    for prof, a, g, c in product(profiles, alphas, gammas, cs):
        kw = dict(alpha=a, gamma=g, c=c, context=context, weights=weights)
        r = roofline_speedup(model, gpu, prof, batch=batch, deployment=deployment, **kw)
        at = roofline_speedup(model, gpu, prof, batch=np.array(marks, dtype=float), deployment=deployment, **kw)
        out.append(SpecBatchCurve(
            alpha=float(a), gamma=int(g), c=float(c), mfu=prof.compute_efficiency, batch=batch,
            speedup=np.asarray(r.speedup), marks=tuple(zip(marks, np.asarray(at.speedup).tolist(), strict=True)),
            turning_batch=turning_batch(model, gpu, prof, gamma=g, context=context, weights=weights).batch,
            break_even_batch=break_even_batch(model, gpu, prof, batch_max=batch_max, **kw)))
    return out


# ---- speedup against gamma ---------------------------------------------------------------------

@dataclass(frozen=True)
class GammaCurve:
    """Leviathan's E / (gamma c + 1) over gamma = 0..gamma_max, and its integer optimum."""

    alpha: float
    c: float
    gamma: np.ndarray
    speedup: np.ndarray
    gamma_opt: int
    speedup_opt: float
    capped: bool  # the optimum lies beyond gamma_max


def gamma_curves(*, alphas, cs, gamma_max: int = ROOFLINE_GAMMA_MAX) -> list[GammaCurve]:
    """One curve per (alpha, c), verification free (Theorem 3.8); optimum from `optimal_gamma`."""
    check_number("gamma_max", gamma_max, low=1, high=1024, integer=True)
    alphas, cs = _some("alphas", alphas, limit=8, low=0, high=1), _some("cs", cs, limit=4, low=0)
    _curves(len(alphas) * len(cs))
    g = np.arange(gamma_max + 1, dtype=float)
    out = []
    for a, c in product(alphas, cs):
        best = speculative.optimal_gamma(a, c, gamma_max=gamma_max)
        out.append(GammaCurve(alpha=float(a), c=float(c), gamma=g, speedup=np.asarray(speculative.speedup(a, g, c)),
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
    (on `deployment`: one GPU's passes, `trees.tree_speedup`).

    One `trees.TreeSpeedup` per tree (all at the same batches), sorted by size."""
    widths_list = _some("widths_list", widths_list, limit=24)
    batches = [int(b) for b in _some("batches", batches, limit=6, low=1, high=MAX_BATCH, integer=True)]
    check_number("c", c, low=0)
    check_number("context", context, low=0, integer=True)
    out = []
    for widths in widths_list:
        hits.require(widths)
        out.append(tree_speedup(model, gpu, profile, widths=widths, hits=hits,
                                batch=np.array(batches, dtype=float), c=c, context=context, weights=weights, deployment=deployment))
    return sorted(out, key=lambda p: (p.nodes, p.tau))


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
    for s in schedulers:
        if s not in BATCHING_SCHEDULERS:
            raise InvalidValueError(f"schedulers must be among {', '.join(BATCHING_SCHEDULERS)}, got {s!r}",
                                    params=("schedulers",))
    max_batches = [int(b) for b in _some("max_batches", max_batches, limit=6, low=1, high=4096, integer=True)]
    rates = _some("rates", rates, limit=50)
    for r in rates:
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not r > 0:  # NaN fails r > 0
            raise InvalidValueError(f"rates must be in (0, inf], got {r!r}", params=("rates",))
    groups: dict[tuple[str, int], list[int]] = {}
    for s, b in product(schedulers, max_batches):
        eff = min(b, replica.kv_capacity_tokens // replica.max_len) if s == "request" else b
        groups.setdefault((s, eff), []).append(b)
    _curves(len(groups))
    total = len(workload) * len(rates) * len(groups)
    if total > MAX_SIM_REQUESTS:
        raise InvalidValueError(f"requests x rates x curves = {total:,} simulated requests; "
                                f"keep it under {MAX_SIM_REQUESTS:,} for a figure", params=("requests", "rates"))
    out = []
    for (s, eff), limits in groups.items():
        config = config_for(s, limits[0])
        results = [serve(workload.at_rate(float(r)), replica, config) for r in rates]
        out.append(BatchingCurve(
            scheduler=s, max_batches=tuple(limits), effective_batch=eff, rate=tuple(float(r) for r in rates),
            throughput_req_per_s=tuple(x.throughput_req_per_s for x in results),
            latency_median_s=tuple(x.latency_per_token_median_s for x in results),
            latency_p90_s=tuple(x.latency_per_token_p90_s for x in results),
            latency_p99_s=tuple(x.latency_percentile_s(99) for x in results),
            ttft_median_s=tuple(x.ttft_percentile_s(50) for x in results),
            ttft_p99_s=tuple(x.ttft_percentile_s(99) for x in results)))
    return out
