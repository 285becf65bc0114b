"""Rows under load: the serving engine (`serving.engine.serve`) with a current engine's defaults.

`ENGINE`: paged K/V with recompute preemption, a budget of 8,192 tokens per iteration with decode rows
first and prompt chunks after them, at most 256 sequences:

- `request rate`: RATE_REQUESTS Poisson arrivals at the row's rate, split evenly over the replicas
  (a rate of inf: all of them at once, as vLLM's and SGLang's benchmark clients send by default);
- `concurrency` B: a closed loop of B clients, each sending its next request when one finishes
  (once it has the last token, as a benchmark client does: the request misses the iteration a busy
  engine starts then, `Workload.client_round_trip`), for CLOSED_LOOP_ROUNDS rounds (B x rounds requests; latencies over the rounds after the first and
  before the last, a steady window; throughput over the whole run; the engine holds all the clients
  when there are more than 256). On one stage the loop is scheduled once in iteration counts and
  re-timed for each profile (`serving.retime`). When a replica's prompts fit one iteration's budget
  (B x ISL <= 8,192), their K/V fits and they do not speculate, every round is one static batch (the
  B requests start, prefill and finish together), so `prediction` uses `request_cost`'s static batch,
  the same numbers without the simulation (a test checks tp, pp, replicas, MoE and windowed layers).
  One token past the budget the rounds no longer move in step and TTFT drops (later rounds' requests
  arrive one by one).

A row measured with speculative decoding (`spec_config`) is served with speculation in the batch: every
decoding sequence feeds gamma + 1 rows an iteration, accepts drafts at the alpha of its accepted length
and pays gamma draft steps. Each sequence accepts its own drafts, so a round's requests finish apart and
a closed loop is served even where its prompts fit one iteration (Llama-3.1-8B on an H100, `measured`,
8 clients of 1,024 + 512 tokens, EAGLE-3 at 2.5 tokens a round: TTFT 0.10 s served, 0.41 s as a static
batch, ITL 4.9 ms against 4.1, the later prompts prefilling between the others' rounds; with 16-token
prompts the two agree within 0.3%: the engine's drawn acceptances and `request_cost`'s mean round).
Its closed loop is served, not re-timed (the draft's steps make the schedule depend on time); its
decode-only stretches are taken in one step at its fixed gamma (`serving.decode_stretch`), so a long output
costs little more than a plain row's (DeepSeek-R1 1k/8k at 64 clients with MTP: about 0.6 s, was 2.7 s).

The engine keeps up to pp batches in flight on a pipeline (Orca's and vLLM's). A row's own engine
(`Point.engine`, `specs.engines`) sets the budget, the sequences and the K/V block (`engine_config`;
`ENGINE` is the generic one's), and the profile's `ttft_overhead_s` (its engine's: `Profile.for_engine`)
adds to every request's TTFT and e2e.
"""

from __future__ import annotations

import functools
import math

from llm_cost.calibrate.bench_columns import drawn_lengths
from llm_cost.calibrate.points import MAX_ROW_TOKENS, SECONDS_PER_SERVED_STEP, SERVED_STEPS_BUDGET, NotCovered, Point
from llm_cost.specs.deployment import Deployment

RATE_REQUESTS = 1000  # Poisson arrivals served for a `request rate` row (vLLM's benchmark default prompts)
CLOSED_LOOP_ROUNDS = 10  # rounds of a `concurrency` row's clients (1,000 prompts at concurrency 100)
ENGINE_TOKENS_PER_ITERATION = 8192  # vLLM V1's max_num_batched_tokens, SGLang's chunked prefill, TRT-LLM's max_num_tokens
ENGINE_MAX_BATCH = 256  # vLLM's max_num_seqs; a closed loop of more clients holds them all
LOAD_METRICS = ("ttft_ms", "itl_ms", "e2e_latency_ms", "output_tok_per_s", "output_tok_per_s_total",
                "output_tok_per_s_per_gpu", "output_tok_per_s_per_user", "decode_tok_per_s_per_user")
# block 16, watermark 0.01, recompute; paged K/V is also what speculation needs: blocks on demand hold the
# gamma + 1 rows a verification writes and free the rejected ones (`ServeConfig` refuses it under `none`)
ENGINE = dict(reservation="paged", prefill_chunk=ENGINE_TOKENS_PER_ITERATION)


def engine_config(engine, gpu) -> tuple[int, int, int]:
    """(tokens per iteration, max sequences, K/V block tokens) of `engine` (a `specs.engines.Engine`)
    on `gpu` (its usable memory picks the engine's budget)."""
    tokens, sequences = engine.budget(gpu)
    return tokens, sequences, engine.kv_block_tokens


def served(point, model, gpu, profile, weights, dep, sizes, notes, engine=None) -> tuple[float, str]:
    """A row under load through the serving engine with `ENGINE`'s settings, each replica alike:
    `sizes` None: Poisson arrivals at `point.batch` requests per second split evenly over the replicas,
    RATE_REQUESTS in all; else a closed loop of `size` clients on each of `n` replicas for each
    (size, n), CLOSED_LOOP_ROUNDS rounds.

        ttft = first token - arrival (sent);  itl = (finish - first token) / (OSL - 1);  e2e = finish - arrival
        per user OSL / e2e (means over the requests);  output tok/s = output tokens / (last finish -
        first arrival), summed over the replicas
    """
    if point.metric not in LOAD_METRICS:
        raise NotCovered(f"{point.metric} under load: the serving engine gives {', '.join(LOAD_METRICS)}")
    from llm_cost.specs.engines import ENGINES

    engine = engine or ENGINES["generic"]
    if not engine.continuous:
        raise NotCovered(f"{engine.name} runs static batches only: a row under load is not its figure")
    settings = engine_config(engine, gpu)
    single = Deployment(tp=dep.tp, pp=dep.pp, kv_dtype=dep.kv_dtype)
    bench = point.bench
    spec = spec_config(bench)
    stated = -(-bench.num_prompts // dep.replicas) if bench.num_prompts else 0  # one replica's measured run

    def lengths(count: int):
        if not bench.ranged:
            return None
        return tuple(zip(drawn_lengths(point.isl, bench.isl_range_ratio, count, 1),
                         drawn_lengths(point.osl, bench.osl_range_ratio, count, 2)))

    if sizes is None:
        count = stated or -(-RATE_REQUESTS // dep.replicas)
        runs = [(load_figures(model, gpu, profile, weights, single, point.isl, point.osl,
                              point.batch / dep.replicas, count, False, settings, lengths(count), spec=spec),
                 dep.replicas, 1.0)]
    else:
        runs = [(load_figures(model, gpu, profile, weights, single, point.isl, point.osl, size,
                              stated or size * CLOSED_LOOP_ROUNDS, True, settings,
                              lengths(stated or size * CLOSED_LOOP_ROUNDS), not stated, spec), count, float(size))
                for size, count in sizes]
    weight = sum(count * share for _, count, share in runs)
    mean = lambda index: sum(figures[index] * count * share  # noqa: E731 (over the requests)
                             for figures, count, share in runs) / weight
    total = sum(figures[4] * count for figures, count, _ in runs)
    extra = profile.ttft_overhead_s  # before each request's first token, beyond the served prefill
    value = {"ttft_ms": (mean(0) + extra) * 1e3, "itl_ms": mean(1) * 1e3, "e2e_latency_ms": (mean(2) + extra) * 1e3,
             "output_tok_per_s_per_user": mean(3), "decode_tok_per_s_per_user": mean(3),
             "output_tok_per_s": total, "output_tok_per_s_total": total,
             "output_tok_per_s_per_gpu": total / dep.total_gpus}[point.metric]
    preempted = max(figures[5] for figures, _, _ in runs)
    if preempted:
        notes = notes + [f"served with {preempted} preemptions per replica: the requests' K/V does not fit "
                         f"at once by the model's count"]
    return value, "; ".join(notes)


def spec_config(bench):
    """The `serving.serve_config.SpecConfig` of a row's spec columns (None without speculation): each
    decoding sequence drafts `spec_gamma` tokens every iteration (the benchmarks' engines run a fixed
    num_speculative_tokens), accepting with the alpha solved from `spec_accept_len`, its draft steps
    costing `spec_cost` x the plain decode step: `BenchConditions.spec_alpha` and `spec_cost`, the
    static rows' own (`prediction`). The engine's paged K/V holds the gamma + 1 rows a verification
    writes (a block more where they cross one) and rolls back the rejected ones."""
    if not bench.speculative:
        return None
    from llm_cost.serving.serve_config import SpecConfig

    return SpecConfig(gamma=bench.spec_gamma, alpha=bench.spec_alpha, c=bench.spec_cost)


_SCHEDULES: dict = {}  # closed loops in iteration counts (`serving.retime`), by what their schedule depends on


@functools.lru_cache(maxsize=64)
def load_figures(model, gpu, profile, weights, single, isl: int, osl: int, load: float, requests: int,
                 closed: bool, settings: tuple = (ENGINE_TOKENS_PER_ITERATION, ENGINE_MAX_BATCH, 16),
                 lengths: tuple | None = None, steady: bool = True, spec=None):
    """(mean TTFT s, mean ITL s, mean e2e s, mean OSL / e2e, output tok/s, preemptions) of one replica
    (`single`: tp, pp, KV dtype) serving `requests` requests: a closed loop of `load` clients
    (latencies over the rounds after the first and before the last: a steady window), or Poisson
    arrivals at `load` requests per second (inf: all at once). Cached: a table's rows often give
    several metrics of one condition. `settings`: the engine's (tokens per iteration, max sequences,
    K/V block tokens) (`engine_config`); `lengths`: each request's (isl, osl) when they vary (None:
    all isl, osl); `steady` False: a closed loop's latencies over every request (a run that starts
    empty and drains, as a benchmark's measured run does); `spec`: a `SpecConfig` (`spec_config`) or
    None. A closed loop on one stage without speculation is scheduled once in iteration counts and
    re-timed for each profile (`serving.retime`): calibrating evaluates it hundreds of times; with
    speculation the schedule depends on time (the draft's steps), and the engine serves it."""
    import dataclasses
    import random

    import numpy as np

    from llm_cost.serving import Replica
    from llm_cost.serving.engine import serve
    from llm_cost.serving.retime import closed_loop_schedule
    from llm_cost.serving.serve_config import ServeConfig
    from llm_cost.serving.workload import fixed_workload

    # paged K/V never reserves a maximum length: a model whose config states none serves at the row's own
    replica = Replica.from_specs(model, gpu, profile, weights=weights, deployment=single,
                                 kv_bytes_per_element=single.kv_bytes_per_element,
                                 max_len=None if model.max_position_embeddings else isl + osl)
    tokens, sequences, block = settings
    engine = dict(reservation="paged", prefill_chunk=tokens, block_size=block)
    if closed:
        clients = int(load)
        wl = dataclasses.replace(fixed_workload(list(lengths) if lengths else [(isl, osl)] * requests),
                                 concurrency=clients, client_round_trip=True)  # a benchmark client's round trip
        config = ServeConfig(max_batch=max(sequences, clients), spec=spec, **engine)
    else:
        rng = random.Random(0)
        clock, arrivals = 0.0, []
        for _ in range(requests):
            clock += rng.expovariate(load) if math.isfinite(load) else 0.0  # inf: every request at once
            arrivals.append(clock)
        wl = fixed_workload(list(lengths) if lengths else [(isl, osl)] * requests, arrivals_s=arrivals)
        config = ServeConfig(max_batch=sequences, spec=spec, **engine)
    if closed and single.pp == 1 and spec is None:
        cost = replica.cost
        key = (model, weights, single, isl, osl, clients, requests, replica.kv_capacity_tokens, replica.max_len,
               cost.kv_windows, cost.num_layers, bool(cost.kv_token_bytes), settings, lengths, "round trip")
        if key not in _SCHEDULES:
            _SCHEDULES[key] = closed_loop_schedule(wl, replica, config)
        schedule = _SCHEDULES[key]
        arrival, first, finish = schedule.times(cost)
        output, preemptions = schedule.output, schedule.preemptions
    else:
        res = serve(wl, replica, config)
        arrival, first, finish = (np.asarray(array, dtype=float) for array in (res.arrival_s, res.first_token_s, res.finish_s))
        output, preemptions = res.output, res.preemptions
    if not np.all(np.isfinite(finish)):
        raise NotCovered("under load: the served replica did not finish every request")
    tokens_s = float(np.sum(output)) / (float(np.max(finish)) - float(np.min(arrival)))  # start-up, drain included
    outs = np.array([request_osl for _, request_osl in lengths], dtype=float) if lengths else np.full(len(arrival), float(osl))
    if closed and steady and requests >= 3 * clients:  # the steady window: without the first round and the last
        arrival, first, finish, outs = (array[clients:requests - clients] for array in (arrival, first, finish, outs))
    life = finish - arrival
    decoding = outs > 1
    itl = float(np.mean((finish - first)[decoding] / (outs[decoding] - 1))) if decoding.any() else 0.0
    return (float(np.mean(first - arrival)), itl, float(np.mean(life)), float(np.mean(outs / life)), tokens_s,
            preemptions)


def over_budget(point: Point, steps_budget: float = SERVED_STEPS_BUDGET) -> str | None:
    """Why a row is not predicted although it is well formed: a request longer than MAX_ROW_TOKENS, or a
    served row whose simulation would pass `steps_budget` engine steps (the estimate); else None.
    One row never stalls a file: its prediction is bounded, or it is not covered with this reason,
    which names the parameter that raises the budget (`steps_budget`; the CLI writes its option)."""
    if max(point.isl, point.osl) > MAX_ROW_TOKENS:
        return f"isl {point.isl:g} / osl {point.osl:g}: a request of more than {MAX_ROW_TOKENS:.0e} tokens is not modelled"
    if point.batch_kind not in ("concurrency", "request rate"):
        return None
    requests = point.batch * CLOSED_LOOP_ROUNDS if point.batch_kind == "concurrency" else RATE_REQUESTS
    bench = point.bench  # with speculation a request decodes in rounds of spec_accept_len tokens on average
    rounds = point.osl / bench.spec_accept_len if bench.speculative else point.osl
    steps = requests * (rounds + math.ceil(point.isl / ENGINE_TOKENS_PER_ITERATION))
    if steps <= steps_budget:
        return None
    return (f"serving it would take {requests:,.0f} requests x {steps / requests:,.0f} engine steps = {steps:.2g} "
            f"steps (about {steps * SECONDS_PER_SERVED_STEP:,.0f} s), past the budget of {steps_budget:.2g} a row "
            f"(about {steps_budget * SECONDS_PER_SERVED_STEP:,.0f} s; steps_budget raises it)")
