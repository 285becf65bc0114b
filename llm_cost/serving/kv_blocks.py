"""Paged K/V: how many blocks hold a number of K/V tokens (the one place the rounding is written).

    blocks_for(tokens, block_size) = ceil(tokens / block_size)
    block_pool(capacity, block_size, watermark) = (capacity // block_size, ceil(watermark x that))

Every allocation of the engine (a decoder's rows ahead, a prompt chunk, a swap-in, the roll-back
after a speculative round), the fast path's trajectories and its statistics count blocks with it;
the engine's checks, its general loop and every fast path size the pool with `block_pool`.
"""

from __future__ import annotations

import math


def blocks_for(tokens, block_size: int):
    """Blocks of `block_size` tokens that hold `tokens` K/V tokens: ceil(tokens / block_size).

    Numbers or numpy integer arrays (elementwise; a shift when the block size is a power of two).
    vLLM's block tables allocate whole blocks of 16 tokens by default (`--block-size 16`).

    >>> blocks_for(0, 16), blocks_for(1, 16), blocks_for(16, 16), blocks_for(17, 16), blocks_for(9, 1)
    (0, 1, 1, 2, 9)
    >>> import numpy as np
    >>> blocks_for(np.array([0, 15, 16, 33]), 16).tolist(), blocks_for(np.array([5, 10]), 3).tolist()
    ([0, 1, 1, 3], [2, 4])
    """
    if getattr(tokens, "ndim", 0) and tokens.dtype.kind in "iu" and block_size & (block_size - 1) == 0:
        return (tokens + (block_size - 1)) >> (block_size.bit_length() - 1)
    return -(-tokens // block_size)


def block_pool(capacity_tokens: int, block_size: int, watermark: float) -> tuple[int, int]:
    """(total blocks, watermark blocks) of a paged K/V pool: the whole blocks of `block_size` tokens
    in `capacity_tokens` (a partial block holds nothing), and ceil(watermark x total) of them that
    admission keeps free (vLLM's `watermark`, a fraction in [0, 1)).

    >>> block_pool(100, 16, 0.0), block_pool(100, 16, 0.01), block_pool(1600, 16, 0.05)
    ((6, 0), (6, 1), (100, 5))
    """
    total = capacity_tokens // block_size
    return total, math.ceil(watermark * total)
