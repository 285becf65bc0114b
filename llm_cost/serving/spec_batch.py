"""Speculation inside a continuous batch: the accepted drafts of each sequence, and gamma per iteration.

The lecture §11: "批里每个序列接受的个数不同 ... 调度器要算新的账：一次迭代的 token 数 = 各序列的
(gamma + 1) 之和 ... 批大时 ... 调度器要减小 gamma 或关掉投机", and §9.3: low load trades
speculation for latency, high load turns it down for throughput.
"""

from __future__ import annotations

import math

from llm_cost.roofline.pass_terms import decode_pairs  # unchecked: a hot loop (roofline.terms)
from llm_cost.serving.serve_config import SpecConfig
from llm_cost.speculative.closed_forms import expected_tokens_unchecked

_BLOCK = 1 << 16  # uniforms drawn per numpy call
# The engine draws independent positions from each sequence's own stream (`spec_streams`); this
# class serves the bursty chain (and `accepted` for one sequence alone).


class Acceptance:
    """Accepted drafts per round, seeded: independent positions (Eq. 1) or a bursty chain.

    Independent: n = min(floor(ln u / ln alpha), gamma), so P(n >= k) = alpha^k for k <= gamma and
    E[n + 1] = (1 - alpha^(gamma + 1)) / (1 - alpha) (Leviathan Eq. 1). Bursty
    (`rounds.BurstyAcceptance`): each sequence carries its easy / hard state from position to position.

    >>> from llm_cost.serving.serve_config import SpecConfig
    >>> a = Acceptance(SpecConfig(gamma=4, alpha=0.8, seed=0))
    >>> mean = sum(a.accepted(0, 4) + 1 for _ in range(200_000)) / 200_000
    >>> abs(mean - (1 - 0.8 ** 5) / 0.2) < 0.01
    True
    """

    def __init__(self, spec: SpecConfig) -> None:
        import numpy as np

        self._rng = np.random.default_rng(int(spec.seed))
        self._u: list[float] = []
        self._k = 0
        self.alpha = float(spec.alpha)
        self._log_a = math.log(self.alpha) if 0 < self.alpha < 1 else None
        self.bursty = spec.bursty
        self._hard: dict[int, bool] = {}

    def _uniform(self) -> float:
        if self._k >= len(self._u):
            self._u = self._rng.random(_BLOCK).tolist()
            self._k = 0
        draw = self._u[self._k]
        self._k += 1
        return draw

    def accepted(self, seq: int, gamma: int) -> int:
        """Drafts accepted in one round of `gamma` for sequence `seq` (0..gamma)."""
        if self.bursty is not None:
            return self._bursty(seq, gamma)
        if self._log_a is None:
            return gamma if self.alpha >= 1 else 0
        draw = self._uniform()
        if draw <= 0.0:
            return gamma
        drafts = int(math.log(draw) / self._log_a)
        return drafts if drafts < gamma else gamma

    def _bursty(self, seq: int, gamma: int) -> int:
        chain = self.bursty
        hard = self._hard.get(seq)
        if hard is None:
            hard = self._uniform() < chain.hard_share
        drafts = 0
        while drafts < gamma:
            ok = self._uniform() < (chain.hard_alpha if hard else chain.easy_alpha)
            flip = self._uniform()
            hard = flip >= chain.p_hard_to_easy if hard else flip < chain.p_easy_to_hard
            if not ok:
                break
            drafts += 1
        self._hard[seq] = hard
        return drafts


def choose_gamma(spec: SpecConfig, cost, decoders, kv) -> int:
    r"""gamma for this iteration: fixed, off above a batch, or the rate-maximising one (adaptive).

    Adaptive: over `g` in 0..gamma, the g maximising the decoders' expected tokens per second of a
    pure decode iteration, with the decoders' summed context C and count B:

    .. math:: g^* = \arg\max_g \frac{B\,E(\alpha, g)}{T(B(g+1),\ C + B(g+1),\ \mathit{pairs}(g)) + g\,T_{draft}}

    (pairs(g) = (g + 1) C + B (g + 1)(g + 2) / 2; windows are ignored in the choice itself).
    """
    if spec.policy == "fixed":
        return spec.gamma
    batch = len(decoders)
    if spec.policy == "off-above-batch":
        return 0 if batch > spec.off_above else spec.gamma
    ctx = float(sum(kv[seq] for seq in decoders))
    plain = (spec.draft_cost or cost).time(batch, ctx + batch, decode_pairs(1, batch, ctx))
    draft = plain if spec.draft_cost is not None else spec.c * plain
    best, best_rate = 0, -1.0
    for g in range(spec.gamma + 1):
        rows = g + 1
        seconds = cost.time(batch * rows, ctx + batch * rows, decode_pairs(rows, batch, ctx)) + g * draft
        rate = batch * float(expected_tokens_unchecked(spec.alpha, g)) / seconds
        if rate > best_rate * (1 + 1e-12):
            best, best_rate = g, rate
    return best
