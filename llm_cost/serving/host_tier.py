"""K/V offload to host memory (issue 25.4): a host tier of `kv_offload_bytes` beside the GPU's blocks.

Two kinds of K/V live there, both moved over the host link (`ServeConfig.host_bytes_per_s`, one
direction) and never recomputed while they stay:

- prefix blocks the GPU's prefix cache evicts (`PrefixCache.trim` spills them here): LRU again, each
  `block_bytes`, copied out over the host link before the GPU block is written again: `put` counts
  their bytes and `sent` charges them (bytes in `swap_bytes`, seconds added to the next iteration
  the engine launches, the one that writes over the block: not overlapped with compute, as the
  transfers back are not); a later request whose cached prefix continues into them brings them back
  (`PrefixCache.take_hosted`), the transfer added to the iteration that admits it;
- preempted sequences under recompute preemption (`PreemptionPolicy.preempt`): `pin`ned while
  swapped out, evicting prefix blocks for room (a sequence's state before a cache's copy); without
  room the victim is recomputed as before.

Bytes: `used` = pinned + blocks x block_bytes <= capacity_bytes at every step.
"""

from __future__ import annotations

from collections import OrderedDict


class HostTier:
    """The host tier's two tables (module doc): `blocks` (prefix block keys, LRU order) and `pinned`
    bytes of swapped-out sequences; `capacity_bytes`, `block_bytes` in bytes."""

    def __init__(self, capacity_bytes: float, block_bytes: float) -> None:
        self.capacity_bytes, self.block_bytes = float(capacity_bytes), float(block_bytes)
        self.blocks: OrderedDict = OrderedDict()
        self.pinned = 0.0
        self.evictions = 0  # prefix blocks dropped from the host tier (recomputed if asked for again)
        self.outbound = 0.0  # bytes of prefix blocks put here and not yet charged (`sent`)

    @property
    def used(self) -> float:
        """Bytes held: pinned sequences and prefix blocks."""
        return self.pinned + len(self.blocks) * self.block_bytes

    def _evict_to(self, room: float) -> bool:
        """Drop LRU prefix blocks until `room` bytes are free; False when the pinned bytes leave too little."""
        if room > self.capacity_bytes - self.pinned + 1e-9:
            return False
        while self.capacity_bytes - self.used + 1e-9 < room:
            self.blocks.popitem(last=False)
            self.evictions += 1
        return True

    def put(self, key) -> None:
        """A prefix block evicted from the GPU comes here (the most recent), if it can fit at all."""
        if self._evict_to(self.block_bytes):
            self.blocks[key] = None
            self.outbound += self.block_bytes
        else:
            self.evictions += 1

    def sent(self, stats, bytes_per_s: float) -> float:
        """The prefix blocks put here since the last call go over the host link now: their bytes added
        to `stats.swap_bytes` (a `run_stats.RunStats`), their seconds at `bytes_per_s` returned (0.0 when none)."""
        nbytes, self.outbound = self.outbound, 0.0
        if not nbytes:
            return 0.0
        stats.swap_bytes += nbytes
        return nbytes / bytes_per_s

    def discard(self, key) -> None:
        """The block is back on the GPU (recomputed or reloaded): its host copy goes."""
        self.blocks.pop(key, None)

    def pin(self, nbytes: float) -> bool:
        """A preempted sequence's `nbytes` K/V come here, evicting prefix blocks for room; False: no room."""
        if not self._evict_to(nbytes):
            return False
        self.pinned += nbytes
        return True

    def unpin(self, nbytes: float) -> None:
        """A swapped-out sequence's K/V went back to the GPU."""
        self.pinned = max(0.0, self.pinned - nbytes)
