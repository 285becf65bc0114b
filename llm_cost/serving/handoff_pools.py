"""The two pools of a disaggregated run served together in time, the K/V hand-off's memory counted on
both sides (`disaggregated.serve_disaggregated` calls `serve_pools`).

The transfer model is the pull of vLLM's disaggregated serving (its NIXL connector) and DistServe's:

1. request i's prefill finishes at its first token f_i on a prefill replica, which keeps its K/V blocks
   (`SendingPrefill`: they stay in its ledger, and with prefix caching its cached blocks stay held);
2. the request is routed (least-loaded) to a decode replica at f_i and queues there; the decode replica
   admits it when the blocks of its P_i + 1 tokens fit (`ReceivingDecode`: the receive buffer is its own
   blocks from that moment a_i), and the transfer runs from a_i to a_i + t_kv,i;
3. at a_i + t_kv,i the decode replica has the K/V (the request may decode from then on) and the prefill
   replica frees the blocks (`let_go`).

So a saturated decode pool holds K/V in the prefill pool's memory, which slows its admissions: the pools
are coupled as on a real server. The loops advance together, event by event (arrivals, first tokens,
admissions, transfer ends: `serve_pools`). One approximation: a prefill replica learns of a decode
admission after it has run to the event at hand, so a busy prefill replica frees a transfer's blocks at
its first iteration boundary after a_i + t_kv,i (its memory errs high by less than one iteration).
"""

from __future__ import annotations

import heapq
import math

from llm_cost.serving.engine_loop import EngineLoop


class SendingPrefill(EngineLoop):
    """A prefill replica whose finished requests keep their K/V until the decode pool has it: `sending`
    (done, not yet taken), `frees` (a heap of (time, request): the transfer ends, its blocks go) and
    `done` (requests finished since the driver last read them)."""

    def __init__(self, workload, replica, cfg, res, moves) -> None:
        super().__init__(workload, replica, cfg, res)
        self.moves = moves  # per request: True when its K/V moves (it has a second token)
        self.sending: set = set()
        self.frees: list = []
        self.done: list = []

    def release(self, i: int) -> None:
        """A finished request that hands over keeps its blocks (`let_go` frees them); preemption frees."""
        s = self.state
        if self.moves[i] and s.fin[i] == s.fin[i]:
            self.sending.add(i)
            self.done.append(i)
            return
        if s.fin[i] == s.fin[i]:
            self.done.append(i)
        super().release(i)

    def let_go(self, i: int, t: float) -> None:
        """Request i's K/V has reached the decode pool at `t`: its blocks are freed then."""
        if i in self.sending:
            self.sending.discard(i)
            heapq.heappush(self.frees, (t, i))

    def arrivals(self) -> None:
        """The transfers that have ended by the clock free their blocks, then the arrivals queue."""
        s, frees = self.state, self.frees
        while frees and frees[0][0] <= s.t:
            super().release(heapq.heappop(frees)[1])
        super().arrivals()

    def idle(self) -> bool:
        """Nothing to run: wait for the next transfer to end (or an arrival or a flight, as the engine
        does); while a transfer has not started (the decode pool has not admitted it), stop without a
        deadlock: the driver resumes the loop when it has."""
        s = self.state
        if self.frees and not self.flights:
            t_new = self.frees[0][0]
            if s.nxt < self.sent:
                t_new = min(t_new, s.arr[s.nxt])
            s.stats.in_system_area += (max(t_new, s.t) - s.t) * s.in_system
            s.t = max(t_new, s.t)
            return True
        if self.sending and not self.flights:
            return False
        return super().idle()

    @property
    def busy(self) -> bool:
        """It has work left that it can do (no deadlock)."""
        s = self.state
        return not s.deadlock and bool(s.running or s.waiting or self.flights or self.swapped or self.frees)


class ReceivingDecode(EngineLoop):
    """A decode replica whose admitted requests wait for their K/V: `ready_at[k]` (the transfer's end,
    inf until admitted), `admitted` (requests admitted since the driver last read them, with their
    transfer's end); `transfer[k]` the transfer's seconds."""

    def __init__(self, workload, replica, cfg, res, transfer) -> None:
        super().__init__(workload, replica, cfg, res)
        self.transfer = transfer
        self.ready_at = [math.inf] * len(transfer)
        self.admitted: list = []

    def admit(self, dec_run, pf_run, budget) -> None:
        """Admission as the engine's; a request admitted for the first time starts its transfer now (its
        blocks the receive buffer) and leaves this iteration: it decodes once its K/V is in."""
        start = len(pf_run)
        super().admit(dec_run, pf_run, budget)
        t, keep = self.state.t, []
        for k, q in pf_run[start:]:
            if self.ready_at[k] == math.inf:  # first admission: the K/V comes over the link
                self.ready_at[k] = t + self.transfer[k]
                self.admitted.append((k, self.ready_at[k]))
            if self.ready_at[k] <= t:
                keep.append((k, q))
        pf_run[start:] = keep

    def ready(self) -> tuple[list, list]:
        """The engine's decoders and prefills, without the requests whose K/V is still on its way."""
        decoders, prefilling = super().ready()
        t, at = self.state.t, self.ready_at
        return decoders, [k for k in prefilling if at[k] <= t]

    def idle(self) -> bool:
        """Nothing to run while transfers are on their way: wait for the first to end."""
        s = self.state
        pending = [self.ready_at[k] for k in s.running if self.ready_at[k] > s.t]
        if pending and not self.flights:
            t_new = min(pending)
            s.stats.in_system_area += (t_new - s.t) * s.in_system
            s.t = t_new
            return True
        return super().idle()

    @property
    def busy(self) -> bool:
        """It has work left that it can do (no deadlock)."""
        s = self.state
        return not s.deadlock and bool(s.running or s.waiting or self.flights or self.swapped)


def serve_pools(pre_wl, d_wl, replica, config, prefill: int, d_replica, d_config, decode: int,
                order: tuple, transfer: list, route) -> tuple:
    """Both pools over `pre_wl` (every request, output 1) and `d_wl` (request k of the decode pool is
    `order[k]` of the workload: prompt + 1 tokens, the first P cached on arrival), advanced together
    (module doc); `transfer[k]` decode request k's hand-off seconds, `route(loops, k)` the router.
    (prefill loops, their assignment, decode loops, their assignment, hand-off times per decode request)."""
    from llm_cost.serving.reservations import reservation_tokens

    def reserved(wl, rep):
        return ([reservation_tokens(config.reservation, p, d, rep.max_len) for p, d in zip(wl.prompt, wl.declared_gen)]
                if config.reservation in ("declared", "max_len") else [0] * len(wl))

    n = len(pre_wl)
    moves = [False] * n
    for i in order:
        moves[i] = True
    of = {i: k for k, i in enumerate(order)}
    p_loops = [SendingPrefill(pre_wl, replica, config, reserved(pre_wl, replica), moves) for _ in range(prefill)]
    d_loops = [ReceivingDecode(d_wl, d_replica, d_config, reserved(d_wl, d_replica), transfer) for _ in range(decode)]
    for loop in p_loops + d_loops:
        loop.routed()
    for loop in d_loops:
        loop.state.pre[:] = [p - 1 for p in d_wl.prompt]
    p_assign, d_assign, handed = [0] * n, [0] * len(order), [math.nan] * len(order)

    def to_decode(t: float) -> bool:
        """The decode loops to `t`; their admissions start transfers whose ends free the prefill side's
        blocks (`let_go`). True when any did."""
        for dl in d_loops:
            if dl.busy and dl.state.t < t:
                dl.run(until=t)
        freed = False
        for dl in d_loops:
            for k, at in dl.admitted:
                p_loops[p_assign[order[k]]].let_go(order[k], at)
                freed = True
            dl.admitted.clear()
        return freed

    def advance(t: float) -> None:
        """Every loop to `t`, the hand-offs and admissions on the way passed between the pools, until
        nothing more happens by `t`. A prefill replica that waits for the decode pool to take a transfer
        stops early; the decode loops then go on one iteration at a time, so that the hand-offs it makes
        once freed still meet the decode pool at their own time."""
        while True:
            for loop in p_loops:
                if loop.busy and loop.state.t < t:
                    loop.run(until=t)
            news = sorted((lp.state.fin[i], i) for lp in p_loops for i in lp.done if moves[i])
            for lp in p_loops:
                lp.done.clear()
            for f, i in news:
                to_decode(f)
                k = of[i]
                r = route(d_loops, k)
                d_assign[k], handed[k] = r, f
                d_loops[r].state.arr[k] = f
                d_loops[r].enqueue(k, f)
            waiting = [lp.state.t for lp in p_loops if lp.busy and lp.state.t < t]  # stopped for the decode pool
            freed = to_decode(min(waiting, default=t))
            if news or freed:
                continue
            if not waiting:
                return
            busy = [dl.state.t for dl in d_loops if dl.busy]
            if not busy:
                return
            to_decode(min(busy) + 1e-9)  # one decode iteration, then the prefill side again

    for i, t in enumerate(pre_wl.arrival_s):
        advance(t)
        r = route(p_loops, i)
        p_assign[i] = r
        p_loops[r].enqueue(i, t)
    advance(math.inf)
    return p_loops, p_assign, d_loops, d_assign, handed
