"""A measured point's predicted value under a profile, or why the model cannot express it.

Every metric is a whole-request figure: of `requests.request_cost` (a static batch: prefill, then
OSL - 1 decode steps at a growing context) on one replica of the row's deployment, weights and KV
precision, or of the serving engine for rows under load (below). The row's batch, clients or rate are
the whole deployment's, split as evenly as they go over its replicas (gpu_count / (tp x pp); means
over the requests, outputs summed over the replicas). A static batch crosses a replica's pipeline as
one batch; the served engine keeps up to pp batches in flight (Orca's and vLLM's pipelines):

    decode / output tok/s per user   OSL / e2e  (batch 1)
    output_tok_per_s                 B x OSL / e2e(B / replicas)   (served: output tokens / span)
    output_tok_per_s_per_gpu         output_tok_per_s / GPUs
    ttft_ms                          the prefill of the batch (served: first token - arrival, mean)
    itl_ms                           TPOT: the mean decode step (served: (finish - first token) / (OSL - 1))
    e2e_latency_ms                   TTFT + (OSL - 1) TPOT
    output_tok_per_s_total           output_tok_per_s at the largest batch that fits each replica (saturation)
    decode_tok_per_s                 OSL / (OSL decode steps after ISL cached tokens)  (llama-bench tg)
    prefill_tok_per_s                B x ISL / prefill in passes of 512 tokens        (llama-bench pp)

Rows under load (a request rate; a concurrency whose prompts overflow one iteration or whose K/V
overflows) are served by the serving engine with a current engine's defaults (`under_load`).

A row measured with speculative decoding (its spec columns, `bench_columns`) is predicted with it: a
static batch by `request_cost`'s mean speculative round, a row under load served with speculation in
the batch (`under_load.spec_config`); both take alpha from the accepted length and the draft's cost
by method from `BenchConditions.spec_alpha` and `spec_cost`.

A static batch that does not fit the deployment's memory by the model's count is still predicted (it
was measured, so it ran) and its `reason` says so, as does a served row that preempted and a row past
its config's context (predicted as it ran, with a longer one); one whose weights alone do not fit is
not covered.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from llm_cost.calibrate.points import WEIGHTS, Point
from llm_cost.calibrate.points import NotCovered as _NotCovered
from llm_cost.calibrate.under_load import served
from llm_cost.errors import InvalidValueError, LlmCostError
from llm_cost.specs import WeightFormat
from llm_cost.specs.deployment import Deployment
from llm_cost.specs.weights import SHIPPED_FORMATS, weight_format

LLAMA_BENCH_UBATCH = 512  # llama-bench's default n_ubatch: a pp prompt runs in passes of 512 tokens

@dataclass(frozen=True)
class Prediction:
    """A point's predicted value in the metric's unit, or None and the reason it is not covered
    (`reason` may also qualify a covered prediction: a batch that does not fit by the model's count)."""

    point: Point
    predicted: float | None
    reason: str = ""

    @property
    def covered(self) -> bool:
        return self.predicted is not None

    @property
    def ape(self) -> float | None:
        """|predicted / value - 1| (None when not covered)."""
        return None if self.predicted is None else abs(self.predicted / self.point.value - 1.0)


def weight_format_of(name: str, group_size: int, model=None) -> WeightFormat:
    """The WeightFormat of a row's `weights` and `group_size` (0: per output channel, no group overhead):
    `specs.weights.weight_format`, the one registry, or a shipped format's name (`SHIPPED_FORMATS`:
    mxfp4): the `checkpoint` format of a model whose checkpoint ships it (gpt-oss's MXFP4 experts;
    `model` tells). Any other name: InvalidValueError (the row is not covered).
    """
    if name in SHIPPED_FORMATS:
        quantization = getattr(model, "quantization", None)
        if quantization is None or quantization.method != name:
            raise InvalidValueError(f"weights {name}: the model's checkpoint does not ship {name.upper()} "
                                    f"({SHIPPED_FORMATS[name]} does); name its format instead")
        name = "checkpoint"
    if name not in WEIGHTS:
        raise InvalidValueError(f"weights {name!r} is not a format the model knows ({', '.join(WEIGHTS)})")
    return weight_format(name, group_size=group_size)


def deployment_of(point: Point) -> Deployment:
    """The row's GPUs: tp x pp per replica, gpu_count in all, its KV precision."""
    from llm_cost.specs.deployment import KV_DTYPES

    kv = {"fp16": "bf16"}.get(point.kv, point.kv)
    if kv not in KV_DTYPES:
        raise InvalidValueError(f"kv {point.kv!r} is not a KV precision the model knows ({', '.join(KV_DTYPES)})")
    return Deployment(tp=point.tp, pp=point.pp, gpus=point.gpu_count, kv_dtype=kv)


SERVED_KINDS = ("concurrency", "request rate")  # rows the serving engine predicts (`under_load`)


def served_condition(point: Point) -> tuple:
    """What a served row's simulation depends on (not its metric, id or value): rows alike run it once
    (`under_load.load_figures` caches it, its closed loop's schedule too) when one process predicts them."""
    return (point.config, point.gpu_name, point.weights, point.group_size, point.kv, point.tp, point.pp,
            point.gpu_count, point.batch, point.batch_kind, point.isl, point.osl, point.engine, point.bench)


def served_groups(points) -> list[list[int]]:
    """The indices of `points`' served rows (SERVED_KINDS) by `served_condition`, one list per condition in
    first-seen order: the tasks an executor gives one process each (the metrics of a condition share one
    simulation; split over processes, each would simulate it)."""
    groups: dict[tuple, list[int]] = {}
    for index, point in enumerate(points):
        if point.batch_kind in SERVED_KINDS:
            groups.setdefault(served_condition(point), []).append(index)
    return list(groups.values())


def predict_each(points, profile, engine: str | None = None, steps_budget: float | None = None) -> list:
    """`[predict(p, profile, engine, steps_budget=...) for p in points]`: one executor task of rows alike."""
    return [predict(point, profile, engine, steps_budget=steps_budget) for point in points]


def predict(point: Point, profile, engine: str | None = None, *, steps_budget: float | None = None) -> Prediction:
    """`Prediction` of one point under `profile` (module doc) as served by `engine` (default the point's
    own, `Point.engine`): the profile's fixed costs for that engine (`Profile.for_engine`) and its
    serving defaults (`specs.engines`); a row the model cannot express is not covered, with the reason;
    so is a served row past `steps_budget` engine steps (default `points.SERVED_STEPS_BUDGET`)."""
    from llm_cost.calibrate.points import SERVED_STEPS_BUDGET
    from llm_cost.calibrate.under_load import over_budget
    from llm_cost.specs.engines import ENGINES

    name = engine or point.engine
    why = over_budget(point, SERVED_STEPS_BUDGET if steps_budget is None else steps_budget)  # bounded: a row past the budget is not covered, and the file goes on
    if why:
        return Prediction(point, None, why)
    try:
        model, gpu = _specs(point.config, point.gpu_name)
        value, note = _value(point, model, gpu, profile.for_engine(name), ENGINES[name])
        return Prediction(point, value, note)
    except _NotCovered as why:
        return Prediction(point, None, str(why))
    except LlmCostError as err:
        return Prediction(point, None, str(err))
    except (ValueError, ArithmeticError) as err:  # a condition the formulas cannot take: not a guess
        return Prediction(point, None, f"the model cannot evaluate this row ({type(err).__name__}: {err})")


@functools.lru_cache(maxsize=256)
def _specs(config: str, gpu_name: str):
    """The model and accelerator of a row (`config` already resolved against the CSV's folder)."""
    from pathlib import Path

    from llm_cost.calibrate.points import resolve_model
    from llm_cost.catalog import load_accelerator

    return resolve_model(config, Path(".")), load_accelerator(gpu_name)


def _value(point: Point, model, gpu, profile, engine) -> tuple[float, str]:
    """(the predicted value, a note or ''): the module doc's mapping."""
    import dataclasses

    from llm_cost.requests import request_cost

    weights = weight_format_of(point.weights, point.group_size, model)
    dep = deployment_of(point).following(profile)  # fits on the profile's memory basis
    metric, kind = point.metric, point.batch_kind
    if metric == "itl_ms" and point.osl < 2:
        raise _NotCovered("itl_ms needs osl >= 2")
    notes = []
    limit, length = model.max_position_embeddings, max(point.isl, 1) + point.osl
    if limit and length > limit:  # it was measured, so it ran: with a longer context than its config states
        model = dataclasses.replace(model, max_position_embeddings=0)
        notes.append(f"isl + osl = {length} tokens is past the config's context of {limit}: predicted as it ran")
    if metric in ("decode_tok_per_s", "prefill_tok_per_s"):
        if kind == "request rate":
            raise _NotCovered(f"{metric} is llama-bench's figure of a batch, not of a request rate")
        batch = int(point.batch) if kind != "saturation" else _largest_batch(point, model, gpu, weights, dep)
        return _bench(point, model, gpu, profile, weights, dep, batch), "; ".join(notes)
    if point.isl < 1:
        raise _NotCovered(f"{metric} needs isl >= 1, got 0")
    if point.osl < 1:  # a prefill-only row (llama-bench's pp512): only a prefill metric describes it
        raise _NotCovered(f"osl 0 is a prefill-only row: {metric} is not its figure (prefill_tok_per_s is)")
    bench = point.bench
    if kind == "request rate":
        return served(point, model, gpu, profile, weights, dep, None, notes, engine)
    # The row's batch is the whole deployment's, split evenly over its replicas (saturation: as many
    # as fit each replica): (size, replicas of that size), at most two sizes.
    if kind == "saturation":
        sizes = [(_largest_batch(point, model, gpu, weights, dep), dep.replicas)]
    else:
        sizes = _split(int(point.batch), dep.replicas)
    one = Deployment(tp=dep.tp, pp=dep.pp, kv_dtype=dep.kv_dtype).following(profile)
    speculation = _speculation(bench) if bench.speculative else None
    runs = [(request_cost(model, gpu, profile, batch=size, isl=point.isl, osl=point.osl, deployment=one,
                          weights=weights, speculation=speculation), count) for size, count in sizes]
    fit = runs[0][0].fit  # the largest batch's
    if fit.weight_bytes > fit.available_bytes:  # no room for any K/V: not a batch that ran as stated
        raise _NotCovered(f"the weights alone do not fit the deployment: {fit.reason}")
    budget = engine.budget(gpu)[0]
    # a closed loop whose lengths vary, whose run starts empty and drains, or whose sequences speculate
    # (each accepts its own drafts, so a round's requests finish iterations apart and the next round's
    # prompts arrive one by one) is served: its rounds do not move in step; else one that fits an
    # iteration's budget and the memory is a static batch each round
    if kind == "concurrency" and (sizes[0][0] * point.isl > budget or not fit.fits_memory or bench.ranged
                                  or bench.num_prompts or bench.speculative):
        return served(point, model, gpu, profile, weights, dep, sizes, notes, engine)
    if not fit.fits_memory:
        notes.append(f"predicted although its batch does not fit by the model's count: {fit.reason}")
    requests = sum(run.batch * count for run, count in runs)
    mean = lambda figure: sum(figure(run) * run.batch * count for run, count in runs) / requests  # noqa: E731
    output_tok_s = sum(run.batch * count * point.osl / run.e2e_s for run, count in runs)
    value = {"decode_tok_per_s_per_user": mean(lambda run: point.osl / run.e2e_s),
             "output_tok_per_s_per_user": mean(lambda run: point.osl / run.e2e_s),
             "output_tok_per_s": output_tok_s, "output_tok_per_s_total": output_tok_s,
             "output_tok_per_s_per_gpu": output_tok_s / dep.total_gpus, "ttft_ms": mean(lambda run: run.ttft_s) * 1e3,
             "itl_ms": mean(lambda run: run.tpot_s) * 1e3, "e2e_latency_ms": mean(lambda run: run.e2e_s) * 1e3}[metric]
    return value, "; ".join(notes)


def _speculation(bench):
    """The `Speculation` of a row's spec columns: alpha solved from the mean accepted length and the
    draft's cost by method (`BenchConditions.spec_alpha`, `spec_cost`: the served rows' too)."""
    from llm_cost.requests import Speculation

    return Speculation(alpha=bench.spec_alpha, gamma=bench.spec_gamma, c=bench.spec_cost)


def _split(total: int, replicas: int) -> list[tuple[int, int]]:
    """`total` requests over `replicas` as evenly as they go: [(size, replicas of that size)], larger first."""
    small, extra = divmod(total, replicas)
    return [(size, count) for size, count in ((small + 1, extra), (small, replicas - extra)) if size and count]


def _bench(point: Point, model, gpu, profile, weights, dep, batch: int) -> float:
    """llama-bench: tg = OSL decode steps after ISL cached tokens; pp = the prefill of ISL tokens in
    passes of its default micro-batch (n_ubatch 512), each attending to the tokens before it."""
    from llm_cost.parallel import deployed_pass_cost
    from llm_cost.requests.phases import decode_steps, prefill_s

    cost = deployed_pass_cost(model, gpu, profile, weights, dep)
    if point.metric == "prefill_tok_per_s":
        if point.isl < 1:
            raise _NotCovered("prefill_tok_per_s needs isl >= 1")
        seconds = prefill_s(cost, batch, point.isl, LLAMA_BENCH_UBATCH, profile.count_kv)[0]
        return batch * point.isl / seconds
    import numpy as np

    steps = decode_steps(cost, batch, point.isl, point.osl + 1, profile.count_kv)  # OSL steps from context ISL
    seconds = float(np.sum(np.broadcast_to(steps.step_time_s, (point.osl,))))
    return batch * point.osl / seconds


def _largest_batch(point: Point, model, gpu, weights, dep) -> int:
    """The most requests of ISL + OSL tokens whose weights, K/V and workspace fit one replica's GPUs."""
    from llm_cost.parallel.fit import most_that_fit
    from llm_cost.requests.request import request_fit

    most = most_that_fit(lambda batch: request_fit(model, gpu, dep, weights, batch=batch, isl=max(point.isl, 1),
                                                   osl=point.osl).fits, limit=1 << 20)
    if not most:
        raise _NotCovered("saturation: not even one request fits the deployment's memory")
    return most
