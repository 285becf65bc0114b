"""`llm-cost plan`'s search: 100,000+ configurations vectorised against a loop over `request_cost`.

Space: Llama-3-70B, ISL 2048, OSL 256, lecture preset, up to 32 GPUs of 10 accelerators
(A100 80GB, H100 SXM, H100 PCIe, H200, GH200, B200, MI300X, MI325X, L40S, L4), tp 1..8 and pp 1..32
(powers of two), bf16 / fp8 / int8 / int4 weights, bf16 / fp8 K/V, batch 1..512 and no speculation or a draft
(alpha 0.7, c 0.1) at gamma 1..8: what `llm-cost plan --gpu ... --gpus 16 --spec-alpha 0.7` searches.

- vectorised: `plan.evaluate` + `plan.plan` (TTFT, TPOT, fit, tokens/s, the frontier) over every
  configuration, timed `REPEATS` times;
- loop: `requests.request_cost` (what `llm-cost request` runs) on an evenly strided subset of the same
  configurations, scaled to the whole space (the output says so). Both sides must agree there: TTFT
  and TPOT to 1e-9, the fit exactly where `request`'s fit rule applies (no draft model here).

Both run in this process, in this run, on one core (numpy's element-wise work is single-threaded;
BLAS is not used). Prints the machine, each timing's median and range, and the ratio of medians.

Usage: python bench/plan.py [LOOP_POINTS] [REPEATS]   (defaults 400 and 5)
Target: the vectorised search under 1 s for >= 100,000 configurations.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llm_cost.catalog import load_accelerator, load_model  # noqa: E402
from llm_cost.planner import SpecOption, Target, evaluate, plan, plan_space  # noqa: E402
from llm_cost.requests import Speculation, request_cost  # noqa: E402
from llm_cost.specs import PRESETS  # noqa: E402

GPUS = ("a100-80gb", "h100-sxm", "h100-pcie", "h200", "gh200", "b200", "mi300x", "mi325x", "l40s", "l4")
ISL, OSL, BUDGET = 2048, 256, 32
TARGET_S, TARGET_CONFIGS = 1.0, 100_000


def machine() -> str:
    return (f"{platform.platform()}, {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
            f"Python {platform.python_version()}, numpy {np.__version__}")


def timed(fn, repeats: int):
    """(result, wall seconds per run, CPU seconds per run): CPU time is this process's alone, what
    one core spends whatever else the machine runs."""
    times, cpu, out = [], [], None
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return out, times, cpu


def show(name: str, times) -> str:
    return f"{name}: median {statistics.median(times):.3f} s (range {min(times):.3f}-{max(times):.3f}, {len(times)} runs)"


def main(loop_points: int = 400, repeats: int = 5) -> None:
    model, profile = load_model("llama-3-70b"), PRESETS["lecture"]
    gpus = [load_accelerator(g) for g in GPUS]
    target = Target(ttft_s=1.0, tpot_s=0.03)
    spec = SpecOption("draft", 0.7, tuple(range(1, 9)), c=0.1)

    def search():
        space = plan_space(model, gpus, BUDGET, speculation=[spec])
        grid = evaluate(space, profile, isl=ISL, osl=OSL)
        return plan(grid, target)

    result, vec_times, vec_cpu = timed(search, repeats)
    grid = result.grid
    n = len(grid)
    print(machine())
    print(f"{n:,} configurations ({len(grid.space.groups)} deployments x {len(grid.space.batches)} batches x "
          f"{len(grid.variants)} decodings),\n  left out {grid.space.left_out}, frontier {len(result.frontier)}")
    print(show("vectorised search, wall", vec_times))
    print(show("vectorised search, CPU", vec_cpu))

    picks = np.linspace(0, n - 1, min(loop_points, n)).astype(int)

    def loop():
        out = []
        for i in picks:
            grp, v = grid.space.groups[grid.group[i]], grid.variants[grid.variant[i]]
            out.append(request_cost(model, grp.gpu, profile, batch=int(grid.batch[i]), isl=ISL, osl=OSL,
                                    deployment=grp.deployment, weights=grp.weights,
                                    speculation=None if v.kind == "none" else Speculation(v.alpha, v.gamma, c=v.c)))
        return out

    costs, loop_times, loop_cpu = timed(loop, 1)
    worst = max(max(abs(r.ttft_s / grid.ttft_s[i] - 1), abs(r.tpot_s / grid.tpot_s[i] - 1)) for r, i in zip(costs, picks))
    fits = all(r.fit.fits == bool(grid.fits[i]) for r, i in zip(costs, picks))
    assert worst < 1e-9 and fits, (worst, fits)
    per_point, per_cpu = loop_times[0] / len(picks), loop_cpu[0] / len(picks)
    print(f"loop over request_cost: {len(picks)} of the configurations in {loop_times[0]:.3f} s wall,\n"
          f"  {loop_cpu[0]:.3f} s CPU ({per_cpu * 1e6:.0f} us CPU each), scaled to {n:,}: {per_cpu * n:.1f} s CPU;\n"
          f"  agree to {worst:.1e}, fits equal")
    vec, vcpu = statistics.median(vec_times), statistics.median(vec_cpu)
    print(f"ratio (loop / vectorised): {per_point * n / vec:.0f}x wall, {per_cpu * n / vcpu:.0f}x CPU;")
    print(f"  {n / vcpu:,.0f} configurations per CPU second")
    ok = vcpu < TARGET_S and n >= TARGET_CONFIGS
    print(f"target: >= {TARGET_CONFIGS:,} configurations under {TARGET_S:g} s of CPU: {'met' if ok else 'MISSED'}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
