"""The K/V allocator of paged serving: the free blocks and each sequence's blocks, kept in one place.

`KvLedger` is the part of the general loop (`engine_loop.EngineLoop.ledger`) that every paged
allocation goes through: a decoder's rows ahead and a prompt chunk (`take`, `resize`; a decode
stretch's many at once, `set_blocks`), admission's
test (`fits`), a swap-out and a swap-in (`give`, `take`), a finish or a recompute preemption
(`release`). Block counts come from `kv_blocks.blocks_for` at the caller; the ledger only moves them:

    free + sum(blocks held, shared cached blocks once) = total blocks,   used = (total - free) x B

(`used` in K/V tokens, `B` the block size). A prefix cache (`prefix_cache.PrefixCache`) plugs in as
`cache`: a sequence's leading cached blocks are shared (`share`, charged once), a prefilled chunk's
duplicates are freed (`register`), a release hands the cached blocks to the cache's LRU table, and
`trim` is the point where the cache evicts the unreferenced blocks that the free ones no longer
cover; an offload tier (`host_tier.HostTier`, the cache's `host`) receives them there.

The storage is the `engine_state.EngineState` the ledger wraps (`free`, `blocks`, `used`): the
fast paths that hand a run over (`handover`, `fast_prefix`) fill those fields before the loop
takes it; inside the loop a decode stretch (`decode_stretch`) moves its blocks through `set_blocks`.
"""

from __future__ import annotations


class KvLedger:
    """The paged K/V blocks of one replica's run: `state.free` free blocks, `state.blocks[req]` the
    blocks sequence `req` holds (its shared cached ones included), `state.used` the K/V tokens held
    (blocks x `block_size`); `cache` a prefix cache plugged in, or None.

    Parameters
    ----------
    state : EngineState
        The run's state; its `free`, `blocks` and `used` are the ledger's storage.
    block_size : int
        Tokens per block (`ServeConfig.block_size`).
    cache : PrefixCache, optional
        The prefix cache (`prefix_caching`); its `trim`, `take`, `register`, `release` and `held`
        are called here.

    Examples
    --------
    >>> from llm_cost.serving.engine_state import EngineState
    >>> state = EngineState.start([40, 20], [0.0, 0.0], free_blocks=4, acceptance=None)
    >>> ledger = KvLedger(state, block_size=16)
    >>> ledger.fits(3, watermark=1), ledger.fits(4, watermark=1), ledger.fits(4, watermark=1, alone=True)
    (True, False, True)
    >>> ledger.take(0, 3)
    >>> state.free, state.used, state.blocks
    (1, 48.0, [3, 0])
    >>> ledger.resize(0, 2), state.free  # a roll-back: one block back
    (-1, 2)
    >>> ledger.give(0), state.free, state.used, state.blocks
    (2, 4, 0.0, [0, 0])
    """

    __slots__ = ("state", "block_size", "cache")

    def __init__(self, state, block_size: int, cache=None) -> None:
        self.state, self.block_size, self.cache = state, block_size, cache

    def fits(self, want: int, watermark: int = 0, alone: bool = False) -> bool:
        """Whether `want` more blocks may be taken: `watermark` blocks stay free after them, or (`alone`,
        nothing else running: vLLM admits a lone request below the watermark) they are free at all."""
        free = self.state.free
        return free - want >= watermark or (alone and free >= want)

    def take(self, req: int, blocks: int) -> None:
        """Sequence `req` takes `blocks` more free blocks."""
        state = self.state
        state.free -= blocks
        state.used += blocks * self.block_size
        state.blocks[req] += blocks

    def resize(self, req: int, want: int) -> int:
        """Sequence `req` holds exactly `want` blocks (grown, or shrunk by a roll-back); the change."""
        state = self.state
        change = want - state.blocks[req]
        state.free -= change
        state.used += change * self.block_size
        state.blocks[req] = want
        return change

    def set_blocks(self, order, counts, taken: int) -> None:
        """Many sequences resized at once (a decode stretch, `decode_stretch.DecodeStretch.commit`):
        sequence `order[i]` holds exactly `counts[i]` blocks, `taken` blocks (their growth summed)
        left the free ones."""
        state = self.state
        state.free -= taken
        state.used += taken * self.block_size
        blocks = state.blocks
        for req, count in zip(order, counts):
            blocks[req] = count

    def give(self, req: int) -> int:
        """Sequence `req`'s blocks are all free again (its K/V went elsewhere: a swap-out); how many."""
        state = self.state
        own = state.blocks[req]
        state.free += own
        state.used -= own * self.block_size
        state.blocks[req] = 0
        return own

    def release(self, req: int, kept: int = 0) -> int:
        """Sequence `req` lets go of its K/V (a finish or a recompute preemption); the blocks freed.
        With a cache its cached blocks go to the cache (those no other sequence holds join the LRU
        table, free blocks) and a finished sequence's `kept` K/V tokens may join it too
        (`PrefixCache.release`); the cache is trimmed to the free blocks first."""
        state, cache = self.state, self.cache
        own = state.blocks[req]
        if cache is not None:
            cache.trim(state.free)
            own = own - cache.held[req] + cache.release(req, kept)
        state.free += own
        state.used -= own * self.block_size
        state.blocks[req] = 0
        return own

    def share(self, req: int, hits: int, unref: int) -> None:
        """Sequence `req` (holding nothing) takes its first `hits` cached blocks (`PrefixCache.lookup`):
        the `unref` of them no sequence held leave the free blocks, the others are charged already."""
        self.cache.take(req, hits)
        state = self.state
        state.free -= unref
        state.used += unref * self.block_size
        state.blocks[req] += hits

    def register(self, req: int, prefilled: int) -> int:
        """Sequence `req` has prefilled `prefilled` prompt tokens: its newly full blocks join the cache
        (`PrefixCache.register`), the copies of blocks another sequence cached meanwhile are freed; how many."""
        dup = self.cache.register(req, prefilled)
        state = self.state
        state.free += dup
        state.used -= dup * self.block_size
        return dup

    def trim(self) -> None:
        """The cache's eviction point: after allocations took free blocks, the cache keeps no more
        unreferenced blocks than there are free ones (`PrefixCache.trim`; nothing without a cache)."""
        if self.cache is not None:
            self.cache.trim(self.state.free)
