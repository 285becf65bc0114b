"""Formula invariants: speculative decoding, sampling, trees, independent of any model (FORMULAS).

Registered by `runner.all_invariants`; run once per `llm-cost check`. Each hypothesis test
pins the edge cases it must survive with `@example` (alpha 0 and 1, gamma 0 and 10^6). The
strategies are `strategies`' public ones.

Symbols, as the speculative formulas name them: `p` the target's distribution, `q` the draft's,
`c` the draft's cost per token relative to the target's.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import assume, example, given
from hypothesis import strategies as st

from llm_cost.checks.invariant import Invariant
from llm_cost.checks.strategies import (
    alphas,
    costs,
    gammas,
    hit_rates,
    probability_weights,
    temperatures,
    tree_widths,
)
from llm_cost import speculative as speculative
from llm_cost.speculative import sampling, trees

EXACT = 1e-12  # the tolerance for "returns p"


def _pair(draw_p, draw_q):
    """Two distributions over the same vocabulary from raw non-negative weights: the target's `p`, the draft's `q`."""
    size = min(len(draw_p), len(draw_q))
    p, q = np.array(draw_p[:size]), np.array(draw_q[:size])
    assume(p.sum() > 1e-6 and q.sum() > 1e-6)
    return p / p.sum(), q / q.sum()


def _expected_bounds(*_):
    @given(alpha=alphas, gamma=gammas)
    @example(alpha=1.0, gamma=10**6)
    @example(alpha=0.0, gamma=0)
    @example(alpha=1.0 - 1e-15, gamma=10**6)
    def prop(alpha, gamma):
        expected = speculative.expected_tokens(alpha, gamma)
        assert math.isfinite(expected) and 1.0 <= expected <= gamma + 1
        assert speculative.expected_tokens(alpha, gamma + 1) >= expected
        assert speculative.expected_tokens(min(1.0, alpha + 0.01), gamma) >= expected
    return prop


def _speedup_le_expected(*_):
    """speedup(alpha, gamma, `c`) = E at `c` = 0 and never exceeds E (`c` the draft's cost per token)."""
    @given(alpha=alphas, gamma=gammas, c=costs)
    @example(alpha=1.0, gamma=10**6, c=0.0)
    def prop(alpha, gamma, c):
        expected = speculative.expected_tokens(alpha, gamma)
        assert speculative.speedup(alpha, gamma, 0.0) == expected
        assert speculative.speedup(alpha, gamma, c) <= expected
    return prop


def _gamma_one_bound(*_):
    """alpha > `c` (the draft's cost per token): the optimum beats (1 + alpha) / (1 + `c`) > 1."""
    @given(alpha=alphas, c=costs)
    def prop(alpha, c):
        assume(alpha > c + 1e-12)  # closer than float resolution, (1 + alpha) / (1 + c) rounds to 1
        bound = speculative.gamma_one_speedup(alpha, c)
        assert bound > 1.0
        assert math.isclose(speculative.speedup(alpha, 1, c), bound, rel_tol=1e-12)
        best = speculative.optimal_gamma(alpha, c, gamma_max=256)
        assert float(best.speedup) >= bound * (1 - 1e-12)
    return prop


def _optimal_gamma(*_):
    """The optimal gamma at draft cost `c` beats its neighbours."""
    @given(alpha=st.floats(min_value=0.0, max_value=0.99), c=st.floats(min_value=0.001, max_value=2.0))
    def prop(alpha, c):
        best = speculative.optimal_gamma(alpha, c, gamma_max=1024)
        gamma = int(best.gamma)
        speedup = speculative.speedup(alpha, gamma, c)
        for other in (gamma - 1, gamma + 1):
            if 0 <= other <= 1024:
                assert speedup >= speculative.speedup(alpha, other, c) * (1 - 1e-12), (gamma, other)
    return prop


def _ops_factor(*_):
    @given(alpha=alphas, gamma=gammas, c_hat=costs)
    @example(alpha=1.0, gamma=0, c_hat=0.0)
    def prop(alpha, gamma, c_hat):
        factor = speculative.ops_factor(alpha, gamma, c_hat)
        assert math.isfinite(factor) and factor >= 1.0 - 1e-12
    return prop


def _exact_sampling(*_):
    """Speculative sampling from the target's `p` and the draft's `q` returns `p` (1e-12); acceptance = 1 - TV."""
    @given(raw_p=probability_weights, raw_q=probability_weights, temperature=temperatures, top_k=st.integers(1, 12))
    @example(raw_p=[0.5, 0.3, 0.2], raw_q=[0.2, 0.6, 0.2], temperature=1.0, top_k=3)  # exercise 3
    def prop(raw_p, raw_q, temperature, top_k):
        p, q = _pair(raw_p, raw_q)
        step = sampling.speculative_step(p, q, temperature=temperature, top_k=min(top_k, p.size))
        assert np.max(np.abs(step.output - step.p)) <= EXACT
        assert abs(step.acceptance - (1 - step.total_variation)) <= EXACT
    return prop


def _wrong_variants_biased(*_):
    """Each wrong rule is biased exactly when it can be: resampling from the target's `p` is unbiased iff
    min(p, q) (`q` the draft's) is proportional to p; rejecting whenever q > p is unbiased iff no token has
    q(x) > p(x) > 0. (Hypothesis found p = (1, 0), q = (1/2, 1/2): p != q, yet both rules
    return p; "biased whenever p != q" is false as stated.)"""

    @given(raw_p=probability_weights, raw_q=probability_weights)
    @example(raw_p=[1.0, 0.0], raw_q=[0.5, 0.5])
    @example(raw_p=[0.5, 0.3, 0.2], raw_q=[0.2, 0.6, 0.2])  # exercise 4: TV 0.15
    def prop(raw_p, raw_q):
        p, q = _pair(raw_p, raw_q)
        kept = np.minimum(p, q)
        gap = np.abs(kept - kept.sum() * p).max()  # 0 iff min(p, q) is proportional to p
        tv1 = np.abs(sampling.output_distribution(p, q, "resample_target") - p).sum() / 2
        if gap > 1e-6:
            assert tv1 > 0, "resampling from p after a rejection should be biased here"
        elif gap < 1e-12:
            assert tv1 < 1e-9
        overshoot = ((q - p) * (p > 0)).max()  # > 0 iff some token has q(x) > p(x) > 0
        tv2 = np.abs(sampling.output_distribution(p, q, "reject_if_draft_higher") - p).sum() / 2
        if overshoot > 1e-6 and p[(q > p) & (p > 0)].max() > 1e-6:
            assert tv2 > 0, "rejecting whenever q > p should be biased here"
        elif overshoot <= 0:
            assert tv2 < 1e-9
    return prop


def _trees(*_):
    @given(ws=tree_widths, rates=hit_rates)
    def prop(ws, rates):
        hits = trees.TopKHits.of(dict(zip((1, 2, 4, 8), rates)))
        nodes = trees.tree_nodes(ws)
        assert nodes >= len(ws) and nodes == sum(math.prod(ws[:depth + 1]) for depth in range(len(ws)))
        tau = trees.tree_tau(ws, hits)
        assert 1.0 <= tau <= len(ws) + 1
        if all(width == 1 for width in ws):  # a chain: tau is Eq. 1 with alpha = h(1)
            assert math.isclose(tau, speculative.expected_tokens(rates[0], len(ws)), rel_tol=1e-12)
    return prop


FORMULAS = [
    Invariant("expected_tokens_bounds", "1 <= E <= gamma + 1, non-decreasing in alpha and gamma",
              _expected_bounds, "formula"),
    Invariant("speedup_le_expected", "speedup = E at c = 0 and never exceeds E", _speedup_le_expected,
              "formula"),
    Invariant("gamma_one_bound", "alpha > c: the optimum beats (1 + alpha) / (1 + c) > 1",
              _gamma_one_bound, "formula"),
    Invariant("optimal_gamma", "the optimal gamma beats its neighbours", _optimal_gamma, "formula"),
    Invariant("ops_factor_ge_1", "the operations factor is at least 1", _ops_factor, "formula"),
    Invariant("exact_sampling", "speculative sampling returns p (1e-12); acceptance = 1 - TV",
              _exact_sampling, "formula"),
    Invariant("wrong_variants_biased", "both wrong rules are biased wherever bias is possible",
              _wrong_variants_biased, "formula"),
    Invariant("tree_counts", "tree nodes = sum of width products; 1 <= tau <= depth + 1", _trees,
              "formula"),
]
