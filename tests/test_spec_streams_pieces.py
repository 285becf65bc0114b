"""The fast path's acceptance draws and trajectories computed in cache-sized pieces are the same numbers.

`AcceptanceStreams` draws a chunk's uniforms in pieces of `PIECE` and the fast path computes the
trajectories of `SUB` requests at a time (bench/engine_profile.py: faster); both must give exactly
what one draw and one whole chunk give, or the fast path would leave the general loop's schedule.
"""

from __future__ import annotations

import numpy as np

from llm_cost.serving.serve_config import SpecConfig
from llm_cost.serving.spec_streams import CHUNK, PIECE, SUB, AcceptanceStreams, trajectories


def _streams(gamma: int = 4, outputs=None):
    rng = np.random.default_rng(3)
    out = rng.integers(1, 300, CHUNK + 50) if outputs is None else outputs
    return AcceptanceStreams(SpecConfig(gamma, 0.8, c=0.05, seed=7), out), np.asarray(out, dtype=np.int64)


def test_a_chunk_drawn_in_pieces_is_the_chunk_drawn_at_once():
    streams, _ = _streams()
    g, off = streams._block(0)
    assert len(g) > 3 * PIECE  # several pieces, the last one partial
    rng = np.random.default_rng(np.random.SeedSequence(7, spawn_key=(0, 1)))
    assert np.array_equal(g, streams._counts(rng.random(int(off[-1]))))


def test_trajectories_of_part_of_a_chunk_are_that_part_of_the_chunk_s():
    # gamma 1 below the streams' gamma 4: many requests run past their first block (`extra`)
    for gamma in (4, 1):
        streams, out = _streams(4)
        prompt = np.random.default_rng(4).integers(32, 512, CHUNK)
        need = np.maximum(out[:CHUNK] - 1, 0)
        R, offsets, packed, extra = trajectories(prompt, need, gamma, gamma + 1, 16, streams, 0)
        rounds = [packed[o:o + r] if o >= 0 else extra[i] for i, (r, o) in enumerate(zip(R, offsets))]
        assert extra or gamma == 4
        for lo in (0, SUB, CHUNK - SUB):
            part = trajectories(prompt[lo:lo + SUB], need[lo:lo + SUB], gamma, gamma + 1, 16, streams, 0, lo)
            r2, o2, p2, x2 = part
            assert np.array_equal(r2, R[lo:lo + SUB])
            for i in range(SUB):
                got = p2[o2[i]:o2[i] + r2[i]] if o2[i] >= 0 else x2[i]
                assert np.array_equal(got, rounds[lo + i]), (gamma, lo, i)


def test_the_rounds_read_ahead_are_the_stream_and_skipping_draws_them():
    # `upcoming` (a decode stretch's read ahead) is the stream's next rounds across its first block and
    # its own generator's tail; `skip` then draws them as `accepted` would, round for round
    from llm_cost.serving.serve_config import SpecConfig
    from llm_cost.serving.spec_streams import AcceptanceStreams

    outputs = [3, 40, 900, 5000]
    ahead, drawn = (AcceptanceStreams(SpecConfig(gamma=4, alpha=0.8, seed=2), outputs) for _ in range(2))
    for seq, output in enumerate(outputs):
        stream = ahead.stream(seq).tolist()
        at = 0
        for width in (1, 7, 300, 2000, 4000, 5000):
            got = ahead.upcoming(seq, width).tolist()
            assert got == stream[at:at + width], (seq, width)
            assert got == [drawn.accepted(seq, 4) for _ in range(len(got))]
            ahead.skip(seq, len(got))
            at += len(got)
        assert ahead.rounds_drawn[seq] == drawn.rounds_drawn[seq] == output - 1
