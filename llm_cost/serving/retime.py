"""A closed loop's schedule once, its times under any iteration cost.

Not a scheduler (issue 24): the schedule is `engine.serve`'s own (its general loop, `fast=False`),
recorded while it runs on a cost that counts every iteration as 1 s and notes the terms the
iteration asked for; `Schedule.times` only evaluates `PassCost.time` on those terms and sums them.
Kept apart from `ServeResult` because only calibration needs it (a result carrying every iteration's
terms would cost memory on every run), and kept as re-pricing rather than a second serve because a
calibration evaluates one closed-loop row under hundreds of profiles.

In a closed loop (`Workload.concurrency`) on one pipeline stage, with paged K/V and recompute
preemption and no speculation, every event falls on an iteration boundary: a client sends its next
request when one finishes, the engine admits it at the next iteration, preempts by counting blocks.
Which sequences run in iteration k, and so its (rows, K/V read, pairs), do not depend on how long the
iterations before it took. So the schedule is served once with every iteration costing 1 s (its times
are then iteration counts) while the terms each iteration asks the cost for are recorded, and a cost
re-times it with one vectorized evaluation:

    d_k = cost.time(rows_k, kv_k, pairs_k);  T_k = d_1 + ... + d_k;  an event at count k happens at T_k

the same sums, in the same order, as serving with that cost (a test checks). `calibrate` evaluates a
closed-loop row hundreds of times with different profiles: the schedule is one run, each evaluation
an array sum.
"""

from __future__ import annotations

import dataclasses
import math

from llm_cost.errors import InvalidValueError
from llm_cost.serving.eligibility import any_value, off


@dataclasses.dataclass(frozen=True)
class Schedule:
    """A served closed loop in iteration counts: per iteration its cost terms, per request the count of
    iterations completed when it was sent, got its first token and finished; preemptions."""

    rows: tuple
    kv_tokens: tuple
    pairs: tuple
    arrival: tuple
    first: tuple
    finish: tuple
    output: tuple
    preemptions: int

    def times(self, cost):
        """(arrival, first token, finish) in seconds under `cost` (numpy arrays, request order)."""
        import numpy as np

        seconds = np.asarray(cost.time(np.asarray(self.rows, dtype=float), np.asarray(self.kv_tokens, dtype=float),
                                       np.asarray(self.pairs, dtype=float)), dtype=float)
        ends = np.concatenate(([0.0], np.cumsum(seconds)))
        return tuple(ends[np.asarray(counts, dtype=np.int64)]
                     for counts in (self.arrival, self.first, self.finish))


class _Counting:
    """The replica's cost with every iteration taking 1 s, recording what each asked for; given arrays
    (a decode stretch of the general loop, `decode_stretch`), one iteration per element."""

    deployed = False  # collectives are inside `time`; the loop's separate tally of them is not needed
    times_arrays = True  # `decode_stretch` may time its iterations in one call

    def __init__(self, cost) -> None:
        self._cost = cost
        self.terms: list[tuple[float, float, float]] = []

    def time(self, rows, kv_tokens, pairs):
        if getattr(rows, "ndim", 0):
            import numpy as np

            self.terms.extend(zip(rows.tolist(), np.asarray(kv_tokens, dtype=float).tolist(),
                                  np.asarray(pairs, dtype=float).tolist()))
            return np.ones(len(rows))
        self.terms.append((rows, kv_tokens, pairs))
        return 1.0

    def __getattr__(self, name):
        return getattr(self._cost, name)


# The `ServeConfig` fields a schedule in iteration counts supports, each with a test of its value (the
# `eligibility` form, `(value, config) -> bool`) and the
# values it takes (an allow-list: a field not here, a new feature's, is refused until someone adds it).
# Admission, chunks, blocks, prefix caching count tokens and blocks; swap transfers, the host tier's reloads,
# speculation's acceptance and request-level batches are not counts of iterations.
FEATURES = {
    "max_batch": (any_value, "any"),
    "reservation": (any_value, "any"),  # `none` may deadlock: refused after the run
    "block_size": (any_value, "any"),
    "watermark": (any_value, "any"),
    "preemption": (lambda value, cfg: value == "recompute", "recompute"),
    "prefill_chunk": (any_value, "any"),
    "spec": (off, "None (no speculation)"),
    "pipeline": (any_value, "any"),  # one stage (below): nothing to schedule
    "host_bytes_per_s": (any_value, "any"),  # read by swap and the host tier only, both refused
    "scheduler": (lambda value, cfg: value == "iteration", "iteration"),
    "prefix_caching": (any_value, "any"),
    "kv_offload_bytes": (off, "0 (no host tier)"),
}


def _refuse_unsupported(workload, replica, config) -> None:
    """One line naming the first parameter whose value the schedule does not support (`FEATURES`)."""
    if workload.concurrency is None:
        raise InvalidValueError("a schedule in iteration counts needs a closed loop (concurrency)",
                                params=("concurrency",))
    if replica.cost.stages != 1:
        raise InvalidValueError("a schedule in iteration counts needs one stage (pipeline stages overlap "
                                "iterations)", params=("replica",))
    for field in dataclasses.fields(config):
        test, values = FEATURES.get(field.name, (lambda value, cfg: False, "none: not supported yet"))
        if not test(getattr(config, field.name), config):
            raise InvalidValueError(f"a schedule in iteration counts takes {field.name} {values}, got "
                                    f"{getattr(config, field.name)!r}", params=(field.name,))


def closed_loop_schedule(workload, replica, config) -> Schedule:
    """The schedule of `workload` (a closed loop) on `replica` under `config`, in iteration counts.

    Raises
    ------
    InvalidValueError
        For what the schedule would depend on time in: an open loop, pipeline stages, and any
        `ServeConfig` field whose value is not in `FEATURES` (speculation, swap preemption, the host
        tier, request-level batches, a field added since).
    """
    from llm_cost.serving.engine import serve

    _refuse_unsupported(workload, replica, config)
    counting = _Counting(replica.cost)
    res = serve(workload, dataclasses.replace(replica, cost=counting), config, fast=False)
    if not all(math.isfinite(finish) for finish in res.finish_s):
        raise InvalidValueError("the closed loop did not finish every request (a deadlock)")
    rows, kv, pairs = zip(*counting.terms) if counting.terms else ((), (), ())
    counts = tuple(tuple(int(round(value)) for value in times)
                   for times in (res.arrival_s, res.first_token_s, res.finish_s))
    return Schedule(rows, kv, pairs, *counts, output=res.output, preemptions=res.preemptions)
