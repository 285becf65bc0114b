"""The general loop's decoders' K/V and preemption policy (`engine_loop.EngineLoop` mixes it in).

Paged, each decoder gets the blocks its gamma + 1 rows ahead need (`allocate_decoders`); while the
free blocks fall short the latest-admitted running sequence is preempted (`preempt`, vLLM's rule):
`recompute` frees its blocks and queues it first (with K/V offload, `kv_offload_bytes`, it is moved to
the host tier as `swap` does while the tier has room: `offload_victim`), `swap` moves its K/V over the
host link, and
`swap_in` brings swapped sequences back first while the blocks stay above the watermark. Without a
reservation the decoders past the free K/V tokens stall (`stall_unreserved`). The loop's symbols
(`engine_loop`): `K` a context's K/V tokens held, `B` the block size.
"""

from __future__ import annotations

from llm_cost.serving.kv_blocks import blocks_for


class PreemptionPolicy:
    """The decoders' K/V and preemption, as methods of `EngineLoop` over its settings and `state`
    (`state`, `cfg`, `P`, `K`, `held`, `B`, `cap`, `hold`, `gmax`, `wm_blocks`, `kv_bytes`, `host`,
    `inflight`, `swapped`, `tier` (a `host_tier.HostTier` or None), `cache`, `ledger` (the K/V
    allocator, `kv_ledger.KvLedger`: every block moves through it) and the loop's `release`)."""

    def preempt(self, victim: int) -> float:
        """The preemption policy: `recompute` frees the victim's blocks and queues it first to prefill its
        prompt and generated tokens again; `swap` moves its K/V (`K` tokens at its context) to host memory.
        Seconds of transfer."""
        state, K = self.state, self.K
        state.stats.preemptions += 1
        seconds = 0.0
        nbytes = K(state.kv[victim]) * self.kv_bytes
        if self.cfg.preemption == "swap" or self.offload_victim(nbytes):
            state.stats.swap_bytes += nbytes
            seconds = nbytes / self.host
            self.ledger.give(victim)
            self.swapped.append(victim)
        else:
            self.release(victim)
            state.need[victim] = self.P[victim] + state.gen[victim]
            state.pre[victim] = state.kv[victim] = 0
            state.waiting.appendleft(victim)
        del state.running[victim]
        return seconds

    def offload_victim(self, nbytes: float) -> bool:
        """K/V offload under recompute preemption: the victim's `nbytes` go to the host tier (swapped as
        `swap` does) when it has room; otherwise (or with prefix caching, whose shared blocks stay in
        the cache and spill there on their own) it is recomputed."""
        return self.tier is not None and self.cache is None and self.tier.pin(nbytes)

    def allocate_decoders(self, decoders, gamma: int):
        """Paged: blocks for each decoder's gamma + 1 rows ahead, preempting the latest-admitted running
        sequence (vLLM's rule) while the free blocks fall short (`B` tokens a block). (decoders that run,
        preempted set, seconds of swap transfer)."""
        state, held, B, inflight, ledger = self.state, self.held, self.B, self.inflight, self.ledger
        gone: set = set()
        run, swap_s = [], 0.0
        for req in decoders:
            if req in gone:
                continue
            context = state.kv[req] + gamma + 1
            want = blocks_for(held(context) if held else context, B) - state.blocks[req]
            if want <= 0:  # its blocks already hold the rows (paged: rounded up)
                run.append(req)
                continue
            while not ledger.fits(want):
                victim = next((other for other in reversed(state.running) if not inflight[other] and other not in gone),
                              None)
                if victim is None:
                    break
                gone.add(victim)
                swap_s += self.preempt(victim)
                if victim == req:
                    break
            if req in gone or not ledger.fits(want):
                continue
            ledger.take(req, want)
            run.append(req)
        return run, gone, swap_s

    def stall_unreserved(self, decoders) -> list:
        """Without a reservation: the earliest decoders that the free K/V tokens cover (the rest stall); a
        decoder's next row adds K(c + 1) - K(c) tokens (`K` the tokens held at context c)."""
        room, K, kv = self.cap - self.state.used, self.K, self.state.kv
        run = []
        for req in decoders:
            inc = K(kv[req] + 1) - K(kv[req])
            if inc > room + 1e-9:
                break
            room -= inc
            run.append(req)
        return run

    def swap_in(self) -> tuple[bool, float]:
        """Swapped sequences back first, while the batch has room and the blocks (`B` tokens each) of their
        K/V (`K` tokens at a context) stay above the watermark. (any moved, seconds of transfer)."""
        state, K, B = self.state, self.K, self.B
        moved, seconds = False, 0.0
        while self.swapped and len(state.running) < self.pipeline.hold:
            back = self.swapped[0]
            if not self.ledger.fits(blocks_for(K(state.kv[back] + self.gmax + 1), B), self.wm_blocks):
                break
            self.swapped.popleft()
            moved = True
            seconds += K(state.kv[back]) * self.kv_bytes / self.host
            state.stats.swap_bytes += K(state.kv[back]) * self.kv_bytes
            if self.tier is not None:  # K/V offload: its host bytes are free again
                self.tier.unpin(K(state.kv[back]) * self.kv_bytes)
            self.ledger.take(back, blocks_for(K(state.kv[back]), B))
            state.running[back] = None
        return moved, seconds
