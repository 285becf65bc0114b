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

    def release(self, request: int) -> None:
        """A finished request that hands over keeps its blocks (`let_go` frees them); preemption frees."""
        state = self.state
        if self.moves[request] and state.fin[request] == state.fin[request]:
            self.sending.add(request)
            self.done.append(request)
            return
        if state.fin[request] == state.fin[request]:
            self.done.append(request)
        super().release(request)

    def let_go(self, request: int, when: float) -> None:
        """The K/V of `request` has reached the decode pool at `when`: its blocks are freed then."""
        if request in self.sending:
            self.sending.discard(request)
            heapq.heappush(self.frees, (when, request))

    def arrivals(self) -> None:
        """The transfers that have ended by the clock free their blocks, then the arrivals queue."""
        state, frees = self.state, self.frees
        while frees and frees[0][0] <= state.t:
            super().release(heapq.heappop(frees)[1])
        super().arrivals()

    def idle(self) -> bool:
        """Nothing to run: wait for the next transfer to end (or an arrival or a flight, as the engine
        does); while a transfer has not started (the decode pool has not admitted it), stop without a
        deadlock: the driver resumes the loop when it has."""
        state = self.state
        if self.frees and not self.flights:
            t_new = self.frees[0][0]
            if state.nxt < self.sent:
                t_new = min(t_new, state.arr[state.nxt])
            state.stats.in_system_area += (max(t_new, state.t) - state.t) * state.in_system
            state.t = max(t_new, state.t)
            return True
        if self.sending and not self.flights:
            return False
        return super().idle()

    @property
    def busy(self) -> bool:
        """It has work left that it can do (no deadlock)."""
        state = self.state
        return not state.deadlock and bool(state.running or state.waiting or self.flights or self.swapped
                                           or self.frees)


class ReceivingDecode(EngineLoop):
    """A decode replica whose admitted requests wait for their K/V: `ready_at[request]` (the transfer's
    end, inf until admitted), `admitted` (requests admitted since the driver last read them, with their
    transfer's end); `transfer[request]` the transfer's seconds."""

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
        now, keep = self.state.t, []
        for request, chunk in pf_run[start:]:
            if self.ready_at[request] == math.inf:  # first admission: the K/V comes over the link
                self.ready_at[request] = now + self.transfer[request]
                self.admitted.append((request, self.ready_at[request]))
            if self.ready_at[request] <= now:
                keep.append((request, chunk))
        pf_run[start:] = keep

    def ready(self) -> tuple[list, list]:
        """The engine's decoders and prefills, without the requests whose K/V is still on its way."""
        decoders, prefilling = super().ready()
        now, at = self.state.t, self.ready_at
        return decoders, [request for request in prefilling if at[request] <= now]

    def idle(self) -> bool:
        """Nothing to run while transfers are on their way: wait for the first to end."""
        state = self.state
        pending = [self.ready_at[request] for request in state.running if self.ready_at[request] > state.t]
        if pending and not self.flights:
            t_new = min(pending)
            state.stats.in_system_area += (t_new - state.t) * state.in_system
            state.t = t_new
            return True
        return super().idle()

    @property
    def busy(self) -> bool:
        """It has work left that it can do (no deadlock)."""
        state = self.state
        return not state.deadlock and bool(state.running or state.waiting or self.flights or self.swapped)


def serve_pools(pre_wl, d_wl, replica, config, prefill: int, d_replica, d_config, decode: int,
                order: tuple, transfer: list, route, reserved: tuple) -> tuple:
    """Both pools over `pre_wl` (every request, output 1) and `d_wl` (request `decode_request` of the decode
    pool is `order[decode_request]` of the workload: prompt + 1 tokens, the first P cached on arrival),
    advanced together (module doc); `transfer[decode_request]` its hand-off seconds,
    `route(loops, request)` the router (the index of the loop it goes to), `reserved` the pools' reservations
    per request (`engine.checked` of each pool's workload, which checks them as `serve` does).
    (prefill loops, their assignment, decode loops, their assignment, hand-off times per decode request)."""
    requests = len(pre_wl)
    moves = [False] * requests
    for request in order:
        moves[request] = True
    of = {request: decode_request for decode_request, request in enumerate(order)}
    p_loops = [SendingPrefill(pre_wl, replica, config, reserved[0], moves) for _ in range(prefill)]
    d_loops = [ReceivingDecode(d_wl, d_replica, d_config, reserved[1], transfer) for _ in range(decode)]
    for loop in p_loops + d_loops:
        loop.routed()
    for loop in d_loops:
        loop.state.pre[:] = [prompt - 1 for prompt in d_wl.prompt]
    p_assign, d_assign, handed = [0] * requests, [0] * len(order), [math.nan] * len(order)

    def to_decode(until: float) -> bool:
        """The decode loops to `until`; their admissions start transfers whose ends free the prefill side's
        blocks (`let_go`). True when any did."""
        for dl in d_loops:
            if dl.busy and dl.state.t < until:
                dl.run(until=until)
        freed = False
        for dl in d_loops:
            for decode_request, at in dl.admitted:
                p_loops[p_assign[order[decode_request]]].let_go(order[decode_request], at)
                freed = True
            dl.admitted.clear()
        return freed

    def advance(until: float) -> None:
        """Every loop to `until`, the hand-offs and admissions on the way passed between the pools, until
        nothing more happens by then. A prefill replica that waits for the decode pool to take a transfer
        stops early; the decode loops then go on one iteration at a time, so that the hand-offs it makes
        once freed still meet the decode pool at their own time."""
        while True:
            for loop in p_loops:
                if loop.busy and loop.state.t < until:
                    loop.run(until=until)
            news = sorted((lp.state.fin[request], request) for lp in p_loops for request in lp.done
                          if moves[request])
            for lp in p_loops:
                lp.done.clear()
            for first, request in news:
                to_decode(first)
                decode_request = of[request]
                target = route(d_loops, decode_request)
                d_assign[decode_request], handed[decode_request] = target, first
                d_loops[target].state.arr[decode_request] = first
                d_loops[target].enqueue(decode_request, first)
            waiting = [lp.state.t for lp in p_loops if lp.busy and lp.state.t < until]  # stopped for the decode pool
            freed = to_decode(min(waiting, default=until))
            if news or freed:
                continue
            if not waiting:
                return
            busy = [dl.state.t for dl in d_loops if dl.busy]
            if not busy:
                return
            to_decode(min(busy) + 1e-9)  # one decode iteration, then the prefill side again

    for request, arrival in enumerate(pre_wl.arrival_s):
        advance(arrival)
        target = route(p_loops, request)
        p_assign[request] = target
        p_loops[target].enqueue(request, arrival)
    advance(math.inf)
    return p_loops, p_assign, d_loops, d_assign, handed
