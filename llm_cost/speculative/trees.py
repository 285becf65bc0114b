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

On a deployment (`deployment`, default one GPU) T is one GPU's pass, collectives and pipeline
stages included, K/V at its kv_dtype (`parallel.deployed_pass_cost`).

In the code `k` is a top-k width, `w` a depth's width, `d` a depth and `b` the batch B.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from llm_cost.catalog import as_accelerator, as_model, as_profile
from llm_cost.errors import InvalidValueError, check_number
from llm_cost.grids import checked
from llm_cost.roofline import MAX_BATCH, MAX_CONTEXT
from llm_cost.specs import BF16, Accelerator, ModelSpec, Profile, WeightFormat
from llm_cost.specs.deployment import SINGLE_GPU, Deployment
from llm_cost.catalog.arguments import Many, check_arguments

WIDTHS = Many(most=32, empty=True)  # a tree's width per depth (each checked by `tree_nodes`)  # a tree's top-k width per depth
from llm_cost.specs.validate import check_fields

if TYPE_CHECKING:  # numpy is imported where a tree is timed, not at import
    import numpy as np


@dataclass(frozen=True)
class TopKHits:
    r"""A draft's top-k hit rates: the probability that the target's token is among its top k.

    .. math:: h(k) = P(x_{target} \in \mathrm{top}_k(q)),\quad 0 \le h(k_1) \le h(k_2) \le 1
              \text{ for } k_1 < k_2

    Parameters
    ----------
    rates : tuple of (int, float)
        (k, h(k)) pairs, k a whole number >= 1 in increasing order, each rate a fraction in
        [0, 1] and not below the rate of a smaller k (more candidates cannot hit less).

    Examples
    --------
    The lecture §10.3 (demo 05 part 3): the weak draft (Lecture 3's model, first layer only).

    >>> WEAK_DRAFT.ks, WEAK_DRAFT.rate(4)
    ((1, 2, 4, 8), 0.79)
    """

    rates: tuple[tuple[int, float], ...]  # (k, rate), k increasing

    def __post_init__(self) -> None:
        """Validate the rates: `k` whole and increasing, each rate in [0, 1] and not falling with k."""
        check_fields(self)
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
        """Hit rates from a {k: h(k)} mapping, sorted by k.

        Parameters
        ----------
        mapping : dict of int to float
            k (whole, >= 1) to its hit rate, a fraction in [0, 1].

        Returns
        -------
        TopKHits

        Examples
        --------
        >>> TopKHits.of({2: 0.64, 1: 0.44}).rates
        ((1, 0.44), (2, 0.64))
        """
        return cls(tuple(sorted(mapping.items())))

    @property
    def text(self) -> str:
        """The rates as the CLI writes them, `k`:rate: '1:0.44,2:0.64,4:0.79,8:0.91'."""
        return ",".join(f"{k}:{rate:g}" for k, rate in self.rates)

    @property
    def ks(self) -> tuple[int, ...]:
        """The `k` that have a rate, increasing."""
        return tuple(k for k, _ in self.rates)

    def require(self, widths) -> None:
        """Raise unless every width has a rate (no interpolation between given k).

        Parameters
        ----------
        widths : sequence of int
            Tree widths per depth.

        Raises
        ------
        InvalidValueError
            Naming the first width without a rate.

        Examples
        --------
        >>> WEAK_DRAFT.require((4, 2, 2, 1))
        >>> WEAK_DRAFT.require((4, 3))
        Traceback (most recent call last):
        ...
        llm_cost.errors.InvalidValueError: widths 4x3: width 3 has no rate in hits (given for k = 1, 2, 4, 8)
        """
        missing = [width for width in widths if width not in self.ks]
        if missing:
            raise InvalidValueError(f"widths {'x'.join(map(str, widths))}: width {missing[0]} has no rate in "
                                    f"hits (given for k = {', '.join(map(str, self.ks))})", params=("widths", "hits"))

    def rate(self, k: int) -> float:
        """h(k); a width without a given rate is an error (no interpolation).

        Parameters
        ----------
        k : int
            A width that has a rate.

        Returns
        -------
        float
            The top-k hit rate, a fraction in [0, 1].

        Examples
        --------
        >>> STRONG_DRAFT.rate(1), WEAK_DRAFT.rate(1)
        (0.79, 0.44)
        """
        for known, rate in self.rates:
            if known == k:
                return rate
        raise InvalidValueError(f"no top-{k} hit rate for a width of {k} (rates given for k = "
                                f"{', '.join(map(str, self.ks))})")


# The lecture §10.3, demo 05 part 3: Lecture 3's model drafting with its first layer only (weak) and
# with its own INT4 weights (strong); the share of positions whose greedy target token is
# among the draft's top 1 / 2 / 4 / 8.
WEAK_DRAFT = TopKHits.of({1: 0.44, 2: 0.64, 4: 0.79, 8: 0.91})
LEVEL_COST = 0.05  # one draft level's cost over a target step, as the lecture assumes (§10.3)
STRONG_DRAFT = TopKHits.of({1: 0.79, 2: 0.94, 4: 0.98, 8: 1.00})


def _widths(widths) -> tuple[int, ...]:
    """Validated widths: at least one depth, each a whole number >= 1."""
    widths = tuple(widths)
    if not widths:
        raise InvalidValueError("tree widths must name at least one depth")
    for width in widths:
        check_number("tree width", width, low=1, integer=True)
    return tuple(int(width) for width in widths)


@check_arguments(widths=WIDTHS)
def tree_nodes(widths) -> int:
    r"""Draft tokens a tree verifies: sum over depths of the product of widths so far (4x2x2x1 -> 44).

    .. math:: \mathit{nodes} = \sum_{d=1}^{D} \prod_{j \le d} w_j

    Parameters
    ----------
    widths : sequence of int
        Branching width per depth, each a whole number >= 1 (at least one depth).

    Returns
    -------
    int
        Tree nodes (draft tokens) verified in one target pass.

    Examples
    --------
    The lecture exercise 9: 4 + 8 + 16 + 16 = 44; the lecture §14 pitfall 10: 8x4x2x1 has 168.

    >>> tree_nodes((4, 2, 2, 1)), tree_nodes((8, 4, 2, 1))
    (44, 168)
    """
    return sum(math.prod(_widths(widths)[:depth + 1]) for depth in range(len(_widths(widths))))


@check_arguments(widths=WIDTHS)
def tree_tau(widths, hits: TopKHits) -> float:
    r"""Expected tokens per round tau = 1 + sum_d prod_{j <= d} h(w_j), depths independent.

    The lecture exercise 9: 4x2x2x1 with the weak draft -> 1 + 0.79 + 0.506 + 0.324 + 0.142 = 2.76.

    .. math:: \tau = 1 + \sum_{d=1}^{D} \prod_{j \le d} h(w_j)

    Parameters
    ----------
    widths : sequence of int
        Branching width per depth, each a whole number >= 1 with a rate in `hits`.
    hits : TopKHits
        The draft's top-k hit rates (`WEAK_DRAFT`, `STRONG_DRAFT` or your own).

    Returns
    -------
    float
        Expected tokens per round, in [1, depth + 1].

    Examples
    --------
    >>> round(tree_tau((4, 2, 2, 1), WEAK_DRAFT), 2)
    2.76

    A chain of gamma drafts is the tree 1x...x1: Eq. 1 with alpha = h(1).

    >>> round(tree_tau((1, 1, 1, 1), TopKHits.of({1: 0.8})), 4)  # 1 + 0.8 + 0.64 + 0.512 + 0.4096
    3.3616
    """
    tau, reach = 1.0, 1.0
    for width in _widths(widths):
        reach *= hits.rate(width)
        tau += reach
    return tau


@dataclass(frozen=True)
class TreeSpeedup:
    r"""One tree at each batch: its size, tau, the round's parts (seconds) and the speedup.

    .. math:: S(B) = \tau\,T(B) / (D\,c\,T(B) + T(B\,(\mathit{nodes} + 1)))

    Attributes
    ----------
    widths, nodes, tau
        The tree's widths per depth, its node count and its expected tokens per round.
    batch
        Sequences per step (array).
    base_s, verify_s, draft_round_s
        T(B), T(B (nodes + 1)) and all D draft levels of a round, depth * c * T(B), in seconds.
    speedup
        tau T(B) / round time (> 1: the tree pays).

    Examples
    --------
    See `tree_speedup`.
    """

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
        """Depths of the tree (draft levels per round)."""
        return len(self.widths)

    @property
    def label(self) -> str:
        """The widths as the lecture writes them: 4x2x2x1."""
        return "x".join(map(str, self.widths))

    @property
    def verify_rows(self) -> np.ndarray:
        """Rows of the verification pass: B (nodes + 1)."""
        return self.batch * (self.nodes + 1)

    @property
    def round_s(self) -> np.ndarray:
        """Seconds per round: all draft levels plus the verification pass."""
        return self.draft_round_s + self.verify_s

    @property
    def verify_over_base(self) -> np.ndarray:
        """T(B (nodes + 1)) / T(B): what verifying the tree costs over a plain step."""
        return self.verify_s / self.base_s


@check_arguments(widths=WIDTHS, arrays=("batch", "context", "c"))
def tree_speedup(model: ModelSpec, gpu: Accelerator, profile: Profile, *, widths,
                 hits: TopKHits, batch=1, c=LEVEL_COST, context=0,
                 weights: WeightFormat = BF16, deployment: Deployment = SINGLE_GPU) -> TreeSpeedup:
    r"""Speedup of tree verification at batch B: tau T(B) / (depth c T(B) + T(B (nodes + 1))).

    `c`: one draft level's cost over a target step (the lecture assumes 5%). Trees win at batch 1
    and lose at batch 32, where B (nodes + 1) rows make verification compute-bound (the lecture
    §10.3).

    .. math:: S = \tau\,T(B) / (D\,c\,T(B) + T(B\,(\mathit{nodes} + 1)))

    Parameters
    ----------
    model, gpu, profile
        The target's specs, or catalog names / a preset name (`"llama-3.1-8b"`, `"h100-sxm"`,
        `"lecture"`).
    widths : sequence of int
        Branching width per depth, each a whole number >= 1 with a rate in `hits`.
    hits : TopKHits
        The draft's top-k hit rates.
    batch : float or array, optional
        Sequences per step, in [1, 1e12] (default 1); arrays broadcast.
    c : float or array, optional
        One draft level's time over T(B), in [0, inf) (default 0.05).
    context : float or array, optional
        Cached tokens per sequence, in [0, 1e12] (default 0).
    weights : WeightFormat, optional
        The target's weight format (default BF16).
    deployment : Deployment, optional
        The GPUs the target runs on (default one GPU): T is one GPU's pass with its collectives
        (`parallel.deployed_pass_cost`).

    Returns
    -------
    TreeSpeedup
        Node count, tau, T(B), T(B (nodes + 1)), the draft levels' time (seconds) and the speedup,
        arrays of the broadcast shape.

    Examples
    --------
    The lecture's 4x2x2x1 tree with the weak draft, Llama-3.1-8B on an H100 (lecture preset,
    context 1024): verification is free at batch 1 and costs several steps at batch 32.

    >>> t = tree_speedup("llama-3.1-8b", "h100-sxm", "lecture", widths=(4, 2, 2, 1), hits=WEAK_DRAFT,
    ...                  batch=[1, 32], context=1024)
    >>> t.label, t.nodes, round(t.tau, 2), t.verify_rows.tolist()
    ('4x2x2x1', 44, 2.76, [45.0, 1440.0])
    >>> [round(float(s), 2) for s in t.speedup]
    [2.3, 0.56]
    """
    widths = _widths(widths)
    nodes, tau = tree_nodes(widths), tree_tau(widths, hits)
    model, gpu, profile = as_model(model), as_accelerator(gpu), as_profile(profile)
    batch = checked("batch", batch, low=1, high=MAX_BATCH)
    c = checked("c", c, low=0)
    ctx = checked("context", context, low=0, high=MAX_CONTEXT)
    from llm_cost.parallel import deployed_pass_cost

    cost = deployed_pass_cost(model, gpu, profile, weights, deployment)  # one GPU: PassCost.from_specs
    base = cost.step(batch, batch, ctx, count_kv=profile.count_kv).step_time_s
    verify = cost.step(batch * (nodes + 1), batch, ctx, count_kv=profile.count_kv).step_time_s
    draft = len(widths) * c * base
    import numpy as np

    batch, base, verify, draft = np.broadcast_arrays(batch, base, verify, draft)
    return TreeSpeedup(widths=widths, nodes=nodes, tau=tau, batch=batch, base_s=base, verify_s=verify,
                       draft_round_s=draft, speedup=tau * base / (draft + verify))
