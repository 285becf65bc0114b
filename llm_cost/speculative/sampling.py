"""Speculative sampling on explicit distributions, exactly, and a Monte Carlo of whole rounds.

One position (the lecture §7, the article §2.2): the draft proposes x ~ q, the target accepts it with
probability min(1, p(x) / q(x)), and after a rejection samples the residual
norm(max(0, p - q)). Then

    P(accept and output x) = min(p(x), q(x)),    acceptance beta = sum_x min(p, q) = 1 - TV(p, q)
    P(output x) = min(p(x), q(x)) + (1 - beta) max(0, p(x) - q(x)) / (1 - beta) = p(x)

whatever q is. Temperature and top-k adjust p and q alike (§7.3). The lecture's two wrong
variants (§7.5, exercise 4) are here with their biased outputs: resampling from p after a
rejection, and rejecting whenever q(x) > p(x).

Whole rounds over streams of acceptances are in `rounds`.

In the code `p` is the target's distribution (or the one being checked), `q` the draft's and `x`
a drawn token, as each function's docstring says.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llm_cost.errors import InvalidValueError, check_number
from llm_cost.catalog.arguments import Number, check_arguments


RULES = ("exact", "resample_target", "reject_if_draft_higher")
SUM_TOLERANCE = 1e-6  # a distribution's sum may differ from 1 by this much (then it is rescaled)


def distribution(probs, name: str = "distribution") -> np.ndarray:
    r"""A validated probability vector `p`: 1-D, finite, non-negative, summing to 1 (rescaled exactly).

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
    try:
        p = np.asarray(probs, dtype=float)
    except (TypeError, ValueError):  # a string, None, a ragged list
        p = np.zeros(0)
    if p.ndim != 1 or p.size == 0:
        raise InvalidValueError(f"{name} must be a non-empty 1-D vector of probabilities", params=(name,) if name.isidentifier() else ())
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise InvalidValueError(f"{name} must hold finite non-negative probabilities")
    total = p.sum()
    if abs(total - 1.0) > SUM_TOLERANCE:
        raise InvalidValueError(f"{name} must sum to 1, got {total!r}")
    return p / total


def distribution_pair(p, q) -> tuple[np.ndarray, np.ndarray]:
    """(`p`, `q`) as validated probability vectors (`distribution`) over the same tokens (one length).

    >>> distribution_pair([1.0], [0.5, 0.5])
    Traceback (most recent call last):
    ...
    llm_cost.errors.InvalidValueError: p and q must have the same length, got 1 and 2
    """
    p, q = distribution(p, "p"), distribution(q, "q")
    if p.shape != q.shape:
        raise InvalidValueError(f"p and q must have the same length, got {p.size} and {q.size}", params=("p", "q"))
    return p, q


def adjust(probs, *, temperature: float = 1.0, top_k: int | None = None,
           name: str = "distribution") -> np.ndarray:
    r"""The sampling distribution: top-k kept (ties by lower index), then `p`^(1/T) renormalized.

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
    weights = np.exp(logits - logits.max())
    return weights / weights.sum()


@check_arguments()
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
    p, q = distribution_pair(p, q)
    return 0.5 * float(np.abs(p - q).sum())


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
    """norm(max(0, `p` - `q`)), or zeros where p <= q everywhere."""
    excess = np.maximum(0.0, p - q)
    mass = excess.sum()
    return excess / mass if mass > 0 else excess


@check_arguments(temperature=Number(0), top_k=Number(1, integer=True))
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


@check_arguments()
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
    p, q = distribution_pair(p, q)
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


@check_arguments(samples=Number(1, 1e8, integer=True))
def sample_outputs(p, q, *, samples: int, rule: str = "exact", seed: int = 0) -> np.ndarray:
    r"""Empirical output frequencies of `samples` independent positions (seeded), by `rule`.

    Draw `x` ~ q; accept with u < p(x) / q(x) (or, for "reject_if_draft_higher", iff q(x) <= p(x));
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
    p, q = distribution_pair(p, q)
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
