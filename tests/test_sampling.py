"""Exact speculative sampling, its wrong variants, and the Monte Carlo of rounds."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_cost import speculative as sp
from llm_cost.errors import InvalidValueError
from llm_cost.speculative.rounds import BurstyAcceptance, IndependentAcceptance, simulate_rounds
from llm_cost.speculative.sampling import adjust, output_distribution, sample_outputs, speculative_step, total_variation

EXACT = 1e-12  # float agreement of identities that hold exactly


@st.composite
def distributions(draw, size: int):
    """A probability vector with some exact zeros (top-k and one-hot cases live there)."""
    w = np.array(draw(st.lists(st.one_of(st.just(0.0), st.floats(1e-6, 1.0)), min_size=size, max_size=size)))
    if w.sum() == 0:
        w[draw(st.integers(0, size - 1))] = 1.0
    return w / w.sum()


@st.composite
def pairs(draw):
    size = draw(st.integers(1, 12))
    return draw(distributions(size)), draw(distributions(size))


temperatures = st.sampled_from([0.0, 0.3, 0.5, 1.0, 2.0])
top_ks = st.one_of(st.none(), st.integers(1, 12))


@given(pairs(), temperatures, top_ks)
def test_output_is_the_adjusted_target(pq, temperature, top_k):
    # the lecture §7.1 and §7.3 (the article §2.2): min(p, q) + (1 - beta) residual = p, for p and q
    # adjusted alike, whatever q is
    p, q = pq
    step = speculative_step(p, q, temperature=temperature, top_k=top_k)
    assert np.allclose(step.output, step.p, atol=EXACT)
    assert step.acceptance == pytest.approx(1 - step.total_variation, abs=EXACT)  # §7.2
    assert step.residual.sum() == pytest.approx(float((step.p > step.q).any()), abs=1e-9)  # a distribution, or none
    assert np.all(step.residual[step.p <= step.q] == 0)  # mass only where p > q


@given(pairs())
def test_wrong_variants_formulas(pq):
    p, q = pq
    beta = np.minimum(p, q).sum()
    resample = output_distribution(p, q, "resample_target")
    assert np.allclose(resample, np.minimum(p, q) + (1 - beta) * p, atol=EXACT)
    assert resample.sum() == pytest.approx(1.0)
    assert output_distribution(p, q, "reject_if_draft_higher").sum() == pytest.approx(1.0)


def test_wrong_variants_are_biased_unless_q_is_p():
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.6, 0.2])
    for rule in ("resample_target", "reject_if_draft_higher"):
        assert total_variation(output_distribution(p, q, rule), p) > 0.1
        assert np.allclose(output_distribution(p, p, rule), p)
    # resampling from p over-weights what q favours (token b): the lecture exercise 4
    assert output_distribution(p, q, "resample_target")[1] > p[1]


def test_greedy_is_argmax_matching():
    # the lecture §7.4: temperature 0 accepts iff the argmaxes agree; the output is the target's argmax
    p, q = [0.1, 0.6, 0.3], [0.5, 0.2, 0.3]
    step = speculative_step(p, q, temperature=0)
    assert step.acceptance == 0.0
    assert step.output.tolist() == [0.0, 1.0, 0.0]
    assert speculative_step(p, [0.2, 0.7, 0.1], temperature=0).acceptance == 1.0


def test_adjust_temperature_and_top_k():
    p = np.array([0.5, 0.3, 0.2])
    assert np.allclose(adjust(p, temperature=0.5), p ** 2 / (p ** 2).sum())
    assert np.allclose(adjust(p, top_k=2), [0.625, 0.375, 0.0])
    assert np.allclose(adjust(p, temperature=1.0), p)
    # adjusting only p (not q) stays exact but accepts less (the lecture §7.3)
    q = np.array([0.45, 0.35, 0.2])
    both = speculative_step(p, q, temperature=0.5).acceptance
    only_p = np.minimum(adjust(p, temperature=0.5), q).sum()
    assert only_p < both


@pytest.mark.parametrize("rule", ["exact", "resample_target", "reject_if_draft_higher"])
def test_monte_carlo_agrees_with_the_exact_output(rule):
    p, q = [0.5, 0.3, 0.2], [0.2, 0.6, 0.2]
    n = 200_000
    empirical = sample_outputs(p, q, samples=n, rule=rule, seed=7)
    exact = output_distribution(p, q, rule)
    sigma = np.sqrt(exact * (1 - exact) / n)
    assert np.all(np.abs(empirical - exact) <= 5 * sigma + 1e-12)


def test_sampling_is_seeded():
    a = sample_outputs([0.5, 0.5], [0.9, 0.1], samples=1000, seed=3)
    b = sample_outputs([0.5, 0.5], [0.9, 0.1], samples=1000, seed=3)
    assert np.array_equal(a, b)


@settings(max_examples=10, deadline=None)
@given(st.floats(0.05, 0.95), st.integers(1, 8))
def test_independent_rounds_agree_with_eq1(alpha, gamma):
    stats = simulate_rounds(IndependentAcceptance(alpha), gamma, streams=128, positions=1024, seed=11)
    expected = sp.expected_tokens(alpha, gamma)
    assert abs(stats.tokens_per_round - expected) < 5 * stats.tokens_per_round_stderr + 1e-9
    assert abs(stats.overestimate) < 0.02


def test_bursty_rounds_deliver_less_than_eq1():
    # the lecture §8.3: the same mean acceptance, hard positions in bursts -> fewer tokens per round
    process = BurstyAcceptance(easy_alpha=1.0, hard_alpha=0.2, p_easy_to_hard=0.1, p_hard_to_easy=0.3)
    stats = simulate_rounds(process, 4, seed=5)
    assert process.stationary_alpha == pytest.approx(0.8)
    assert stats.predicted > stats.tokens_per_round + 10 * stats.tokens_per_round_stderr
    assert sp.expected_tokens(stats.alpha_stationary, 4) > stats.tokens_per_round
    again = simulate_rounds(process, 4, seed=5)
    assert again == stats  # seeded


def test_extreme_acceptance():
    assert simulate_rounds(IndependentAcceptance(1.0), 4, positions=100).tokens_per_round == 5.0
    assert simulate_rounds(IndependentAcceptance(0.0), 4, positions=100).tokens_per_round == 1.0


@pytest.mark.parametrize("call,message", [
    (lambda: speculative_step([0.5, 0.6], [0.5, 0.5]), "p must sum to 1"),
    (lambda: speculative_step([0.5, 0.5], [-0.5, 1.5]), "q must hold finite non-negative"),
    (lambda: speculative_step([[1.0]], [[1.0]]), "p must be a non-empty 1-D vector"),
    (lambda: speculative_step([0.5, 0.5], [0.5, 0.5], temperature=-1), "temperature must be in [0, inf)"),
    (lambda: speculative_step([0.5, 0.5], [0.5, 0.5], top_k=0), "top_k must be in [1, inf)"),
    (lambda: output_distribution([1.0], [1.0], "sloppy"), "rule must be one of exact"),
    (lambda: IndependentAcceptance(1.5), "alpha must be in [0, 1]"),
    (lambda: BurstyAcceptance(0.9, 0.2, 0.0, 0.5), "p_easy_to_hard must be in (0, 1]"),
    (lambda: simulate_rounds(IndependentAcceptance(0.5), 0), "gamma must be in [1, inf)"),
    (lambda: simulate_rounds(0.5, 4), "process must be"),
])
def test_bad_input(call, message):
    with pytest.raises(InvalidValueError) as err:
        call()
    assert message in str(err.value)
