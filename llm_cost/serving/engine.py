"""The serving engine: iteration-level scheduling with paged KV and preemption, chunked prefill,
speculation inside the batch, pipeline stages in flight, any workload (the lecture §3.5-§3.6, §11).

One loop turn forms one iteration from the running sequences that are not in flight:

1. gamma for the iteration (`SpecConfig.policy`); each decoding sequence feeds gamma + 1 rows.
2. Paged KV (`reservation="paged"`): each decoder needs ceil(K(kv + rows) / block) blocks; when the
   free blocks do not cover it, the latest-admitted running sequence is preempted (vLLM's rule):
   `recompute` frees its blocks and queues it first, to prefill its prompt and generated tokens
   again; `swap` moves its K/V to host memory over the host link and back when blocks free up.
   `none`: no reservation, no preemption: decoders past the free tokens stall, and when nothing
   can run the run stops with a `Deadlock` (exercise 10). `declared` / `max_len`: Orca's
   reservations (admission stops at the first request whose reservation does not fit).
3. Prefill: with `prefill_chunk` N, decode rows come first and prompt chunks fill the rest of N
   tokens (Sarathi-Serve); without it a prompt is prefilled whole in the iteration that admits it.
4. Admission (only in an iteration that preempted nobody): swapped sequences first, then the
   queue (recompute victims at its head), while the batch has room, the reservation fits and
   (paged) the free blocks after it stay above the watermark.
5. Its time (`iteration.iteration_time`): `IterationCost.time(rows, kv_read + rows, pairs)`, where
   every sequence with c cached tokens feeding r rows adds r rows, c K/V read and causal_pairs(r, c)
   pairs (windowed layers: each capped at its window, `PassCost.uniform_terms`), plus gamma draft
   steps (c x the plain decode step, or the draft model's own step), plus any swap transfer.
6. Pipeline stages (`cost.stages` > 1): `orca` injects the next iteration one stage-time
   (T / stages) later, up to `stages` in flight, and a sequence's next iteration waits only for its
   own previous one, and up to max_batch x stages sequences are held (max_batch per batch);
   `microbatch` (FasterTransformer) splits one batch of max_batch into `stages` microbatches that
   keep the stages full: an iteration of the batch takes T(one microbatch) (each microbatch
   crosses all stages, the others overlapping it), and the smaller rows batch less efficiently.
7. When an iteration completes: each decoder accepts n drafts (P(n >= k) = alpha^k, k <= gamma, or
   a bursty chain) and gains min(n + 1, left) tokens; its K/V rolls back to prompt + generated - 1
   (paged: the spare blocks freed); a prefill that completes emits the first token (TTFT).

K/V is counted in all-layer tokens as `capacity.kv_capacity` (`iteration.held_tokens_fn`).

`serve` is the one scheduler; which code runs a config is its business, never a caller's. The loop
is `engine_loop.general_loop`, which runs every config. Four fast paths compute the same schedule
where they apply, each declared by allow-lists of the `ServeConfig`'s fields, the replica's, its pass
cost's and the workload's (`eligibility`: a field a path does not list takes the general loop), tried
in this order (`FAST_PATHS`):

- `fast_reservations` (`FEATURES`): Orca's reservations (`declared`, `max_len`, `none`) with whole
  prefills, no speculation, one stage or a `serial` pipeline: lazy counters and stretches of
  identical decode iterations.
- `fast_engine` (`FAST_FEATURES`): one stage, whole prefills, no windows, open-loop arrivals, no
  stalls and a fixed gamma, every running sequence decodes every iteration, and running totals
  give the schedule (8-12x faster than the loop); it hands the iterations around a preemption to
  the loop and takes the run back after them (`handover`, an `EngineState`).
- `fast_pipeline` (`FEATURES`): Orca's pipeline (`orca`, more than one stage) with paged K/V, whole
  prefills, no speculation: the running sequences as cohorts of the iterations in flight, each
  with its K/V summed and tables of the iterations at which its members need a block or finish
  (about 7x faster than the loop); a run that would preempt is handed to the loop whole.
- `fast_prefix` (`FEATURES`): prefix caching with paged K/V, recompute preemption, whole prefills,
  no speculation, one stage: counts and per-iteration finish lists instead of a visit to every
  sequence, the loop's own prefix cache; a preempting stretch runs in the loop.

`scheduler="request"` (FasterTransformer's request-level batches) is an admission policy of its own,
run by `request_level` (its allow-list `request_level.FEATURES`; other features are refused).
`ServeResult.path` says which ran, and nothing else in the result depends on it: every path counts
the same statistics (K/V reserved and written included); tests/test_engine_paths.py serves random
configs through every path and compares the finish times and every field, and
tests/reference_scheduler.py is the plain oracle.

Seeded: the only randomness is the acceptance, drawn from `SpecConfig.seed`: independent positions
from each sequence's own stream (`spec_streams`), a bursty chain round by round.
"""

from __future__ import annotations

import math
import operator

from llm_cost.errors import InvalidValueError
from llm_cost.serving.engine_loop import general_loop, run_basics
from llm_cost.serving import fast_pipeline, fast_prefix, fast_reservations, request_level
from llm_cost.serving.fast_engine import fast_eligible, serve_fast
from llm_cost.serving.kv_blocks import block_pool
from llm_cost.serving.replica import Replica
from llm_cost.serving.reservations import reservations_of
from llm_cost.serving.serve_config import ServeConfig
from llm_cost.serving.serve_result import ServeResult
from llm_cost.serving.workload import Workload
from llm_cost.catalog.arguments import Choice, Either, Flag, Many, check_arguments


FAST_PATHS = ("fast_reservations", "fast_engine", "fast_pipeline", "fast_prefix")  # tried in this order (module doc)
FAST = Either(Flag(), Many(Choice(*FAST_PATHS), empty=True))  # `fast`: True, False or the paths allowed


@check_arguments(fast=FAST)
def serve(workload: Workload, replica: Replica, config: ServeConfig = ServeConfig(), *,
          on_progress=None, fast=True) -> ServeResult:
    """Serve `workload` on `replica` under `config` (module doc); a `ServeResult`.

    `fast`: True (default) takes a fast path where one applies (`FAST_PATHS`), the same schedule;
    False always runs the general loop; a collection of names from `FAST_PATHS` allows those only
    (the tests compare every path). `on_progress(finished, requests)` is called as requests finish.

    Examples
    --------
    Exercise 10 (capacity 10 tokens, two requests of 4 + 5, 1 s per iteration): `none` deadlocks
    after two iterations; paged blocks of 1 token with recompute finish both.

    >>> from llm_cost.serving.replica import IterationCost
    >>> from llm_cost.serving.workload import fixed_workload
    >>> wl, server = fixed_workload([(4, 5), (4, 5)]), Replica(IterationCost.unit(), 10, 2048)
    >>> serve(wl, server, ServeConfig(reservation="none")).deadlock.time_s
    2.0
    >>> r = serve(wl, server, ServeConfig(reservation="paged", block_size=1, watermark=0))
    >>> r.finish_s, r.preemptions, r.path
    ((5.0, 8.0), 1, 'fast_engine')
    >>> serve(wl, server).path, serve(wl, server, fast=False).finish_s
    ('fast_reservations', (5.0, 10.0))
    """
    cfg = config
    longest = _longest(workload)  # once: a pass over every request
    res = _checked(workload, replica, cfg, longest)
    paths = FAST_PATHS if fast is True else tuple(fast or ())
    path = _path(workload, replica, cfg, paths, longest)
    if path == "request_level":
        return request_level.serve_request_level(workload, replica, cfg, on_progress)
    if path == "fast_reservations":
        return fast_reservations.serve_reserved(workload, replica, cfg, res, on_progress)
    if path == "fast_engine":
        def general(state, handback):
            return general_loop(workload, replica, cfg, res, on_progress, state, handback)
        return serve_fast(workload, replica, cfg, res, on_progress, general)
    if path == "fast_pipeline":
        pipelined = fast_pipeline.serve_pipelined(workload, replica, cfg, on_progress)
        if pipelined is not None:
            return pipelined  # else the run preempts: the general loop runs it whole
    if path == "fast_prefix":
        return fast_prefix.serve_prefix(workload, replica, cfg, res, on_progress)
    return general_loop(workload, replica, cfg, res, on_progress)


@check_arguments()
def checked(workload: Workload, replica: Replica, config: ServeConfig) -> list:
    """`serve`'s up-front checks of `config` and of every request of `workload` on `replica` (each fits
    the replica alone; `max_len`: the maximum length; `scheduler="request"`: its allow-list and padded
    rows); each request's reservation (K/V tokens, 0 unless `declared` or `max_len`). A fleet and the
    disaggregated pools, which drive the engine's loops themselves, call it to refuse what `serve` refuses.

    >>> from llm_cost.serving.replica import IterationCost
    >>> from llm_cost.serving.workload import fixed_workload
    >>> checked(fixed_workload([(4, 5), (3, 2)]), Replica(IterationCost.unit(), 100, 2048),
    ...         ServeConfig(reservation="declared"))
    [9, 5]
    >>> checked(fixed_workload([(40, 5)]), Replica(IterationCost.unit(), 30, 2048), ServeConfig())
    Traceback (most recent call last):
    ...
    llm_cost.errors.InvalidValueError: a request needs 45 KV tokens but the replica holds 30; lower the lengths or max_gen, or free memory
    """
    return _checked(workload, replica, config, _longest(workload))


@check_arguments(fast=FAST)
def path_of(workload: Workload, replica: Replica, config: ServeConfig, fast=True) -> str:
    """The path `serve(workload, replica, config, fast=fast)` runs: `request_level`, `fast_reservations`,
    `fast_engine`, `fast_pipeline`, `fast_prefix` or `general` (module doc; `fast_pipeline` hands a run
    that would preempt to the general loop whole, and its `ServeResult.path` says `general`)."""
    paths = FAST_PATHS if fast is True else tuple(fast or ())
    return _path(workload, replica, config, paths, _longest(workload))


@check_arguments()
def runs_step_level(workload: Workload, replica: Replica, config: ServeConfig) -> bool:
    """Whether `serve` runs `config` on a step-level path (`request_level`, `fast_reservations`): the rate
    search then computes its unloaded figure (`rate_search.unloaded_latency_per_token`) instead of serving
    every request alone (`rate_search`). Every path counts K/V reserved against written and the rows
    computed and needed alike (`ServeResult`)."""
    return path_of(workload, replica, config) in ("request_level", "fast_reservations")


def _path(workload, replica, cfg, paths, longest: int) -> str:
    if cfg.scheduler == "request":
        return "request_level"
    if "fast_reservations" in paths and fast_reservations.covers(workload, replica, cfg):
        return "fast_reservations"
    if "fast_engine" in paths and fast_eligible(workload, replica, cfg, longest):
        return "fast_engine"
    if "fast_pipeline" in paths and fast_pipeline.covers(workload, replica, cfg):
        return "fast_pipeline"
    if "fast_prefix" in paths and fast_prefix.covers(workload, replica, cfg):
        return "fast_prefix"
    return "general"


def _checked(workload: Workload, replica: Replica, cfg: ServeConfig, longest: int) -> list:
    """`checked` with `longest` (`_longest(workload)`) given."""
    if cfg.scheduler == "request":
        if not request_level.covers(workload, replica, cfg):
            raise InvalidValueError("scheduler request runs whole batches on one stage or a serial pipeline, "
                                    "without windowed layers or a closed loop", params=("scheduler",))
        _check_padded(workload, replica)
    return _validated(workload, replica, cfg, longest)


def _validated(workload: Workload, replica: Replica, cfg: ServeConfig, longest: int) -> tuple:
    """Each request's reservation, after checking that every request fits the replica alone (and,
    `max_len`, the maximum length); `longest` is `_longest(workload)`. `run_basics`' symbols: `n`
    requests, `P` their prompts, `O` outputs, `K` the K/V tokens a context holds, `B` the block size."""
    cost, cap, _, K, n, P, O, policy = run_basics(workload, replica, cfg)
    paged = policy == "paged"
    gmax = cfg.spec.gamma if cfg.spec else 0
    B = cfg.block_size
    total_blocks = block_pool(cap, B, cfg.watermark)[0] if paged else 0
    if paged and total_blocks < 1:
        raise InvalidValueError(f"block_size {B} exceeds the KV capacity ({cap} tokens)", params=("block_size",))
    reserving = policy in ("declared", "max_len")
    res = reservations_of(policy, P, workload.declared_gen, replica.max_len) if reserving else [0] * n
    worst = max(res) if reserving else (K(longest + gmax) if paged else max(P))  # K grows
    limit = total_blocks * B if paged else cap
    if worst > limit:
        raise InvalidValueError(f"a request needs {math.ceil(worst)} KV tokens but the replica holds {limit}; "
                                f"lower the lengths or max_gen, or free memory", params=("max_gen", "prompt_len"))
    if policy == "max_len" and max(map(operator.add, P, workload.declared_gen)) > replica.max_len:
        raise InvalidValueError(f"a request's prompt + max_gen exceeds max_len ({replica.max_len})",
                                params=("max_gen", "max_len"))
    return res


def _longest(workload: Workload) -> int:
    """The longest prompt + output of the workload (tokens)."""
    return max(map(operator.add, workload.prompt, workload.output))


def _check_padded(workload: Workload, replica: Replica) -> None:
    """Request-level rows are padded to the longest prompt plus the longest output: within max_len."""
    if max(workload.prompt) + max(workload.output) - 1 > replica.max_len:
        raise InvalidValueError(f"request-level batching pads rows to the longest prompt plus the longest output, "
                                f"which exceeds max_len ({replica.max_len})", params=("max_len",))
