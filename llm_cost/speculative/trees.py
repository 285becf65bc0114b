"""Token trees (Medusa, EAGLE, SpecInfer): verify many candidate paths in one target pass.

A tree has a branching width per depth: 4x2x2x1 keeps the draft's top 4 at depth 1, the top 2
under each of those, and so on. Under greedy decoding a depth of width k continues exactly
when the target's token is among the draft's top k, which happens with the draft's top-k hit
rate h(k). With depths independent (the lecture §10.3, exercise 9):

    nodes = sum_d prod_{j <= d} w_j                      (4x2x2x1: 4 + 8 + 16 + 16 = 44)
    tau   = 1 + sum_d prod_{j <= d} h(w_j)               (weak draft: ~2.76 for 4x2x2x1)
    round = depth * c * T(B) + T(B (nodes + 1))          (one draft pass per level)
    speedup = tau * T(B) / round

Verification attends like a chain of nodes + 1 rows (`roofline.step_time`'s causal count), an
upper bound on a tree mask's pairs; the GEMM rows, which set the time, are exact. A chain of
gamma drafts is the tree 1x1x...x1 with alpha = h(1). Trees win at batch 1 and lose badly at
batch 32, where B (nodes + 1) rows make verification compute-bound (the lecture §10.3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from llm_cost.catalog import as_accelerator, as_model, as_profile
from llm_cost.errors import InvalidValueError, check_number, checked
from llm_cost.roofline import MAX_BATCH, MAX_CONTEXT, PassCost
from llm_cost.specs import BF16, Accelerator, ModelSpec, Profile, WeightFormat


@dataclass(frozen=True)
class TopKHits:
    """A draft's top-k hit rates: the probability that the target's token is among its top k."""

    rates: tuple[tuple[int, float], ...]  # (k, rate), k increasing

    def __post_init__(self) -> None:
        if not self.rates:
            raise InvalidValueError("top-k hit rates must not be empty")
        previous_k, previous_rate = 0, 0.0
        for k, rate in self.rates:
            check_number("top-k hit rate k", k, low=1, integer=True)
            check_number(f"top-{k} hit rate", rate, low=0, high=1)
            if k <= previous_k:
                raise InvalidValueError(f"top-k hit rates must be given once per k, in increasing k; "
                                        f"got k = {k} after k = {previous_k}")
            if rate < previous_rate:
                raise InvalidValueError(f"top-{k} hit rate ({rate}) must be at least the top-{previous_k} "
                                        f"rate ({previous_rate}): more candidates cannot hit less")
            previous_k, previous_rate = k, rate

    @classmethod
    def of(cls, mapping: dict) -> "TopKHits":
        return cls(tuple(sorted(mapping.items())))

    @property
    def ks(self) -> tuple[int, ...]:
        return tuple(k for k, _ in self.rates)

    def require(self, widths) -> None:
        """Raise unless every width has a rate (no interpolation between given k)."""
        missing = [w for w in widths if w not in self.ks]
        if missing:
            raise InvalidValueError(f"widths {'x'.join(map(str, widths))}: width {missing[0]} has no rate in "
                                    f"hits (given for k = {', '.join(map(str, self.ks))})", params=("widths", "hits"))

    def rate(self, k: int) -> float:
        """h(k); a width without a given rate is an error (no interpolation)."""
        for known, rate in self.rates:
            if known == k:
                return rate
        raise InvalidValueError(f"no top-{k} hit rate for a width of {k} (rates given for k = "
                                f"{', '.join(map(str, self.ks))})")


# The lecture §10.3, demo 05 part 3: Lecture 3's model drafting with its first layer only (weak) and
# with its own INT4 weights (strong); the share of positions whose greedy target token is
# among the draft's top 1 / 2 / 4 / 8.
WEAK_DRAFT = TopKHits.of({1: 0.44, 2: 0.64, 4: 0.79, 8: 0.91})
STRONG_DRAFT = TopKHits.of({1: 0.79, 2: 0.94, 4: 0.98, 8: 1.00})


def _widths(widths) -> tuple[int, ...]:
    widths = tuple(widths)
    if not widths:
        raise InvalidValueError("tree widths must name at least one depth")
    for w in widths:
        check_number("tree width", w, low=1, integer=True)
    return tuple(int(w) for w in widths)


def tree_nodes(widths) -> int:
    """Draft tokens a tree verifies: sum over depths of the product of widths so far (4x2x2x1 -> 44)."""
    return sum(math.prod(_widths(widths)[:d + 1]) for d in range(len(_widths(widths))))


def tree_tau(widths, hits: TopKHits) -> float:
    """Expected tokens per round tau = 1 + sum_d prod_{j <= d} h(w_j), depths independent.

    The lecture exercise 9: 4x2x2x1 with the weak draft -> 1 + 0.79 + 0.506 + 0.324 + 0.142 = 2.76.
    """
    tau, reach = 1.0, 1.0
    for w in _widths(widths):
        reach *= hits.rate(w)
        tau += reach
    return tau


@dataclass(frozen=True)
class TreeSpeedup:
    """One tree at each batch: its size, tau, the round's parts (seconds) and the speedup."""

    widths: tuple[int, ...]
    nodes: int
    tau: float
    batch: np.ndarray
    base_s: np.ndarray  # T(B)
    verify_s: np.ndarray  # T(B (nodes + 1))
    draft_round_s: np.ndarray  # all levels of one round: depth * c * T(B)
    speedup: np.ndarray

    @property
    def depth(self) -> int:
        return len(self.widths)

    @property
    def label(self) -> str:
        """The widths as the lecture writes them: 4x2x2x1."""
        return "x".join(map(str, self.widths))

    @property
    def verify_rows(self) -> np.ndarray:
        return self.batch * (self.nodes + 1)

    @property
    def round_s(self) -> np.ndarray:
        return self.draft_round_s + self.verify_s

    @property
    def verify_over_base(self) -> np.ndarray:
        return self.verify_s / self.base_s


def tree_speedup(model: ModelSpec, gpu: Accelerator, profile: Profile, *, widths,
                 hits: TopKHits, batch=1, c=0.05, context=0,
                 fmt: WeightFormat = BF16) -> TreeSpeedup:
    """Speedup of tree verification at batch B: tau T(B) / (depth c T(B) + T(B (nodes + 1))).

    `c`: one draft level's cost over a target step (the lecture assumes 5%).
    """
    widths = _widths(widths)
    nodes, tau = tree_nodes(widths), tree_tau(widths, hits)
    model, gpu, profile = as_model(model), as_accelerator(gpu), as_profile(profile)
    b = checked("batch", batch, low=1, high=MAX_BATCH)
    c = checked("c", c, low=0)
    ctx = checked("context", context, low=0, high=MAX_CONTEXT)
    cost = PassCost.from_specs(model, gpu, profile, fmt)
    base = cost.step(b, b, ctx, count_kv=profile.count_kv).total_s
    verify = cost.step(b * (nodes + 1), b, ctx, count_kv=profile.count_kv).total_s
    draft = len(widths) * c * base
    b, base, verify, draft = np.broadcast_arrays(b, base, verify, draft)
    return TreeSpeedup(widths=widths, nodes=nodes, tau=tau, batch=b, base_s=base, verify_s=verify,
                       draft_round_s=draft, speedup=tau * base / (draft + verify))
