"""`lc.sweep`: serve a grid of configurations (batch x tp x weights x KV dtype) under one workload,
through the executor (`executor.run_tasks`: this process, local processes or Ray)."""

from __future__ import annotations

import itertools
from llm_cost.catalog.arguments import MAX_COUNT, Many, Number, Text, check_arguments


@check_arguments(batch=Many(Number(1, MAX_COUNT, integer=True)), tp=Many(Number(1, 1e6, integer=True)),
                 weights=Many(), kv_dtype=Many(), ttft_s=Number(0, 1e6, low_open=True),
                 tpot_s=Number(0, 1e6, low_open=True), requests=Number(1, 1e9, integer=True),
                 concurrency=Number(1, 1e9, integer=True), jobs=Number(1, 1024, integer=True),
                 prompt=Text(), output=Text())  # a length distribution's text ("1024", "uniform:32:512")
def sweep(model, gpu, profile, *, rate_req_per_s=None, concurrency=None, requests: int = 2000, prompt="uniform:32:512",
          output="uniform:1:128", seed: int = 0, batch=(32,), tp=(1,), weights=("bf16",), kv_dtype=("bf16",),
          ttft_s=None, tpot_s=None, slo_stat: str = "p99", jobs: int | None = 1, ray: str | None = None) -> list[dict]:
    """Serve every (batch, tp, weights, kv_dtype) of the grid on one replica of `model` on `gpu`
    (`planner.verify.serve_task`: paged K/V, the batch as max sequences) under the workload: a rate
    in req/s or a closed loop of `concurrency` clients, `requests` requests with the length specs
    `prompt` and `output`; one dict per point in grid order with its configuration and the served
    figures (goodput per GPU: requests/s within `ttft_s` and `tpot_s`, over tp GPUs). Each point's
    seed comes from the point itself, so `jobs=` and `ray=` give the same list bit for bit.

    Examples
    --------
    Llama-3-8B on one H100 at 8 req/s (1,024 prompt and 128 output tokens, lecture preset): a batch of 4
    cannot keep up (its TTFT p99 grows with the queue), a batch of 32 can.

    >>> import llm_cost as lc
    >>> rows = lc.sweep("llama-3-8b", "h100-sxm", "lecture", rate_req_per_s=8, requests=400, prompt="1024",
    ...                 output="128", batch=[4, 32], ttft_s=0.5, tpot_s=0.02)
    >>> [(r["batch"], r["meets_served_slo"]) for r in rows]
    [(4, False), (32, True)]
    """
    from llm_cost.catalog import load_accelerator, load_model
    from llm_cost.planner.verify import Candidate, ServeTask, WorkloadRecipe, verify
    from llm_cost.specs import PRESETS
    from llm_cost.specs.deployment import Deployment
    from llm_cost.specs.weights import as_weights

    from llm_cost.serving.workload_spec import parse_length

    parse_length("prompt", prompt), parse_length("output", output)  # bad specs named as this function's
    spec = load_model(model) if isinstance(model, str) else model
    acc = load_accelerator(gpu) if isinstance(gpu, str) else gpu
    prof = PRESETS[profile] if isinstance(profile, str) else profile
    recipe = WorkloadRecipe(requests=requests, rate_req_per_s=rate_req_per_s, concurrency=concurrency, prompt=prompt,
                            output=output, seed=seed)
    # a format or its name: the rows and each point's seed (from its key) say the name either way
    points = list(itertools.product(batch, tp, [as_weights(fmt).name for fmt in weights], kv_dtype))
    tasks = []
    for size, degree, fmt, kv in points:
        key = f"{spec.name} {acc.name} batch {size} tp {degree} {fmt} kv {kv}"
        cand = Candidate(key, spec, acc, prof, Deployment(tp=int(degree), kv_dtype=kv), as_weights(fmt), int(size))
        tasks.append(ServeTask(cand, recipe, ttft_s, tpot_s, slo_stat))
    served = verify(tasks, jobs=jobs, ray=ray)
    return [{"batch": int(size), "tp": int(degree), "weights": str(fmt), "kv_dtype": str(kv), **figures}
            for (size, degree, fmt, kv), figures in zip(points, served)]
