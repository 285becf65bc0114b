"""Speculative sampling on explicit distributions, exactly, and a Monte Carlo of whole rounds.

One position (the lecture §7, the article §2.2): the draft proposes x ~ q, the target accepts it with
probability min(1, p(x) / q(x)), and after a rejection samples the residual
norm(max(0, p - q)). Then

    P(accept and output x) = min(p(x), q(x)),    acceptance beta = sum_x min(p, q) = 1 - TV(p, q)
    P(output x) = min(p(x), q(x)) + (1 - beta) max(0, p(x) - q(x)) / (1 - beta) = p(x)

whatever q is. Temperature and top-k adjust p and q alike (§7.3). The lecture's two wrong
variants (§7.5, exercise 4) are here with their biased outputs: resampling from p after a
rejection, and rejecting whenever q(x) > p(x).

`simulate_rounds` plays whole rounds over a stream of per-position acceptances: independent
ones agree with Eq. 1; hard positions in bursts (a two-state Markov chain) make Eq. 1 with the
measured alpha overestimate the tokens per round (§8.3: "会高估约 5%").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llm_cost.errors import InvalidValueError, check_number
from llm_cost.speculative.closed_forms import expected_tokens_unchecked

RULES = ("exact", "resample_target", "reject_if_draft_higher")
SUM_TOLERANCE = 1e-6  # a distribution's sum may differ from 1 by this much (then it is rescaled)


def distribution(probs, name: str = "distribution") -> np.ndarray:
    r"""A validated probability vector: 1-D, finite, non-negative, summing to 1 (rescaled exactly).

    .. math:: p_i \ge 0,\quad |\textstyle\sum_i p_i - 1| \le 10^{-6},\quad p \leftarrow p / \sum_i p_i

    Parameters
    ----------
    probs : array_like
        Probabilities, one per token (a non-empty 1-D vector).
    name : str, optional
        What the vector is called in an error message.

    Returns
    -------
    numpy.ndarray
        The probabilities as floats, rescaled to sum to 1.

    Examples
    --------
    >>> distribution([0.5, 0.3, 0.2]).tolist()
    [0.5, 0.3, 0.2]
    >>> distribution([0.5, 0.6], "p")
    Traceback (most recent call last):
    ...
    llm_cost.errors.InvalidValueError: p must sum to 1, got ...
    """
    p = np.asarray(probs, dtype=float)
    if p.ndim != 1 or p.size == 0:
        raise InvalidValueError(f"{name} must be a non-empty 1-D vector of probabilities")
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise InvalidValueError(f"{name} must hold finite non-negative probabilities")
    total = p.sum()
    if abs(total - 1.0) > SUM_TOLERANCE:
        raise InvalidValueError(f"{name} must sum to 1, got {total!r}")
    return p / total


def adjust(probs, *, temperature: float = 1.0, top_k: int | None = None,
           name: str = "distribution") -> np.ndarray:
    r"""The sampling distribution: top-k kept (ties by lower index), then p^(1/T) renormalized.

    Temperature 0 is greedy: one-hot at the first argmax. Same as softmax(logits / T) with the
    tokens past the k-th set to -inf (the lecture §7.3).

    .. math:: p'_i \propto p_i^{1/T}\,[i \in \mathrm{top}_k(p)]

    Parameters
    ----------
    probs : array_like
        A probability vector (see `distribution`).
    temperature : float, optional
        T in [0, inf) (default 1: unchanged; 0: greedy).
    top_k : int or None, optional
        Tokens kept, a whole number >= 1 (default None: all).
    name : str, optional
        What the vector is called in an error message.

    Returns
    -------
    numpy.ndarray
        The adjusted distribution.

    Examples
    --------
    >>> adjust([0.5, 0.3, 0.2], top_k=2).round(10).tolist()
    [0.625, 0.375, 0.0]
    >>> adjust([0.5, 0.3, 0.2], temperature=0).tolist()
    [1.0, 0.0, 0.0]
    >>> adjust([0.5, 0.3, 0.2], temperature=0.5).round(4).tolist()  # p^2 / sum p^2
    [0.6579, 0.2368, 0.1053]
    """
    p = distribution(probs, name)
    check_number("temperature", temperature, low=0)
    if top_k is not None:
        check_number("top_k", top_k, low=1, integer=True)
        keep = np.argsort(-p, kind="stable")[:int(top_k)]
        p = np.where(np.isin(np.arange(p.size), keep), p, 0.0)
    if temperature == 0:
        return np.eye(p.size)[np.argmax(p)]
    if temperature == 1:
        return p / p.sum()
    with np.errstate(divide="ignore"):
        logits = np.log(p) / temperature
    w = np.exp(logits - logits.max())
    return w / w.sum()


def total_variation(p, q) -> float:
    r"""TV(p, q) = 1/2 sum |p - q|.

    .. math:: \mathrm{TV}(p, q) = \tfrac12 \sum_x |p(x) - q(x)| = 1 - \sum_x \min(p(x), q(x))

    Parameters
    ----------
    p, q : array_like
        Probability vectors of the same length.

    Returns
    -------
    float
        The total variation distance, in [0, 1].

    Examples
    --------
    The lecture exercise 3: acceptance = 1 - TV = 0.7.

    >>> tv = total_variation([0.5, 0.3, 0.2], [0.2, 0.6, 0.2])
    >>> round(tv, 10), round(1 - tv, 10)
    (0.3, 0.7)
    """
    return 0.5 * float(np.abs(distribution(p, "p") - distribution(q, "q")).sum())


@dataclass(frozen=True)
class SpeculativeStep:
    r"""One position of speculative sampling, exactly: what is accepted, resampled and output.

    .. math:: \beta = \sum_x \min(p, q) = 1 - \mathrm{TV}(p, q),\quad
              \mathit{output} = \min(p, q) + (1 - \beta)\,\mathit{residual} = p

    Attributes
    ----------
    p, q
        Target and draft distributions, after the same temperature / top-k adjustment.
    acceptance
        beta = sum min(p, q), a fraction in [0, 1].
    total_variation
        TV(p, q) = 1 - beta.
    residual
        norm(max(0, p - q)); zeros when beta = 1 (never sampled).
    output
        The output distribution, min(p, q) + (1 - beta) residual, which is p.

    Examples
    --------
    See `speculative_step`.
    """

    p: np.ndarray  # target, after temperature / top-k
    q: np.ndarray  # draft, after the same adjustment
    acceptance: float  # beta = sum min(p, q)
    total_variation: float
    residual: np.ndarray  # norm(max(0, p - q)); zeros when beta = 1 (never sampled)
    output: np.ndarray  # min(p, q) + (1 - beta) residual  (= p)


def _residual(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """norm(max(0, p - q)), or zeros where p <= q everywhere."""
    excess = np.maximum(0.0, p - q)
    mass = excess.sum()
    return excess / mass if mass > 0 else excess


def speculative_step(p, q, *, temperature: float = 1.0, top_k: int | None = None) -> SpeculativeStep:
    r"""The exact output distribution of one speculative position, after adjusting p and q alike.

    The lecture exercise 3: p = (0.5, 0.3, 0.2), q = (0.2, 0.6, 0.2) -> beta 0.7, residual (1, 0, 0).
    The lecture §7.1 and the article §2.2: accept x ~ q with min(1, p(x) / q(x)), else sample
    the residual.

    .. math:: \beta = \sum_x \min(p(x), q(x)),\quad
              r = \frac{\max(0, p - q)}{1 - \beta},\quad P(\mathit{output} = x) = p(x)

    Parameters
    ----------
    p, q : array_like
        Target and draft probability vectors of the same length.
    temperature : float, optional
        Applied to both, in [0, inf) (default 1; 0 is greedy: argmax matching, the lecture §7.4).
    top_k : int or None, optional
        Applied to both, a whole number >= 1 (default None).

    Returns
    -------
    SpeculativeStep
        Adjusted p and q, acceptance beta, TV, residual and output distribution.

    Examples
    --------
    >>> s = speculative_step([0.5, 0.3, 0.2], [0.2, 0.6, 0.2])
    >>> round(s.acceptance, 10), round(1 - s.total_variation, 10), s.residual.tolist()
    (0.7, 0.7, [1.0, 0.0, 0.0])
    >>> s.output.round(10).tolist()  # = p
    [0.5, 0.3, 0.2]
    """
    p = adjust(p, temperature=temperature, top_k=top_k, name="p")
    q = adjust(q, temperature=temperature, top_k=top_k, name="q")
    return SpeculativeStep(p=p, q=q, acceptance=float(np.minimum(p, q).sum()),
                           total_variation=total_variation(p, q), residual=_residual(p, q),
                           output=output_distribution(p, q, "exact"))


def output_distribution(p, q, rule: str = "exact") -> np.ndarray:
    r"""Output distribution of one position under a verification rule.

    exact: accept with min(1, p/q), resample the residual -> p.
    resample_target (wrong): resample from p after a rejection -> min(p, q) + (1 - beta) p.
    reject_if_draft_higher (wrong): accept x iff q(x) <= p(x), else resample the residual ->
    q [q <= p] + (1 - sum q [q <= p]) residual.
    The two wrong variants are the lecture's §7.5 and exercise 4.

    .. math:: \text{exact: } \min(p, q) + (1 - \beta)\,r = p;\quad
              \text{resample\_target: } \min(p, q) + (1 - \beta)\,p

    Parameters
    ----------
    p, q : array_like
        Target and draft probability vectors of the same length.
    rule : str, optional
        One of `RULES`: "exact" (default), "resample_target", "reject_if_draft_higher".

    Returns
    -------
    numpy.ndarray
        The output distribution.

    Examples
    --------
    The lecture exercise 4: resampling from p over-weights the token q favours (b: 0.3 -> 0.39).

    >>> p, q = [0.5, 0.3, 0.2], [0.2, 0.6, 0.2]
    >>> output_distribution(p, q).round(10).tolist()
    [0.5, 0.3, 0.2]
    >>> output_distribution(p, q, "resample_target").round(10).tolist()
    [0.35, 0.39, 0.26]
    >>> output_distribution(p, q, "reject_if_draft_higher").round(10).tolist()
    [0.8, 0.0, 0.2]
    """
    p, q = distribution(p, "p"), distribution(q, "q")
    if rule == "exact":
        kept = np.minimum(p, q)
        return kept + (1.0 - kept.sum()) * _residual(p, q)
    if rule == "resample_target":
        kept = np.minimum(p, q)
        return kept + (1.0 - kept.sum()) * p
    if rule == "reject_if_draft_higher":
        kept = np.where(q <= p, q, 0.0)
        return kept + (1.0 - kept.sum()) * _residual(p, q)
    raise InvalidValueError(f"rule must be one of {', '.join(RULES)}, got {rule!r}")


def sample_outputs(p, q, *, samples: int, rule: str = "exact", seed: int = 0) -> np.ndarray:
    r"""Empirical output frequencies of `samples` independent positions (seeded), by `rule`.

    Draw x ~ q; accept with u < p(x) / q(x) (or, for "reject_if_draft_higher", iff q(x) <= p(x));
    else redraw from the residual (or from p for "resample_target").

    .. math:: \hat P(x) = \#\{\mathit{output} = x\} / n \to \text{output\_distribution}(p, q, rule)

    Parameters
    ----------
    p, q : array_like
        Target and draft probability vectors of the same length.
    samples : int
        Positions n, a whole number >= 1.
    rule : str, optional
        One of `RULES` (default "exact").
    seed : int, optional
        Seed of numpy's default generator (default 0).

    Returns
    -------
    numpy.ndarray
        Frequencies (fractions in [0, 1] summing to 1), one per token.

    Examples
    --------
    The Monte Carlo agrees with the exact output, p, within a few standard errors.

    >>> import numpy as np
    >>> f = sample_outputs([0.5, 0.3, 0.2], [0.2, 0.6, 0.2], samples=100_000, seed=7)
    >>> bool(np.abs(f - [0.5, 0.3, 0.2]).max() < 0.01)
    True
    """
    p, q = distribution(p, "p"), distribution(q, "q")
    check_number("samples", samples, low=1, integer=True)
    if rule not in RULES:
        raise InvalidValueError(f"rule must be one of {', '.join(RULES)}, got {rule!r}")
    rng = np.random.default_rng(seed)
    x = rng.choice(q.size, size=int(samples), p=q)
    if rule == "reject_if_draft_higher":
        accepted = q[x] <= p[x]
    else:
        accepted = rng.random(x.size) * q[x] < p[x]  # u < p(x) / q(x), q(x) > 0 for a drawn x
    fallback = p if rule == "resample_target" else _residual(p, q)
    if fallback.sum() > 0:
        redraw = rng.choice(q.size, size=x.size, p=fallback)
        x = np.where(accepted, x, redraw)
    return np.bincount(x, minlength=q.size) / x.size


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
        h = self.hard_share
        return (1 - h) * self.easy_alpha + h * self.hard_alpha


def _accepts(process, streams: int, positions: int, rng: np.random.Generator) -> np.ndarray:
    """(streams, positions) booleans: whether each position's draft token would be accepted."""
    draws = rng.random((streams, positions))
    if isinstance(process, IndependentAcceptance):
        return draws < process.alpha
    flips = rng.random((streams, positions))
    hard = np.empty((streams, positions), dtype=bool)
    hard[:, 0] = flips[:, 0] < process.hard_share  # start in the stationary distribution
    for t in range(1, positions):
        stay_hard = flips[:, t] >= process.p_hard_to_easy
        hard[:, t] = np.where(hard[:, t - 1], stay_hard, flips[:, t] < process.p_easy_to_hard)
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


def simulate_rounds(process, gamma: int, *, streams: int = 512, positions: int = 2048,
                    seed: int = 0) -> RoundStats:
    r"""Seeded Monte Carlo of speculative rounds walking along `streams` token streams.

    A round starting at position t accepts the run of accepted positions from t (at most
    gamma) and adds one target token; the next round starts after it. Vectorized over streams.
    Independent acceptances agree with Eq. 1; bursts of hard positions make Eq. 1 at the measured
    alpha overestimate the tokens per round (the lecture §8.3: "会高估约 5%").

    .. math:: \mathit{tokens} = \min(k, \gamma) + 1,\quad k = \text{accepted run from the round's start}

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
    gamma, rng = int(gamma), np.random.default_rng(seed)
    accepts = _accepts(process, int(streams), int(positions), rng)
    # first rejection at or after each position (positions where there is none)
    index = np.where(accepts, positions, np.arange(positions))
    next_reject = np.minimum.accumulate(index[:, ::-1], axis=1)[:, ::-1]
    rows = np.arange(streams)
    t = np.zeros(streams, dtype=int)
    n = tokens = tokens_sq = judged = accepted = 0
    while True:
        alive = t + gamma < positions
        if not alive.any():
            break
        s, start = rows[alive], t[alive]
        k = np.minimum(next_reject[s, start] - start, gamma)
        n += k.size
        tokens += int((k + 1).sum())
        tokens_sq += int(((k + 1) ** 2).sum())
        accepted += int(k.sum())
        judged += int(k.sum() + (k < gamma).sum())
        t[alive] = start + k + 1
    mean = tokens / n
    alpha_measured = accepted / judged
    return RoundStats(
        gamma=gamma, rounds=n, tokens_per_round=mean,
        tokens_per_round_stderr=float(np.sqrt(max(tokens_sq / n - mean ** 2, 0.0) / n)),
        alpha_measured=alpha_measured, alpha_stationary=process.stationary_alpha,
        predicted=float(expected_tokens_unchecked(np.asarray(alpha_measured), np.asarray(float(gamma)))))
