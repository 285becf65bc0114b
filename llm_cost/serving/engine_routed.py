"""Two parts of the general loop (`engine_loop.EngineLoop` mixes them in): prefix caching's admission
(`CachedAdmission.admit_cached`: a request's prefill starts after its cached blocks) and arrivals handed
over by a router (`RoutedArrivals`: `routed`, `enqueue`; `fleet` drives them with `run(until=t)`).
"""

from __future__ import annotations

from llm_cost.serving.kv_blocks import blocks_for


class CachedAdmission:
    """Prefix caching's admission, a method of `EngineLoop` over its `state`, `cache`, `B`, `P`,
    `wm_blocks`, `host` (bytes/s) and `reload_s`."""

    def admit_cached(self, i: int, budget, pf_run) -> bool:
        """Prefix caching's admission of queued request i: its leading cached blocks are taken (shared
        ones counted once, unreferenced ones leave the free blocks), its prefill starts after them, and
        the blocks of its first chunk are allocated, under the same watermark rule as `admit`. With a
        host tier, the blocks there that continue its cached prefix come back too (new GPU blocks, their
        bytes / host_bytes_per_s seconds added to `reload_s`, then to the iteration) instead of being
        prefilled. False (nothing changed) when they do not fit."""
        s, cache, B = self.state, self.cache, self.B
        hits, unref = cache.lookup(i) if s.pre[i] == 0 else (0, 0)
        hosted = cache.hosted(i, hits) if s.pre[i] == 0 else 0  # K/V offload: blocks to bring back
        start = (hits + hosted) * B
        q = min(s.need[i] - start, budget)
        want = blocks_for(start + q, B) - hits
        if s.free - unref - want < self.wm_blocks and (s.running or s.free - unref < want):
            return False
        cache.take(i, hits)
        if hosted:  # brought back over the host link, the transfer added to this iteration (`reload_s`)
            cache.take_hosted(i, hits, hosted)
            nbytes = hosted * cache.host.block_bytes
            s.stats.swap_bytes += nbytes
            self.reload_s += nbytes / self.host
        s.free -= unref + want
        s.used += (unref + want) * B
        s.blocks[i] = hits + want
        s.pre[i] = start
        cache.trim(s.free)
        stats = s.stats
        stats.prefix_lookups += 1
        stats.prefix_lookup_tokens += self.P[i]
        if start:  # found on the GPU or in the host tier
            stats.prefix_hit_requests += 1
            stats.prefix_hit_tokens += start
        s.kv[i] = start
        pf_run.append((i, q))
        return True


class RoutedArrivals:
    """A router's arrivals, methods of `EngineLoop` over its `state`, `n` and `sent`."""

    def routed(self) -> None:
        """The requests come from a router (`fleet`), one `enqueue` at a time, not from the workload."""
        self.state.nxt = self.sent = self.n

    def enqueue(self, i: int, t: float) -> None:
        """A router hands request i to this replica at time t (`fleet`): an idle replica's clock moves
        to t; a busy one queues it, its wait since t counted in the time-weighted requests in system."""
        s = self.state
        if s.t < t:
            s.stats.in_system_area += (t - s.t) * s.in_system
            s.t = t
        else:
            s.stats.in_system_area += s.t - t
        s.waiting.append(i)
        s.in_system += 1
