"""Two parts of the general loop (`engine_loop.EngineLoop` mixes them in): prefix caching's admission
(`CachedAdmission.admit_cached`: a request's prefill starts after its cached blocks) and arrivals handed
over by a router (`RoutedArrivals`: `routed`, `enqueue`; `fleet` drives them with `run(until=t)`).
`B` is the loop's block size (`engine_loop`).
"""

from __future__ import annotations

from llm_cost.serving.kv_blocks import blocks_for


class CachedAdmission:
    """Prefix caching's admission, a method of `EngineLoop` over its `state`, `cache`, `ledger` (the K/V
    allocator, `kv_ledger.KvLedger`), `B`, `P`, `wm_blocks`, `host` (bytes/s) and `reload_s`."""

    def admit_cached(self, req: int, budget, pf_run) -> bool:
        """Prefix caching's admission of queued request `req`: its leading cached blocks are taken (shared
        ones counted once, unreferenced ones leave the free blocks; `B` tokens each), its prefill starts after them, and
        the blocks of its first chunk are allocated, under the same watermark rule as `admit`. With a
        host tier, the blocks there that continue its cached prefix come back too (new GPU blocks, their
        bytes / host_bytes_per_s seconds added to `reload_s`, then to the iteration) instead of being
        prefilled. False (nothing changed) when they do not fit."""
        state, cache, B = self.state, self.cache, self.B
        hits, unref = cache.lookup(req) if state.pre[req] == 0 else (0, 0)
        hosted = cache.hosted(req, hits) if state.pre[req] == 0 else 0  # K/V offload: blocks to bring back
        start = (hits + hosted) * B
        chunk = min(state.need[req] - start, budget)
        want = blocks_for(start + chunk, B) - hits
        ledger = self.ledger
        if not ledger.fits(unref + want, self.wm_blocks, alone=not state.running):
            return False
        ledger.share(req, hits, unref)
        if hosted:  # brought back over the host link, the transfer added to this iteration (`reload_s`)
            cache.take_hosted(req, hits, hosted)
            nbytes = hosted * cache.host.block_bytes
            state.stats.swap_bytes += nbytes
            self.reload_s += nbytes / self.host
        ledger.take(req, want)
        state.pre[req] = start
        ledger.trim()
        stats = state.stats
        stats.prefix_lookups += 1
        stats.prefix_lookup_tokens += self.P[req]
        if start:  # found on the GPU or in the host tier
            stats.prefix_hit_requests += 1
            stats.prefix_hit_tokens += start
        state.kv[req] = start
        pf_run.append((req, chunk))
        return True


class RoutedArrivals:
    """A router's arrivals, methods of `EngineLoop` over its `state`, `n` and `sent`."""

    def routed(self) -> None:
        """The requests come from a router (`fleet`), one `enqueue` at a time, not from the workload."""
        self.state.nxt = self.sent = self.n

    def enqueue(self, req: int, t: float) -> None:
        """A router hands request `req` to this replica at time `t` (`fleet`): an idle replica's clock moves
        to t; a busy one queues it, its wait since t counted in the time-weighted requests in system."""
        state = self.state
        if state.t < t:
            state.stats.in_system_area += (t - state.t) * state.in_system
            state.t = t
        else:
            state.stats.in_system_area += state.t - t
        state.waiting.append(req)
        state.in_system += 1
