"""The engine's fast path for Orca's pipeline (`pipeline="orca"`, `cost.stages` > 1): cohorts, not
sequences.

Under `orca` an iteration is injected a stage-time (T / stages) after the one before it and a
sequence's next iteration waits for its own previous one (`engine` module doc, rule 6). So the
running sequences travel in cohorts: the decoders of one iteration in flight complete together and
run together again in the next iteration launched after that (with whatever else completed by
then, up to max_batch in admission order; the rest wait for the next launch). This path keeps, per
cohort, its decoders, their K/V summed, a clock of the cohort's iterations `s` (a member's tokens
generated are s - its base) and two tables keyed by that clock: the members that need a new K/V
block at an iteration (a decoder of c cached tokens needs one when c is a multiple of the block)
and the members that finish at one. An iteration then costs a few additions and one call of
`iteration.totals_time` whatever its batch; only a cohort merging into another, a batch split at
max_batch and a request finishing visit a member.

`engine.serve` takes it where `FEATURES` (an allow-list of `ServeConfig` fields, as
`fast_engine.FAST_FEATURES`) and `covers` hold: paged K/V, whole prefills, no speculation, no prefix
cache or host tier, K/V without windows, open-loop arrivals. Everything else (admission while the
batch and the `max_batch` x stages sequences held have room and the free blocks stay above the
watermark, the clock, the statistics) is the general loop's (`engine_loop`), operation for
operation, so the two give the same finish times bit for bit (tests/test_fast_pipeline.py). The
first iteration whose decoders' blocks do not fit the free ones (a preemption, or a stall) ends
this path: `serve_pipelined` returns None and `engine.serve` runs the whole run in the general loop.
"""

from __future__ import annotations

import heapq
import math

from llm_cost.roofline.pass_cost import PassCost
from llm_cost.roofline.pass_terms import causal_pairs, decode_pairs  # unchecked: a hot loop (roofline.terms)
from llm_cost.serving.run_stats import RunStats
from llm_cost.serving import eligibility
from llm_cost.serving.eligibility import FLAT_KV_ONE_STAGE, OPEN_LOOP, any_value
from llm_cost.serving.iteration import compute_bound_rows, totals_time
from llm_cost.serving.kv_blocks import block_pool, blocks_for
from llm_cost.serving.pipeline import Pipeline
from llm_cost.serving.serve_result import ServeResult


# The `ServeConfig` features this path runs, field by field (field -> whether its value is supported).
# A field missing here, as a new feature's is until someone adds it, takes the general loop.
FEATURES = {
    "max_batch": any_value,
    "reservation": lambda value, cfg: value == "paged",
    "block_size": any_value,
    "watermark": any_value,
    "preemption": any_value,  # a run that would preempt is handed to the general loop whole
    "prefill_chunk": lambda value, cfg: value is None,  # whole prefills only
    "spec": lambda value, cfg: value is None,
    "pipeline": lambda value, cfg: value == "orca",
    "host_bytes_per_s": any_value,  # swaps only at a preemption, which ends this path
    "scheduler": lambda value, cfg: value == "iteration",
    "prefix_caching": lambda value, cfg: not value,
    "kv_offload_bytes": lambda value, cfg: not value,
}


# The pass cost's and the workload's fields (`eligibility`): more than one stage, K/V without windows or
# per-sequence state; open-loop arrivals, every request generating at least one token.
COST_FEATURES = {**FLAT_KV_ONE_STAGE, "stages": lambda value, cfg: value > 1}
ARRIVALS = {**OPEN_LOOP, "output": lambda value, cfg: len(value) > 0 and min(value) >= 1}


def covers(workload, replica, cfg) -> bool:
    """Whether this path runs `cfg` (`FEATURES`; more than one stage, K/V without windows or per-sequence
    state, open-loop arrivals, every request generating at least one token)."""
    return eligibility.covers(workload, replica, cfg, config=FEATURES, cost=COST_FEATURES, arrivals=ARRIVALS)


class _Cohort:
    """Sequences that run in the same iterations: `s` its iterations so far (member i has generated
    s - base[i] tokens), `nd` members, `S` their K/V tokens summed, `grow[r]` the members that need a
    new block at an iteration started with s % block == r, `ends[s]` the members that finish when the
    cohort's clock reaches s, `members` the set of them."""

    __slots__ = ("s", "nd", "S", "grow", "ends", "members")

    def __init__(self) -> None:
        self.s = self.nd = self.S = 0
        self.grow: dict = {}
        self.ends: dict = {}
        self.members: set = set()


class _Run:
    """One run's constants and per-request lists (the cohorts' members share `base`)."""

    def __init__(self, workload, replica, cfg) -> None:
        self.P, self.O, self.B = workload.prompt, workload.output, cfg.block_size
        self.base = [0] * len(workload)

    def join(self, cohort: _Cohort, req: int, gen: int) -> None:
        """Request `req`, `gen` tokens generated (K/V its prompt + gen - 1 cached), joins `cohort`."""
        start = self.base[req] = cohort.s - gen
        prompt = self.P[req]
        key = (start + 1 - prompt) % self.B
        cohort.grow[key] = cohort.grow.get(key, 0) + 1
        cohort.ends.setdefault(start + self.O[req], []).append(req)
        cohort.members.add(req)
        cohort.nd += 1
        cohort.S += prompt + gen - 1

    def merge(self, into: _Cohort, other: _Cohort) -> None:
        """Every member of `other` joins `into`."""
        base, step_now = self.base, other.s
        for req in other.members:
            self.join(into, req, step_now - base[req])

    def gather(self, cohorts: list, limit: int) -> tuple:
        """The decoders of the ready `cohorts` as one cohort of at most `limit` (`split` past it, else the
        others merged into the largest) and the cohorts left ready."""
        if len(cohorts) == 1 and cohorts[0].nd <= limit:
            return cohorts[0], []
        if sum(cohort.nd for cohort in cohorts) > limit:  # decoders[:max_batch]: the rest wait for the next launch
            head, rest = self.split(cohorts, limit)
            return head, [rest]
        cohorts.sort(key=lambda cohort: -cohort.nd)
        for cohort in cohorts[1:]:
            self.merge(cohorts[0], cohort)
        return cohorts[0], []

    def complete(self, cohort: _Cohort, pfs: list, done_s: float, first: list, fin: list) -> tuple:
        """`cohort`'s iteration ends at `done_s`: its prefills' first tokens, its members finishing
        leave (their K/V freed). (blocks freed, requests finished)."""
        prompt, output, block, base = self.P, self.O, self.B, self.base
        for req in pfs:
            first[req] = done_s
        blocks = gone = 0
        for req in cohort.ends.pop(cohort.s, ()):
            fin[req] = done_s
            kv = prompt[req] + output[req] - 1
            blocks += blocks_for(kv, block)
            cohort.grow[(base[req] + 1 - prompt[req]) % block] -= 1
            cohort.members.discard(req)
            cohort.S -= kv
            gone += 1
        cohort.nd -= gone
        return blocks, gone

    def split(self, cohorts: list, limit: int) -> tuple:
        """The members of `cohorts` as two new cohorts: the first `limit` in admission order (the request
        order: no preemption on this path) and the rest."""
        base = self.base
        gens = sorted((req, cohort.s - base[req]) for cohort in cohorts for req in cohort.members)
        head, rest = _Cohort(), _Cohort()
        for rank, (req, gen) in enumerate(gens):
            self.join(head if rank < limit else rest, req, gen)
        return head, rest


def inline_coefficients(cost):
    """`PassCost.inline_coefficients` of a pipelined cost (more than one stage or communication), with
    which `_loop` evaluates `iteration.totals_time` (`InlineTerms.evaluator` and `comm_s`: `pass_timers`,
    the same bits as `PassCost.time` and `comm_time_s`); None where it has none or is not deployed."""
    terms = cost.inline_coefficients() if isinstance(cost, PassCost) else None
    return terms if terms is not None and cost.deployed else None


def pass_timers(cost) -> tuple:
    """(fn(rows, kv_tokens, pairs), fn(rows)): T and the communication seconds of a pass of a pipelined cost in
    one call each (`InlineTerms.evaluator` and `comm_s`), or (None, None) where `inline_coefficients` is."""
    terms = inline_coefficients(cost)
    return (None, None) if terms is None else (terms.evaluator(), terms.comm_s)


def serve_pipelined(workload, replica, cfg, on_progress=None):
    """`engine.serve` on this path (module doc): a `ServeResult`, or None where the run would preempt
    (`engine.serve` then runs it in the general loop)."""
    out = _loop(workload, replica, cfg, on_progress)
    if out is None:
        return None
    first, fin, stats = out
    if on_progress:
        on_progress(len(workload), len(workload))
    return ServeResult.build(workload, replica, cfg, list(workload.arrival_s), first, fin, stats, None,
                             path="fast_pipeline")


def _loop(workload, replica, cfg, on_progress):
    """The general loop's turns (`engine_loop.EngineLoop.run`) over cohorts: (first token times, finish
    times, statistics), or None at the first iteration whose decoders' blocks do not fit."""
    run = _Run(workload, replica, cfg)
    cost, prompt, block, n_requests = replica.cost, run.P, run.B, len(workload)
    stages, max_batch, hold = cost.stages, cfg.max_batch, Pipeline(cost.stages, cfg.pipeline, cfg.max_batch).hold
    total, wm = block_pool(replica.kv_capacity_tokens, block, cfg.watermark)
    arr = list(workload.arrival_s) + [math.inf]
    first, fin, draft_s = [math.nan] * n_requests, [math.nan] * n_requests, 0.0
    timer, comm_s = pass_timers(cost)
    flights, ready = [], []  # a heap of (done_s, launch number, cohort, prefills); cohorts completed
    now, free, used, head, nxt, running, in_system, finished, launches = 0.0, total, 0.0, 0, 0, 0, 0, 0, 0
    busy = area_n = area_kv = area_sys = comm_sum = peak = compute_bound = 0.0  # the statistics' sums as locals
    rows_sum, slots, bound_rows = 0, 0, compute_bound_rows(cost)  # (an attribute update each costs)
    every = max(1, n_requests // 100)
    while True:
        while flights and flights[0][0] <= now:  # completions: first tokens, finishes
            done_s, _, cohort, pfs = heapq.heappop(flights)
            if pfs or cohort.s in cohort.ends:  # else nothing to record
                blocks, gone = run.complete(cohort, pfs, done_s, first, fin)
                free += blocks
                used -= blocks * block
                running -= gone
                in_system -= gone
                finished += gone
                if on_progress and gone and finished % every == 0:
                    on_progress(finished, n_requests)
            if cohort.nd:
                ready.append(cohort)
        while arr[nxt] <= now:  # arrivals
            area_sys += now - arr[nxt]
            in_system += 1
            nxt += 1
        dec, nd = None, 0
        if ready:  # the decoders not in flight: one cohort
            if len(ready) == 1 and ready[0].nd <= max_batch:
                dec, ready = ready[0], []
            else:
                dec, ready = run.gather(ready, max_batch)
            nd = dec.nd
        kv_dec = 0
        if dec is not None:
            want = dec.grow.get(dec.s % block, 0)
            if want > free:
                return None  # a preemption (or a stall): the general loop's
            free -= want
            used += want * block
            kv_dec = dec.S
        pfs, rows, pairs = [], nd, (decode_pairs(1, nd, kv_dec) if nd else 0.0)
        while head < nxt and running < hold and nd + len(pfs) < max_batch:  # admission: nothing preempted
            want = blocks_for(prompt[head], block)
            if free - want < wm and (running or free < want):
                break
            free -= want
            used += want * block
            running += 1
            pfs.append(head)
            rows += prompt[head]
            pairs += causal_pairs(prompt[head], 0)
            head += 1
        if rows == 0:  # idle: a flight or an arrival
            if flights:
                t_new = max(now, flights[0][0])
            elif running or head < nxt:
                return None  # a deadlock: the general loop's
            elif nxt < n_requests:
                t_new = arr[nxt]
            else:
                return first, fin, RunStats(
                    busy_s=busy, batch_area=area_n, kv_used_area=area_kv, in_system_area=area_sys, comm_s=comm_sum,
                    peak_kv_used=peak, iterations=launches, rows=rows_sum, decode_slots=slots,
                    compute_bound_s=compute_bound, draft_s=draft_s)
            area_sys += (t_new - now) * in_system
            now = t_new
            continue
        if timer is None:
            dt, comm, draft = totals_time(cost, None, rows, kv_dec if nd else 0.0, pairs, nd, kv_dec, 0)
            draft_s += draft
        else:
            dt, comm = timer(rows, (kv_dec if nd else 0.0) + rows, pairs), comm_s(rows)
        comm_sum += comm
        slots += nd
        launches += 1
        cohort = dec if dec is not None else _Cohort()
        cohort.S += nd
        cohort.s += 1
        for req in pfs:
            run.join(cohort, req, 1)
        heapq.heappush(flights, (now + dt, launches, cohort, pfs))
        step = dt / stages
        rows_sum += rows
        busy += step
        compute_bound += step if rows >= bound_rows else 0.0
        area_n += step * running
        area_kv += step * used
        area_sys += step * in_system
        if used > peak:
            peak = used
        now += step
