"""Whole speculative rounds over a stream of per-position acceptances (a Monte Carlo).

Independent acceptances agree with Eq. 1 (Leviathan et al.); hard positions in bursts (a
two-state Markov chain) make Eq. 1 with the measured alpha overestimate the tokens per round
(the lecture §8.3: "会高估约 5%").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llm_cost.errors import InvalidValueError, check_number
from llm_cost.speculative.closed_forms import expected_tokens_unchecked
from llm_cost.budget import check_memory
from llm_cost.catalog.arguments import Number, check_arguments

BYTES_PER_POSITION = 24  # a uniform draw (8 B), its acceptance (1 B) and the run lengths' work arrays
from llm_cost.specs.validate import check_fields


@dataclass(frozen=True)
class IndependentAcceptance:
    r"""Each position accepted with probability alpha, independently (Eq. 1's assumption).

    .. math:: P(\text{accept}_t) = \alpha \text{ for every position } t

    Parameters
    ----------
    alpha : float
        Acceptance rate, a fraction in [0, 1].

    Examples
    --------
    >>> IndependentAcceptance(0.8).stationary_alpha
    0.8
    """

    alpha: float

    def __post_init__(self) -> None:
        """Validate alpha: a fraction in [0, 1]."""
        check_fields(self)
        check_number("alpha", self.alpha, low=0, high=1)

    @property
    def stationary_alpha(self) -> float:
        """The long-run acceptance rate: alpha."""
        return self.alpha


@dataclass(frozen=True)
class BurstyAcceptance:
    r"""Easy and hard positions as a two-state Markov chain: hard ones come in bursts.

    Each position is accepted with `easy_alpha` or `hard_alpha` by its state; an easy position
    is followed by a hard one with `p_easy_to_hard`, a hard by an easy one with `p_hard_to_easy`
    (mean burst 1 / p_hard_to_easy positions). The lecture §8.3.

    .. math:: \pi_{hard} = \frac{p_{e \to h}}{p_{e \to h} + p_{h \to e}},\quad
              \bar\alpha = (1 - \pi_{hard})\,\alpha_{easy} + \pi_{hard}\,\alpha_{hard}

    Parameters
    ----------
    easy_alpha, hard_alpha : float
        Acceptance rates in each state, fractions in [0, 1].
    p_easy_to_hard, p_hard_to_easy : float
        Transition probabilities per position, in (0, 1].

    Examples
    --------
    >>> b = BurstyAcceptance(easy_alpha=1.0, hard_alpha=0.2, p_easy_to_hard=0.1, p_hard_to_easy=0.3)
    >>> round(b.hard_share, 10), round(b.stationary_alpha, 10)
    (0.25, 0.8)
    """

    easy_alpha: float
    hard_alpha: float
    p_easy_to_hard: float
    p_hard_to_easy: float

    def __post_init__(self) -> None:
        """Validate the rates (in [0, 1]) and the transition probabilities (in (0, 1])."""
        check_fields(self)
        for name in ("easy_alpha", "hard_alpha"):
            check_number(name, getattr(self, name), low=0, high=1)
        for name in ("p_easy_to_hard", "p_hard_to_easy"):
            check_number(name, getattr(self, name), low=0, high=1, low_open=True)

    @property
    def hard_share(self) -> float:
        """The stationary share of hard positions: p_eh / (p_eh + p_he)."""
        return self.p_easy_to_hard / (self.p_easy_to_hard + self.p_hard_to_easy)

    @property
    def stationary_alpha(self) -> float:
        """The long-run acceptance rate: the state rates weighted by the stationary shares."""
        hard = self.hard_share
        return (1 - hard) * self.easy_alpha + hard * self.hard_alpha


def _accepts(process, streams: int, positions: int, rng: np.random.Generator) -> np.ndarray:
    """(streams, positions) booleans: whether each position's draft token would be accepted."""
    draws = rng.random((streams, positions))
    if isinstance(process, IndependentAcceptance):
        return draws < process.alpha
    flips = rng.random((streams, positions))
    hard = np.empty((streams, positions), dtype=bool)
    hard[:, 0] = flips[:, 0] < process.hard_share  # start in the stationary distribution
    for position in range(1, positions):
        stay_hard = flips[:, position] >= process.p_hard_to_easy
        hard[:, position] = np.where(hard[:, position - 1], stay_hard, flips[:, position] < process.p_easy_to_hard)
    return draws < np.where(hard, process.hard_alpha, process.easy_alpha)


@dataclass(frozen=True)
class RoundStats:
    r"""Tokens per round measured over simulated rounds, and what Eq. 1 predicts from alpha.

    .. math:: \mathit{predicted} = (1 - \hat\alpha^{\gamma + 1}) / (1 - \hat\alpha)

    Attributes
    ----------
    gamma, rounds
        Draft tokens per round and rounds simulated.
    tokens_per_round, tokens_per_round_stderr
        Measured tau (what an engine should measure, the lecture §8.3) and its standard error.
    alpha_measured
        Accepted drafts / drafts judged, a fraction in [0, 1].
    alpha_stationary
        The process's long-run acceptance rate.
    predicted
        Eq. 1 at alpha_measured.

    Examples
    --------
    See `simulate_rounds`.
    """

    gamma: int
    rounds: int
    tokens_per_round: float  # tau, what an engine should measure (the lecture §8.3)
    tokens_per_round_stderr: float
    alpha_measured: float  # accepted drafts / drafts judged
    alpha_stationary: float  # the process's long-run acceptance rate
    predicted: float  # Eq. 1 at alpha_measured

    @property
    def overestimate(self) -> float:
        """predicted / measured - 1: how much Eq. 1 promises beyond what the rounds deliver."""
        return self.predicted / self.tokens_per_round - 1.0


@check_arguments(gamma=Number(0, 1e6, integer=True), streams=Number(1, 1e7, integer=True), positions=Number(1, 1e9, integer=True))
def simulate_rounds(process, gamma: int, *, streams: int = 512, positions: int = 2048,
                    seed: int = 0) -> RoundStats:
    r"""Seeded Monte Carlo of speculative rounds walking along `streams` token streams.

    A round starting at position t accepts the run of accepted positions from t (at most
    gamma) and adds one target token; the next round starts after it. Vectorized over streams.
    Independent acceptances agree with Eq. 1; bursts of hard positions make Eq. 1 at the measured
    alpha overestimate the tokens per round (the lecture §8.3: "会高估约 5%").

    .. math:: \mathit{tokens} = \min(k, \gamma) + 1,\quad k = \text{accepted run from the round's start}

    (`k`: the accepted run of each live stream's round.)

    Parameters
    ----------
    process : IndependentAcceptance or BurstyAcceptance
        Where each position's draft token is accepted.
    gamma : int
        Draft tokens per round, a whole number >= 1.
    streams : int, optional
        Independent token streams, >= 1 (default 512).
    positions : int, optional
        Positions per stream, >= gamma + 1 (default 2048).
    seed : int, optional
        Seed of numpy's default generator (default 0).

    Returns
    -------
    RoundStats
        Measured tokens per round, measured and stationary alpha, and Eq. 1's prediction.

    Examples
    --------
    Every draft accepted: gamma + 1 tokens per round.

    >>> simulate_rounds(IndependentAcceptance(1.0), 4, positions=100).tokens_per_round
    5.0

    Bursty hard positions at the same mean acceptance 0.8: Eq. 1 promises about 6% too much.

    >>> b = BurstyAcceptance(easy_alpha=1.0, hard_alpha=0.2, p_easy_to_hard=0.1, p_hard_to_easy=0.3)
    >>> s = simulate_rounds(b, 4, seed=5)
    >>> round(s.tokens_per_round, 2), round(s.predicted, 2), round(s.overestimate, 2)
    (3.05, 3.24, 0.06)
    """
    if not isinstance(process, (IndependentAcceptance, BurstyAcceptance)):
        raise InvalidValueError("process must be an IndependentAcceptance or a BurstyAcceptance")
    check_number("gamma", gamma, low=1, integer=True)
    check_number("streams", streams, low=1, integer=True)
    check_number("positions", positions, low=gamma + 1, integer=True)
    check_memory("positions", streams * positions, BYTES_PER_POSITION, what="stream positions")
    gamma, rng = int(gamma), np.random.default_rng(seed)
    accepts = _accepts(process, int(streams), int(positions), rng)
    # first rejection at or after each position (positions where there is none)
    index = np.where(accepts, positions, np.arange(positions))
    next_reject = np.minimum.accumulate(index[:, ::-1], axis=1)[:, ::-1]
    rows = np.arange(streams)
    starts = np.zeros(streams, dtype=int)
    rounds = tokens = tokens_sq = judged = accepted = 0
    while True:
        alive = starts + gamma < positions
        if not alive.any():
            break
        live, start = rows[alive], starts[alive]
        k = np.minimum(next_reject[live, start] - start, gamma)
        rounds += k.size
        tokens += int((k + 1).sum())
        tokens_sq += int(((k + 1) ** 2).sum())
        accepted += int(k.sum())
        judged += int(k.sum() + (k < gamma).sum())
        starts[alive] = start + k + 1
    mean = tokens / rounds
    alpha_measured = accepted / judged
    return RoundStats(
        gamma=gamma, rounds=rounds, tokens_per_round=mean,
        tokens_per_round_stderr=float(np.sqrt(max(tokens_sq / rounds - mean ** 2, 0.0) / rounds)),
        alpha_measured=alpha_measured, alpha_stationary=process.stationary_alpha,
        predicted=float(expected_tokens_unchecked(np.asarray(alpha_measured), np.asarray(float(gamma)))))
