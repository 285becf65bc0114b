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
The loop is `engine_loop.general_loop`. With one stage, whole prefills, no windows, open-loop
arrivals, no stalls and a fixed gamma, every running sequence decodes every iteration and
`fast_engine` computes the same schedule by running totals (8-12x faster); it hands the iterations
around a preemption to the loop and takes the run back after them (`handover`, an `EngineState`).
Which runs may take it is an allow-list (`fast_engine.FAST_FEATURES`, one entry per `ServeConfig`
field): a field it does not list takes the general loop.

Seeded: the only randomness is the acceptance, drawn from `SpecConfig.seed`: independent positions
from each sequence's own stream (`spec_streams`), a bursty chain round by round. Without speculation,
preemption, chunks or stages, the schedule is `simulator.simulate`'s (tests pin the finish times).
"""

from __future__ import annotations

import math
import operator
from dataclasses import fields

from llm_cost.errors import InvalidValueError
from llm_cost.serving.engine_loop import general_loop, run_basics
from llm_cost.serving.fast_engine import fast_eligible, serve_fast
from llm_cost.serving.replica import Replica
from llm_cost.serving.reservations import reservation_tokens
from llm_cost.serving.serve_config import ServeConfig
from llm_cost.serving.serve_result import ServeResult
from llm_cost.serving.workload import Workload
from llm_cost.catalog.arguments import check_arguments


@check_arguments()
def serve(workload: Workload, replica: Replica, config: ServeConfig = ServeConfig(), *,
          on_progress=None, fast: bool = True) -> ServeResult:
    """Serve `workload` on `replica` under `config` (module doc); a `ServeResult`.

    `fast` (default): where it applies, the schedule by running totals (`fast_engine`), the same
    result; False: always the loop below (the tests compare the two).

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
    >>> r.finish_s, r.preemptions
    ((5.0, 8.0), 1)
    """
    cfg = config
    cost, cap, held, K, n, P, O, policy = run_basics(workload, replica, cfg)
    paged = policy == "paged"
    spec = cfg.spec
    gmax = spec.gamma if spec else 0
    B = cfg.block_size
    total_blocks = cap // B if paged else 0
    if paged and total_blocks < 1:
        raise InvalidValueError(f"block_size {B} exceeds the KV capacity ({cap} tokens)", params=("block_size",))
    reserving = policy in ("declared", "max_len")
    res = ([reservation_tokens(policy, p, d, replica.max_len) for p, d in zip(P, workload.declared_gen)]
           if reserving else [0] * n)
    longest_request = max(map(operator.add, P, O))
    longest = K(longest_request + gmax)  # K grows with its argument
    worst = max(res) if reserving else (longest if paged else max(P))
    limit = total_blocks * B if paged else cap
    if worst > limit:
        raise InvalidValueError(f"a request needs {math.ceil(worst)} KV tokens but the replica holds {limit}; "
                                f"lower the lengths or max_gen, or free memory", params=("max_gen", "prompt_len"))
    if fast and fast_eligible(workload, replica, cfg, held, longest_request):
        def general(state, handback):
            return general_loop(workload, replica, cfg, res, on_progress, state, handback)
        return serve_fast(workload, replica, cfg, res, on_progress, general)
    return general_loop(workload, replica, cfg, res, on_progress)


def _anything(value, cfg) -> bool:
    return True


# The `ServeConfig` features the step-level simulator (`simulator.simulate`) runs, field by field: there
# the engine's schedule is the simulator's (tests pin the finish times) and the simulator also counts
# K/V reserved against written. A field missing here takes the engine.
SIMULATOR_FEATURES = {
    "max_batch": _anything,
    "reservation": lambda value, cfg: value in ("declared", "max_len", "none"),
    "block_size": _anything,  # paged only
    "watermark": _anything,
    "preemption": _anything,
    "prefill_chunk": lambda value, cfg: value is None,
    "spec": lambda value, cfg: value is None,
    "pipeline": _anything,  # with stages: `serial` only (below)
    "host_bytes_per_s": _anything,
    "scheduler": _anything,
    "prefix_caching": lambda value, cfg: not value,
    "kv_offload_bytes": lambda value, cfg: not value,  # the host tier lives in the engine
}


@check_arguments()
def simulator_covers(workload: Workload, replica: Replica, config: ServeConfig) -> bool:
    """Whether `simulator.simulate` runs `config` (`SIMULATOR_FEATURES`, K/V without windows, open-loop
    arrivals, one stage or a `serial` pipeline)."""
    values = {f.name: getattr(config, f.name) for f in fields(config)}
    if not all(name in SIMULATOR_FEATURES and SIMULATOR_FEATURES[name](v, config) for name, v in values.items()):
        return False
    if replica.cost.kv_windows or replica.cost.state_tokens or workload.concurrency is not None:
        return False  # windows and a hybrid's state per sequence: the engine's K/V ledger counts them
    return replica.cost.stages == 1 or config.pipeline == "serial"


@check_arguments()
def run_serving(workload: Workload, replica: Replica, config: ServeConfig = ServeConfig(), *,
                on_progress=None) -> ServeResult:
    """Serve `workload` under `config`: the step-level simulator where it covers the run
    (`simulator_covers`: the same schedule, K/V reserved and written counted apart), else `serve`.

    The one call a front end makes, whatever the options: which scheduler runs is the library's
    allow-list, never a guess from the options given.

    >>> from llm_cost.serving.replica import IterationCost
    >>> from llm_cost.serving.workload import fixed_workload
    >>> wl, server = fixed_workload([(4, 5), (4, 5)]), Replica(IterationCost.unit(), 10, 2048)
    >>> [run_serving(wl, server, ServeConfig(reservation=r, block_size=1)).scheduler for r in ("declared", "paged")]
    ['iteration', 'engine']
    """
    if simulator_covers(workload, replica, config):
        from llm_cost.serving.simulator import simulate

        scheduler = "none" if config.reservation == "none" else config.scheduler
        result = simulate(workload, replica, scheduler=scheduler, max_batch=config.max_batch,
                          reservation=config.reservation, on_progress=on_progress)
        if on_progress:
            on_progress(len(workload), len(workload))
        return result
    if config.scheduler == "request":
        raise InvalidValueError("scheduler request runs on one stage or a serial pipeline, without windowed "
                                "layers or a closed loop", params=("scheduler",))
    return serve(workload, replica, config, on_progress=on_progress)
