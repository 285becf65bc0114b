"""Each sequence's own stream of accepted drafts (independent positions, Eq. 1), drawn ahead in numpy.

Sequence i's round j (its j-th verification, j = 0, 1, ...) accepts min(G[i, j], gamma) drafts, where
G[i, j] = #{k in 1..gamma_max : u[i, j] < alpha^k}, so P(G >= `k`) = alpha^k (k <= gamma_max) with one
uniform `u` per round. The uniforms of the sequences in a chunk of `CHUNK` requests come from one
generator seeded (seed, spawn key (chunk, 1)): L[i] per sequence, consecutively, with L[i] a little above the
rounds sequence i needs at gamma_max (mean + 3 sd + 2, at most output - 1); the rounds past L[i]
(fewer tokens per round at a smaller gamma, or an unlucky sequence) come from a generator of that
sequence's own, seeded (seed, spawn key (chunk, 2, i - chunk x CHUNK)) and drawn only when asked for,
output - 1 - L[i] of them: every round a sequence can take (each yields at least one token) has its
uniform. Which round a draw serves depends on the sequence and the round only, never on the schedule,
so the engine's general loop (`accepted`, round by round) and its fast path (`trajectories`, all of a
sequence's rounds at its admission) see the same acceptances.
"""

from __future__ import annotations

import numpy as np

from llm_cost.serving.kv_blocks import blocks_for

CHUNK = 1 << 14  # requests per generator
# Requests whose trajectories are computed together (a divisor of CHUNK), and uniforms drawn and counted
# per call: numpy's temporaries then stay in the cache (the trajectories of bench/simulator.py's 10^6
# requests about 20% faster than by whole chunks: bench/engine_profile.py); a generator's draws in
# pieces are its draws at once (tests/test_spec_streams_pieces.py).
SUB = 1 << 11
PIECE = 1 << 16


def expected_and_variance(alpha: float, gamma: int) -> tuple[float, float]:
    """Mean and variance of the tokens of one round, min(G, gamma) + 1 (P(G >= `k`) = alpha^k)."""
    at_least = [alpha ** k for k in range(gamma + 1)]  # P(tokens >= k + 1)
    mean = sum(at_least)
    second = sum((2 * k + 1) * at_least[k] for k in range(gamma + 1))  # E[X^2] = sum (2k - 1) P(X >= k)
    return mean, max(second - mean * mean, 0.0)


class AcceptanceStreams:
    """Accepted drafts per sequence and round (module doc), for requests of `output` tokens."""

    def __init__(self, spec, output) -> None:
        self.gmax = int(spec.gamma)
        self.alpha = float(spec.alpha)
        self.seed = int(spec.seed)
        self._need = np.maximum(np.asarray(output, dtype=np.int64) - 1, 0)  # rounds at most
        self._th = self.alpha ** np.arange(1, self.gmax + 1, dtype=np.float64)
        mean, var = expected_and_variance(self.alpha, self.gmax)
        need = self._need.astype(np.float64)
        est = np.ceil(need / mean + 3.0 * np.sqrt(need * var / mean ** 3) + 2.0)
        self._len = np.minimum(self._need, est.astype(np.int64))
        self._first: dict[int, tuple] = {}
        self._second: dict[int, np.ndarray] = {}  # sequence -> G of its rounds past the first L[i]
        self.rounds_drawn: dict[int, int] = {}  # sequence -> rounds drawn so far (the engine hands it over)
        self._cache: dict[int, list] = {}

    def _counts(self, u):
        """G for each uniform `u`: how many of alpha^1..alpha^gamma_max exceed it (int8)."""
        counts = np.zeros(u.shape, dtype=np.int8)
        if self.gmax <= 8:
            for th in self._th:
                counts += u < th
        else:
            counts[:] = self.gmax - np.searchsorted(self._th[::-1], u, side="right")
        return counts

    def _block(self, chunk: int):
        """(G of the first L[i] rounds of the sequences of `chunk` one after another, offsets per sequence)."""
        got = self._first.get(chunk)
        if got is None:
            lo, hi = chunk * CHUNK, min((chunk + 1) * CHUNK, len(self._need))
            off = np.zeros(hi - lo + 1, dtype=np.int64)
            np.cumsum(self._len[lo:hi], out=off[1:])
            rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(chunk, 1)))
            counts = np.empty(int(off[-1]), dtype=np.int8)
            for at in range(0, len(counts), PIECE):  # in pieces (module constants): the same draws
                counts[at:at + PIECE] = self._counts(rng.random(min(PIECE, len(counts) - at)))
            got = self._first[chunk] = (counts, off)
        return got

    def _tail(self, seq: int) -> np.ndarray:
        """G of sequence `seq`'s rounds past its first L[seq], from its own generator (module doc)."""
        got = self._second.get(seq)
        if got is None:
            chunk, pos = divmod(seq, CHUNK)
            rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(chunk, 2, pos)))
            got = self._second[seq] = self._counts(rng.random(int(self._need[seq] - self._len[seq])))
        return got

    def stream(self, seq: int) -> np.ndarray:
        """G of every round sequence `seq` can take (output - 1 of them), its first L[seq] then the rest."""
        chunk, pos = divmod(seq, CHUNK)
        g1, o1 = self._block(chunk)
        head = g1[o1[pos]:o1[pos + 1]]
        if o1[pos + 1] - o1[pos] == self._need[seq]:
            return head
        return np.concatenate([head, self._tail(seq)])

    def accepted(self, seq: int, gamma: int) -> int:
        """Drafts sequence `seq` accepts in its next round of `gamma` (the general loop, round by round)."""
        rounds = self.rounds_drawn.get(seq, 0)
        self.rounds_drawn[seq] = rounds + 1
        cached = self._cache.get(seq)
        if cached is None:
            cached = self._cache[seq] = self.stream(seq).tolist()
        if rounds + 1 == len(cached):
            del self._cache[seq]  # its last possible round
        drafts = cached[rounds]
        return drafts if drafts < gamma else gamma

    def upcoming(self, seq: int, rounds: int) -> np.ndarray:
        """G of sequence `seq`'s next `rounds` rounds (fewer where its stream ends), not yet drawn: a
        decode stretch (`decode_stretch`) reads them ahead, then draws them with `skip`."""
        drawn = self.rounds_drawn.get(seq, 0)
        chunk, pos = divmod(seq, CHUNK)
        g1, o1 = self._block(chunk)
        lo, first = int(o1[pos]), int(o1[pos + 1] - o1[pos])  # its first L[seq] rounds at g1[lo:lo + first]
        head = g1[lo + min(drawn, first):lo + min(drawn + rounds, first)]
        if drawn + rounds <= first:
            return head
        tail = self._tail(seq)[max(drawn - first, 0):drawn + rounds - first]
        return np.concatenate([head, tail]) if len(head) else tail

    def skip(self, seq: int, rounds: int) -> None:
        """Sequence `seq`'s next `rounds` rounds drawn, as `rounds` calls of `accepted` draw them."""
        drawn = self.rounds_drawn[seq] = self.rounds_drawn.get(seq, 0) + rounds
        if drawn >= self._need[seq]:
            self._cache.pop(seq, None)  # its last possible round (`accepted`)

    def first_block(self, chunk: int, lo: int = 0, hi: int = CHUNK):
        """(G of the first block, offsets per sequence from the first, round counts per sequence) of
        the sequences lo .. hi - 1 of `chunk`."""
        g1, o1 = self._block(chunk)
        hi = min(hi, len(o1) - 1)
        return g1[o1[lo]:o1[hi]], o1[lo:hi + 1] - o1[lo], self._len[chunk * CHUNK + lo:chunk * CHUNK + hi]


def trajectories(prompt, need, gamma: int, ahead: int, block: int | None, streams, chunk: int, lo: int = 0):
    """Every decode round of requests of one chunk (from its `lo`-th on), fixed `gamma`, for the engine's
    fast path.

    Request i (prompt P, `need` = output - 1 tokens to decode) prefilled in iteration a decodes in
    iterations a + 1 .. a + R[i]; before its round j it holds kv = P + (tokens gained so far) and,
    paged, ceil((kv + ahead) / block) blocks (ahead = gamma + 1 rows allocated on demand).
    Returns (`R`, offsets, packed, extra): request i's rounds are packed[offsets[i]:offsets[i] + R[i]],
    kv + (blocks << 32) as int64, or extra[i] (an array) where offsets[i] is -1 (a request whose
    rounds run past its first block of draws). Without `streams` every round gains one token.
    """
    prompt = np.asarray(prompt, dtype=np.int64)
    need = np.asarray(need, dtype=np.int64)
    count = len(need)
    if streams is None:  # one token a round: tokens before round j of the chunk = j
        lengths = need
        tok = np.ones(int(need.sum()), dtype=np.int64)
        before = np.arange(len(tok), dtype=np.int64)
    else:
        g1, o1, lengths = streams.first_block(chunk, lo, lo + count)
        tok = g1.astype(np.int64)  # int64 throughout: no cast in cumsum, searchsorted or the sums below
        if gamma < streams.gmax:
            np.minimum(tok, gamma, out=tok)
        tok += 1
        before = np.cumsum(tok)
        before -= tok  # tokens gained before each round, the chunk's requests one after another
    start = np.zeros(count, dtype=np.int64)
    np.cumsum(lengths[:-1], out=start[1:])
    if len(before):
        first = np.minimum(start, len(before) - 1)  # a request with no rounds (output 1): any, unused
        last = np.minimum(start + lengths - 1, len(before) - 1)
        prior = before[first]
        gained = before[last] + tok[last] - prior  # tokens the first block's rounds give
        gained[lengths == 0] = 0
        # rounds before need is reached: before < prior + need (before rises by at least 1 a round)
        R = np.searchsorted(before, prior + need, side="left") - start
        np.clip(R, 0, lengths, out=R)
    else:
        prior, gained, R = (np.zeros(count, dtype=np.int64) for _ in range(3))
    vals = np.repeat(prompt - prior, lengths)
    vals += before  # kv before each round
    if block:
        up = _blocks(vals, ahead, block)
        up <<= 32
        vals += up
    offsets = start.copy()
    extra = {}
    for request in np.flatnonzero(gained < need).tolist():  # past the first block: the whole stream, rare
        tokens = np.minimum(streams.stream(chunk * CHUNK + lo + request), gamma).astype(np.int64) + 1
        earlier = np.cumsum(tokens) - tokens
        kv = earlier[earlier < need[request]] + prompt[request]
        if block:
            kv += _blocks(kv, ahead, block) << 32
        extra[request] = kv
        R[request] = len(kv)
        offsets[request] = -1
    return R, offsets, vals, extra


def _blocks(kv, ahead: int, block: int):
    """ceil((kv + ahead) / block) of an int64 array (`kv_blocks.blocks_for`)."""
    return blocks_for(kv + ahead, block)
