"""The general loop's decode stretches: `k` decode-only iterations taken in one step where nothing can
change the batch during them (issues 23.7 and 26.5: closed loops and chunked prefill spend most of
their iterations there).

At a loop turn (`engine_loop.EngineLoop.run`) where every running sequence decodes (none prefilling,
swapped or in flight) and the queue's head cannot be admitted, the iterations ahead differ only in
each sequence's context, one token longer every iteration. Speculating at a gamma the batch fixes
(`spec_batch.choose_gamma`: `fixed`, `off-above-batch`), each sequence feeds gamma + 1 rows an
iteration and its context grows by its own min(G, gamma) + 1 tokens, G drawn ahead from its own
stream (`rounds_ahead`: `spec_streams.AcceptanceStreams.upcoming`, drawn in `commit` as
`AcceptanceStreams.accepted` draws them round by round). `DecodeStretch.advance` takes them up to
the first of:

- a finish (`horizon`: the fewest iterations to a sequence's finish, less the iteration that
  finishes, which the loop runs);
- K/V the free blocks do not cover (`blocks_ahead`, paged: a preemption), the blocks each sequence
  holds for its gamma + 1 rows ahead at each launch allocated as `allocate_decoders` allocates them
  (and rolled back to those of its context after each, as `complete` does);
- an arrival or the loop's `until` (a fleet's router) by the clock after each iteration (`clock`:
  open loop, the next arrival's time; a closed loop's client sends only when a request finishes);
- `handback` iterations after the last preemption (the fast path takes the run back then).

The k iterations' terms (rows, K/V read, causal pairs) are numpy arrays over (sequence, iteration)
(`terms`) timed by the cost in one call (`iteration.totals_time_arrays`: `PassCost.time`), and their
statistics are accumulated as the loop adds them (`numpy.add.accumulate` adds left to right; `commit`).
A stretch shorter than MIN_ITERATIONS costs more in arrays than the loop's turns: where none can
start for a while (finishes or arrivals every few iterations, `quiet_from`, `by_clock`) the loop is
told to iterate without asking until `after`. Which turns a stretch takes never changes the run.
`K` is the K/V a sequence holds at context `c` (`iteration.held_tokens_fn`: `c` itself without
windows or recurrent state).

It applies (`applies`) where every `ServeConfig` field has a value it declares (`FEATURES`, an allow-list:
no speculation or a gamma the batch fixes, a reservation that never stalls a decoder (not `none`), no
prefix cache (its blocks move at admissions), no host tier; a field added since is not declared, so its runs
iterate), on one pipeline stage, with each sequence's own acceptance stream (`fixed_gamma`), on a cost that
takes arrays, and in a loop whose parts are `EngineLoop`'s own (`PARTS`: a subclass that replaces one, as
the disaggregated pools do, iterates). `ENABLED` False turns stretches off (the tests compare).
"""

from __future__ import annotations

import math
import operator

from llm_cost.roofline.pass_cost import PassCost
from llm_cost.roofline.pass_terms import decode_pairs
from llm_cost.serving.eligibility import allowed, any_value, off
from llm_cost.serving.iteration import totals_time_arrays
from llm_cost.serving.kv_blocks import blocks_for
from llm_cost.serving.pipeline import Pipeline
from llm_cost.serving.spec_batch import choose_gamma
from llm_cost.serving.spec_streams import AcceptanceStreams

ENABLED = True  # False: the general loop iterates every iteration (tests/test_decode_stretch.py compares)
MIN_ITERATIONS = 12  # a shorter stretch is left to the loop: its arrays cost more than the turns
MAX_ITERATIONS = 4096  # the arrays' length: a longer stretch is taken in several
# the loop's parts a stretch stands in for: a subclass replacing one of them iterates
PARTS = ("arrivals", "ready", "compose_prefill", "admit", "allocate_decoders", "swap_in", "complete", "finish",
         "release", "resize", "launch", "idle", "may_hand_back")


def takes_arrays(cost) -> bool:
    """Whether `cost.time` and `cost.uniform_terms` take numpy arrays: `PassCost`'s own, or a cost that
    says so (`times_arrays`, the schedule's counting cost)."""
    if getattr(cost, "times_arrays", False):
        return True
    kind = type(cost)
    return isinstance(cost, PassCost) and all(getattr(kind, method) is getattr(PassCost, method)
                                              for method in ("time", "uniform_terms", "comm_time_s"))


def fixed_gamma(loop) -> bool:
    """Whether `loop` runs without speculation, or speculates at a gamma the batch fixes (not
    `adaptive`, which follows the contexts) with each sequence's own stream of acceptances
    (`AcceptanceStreams`, not the bursty chain's one generator) and a draft cost that takes arrays."""
    spec = loop.spec
    return spec is None or (spec.policy != "adaptive" and isinstance(loop.state.acceptance, AcceptanceStreams)
                            and (spec.draft_cost is None or takes_arrays(spec.draft_cost)))


# The `ServeConfig` fields a stretch supports, each with a test of its value (`eligibility.allowed`): a field
# not listed (a feature added since) keeps the loop iterating every iteration, never a stretch that ignores it.
FEATURES = {
    **dict.fromkeys(("max_batch", "block_size", "watermark", "preemption", "prefill_chunk", "pipeline",
                     "host_bytes_per_s"), any_value),  # preemptions end a stretch; the loop runs them
    "reservation": lambda value, cfg: value != "none",  # `none` may stall a decoder
    "spec": lambda value, cfg: value is None or value.policy in ("fixed", "off-above-batch"),  # the batch fixes gamma
    "scheduler": lambda value, cfg: value == "iteration",
    "prefix_caching": off,  # its blocks move at admissions
    "kv_offload_bytes": off,  # the host tier's reloads are the loop's
}


def supports(cfg) -> bool:
    """Whether every field of the `ServeConfig` `cfg` has a value a stretch supports (`FEATURES`)."""
    return allowed(FEATURES, cfg)


def applies(loop, base) -> bool:
    """Whether `loop` (an `EngineLoop`; `base` the class) may take decode stretches (module doc): its config
    by the allow-list (`supports`), one pipeline stage, each sequence's own acceptance stream (`fixed_gamma`),
    a cost that takes arrays and the loop's own parts (its pipeline too)."""
    return (ENABLED and supports(loop.cfg) and fixed_gamma(loop) and loop.stages == 1 and takes_arrays(loop.cost)
            and type(loop.pipeline) is Pipeline  # a replaced pipeline part times its own flights: iterate
            and all(getattr(type(loop), part) is getattr(base, part) for part in PARTS))


def quiet_from(remaining) -> int:
    """The iterations from now to the first finish after which none follows for more than
    MIN_ITERATIONS, given the running sequences' remaining outputs in ascending order (each decoding
    every iteration, sequence m finishes after remaining[m] of them): no stretch starts before it."""
    last = remaining[0]
    for rest in remaining:
        if rest - last > MIN_ITERATIONS:
            break
        last = rest
    return last


class DecodeStretch:
    """The decode stretches of one run of the general loop (`loop`: an `EngineLoop`)."""

    def __init__(self, loop) -> None:
        self.loop = loop
        self.floor: dict = {}  # decoders -> the least seconds an iteration of them takes (`by_clock`)
        self.misses = 0  # tries cut short in a row
        self.after = 0  # the loop's iteration count before which it iterates without asking (`EngineLoop.run`)

    def horizon(self, handback: int, until: float):
        """(the running sequences in admission order, at most the iterations before the first that would
        finish one, hand the run back or meet the clock's bound, gamma, the tokens each sequence gains
        in each iteration ahead (`rounds_ahead`; None: one)), or None when the turn is not a
        stretch's start: something prefills, is swapped or in flight, a sequence's K/V is not what its
        tokens hold. Where no stretch can start for a while (a finish or an arrival ahead, tries cut
        short) it sets `after`: the loop's turns until then iterate without asking (a stretch shorter
        than MIN_ITERATIONS costs more in arrays than the turns, as in an open loop whose arrivals or
        finishes come every few iterations)."""
        loop = self.loop
        state = loop.state
        if loop.swapped or loop.flights or not state.running or len(state.running) > loop.cfg.max_batch:
            return None
        gen, kv, pre, need, prompts, outputs = state.gen, state.kv, state.pre, state.need, loop.P, loop.O
        latest = next(reversed(state.running))
        if pre[latest] < need[latest]:  # the latest admitted still prefills: the common case
            return None
        left = self.by_clock(until, len(state.running))
        if left < MIN_ITERATIONS:  # the arrival (or `until`) comes first; the turns before it iterate
            self.after = state.stats.iterations + left // 2
            return None
        if handback:
            left = min(left, loop.last_pre + handback - state.stats.iterations)
            if left < MIN_ITERATIONS:
                return None
        order = list(state.running)
        remaining = list(map(operator.sub, map(outputs.__getitem__, order), map(gen.__getitem__, order)))
        gamma = choose_gamma(loop.spec, loop.cost, order, kv) if loop.spec else 0
        steps = None
        if gamma:
            steps, finishes = self.rounds_ahead(order, remaining, gamma, left)
        else:
            finishes = sorted(remaining)
        if finishes[0] <= MIN_ITERATIONS:  # no stretch before the first gap of more than MIN between finishes
            self.after = state.stats.iterations + quiet_from(finishes) - 1
            return None
        left = min(left, finishes[0] - 1)
        if any(pre[seq] < need[seq] or kv[seq] != prompts[seq] + gen[seq] - 1 for seq in order):
            return None
        return order, left, gamma, steps

    def rounds_ahead(self, order, remaining, gamma: int, left: int):
        """Speculating: (the tokens each sequence gains in each iteration ahead, min(G, gamma) + 1 from its
        stream, as an int64 array over (sequence, iteration); the iterations to each one's finish, the
        iteration that finishes it included, ascending), given each one's `remaining` output tokens.
        The window: left + 1 iterations, at most the fewest remaining (a sequence finishes within as
        many); a sequence not finishing in it counts one past it."""
        import numpy as np

        streams = self.loop.state.acceptance
        width = min(left + 1, min(remaining))
        tokens = np.full((len(order), width), gamma, dtype=np.int64)
        for row, seq in enumerate(order):
            drafts = streams.upcoming(seq, width)  # a running sequence's stream holds every round it can take
            tokens[row, :len(drafts)] = drafts
        np.minimum(tokens, gamma, out=tokens)
        tokens += 1
        gained = np.cumsum(tokens, axis=1)
        short = gained < np.asarray(remaining)[:, None]  # before the iteration that finishes the sequence
        return tokens, sorted((short.sum(axis=1) + 1).tolist())

    def by_clock(self, until: float, decoders: int) -> int:
        """At most the iterations before the clock meets `until` or the next arrival: an iteration of
        `decoders` rows takes at least T(decoders, decoders, 0) (T grows with K/V and pairs), so the
        clock passes the bound within (bound - t) / that of them (two more for rounding)."""
        loop = self.loop
        state = loop.state
        bound = min(until, state.arr[state.nxt] if state.nxt < loop.sent else math.inf)
        if bound <= state.t:  # due now and not queued (`Workload.client_round_trip`): the next turn iterates
            return 0
        if bound == math.inf or getattr(loop.cost, "times_arrays", False):  # a counting cost: no bound asked
            return MAX_ITERATIONS
        least = self.floor.get(decoders)
        if least is None:
            least = self.floor[decoders] = loop.cost.time(decoders, decoders, 0.0)
        return int(min((bound - state.t) / least, MAX_ITERATIONS)) + 2 if least > 0 else MAX_ITERATIONS

    def missed(self) -> bool:
        """A try cut short: the next 1, 2, 4 ... 16 iterations iterate. False (no stretch taken)."""
        self.misses = min(2 * self.misses or 1, 16)
        self.after = self.loop.state.stats.iterations + self.misses
        return False

    def queue_waits(self, decoders: int, rows: int, free_after) -> bool:
        """The admission policy admits nothing in the stretch (`EngineLoop.admit`): the queue is empty,
        the batch or the token budget (less the decoders' `rows`) is full, or its head's reservation (`declared`, `max_len`) or its
        first chunk's blocks above the watermark (paged, `free_after` the free blocks after the first
        iteration's decoders, which only fall) do not fit."""
        loop = self.loop
        state, cfg = loop.state, loop.cfg
        if not state.waiting:
            return True
        budget = cfg.prefill_chunk - rows if cfg.prefill_chunk else math.inf
        if len(state.running) >= loop.pipeline.hold or budget <= 0 or decoders >= cfg.max_batch:
            return True
        head = state.waiting[0]
        if loop.paged:
            want = blocks_for(loop.K(state.pre[head] + min(state.need[head] - state.pre[head], budget)), loop.B)
            return free_after - want < loop.wm_blocks
        return state.reserved + loop.res[head] > loop.cap

    def blocks_ahead(self, order, ctx, rows_each: int):
        """Paged: the blocks the stretch has allocated at each launch (`allocate_decoders`: each
        sequence's `rows_each` rows ahead of its context `ctx[:, j]`), over those the sequences hold
        now, or None when a sequence's blocks are not those of its K/V (`kv_blocks.blocks_for`).
        `K`: the K/V a sequence holds at a context (`loop.K` over arrays)."""
        import numpy as np

        loop = self.loop
        K = loop.held.many if loop.held else (lambda context: context)
        start = np.asarray([loop.state.blocks[seq] for seq in order])
        if not np.array_equal(blocks_for(K(ctx[:, 0]), loop.B), start):
            return None
        return blocks_for(K(ctx[:, :-1] + rows_each), loop.B).sum(axis=0) - start.sum()

    def terms(self, ctx, rows_each: int):
        """(rows, K/V read, pairs, K/V of the decoders) of each iteration (`iteration.iteration_time`
        with `rows_each` rows a decoder: windowed layers by `PassCost.uniform_terms`), as arrays over
        iterations, from the decoders' contexts `ctx` (sequence, iteration; C order: numpy then sums
        over axis 0 row after row, in the loop's order); `k` the iterations."""
        import numpy as np

        loop = self.loop
        decoders, k = ctx.shape
        kv_dec = ctx.sum(axis=0)
        if loop.held:
            kv_tokens, pairs = loop.cost.uniform_terms(rows_each, 1, ctx)
            kv_read, pairs = (kv_tokens - rows_each).sum(axis=0), pairs.sum(axis=0)
        else:
            kv_read, pairs = kv_dec, decode_pairs(rows_each, decoders, kv_dec)
        return np.full(k, decoders * rows_each), kv_read, pairs, kv_dec

    def clock(self, times, until, k: int) -> int:
        """The iterations of the stretch (of its `k`) the clock allows: the turn after each ends checks `until` and
        the next arrival (`EngineLoop.run`, `arrivals`), so the stretch ends at the first that meets one."""
        import numpy as np

        loop = self.loop
        state = loop.state
        bound = min(until, state.arr[state.nxt] if state.nxt < loop.sent else math.inf)
        if bound == math.inf:
            return k
        stop = np.flatnonzero(times[1:k] >= bound)
        return int(stop[0]) + 1 if len(stop) else k

    @staticmethod
    def contexts(kv, k: int, steps):
        """Each sequence's context at each of the k launches and after the last, (sequence, k + 1), from
        its context `kv` now and the tokens it gains each iteration (`steps`; None: one); `k` the launches."""
        import numpy as np

        kv = np.asarray(kv)
        if steps is None:
            return np.add.outer(kv, np.arange(k + 1))
        ctx = np.empty((len(kv), k + 1), dtype=np.int64)
        ctx[:, 0] = kv
        np.cumsum(steps[:, :k], axis=1, out=ctx[:, 1:])
        ctx[:, 1:] += kv[:, None]
        return ctx

    def advance(self, until: float, handback: int, on_progress, every: int) -> bool:
        """Take a stretch of `k` iterations from this loop turn (module doc): True when it did."""
        import numpy as np

        loop = self.loop
        start = self.horizon(handback, until)
        if start is None:
            return False
        order, k, gamma, steps = start
        state = loop.state
        ctx = self.contexts([state.kv[seq] for seq in order], k, steps)
        decoders, rows_each = len(order), gamma + 1
        allocated = None
        if loop.paged:
            allocated = self.blocks_ahead(order, ctx, rows_each)
            if allocated is None:
                return False
            short = np.flatnonzero(allocated > state.free)  # a decoder's block not covered: a preemption
            k = min(k, int(short[0]) if len(short) else k)
        if k < MIN_ITERATIONS or not self.queue_waits(decoders, decoders * rows_each,
                                                      state.free - allocated[0] if loop.paged else 0):
            return self.missed()
        rows, kv_read, pairs, kv_dec = self.terms(np.ascontiguousarray(ctx[:, :k]), rows_each)
        dt, comm, draft = totals_time_arrays(loop.cost, loop.spec, gamma, rows, pairs, np.full(k, decoders), kv_dec,
                                             kv_read)
        dt = np.broadcast_to(np.asarray(dt, dtype=float), (k,))
        times = np.add.accumulate(np.concatenate(([state.t], dt)))
        k = self.clock(times, until, k)
        if k < MIN_ITERATIONS:
            return self.missed()
        self.misses = 0
        self.commit(order, k, gamma, dt[:k], np.broadcast_to(comm, dt.shape)[:k], draft[:k], times[k], ctx,
                    allocated)
        if on_progress and state.finished and state.finished % every == 0:
            for _ in range(k - 1):  # the turns inside the stretch report as the loop's would
                on_progress(state.finished, loop.n)
        return True

    def commit(self, order, k: int, gamma: int, dt, comm, draft, t_end: float, ctx, allocated) -> None:
        """The stretch's k iterations done: the statistics of `EngineLoop.launch` and `complete` summed in
        their order, each sequence ctx[:, k] - ctx[:, 0] tokens on (its rounds drawn from its stream),
        its blocks those of its K/V through the ledger (`KvLedger.set_blocks`). `k` the iterations taken,
        `K` the K/V a sequence holds at a context `c` (`loop.held.many`, or `c` itself)."""
        import numpy as np

        loop = self.loop
        state = loop.state
        stats, decoders = state.stats, len(order)
        rows = decoders * (gamma + 1)
        K = loop.held.many if loop.held else (lambda c: c)
        if loop.paged:
            used = state.used + allocated[:k] * loop.B  # K/V held at each launch, after its decoders' blocks
            blocks = blocks_for(K(ctx[:, k]), loop.B)  # after the last launch's roll-back
            loop.ledger.set_blocks(order, blocks.tolist(), blocks.sum().item() - sum(map(state.blocks.__getitem__,
                                                                                          order)))
        else:  # `resize` after each iteration: K(new) - K(old) a sequence, added in the loop's order
            grown = (K(ctx[:, 1:k + 1]) - K(ctx[:, :k])).T.ravel()
            acc = np.add.accumulate(np.concatenate(([state.used], grown)))
            used, end_used = acc[:-1:decoders][:k], acc[-1].item()
        bound = (("compute_bound_s", dt),) if rows >= loop.bound_rows else ()
        # no admission in a stretch: the reservations stay
        for name, terms in (("busy_s", dt), *bound, ("batch_area", dt * decoders), ("kv_used_area", dt * used),
                            ("in_system_area", dt * state.in_system), ("comm_s", comm), ("draft_s", draft),
                            ("kv_written_area", dt * (used + rows)),
                            ("kv_reserved_area", dt * state.reserved)):
            setattr(stats, name, np.add.accumulate(np.concatenate(([getattr(stats, name)], terms)))[-1].item())
        peak = used.max().item()
        if peak > stats.peak_kv_used:
            stats.peak_kv_used = peak
        stats.peak_kv_reserved = max(stats.peak_kv_reserved, state.reserved)
        stats.peak_kv_written = max(stats.peak_kv_written, peak + rows)
        stats.iterations += k
        stats.rows += rows * k
        stats.decode_slots += decoders * k
        stats.gamma_sum += gamma * decoders * k
        loop.launches += k
        if not loop.paged:
            state.used = end_used
        state.t = t_end.item()
        gained = (ctx[:, k] - ctx[:, 0]).tolist()
        if gamma:
            stats.spec_rounds += decoders * k
            stats.spec_tokens += sum(gained)
            for seq in order:
                state.acceptance.skip(seq, k)
        gen, kv = state.gen, state.kv
        for seq, tokens in zip(order, gained):
            gen[seq] += tokens
            kv[seq] += tokens
