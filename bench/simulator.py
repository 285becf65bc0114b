"""Time to serve 10,000 requests on the step-level paths of `serve` (issue 4: under 2 s on one core),
against a naive simulator and, given a baseline checkout, against its `simulate` in the same run.

For each case (a lecture scheduler: `request`, `iteration` with Orca's declared reservation, `none`)
the best of R runs of `serve(wl, server, config_for(...))` (which takes its `fast_reservations` or
`request_level` path) and its ratio to the 2 s target, then the same workload through `naive`, a
plain per-iteration simulator written the obvious way (the rules of tests/reference_scheduler.py
with a clock: explicit per-request state, one loop turn per iteration, every running request visited
and `IterationCost.time` called in every iteration). Both must finish every request at the same time
(to 1e-9), and the speed ratio naive / serve is printed. GPT-3 13B on an A100 40GB, lecture preset,
Orca's workload.

`--baseline DIR` (a checkout from before issue 24, whose `llm_cost.serving.simulator.simulate` was
the step-level scheduler; e.g. the main branch before the merge): each case is also timed there, in
a subprocess started right after ours (interleaved, so both see the same load), and the CPU-time
ratio serve / simulate is printed (issue 24.7: no slower than `simulate`).

Then the serving engine's other paths (`llm_cost.serving.engine.serve`, issue 16): on the
declared-reservation case its general loop (`fast=False`) and its `fast_engine` path against the
step-level path and the naive simulator (the same finish times, asserted). Then paged KV with
speculation in the batch (gamma 4, alpha 0.8, c 0.05) at Orca's 12.4 req/s: on NAIVE_REQUESTS
requests against the general loop (every running sequence visited each iteration; the same finish
times, asserted), and on ENGINE_REQUESTS requests (default 1,000,000, the issue's figure: measured,
not extrapolated) the median and range of min(RUNS, 3) runs, each on a freshly drawn workload (its
arrival times computed inside the timing), wall clock and the process's CPU time (which a machine
shared with other work inflates less), the ratio to the issue's 5 s target and the ratio to the
declared-reservation step-level path's CPU time on the same requests (a measure that moves little
with the machine's load). One core: the script sets OPENBLAS_NUM_THREADS=1 (unless set) before
numpy loads, so the statistics' dot products do not take a second one.

Usage: python bench/simulator.py [--baseline DIR] [REQUESTS] [RUNS] [NAIVE_REQUESTS] [ENGINE_REQUESTS]
(defaults 10000, 5, REQUESTS and 1000000: the naive engines run on the same 10,000 requests unless
told otherwise, best of min(RUNS, 3); the whole run takes about two minutes.)
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one core (module doc), before numpy loads

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llm_cost.catalog import load_accelerator, load_model  # noqa: E402
from llm_cost.serving.reservations import reservation_tokens  # noqa: E402
from llm_cost.serving.replica import Replica  # noqa: E402
from llm_cost.serving.engine import serve  # noqa: E402
from llm_cost.serving.serve_config import ServeConfig, SpecConfig, config_for  # noqa: E402
from llm_cost.report.render import print_notes  # noqa: E402  (lines wrapped at 100 when piped)
from llm_cost.specs import PRESETS  # noqa: E402
from llm_cost.serving.workload import Workload, poisson_workload  # noqa: E402

TARGET_S = 2.0
CASES = [  # (scheduler, max batch, rate req/s, max_gen): the lecture's operating points
    ("request", 8, 0.94, None),
    ("iteration", 32, 12.4, None),
    ("iteration", 32, 1.0, None),  # light load: ~1 request per iteration, the most iterations
    ("none", 64, 4.0, 512),
]


def best_of(fn, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def naive(wl: Workload, server: Replica, scheduler: str, max_batch: int) -> list[float]:
    """Finish time of each request (nan if it never finishes), one iteration at a time."""
    cost, cap, max_len = server.cost, server.kv_capacity_tokens, server.max_len
    n, prompt, output, arrival = len(wl), wl.prompt, wl.output, wl.arrival_s
    finish = [math.nan] * n
    queue, nxt, t = [], 0, 0.0
    if scheduler == "request":
        size = min(max_batch, cap // max_len)
        while nxt < n or queue:
            while nxt < n and arrival[nxt] <= t:
                queue.append(nxt)
                nxt += 1
            if not queue:
                t = arrival[nxt]
                continue
            batch, queue = queue[:size], queue[size:]
            b = len(batch)
            lmax, omax = max(prompt[i] for i in batch), max(output[i] for i in batch)
            t += cost.time(b * lmax, b * lmax, b * lmax * (lmax + 1) / 2)
            for ctx in range(lmax, lmax + omax - 1):
                t += cost.time(b, b * (ctx + 1), b * (ctx + 1))
            for i in batch:
                finish[i] = t
        return finish
    reservation = "none" if scheduler == "none" else "declared"
    reserve = [reservation_tokens(reservation, p, d, max_len) for p, d in zip(prompt, wl.declared_gen)]
    generated, kv = [0] * n, [0] * n
    running: list[int] = []
    reserved = 0
    while nxt < n or queue or running:
        while nxt < n and arrival[nxt] <= t:
            queue.append(nxt)
            nxt += 1
        if not running and not queue:
            t = arrival[nxt]
            continue
        written = sum(kv[i] for i in running)
        if reservation == "none":
            progressed, stalled = running[:cap - written], running[cap - written:]
        else:
            progressed, stalled = running, []
        admitted, room = [], cap - written - len(progressed)
        while queue and len(running) + len(admitted) < max_batch:
            i = queue[0]
            if reservation == "none":
                if stalled or prompt[i] > room:
                    break
                room -= prompt[i]
            elif reserved + reserve[i] > cap:
                break
            reserved += reserve[i]
            admitted.append(queue.pop(0))
        if not progressed and not admitted:
            return finish  # deadlock: the rest never finish
        rows = len(progressed) + sum(prompt[i] for i in admitted)
        kv_read = sum(kv[i] for i in progressed)
        pairs = sum(kv[i] + 1 for i in progressed) + sum(prompt[i] * (prompt[i] + 1) / 2 for i in admitted)
        t += cost.time(rows, kv_read + rows, pairs)
        for i in progressed:
            generated[i] += 1
            kv[i] += 1
        for i in admitted:
            generated[i], kv[i] = 1, prompt[i]
        running = running + admitted
        for i in running:
            if generated[i] == output[i]:
                finish[i] = t
                reserved -= reserve[i]
        running = [i for i in running if math.isnan(finish[i])]
    return finish


def same(a: list[float], b: list[float]) -> bool:
    return all((math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=1e-9) for x, y in zip(a, b))


ENGINE_TARGET_S = 5.0  # issue 16: 1,000,000 requests, paged KV and speculation in the batch, one core

# Times a case on a checkout (argv: checkout, case as JSON, requests, runs): the CPU time of each of
# `runs` calls after a warm-up, printed as JSON. Run in a fresh subprocess for this checkout and for
# the baseline alike (the same interpreter state, the same fresh memory), so that the checkout's
# llm_cost is the one imported: before issue 24 the step-level scheduler was `simulate`, after it
# `serve` with the lecture scheduler's `config_for`.
BASELINE_SCRIPT = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from llm_cost.catalog import load_accelerator, load_model
from llm_cost.serving.replica import Replica
try:
    from llm_cost.serving.simulator import simulate
except ImportError:
    from llm_cost.serving.engine import serve
    from llm_cost.serving.serve_config import config_for
    def simulate(wl, server, scheduler, max_batch):
        return serve(wl, server, config_for(scheduler, max_batch))
from llm_cost.specs import PRESETS
from llm_cost.serving.workload import poisson_workload
scheduler, max_batch, rate, max_gen = json.loads(sys.argv[2])
requests, runs = int(sys.argv[3]), int(sys.argv[4])
server = Replica.from_specs(load_model("gpt-3-13b"), load_accelerator("a100-40gb"), PRESETS["lecture"])
def once(wl):
    if scheduler == "paged+spec":  # the engine's fast path on a fresh workload, as ENGINE_REQUESTS is timed
        from llm_cost.serving.engine import serve
        from llm_cost.serving.serve_config import ServeConfig, SpecConfig
        serve(wl, server, ServeConfig(max_batch=max_batch, reservation="paged", spec=SpecConfig(4, 0.8, c=0.05)))
    else:
        simulate(wl, server, scheduler=scheduler, max_batch=max_batch)
once(poisson_workload(2000, rate, seed=1, max_gen=max_gen))  # warm up, as the bench's own process is
times = []
for _ in range(runs):
    wl = poisson_workload(requests, rate, seed=0, max_gen=max_gen)
    cpu = time.process_time()
    once(wl)
    times.append(time.process_time() - cpu)
print(json.dumps(times))
"""


ROOT = str(Path(__file__).resolve().parent.parent)  # this checkout


def baseline_cpu(checkout: str, case, requests: int, runs: int) -> list[float]:
    """The CPU times of `runs` calls of a checkout's step-level scheduler on `case`, or of its `serve`
    with paged K/V and speculation for the case ("paged+spec", ...) (BASELINE_SCRIPT)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", BASELINE_SCRIPT, checkout, json.dumps(case), str(requests), str(runs)],
                         capture_output=True, text=True, check=True, cwd=checkout, env=env)
    return json.loads(out.stdout)


def best_cpu_of(fn, runs: int) -> float:
    """The best CPU time (`time.process_time`) of `runs` calls of `fn`."""
    best = float("inf")
    for _ in range(runs):
        cpu = time.process_time()
        fn()
        best = min(best, time.process_time() - cpu)
    return best


def engine_cases(server: Replica, requests: int, naive_requests: int, engine_requests: int,
                 engine_runs: int, baseline: str | None = None) -> None:
    """The engine's other paths against its step-level path and the naive engine, then paged +
    speculation against the engine's general loop (`serve(..., fast=False)`) on the same requests."""
    wl = poisson_workload(naive_requests, 12.4, seed=0)
    declared = ServeConfig(max_batch=32)
    t_engine = best_of(lambda: serve(wl, server, declared, fast=("fast_engine",)), 3)
    t_general = best_of(lambda: serve(wl, server, declared, fast=False), 1)
    t_fast = best_of(lambda: serve(wl, server, declared), 3)
    t_naive = best_of(lambda: naive(wl, server, "iteration", 32), 1)
    assert same(list(serve(wl, server, declared, fast=("fast_engine",)).finish_s), naive(wl, server, "iteration", 32))
    print_notes([f"engine    bs 32 at 12.40 req/s, declared, {naive_requests:,} requests: "
                 f"fast_engine {t_engine * 1e3:7.1f} ms ({t_engine / t_fast:.2f}x fast_reservations' "
                 f"{t_fast * 1e3:.1f} ms); the general loop {t_general * 1e3:7.1f} ms "
                 f"({t_general / t_fast:.1f}x slower); naive {t_naive * 1e3:7.1f} ms ({t_naive / t_fast:.1f}x slower)"],
                hang="    ")
    cfg = ServeConfig(max_batch=32, reservation="paged", spec=SpecConfig(gamma=4, alpha=0.8, c=0.05))
    fast = serve(wl, server, cfg)
    general = serve(wl, server, cfg, fast=False)
    assert same(list(fast.finish_s), list(general.finish_s)) and fast.iterations == general.iterations
    t_small = best_of(lambda: serve(wl, server, cfg), 3)
    t_loop = best_of(lambda: serve(wl, server, cfg, fast=False), 1)
    print_notes([f"engine    bs 32 at 12.40 req/s, paged + speculation gamma 4, {naive_requests:,} requests: "
          f"{t_small * 1e3:7.1f} ms; the general loop (every running sequence visited each iteration, "
          f"the same finish times) {t_loop * 1e3:7.1f} ms, {t_loop / t_small:.1f}x slower"], hang="    ")
    big = poisson_workload(engine_requests, 12.4, seed=0)
    cpu = time.process_time()
    t_sim = best_of(lambda: serve(big, server, declared), 1)
    cpu_sim = time.process_time() - cpu
    walls, cpus, ours_cpus, base_cpus = [], [], [], []
    for _ in range(engine_runs):  # a fresh workload each run: its arrival times are computed in the timing
        fresh = poisson_workload(engine_requests, 12.4, seed=0)
        start, cpu = time.perf_counter(), time.process_time()
        r = serve(fresh, server, cfg)
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
        if baseline:  # this checkout and the baseline's, each in a fresh process, right after the run
            both = [(ROOT, ours_cpus), (baseline, base_cpus)]
            for which, into in both if len(walls) % 2 else both[::-1]:  # alternating order
                into += baseline_cpu(which, ("paged+spec", 32, 12.4, None), engine_requests, 1)
    t, cpu = statistics.median(walls), statistics.median(cpus)
    scale = 1e6 / engine_requests
    per_million, cpu_million = t * scale, cpu * scale
    measured = "" if engine_requests == 1_000_000 else f" (extrapolated from {engine_requests:,})"
    print_notes([f"engine    bs 32 at 12.40 req/s, paged + speculation gamma 4: {engine_requests:,} requests, "
          f"{r.iterations:,} iterations, {r.preemptions} preemptions, {engine_runs} runs: median {t:.2f} s "
          f"[{min(walls):.2f}-{max(walls):.2f}] ({cpu:.2f} s of CPU [{min(cpus):.2f}-{max(cpus):.2f}]); "
          f"per 1,000,000{measured}: {per_million:.2f} s, ratio to the {ENGINE_TARGET_S:.0f} s target "
          f"{per_million / ENGINE_TARGET_S:.2f} ({cpu_million / ENGINE_TARGET_S:.2f} by CPU time, "
          f"worst run {max(walls) * scale / ENGINE_TARGET_S:.2f}); fast_reservations (declared, no speculation) on "
          f"the same requests {t_sim * scale:.1f} s per 1,000,000 ({cpu_sim * scale:.1f} s of CPU; the engine takes "
          f"{cpu / cpu_sim:.2f}x its CPU time); the general loop about {t_loop / t_small * per_million:.0f} s "
          f"per 1,000,000 at the ratio above"], hang="    ")
    if base_cpus:
        ratios = [a / b for a, b in zip(ours_cpus, base_cpus)]
        print_notes([f"engine    paged + speculation, {engine_requests:,} requests, fresh processes: CPU "
              f"{statistics.median(ours_cpus):.2f} s vs the "
              f"baseline's {statistics.median(base_cpus):.2f} s (runs interleaved): ratio median "
              f"{statistics.median(ratios):.2f} [{min(ratios):.2f}-{max(ratios):.2f}]"], hang="    ")


def main() -> None:
    args = sys.argv[1:]
    baseline = None
    if "--baseline" in args:
        k = args.index("--baseline")
        baseline = args[k + 1]
        del args[k:k + 2]
    requests = int(args[0]) if len(args) > 0 else 10_000
    runs = int(args[1]) if len(args) > 1 else 5
    naive_requests = int(args[2]) if len(args) > 2 else requests
    naive_runs = min(runs, 3)
    server = Replica.from_specs(load_model("gpt-3-13b"), load_accelerator("a100-40gb"), PRESETS["lecture"])
    print_notes([f"serve: {requests:,} requests, best of {runs}; target {TARGET_S:.1f} s. "
          f"naive: {naive_requests:,} requests, best of {naive_runs}, against serve on the same requests"
          + (f"; baseline simulate from {baseline}, CPU time, best of {runs}" if baseline else "")], hang="    ")
    for scheduler, max_batch, rate, max_gen in CASES:
        wl = poisson_workload(requests, rate, seed=0, max_gen=max_gen)
        config = config_for(scheduler, max_batch)
        result = serve(wl, server, config)
        t = best_of(lambda: serve(wl, server, config), runs)
        base = ""
        if baseline:
            case = (scheduler, max_batch, rate, max_gen)
            cpu, cpu_base = math.inf, math.inf
            for k in range(4):  # each in a fresh process, interleaved, in alternating order
                for which in ((ROOT, baseline) if k % 2 == 0 else (baseline, ROOT)):
                    got = min(baseline_cpu(which, case, requests, runs))
                    if which == ROOT:
                        cpu = min(cpu, got)
                    else:
                        cpu_base = min(cpu_base, got)
            base = f"; CPU {cpu * 1e3:.1f} ms vs simulate's {cpu_base * 1e3:.1f} ms: {cpu / cpu_base:.2f}x"
        small = wl if naive_requests == requests else poisson_workload(naive_requests, rate, seed=0, max_gen=max_gen)
        t_small = t if small is wl else best_of(lambda: serve(small, server, config), runs)
        reference = naive(small, server, scheduler, max_batch)
        t_naive = best_of(lambda: naive(small, server, scheduler, max_batch), naive_runs)
        fast = serve(small, server, config)
        assert same(list(fast.finish_s), reference), scheduler
        stuck = "" if result.deadlock is None else f", deadlocks after {result.finished:,} finished"
        print_notes([f"{scheduler:9s} bs {max_batch:2d} at {rate:5.2f} req/s ({result.path}): {t * 1e3:7.1f} ms, "
              f"{result.iterations:7,} iterations{stuck}, ratio to target {t / TARGET_S:.3f}; "
              f"naive {t_naive * 1e3:7.1f} ms, {t_naive / t_small:5.1f}x slower{base}"], hang="    ")
    engine_cases(server, requests, naive_requests, int(args[3]) if len(args) > 3 else 1_000_000, min(runs, 3),
                 baseline)


if __name__ == "__main__":
    main()
