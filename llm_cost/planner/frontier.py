"""The configurations that fit and meet a latency target, and their Pareto frontier.

    meets      = fits and TTFT <= ttft_s and (TPOT <= tpot_s, or OSL / e2e >= tokens_per_s_per_user)
    frontier   = the meeting configurations no other beats on both axes: output tokens/s per user
                 (higher is better) and output tokens/s per GPU (higher), or, when every accelerator
                 has a price, dollars per million output tokens (lower)

Best first: the highest throughput per GPU (or the cheapest) first, the fastest per user last. A
target no configuration meets gives an empty frontier and the counts of why (`Plan.counts`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llm_cost.errors import InvalidValueError, check_number
from llm_cost.planner.search import Grid
from llm_cost.requests.request import usd_per_million_tokens
from llm_cost.catalog.arguments import Number, Spec, Table, check_arguments
from llm_cost.specs.validate import check_fields

MAX_SECONDS = 1e6


@dataclass(frozen=True)
class Target:
    """A latency target (SI): TTFT at most `ttft_s`; TPOT at most `tpot_s` or output tokens per
    second per user (OSL / e2e) at least `tokens_per_s_per_user`; None: no bound.

    Examples
    --------
    >>> import llm_cost as lc
    >>> lc.Target(ttft_s=0.5, tpot_s=0.02)
    Target(ttft_s=0.5, tpot_s=0.02, tokens_per_s_per_user=None)
    >>> lc.Target(ttft_s=0)
    Traceback (most recent call last):
    ...
    llm_cost.errors.InvalidValueError: ttft_s must be in (0, 1e+06], got 0
    """

    ttft_s: float | None = None
    tpot_s: float | None = None
    tokens_per_s_per_user: float | None = None

    def __post_init__(self) -> None:
        check_fields(self)
        for name in ("ttft_s", "tpot_s"):
            if getattr(self, name) is not None:
                check_number(name, getattr(self, name), low=0, high=MAX_SECONDS, low_open=True)
        if self.tokens_per_s_per_user is not None:
            check_number("tokens_per_s_per_user", self.tokens_per_s_per_user, low=0, high=1e9, low_open=True)
        if self.tpot_s is not None and self.tokens_per_s_per_user is not None:
            raise InvalidValueError("tpot_s and tokens_per_s_per_user exclude each other: bound the decode one way",
                                    params=("tpot_s", "tokens_per_s_per_user"))

    def misses(self, grid: Grid) -> tuple[np.ndarray, np.ndarray]:
        """(misses the TTFT, misses the decode bound) per configuration."""
        ttft = grid.ttft_s > self.ttft_s if self.ttft_s is not None else np.zeros(len(grid), dtype=bool)
        if self.tpot_s is not None:
            decode = grid.tpot_s > self.tpot_s
        elif self.tokens_per_s_per_user is not None:
            decode = grid.output_tokens_per_s_per_user < self.tokens_per_s_per_user
        else:
            decode = np.zeros(len(grid), dtype=bool)
        return ttft, decode


@check_arguments(up=Number(None, vector=True), good=Number(None, vector=True))
def pareto(up, good, *, lower_is_better: bool = False) -> np.ndarray:
    """Indices of the Pareto frontier of points (up, good), both higher-is-better (`good` lower when
    `lower_is_better`), best `good` first; of equal points the first is kept.

    Sort by `good` (best first), then `up` (higher first); a point is on the frontier when its `up`
    beats every point before it.
    """
    up, good = np.asarray(up, dtype=float), np.asarray(good, dtype=float)
    if up.shape != good.shape or up.ndim != 1:
        raise InvalidValueError(f"up and good must be 1-d arrays of the same length, got shapes {up.shape} and "
                                f"{good.shape}", params=("up", "good"))
    if not len(up):
        return np.zeros(0, dtype=int)
    key = good if lower_is_better else -good
    order = np.lexsort((-up, key))
    ups = up[order]
    best_before = np.maximum.accumulate(np.concatenate(([-np.inf], ups[:-1])))
    return order[ups > best_before]


@dataclass(frozen=True)
class Plan:
    """A searched grid, the mask of configurations that meet the target, the frontier (indices into
    the grid, best first) and the counts behind the caption.

    Examples
    --------
    `plan` makes one; its frontier indexes the grid (Llama-3-8B on up to 2 H100s, TTFT <= 500 ms and
    TPOT <= 20 ms: the best configuration serves each user 135.9 tokens/s at batch 64):

    >>> import llm_cost as lc
    >>> space = lc.plan_space(lc.load_model("llama-3-8b"), [lc.load_accelerator("h100-sxm")], 2)
    >>> grid = lc.evaluate(space, lc.PRESETS["lecture"], isl=1024, osl=128)
    >>> best = lc.plan(grid, lc.Target(ttft_s=0.5, tpot_s=0.02))
    >>> first = best.frontier[0]
    >>> int(best.meets.sum()), round(float(grid.output_tokens_per_s_per_user[first]), 1), int(grid.batch[first])
    (134, 135.9, 64)
    """

    grid: Grid
    target: Target
    meets: np.ndarray
    frontier: np.ndarray
    usd_per_gpu_hour: dict  # accelerator name -> price; {} without prices
    counts: dict

    @property
    def usd_per_million_output_tokens(self) -> np.ndarray:
        """Decode GPU-seconds x price / 3600 over B (OSL - 1) tokens, x 1e6 (`request`'s); nan without a price."""
        grid = self.grid
        price = np.array([self.usd_per_gpu_hour.get(grp.gpu.name, np.nan) for grp in grid.space.groups])[grid.group] \
            if len(grid) else np.zeros(0)
        return usd_per_million_tokens(grid.decode_gpu_s, grid.batch * (grid.osl - 1), price)


@check_arguments(target=Spec("Target"), usd_per_gpu_hour=Table(Number(0)))
def plan(grid: Grid, target: Target, *, usd_per_gpu_hour: dict | None = None) -> Plan:
    """The `Plan` of `grid` under `target` (module doc); with a price for every accelerator the
    frontier trades dollars per million output tokens against tokens/s per user.

    Examples
    --------
    Llama-3-8B on up to 2 H100s, 1,024-token prompts and 128-token outputs, TTFT <= 500 ms and
    TPOT <= 20 ms (lecture preset): of 240 configurations 134 meet the target, 7 on the frontier.

    >>> import llm_cost as lc
    >>> space = lc.plan_space(lc.load_model("llama-3-8b"), [lc.load_accelerator("h100-sxm")], 2)
    >>> grid = lc.evaluate(space, lc.PRESETS["lecture"], isl=1024, osl=128)
    >>> best = lc.plan(grid, lc.Target(ttft_s=0.5, tpot_s=0.02))
    >>> best.counts["searched"], best.counts["meet"], best.counts["frontier"]
    (240, 134, 7)
    """
    prices = dict(usd_per_gpu_hour or {})
    names = {grp.gpu.name for grp in grid.space.groups}
    for name, price in prices.items():
        check_number(f"usd_per_gpu_hour for {name}", price, low=0)
    ttft_miss, decode_miss = target.misses(grid)
    fits = grid.fits
    meets = fits & ~ttft_miss & ~decode_miss
    counts = {
        "searched": len(grid),
        "not_fit": int(np.sum(~fits)),
        "missed": int(np.sum(fits & (ttft_miss | decode_miss))),
        "missed_ttft": int(np.sum(fits & ttft_miss)),
        "missed_decode": int(np.sum(fits & decode_miss)),
        "meet": int(np.sum(meets)),
        **{f"left_out_{reason}": count for reason, count in grid.space.left_out.items()},
    }
    result = Plan(grid, target, meets, np.zeros(0, dtype=int), prices, counts)
    idx = np.flatnonzero(meets)
    by_price = bool(prices) and names <= set(prices)
    good = result.usd_per_million_output_tokens[idx] if by_price else grid.output_tokens_per_s_per_gpu[idx]
    front = idx[pareto(grid.output_tokens_per_s_per_user[idx], good, lower_is_better=by_price)]
    counts["frontier"] = len(front)
    return Plan(grid, target, meets, front, prices, counts)
