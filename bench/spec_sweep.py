"""A 10^6-point speculative-decoding sweep: one vectorized call against two plain Python loops.

Grid: 100 alpha x 10 gamma x 10 c x 100 batch = 10^6 points of the roofline speedup
(Llama-3-8B on H100, article preset). The vectorized side is timed twice: on the broadcast grid
(what a sweep normally is) and on the same points as flat 10^6-element arrays (no broadcasting
help: every point gets its own time-model evaluation). Two loop baselines, one point at a time:

- loop A, "scalar API": the scalar `roofline.step_time` for T(B) and T(B (gamma + 1))
  (argument checks and a StepTime per call), Eq. 1 and the round cost written out. It takes about
  half a minute over 10^6 points, so by default it runs on an evenly strided subset and is
  scaled to 10^6, which the output says.
- loop B, "plain floats": the same formula over all 10^6 points with every constant (memory
  time, FLOPs per row, effective FLOP/s) taken from `roofline.PassCost` once, before the loop:
  about the fastest a pure-Python loop can compute the sweep. This is the baseline the target
  is judged against.

All sides run in this process, in this run, and must agree to 1e-12 (the vectorized sides
exactly). The flat arrays are the grid raveled (alpha outermost); "flat, shuffled" times the
same points in a random order, so that nothing may depend on how the points are laid out. Flat
arrays go through `speculative.blocks` (cache-sized blocks, E by squaring), the grid through the
broadcasting path; both evaluate T with `PassCost.step_total`.

Prints the machine and, for each timing, the median and the range (min-max) over the repeats;
ratios are of medians. Also the floor: allocating and writing the seven 10^6-element result arrays
(48 MB of fresh memory, whose pages the kernel zeroes), which no implementation that allocates its
results on each call (as `roofline_speedup` does) can beat, and whether the target lies below it on
this machine. (Writing into buffers reused from call to call could go below it; the numpy path's
arithmetic alone, into reused outputs, took about 16 ms here.)

Usage: python bench/spec_sweep.py [LOOP_A_POINTS] [REPEATS]   (defaults 20000 and 7)
Target: vectorized >= 50x faster than the plain-float loop and under 0.2 s.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llm_cost.catalog import load_accelerator, load_model  # noqa: E402
from llm_cost.roofline import PassCost, step_time  # noqa: E402
from llm_cost.speculative import roofline_speedup  # noqa: E402
from llm_cost.specs import PRESETS  # noqa: E402
from llm_cost.report.render import print_notes  # noqa: E402  (lines wrapped at 100 when piped)

MODEL, GPU, PROFILE = load_model("llama-3-8b"), load_accelerator("h100-sxm"), PRESETS["article"]
ALPHA = np.linspace(0.0, 1.0, 100)
GAMMA = np.arange(1, 11, dtype=float)
C = np.linspace(0.0, 0.3, 10)
BATCH = np.round(np.geomspace(1, 1024, 100))
TARGET_RATIO, TARGET_S = 50.0, 0.2


def machine() -> str:
    """Platform, CPUs, Python and numpy versions: what a timing needs to be compared."""
    return (f"{platform.platform()}, {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
            f"Python {platform.python_version()}, numpy {np.__version__}")


def timed(fn, repeats: int, warm: bool = True) -> tuple[list, object]:
    """The seconds of `repeats` runs (after one untimed run when `warm`) and the last result."""
    times, out = [], fn() if warm else None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return times, out


def spread(times: list, scale: float = 1e3, digits: int = 1) -> str:
    """median [min-max] of seconds, in ms by default."""
    return (f"{statistics.median(times) * scale:.{digits}f} [{min(times) * scale:.{digits}f}-"
            f"{max(times) * scale:.{digits}f}]")


def point(alpha: float, gamma: int, c: float, batch: float) -> float:
    """Loop A, one point through the scalar API: E T(B) / (gamma c T(B) + T(B (gamma + 1)))."""
    base = step_time(MODEL, GPU, PROFILE, rows=batch, batch=batch).step_time_s
    verify = step_time(MODEL, GPU, PROFILE, rows=batch * (gamma + 1), batch=batch).step_time_s
    expected = gamma + 1.0 if alpha == 1.0 else (1.0 - alpha ** (gamma + 1)) / (1.0 - alpha)
    return expected * base / (gamma * c * base + verify)


def plain_loop(alphas: list, gammas: list, cs: list, batches: list) -> list:
    """Loop B: the same formula on plain floats, constants hoisted out of the loop.

    Article preset, dense model, no context: T(m) = max(W / BW, m x row_flops / F) + fixed;
    the MoE, KV and attention terms are zero here (asserted), so they are left out.
    """
    cost = PassCost.from_specs(MODEL, GPU, PROFILE)
    assert not cost.num_experts and not cost.kv_token_bytes and not cost.pair_flops
    mem = cost.weight_bytes / cost.bytes_per_s
    row_flops, flops_per_s, fixed = cost.row_flops, cost.flops_per_s, cost.fixed_s
    out = []
    append = out.append
    for alpha, gamma, c, batch in zip(alphas, gammas, cs, batches):
        comp = batch * row_flops / flops_per_s
        base = (mem if mem > comp else comp) + fixed
        comp = batch * (gamma + 1.0) * row_flops / flops_per_s
        verify = (mem if mem > comp else comp) + fixed
        expected = gamma + 1.0 if alpha == 1.0 else (1.0 - alpha ** (gamma + 1.0)) / (1.0 - alpha)
        append(expected * base / (gamma * c * base + verify))
    return out


def result_floor(n: int):
    """What any implementation returning a fresh `RooflineSpeedup` on n flat points must do at least:
    allocate its six float64 result arrays and the bool one and write every element once (no arithmetic)."""
    out = [np.empty(n) for _ in range(6)] + [np.empty(n, dtype=bool)]
    for x in out:
        x.fill(1)
    return out


def vectorized_grid():
    return roofline_speedup(MODEL, GPU, PROFILE, alpha=ALPHA[:, None, None, None],
                            gamma=GAMMA[None, :, None, None], c=C[None, None, :, None],
                            batch=BATCH[None, None, None, :]).speedup


def main() -> None:
    loop_points = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    a, g, c, b = (x.ravel() for x in np.meshgrid(ALPHA, GAMMA, C, BATCH, indexing="ij"))
    n = a.size
    assert n == 1_000_000
    order = np.random.default_rng(0).permutation(n)
    sa, sg, sc, sb = (x[order] for x in (a, g, c, b))

    t_grid, grid = timed(vectorized_grid, repeats)
    t_flat, flat = timed(lambda: roofline_speedup(MODEL, GPU, PROFILE, alpha=a, gamma=g, c=c, batch=b).speedup,
                         repeats)
    t_shuf, shuffled = timed(lambda: roofline_speedup(MODEL, GPU, PROFILE, alpha=sa, gamma=sg, c=sc,
                                                      batch=sb).speedup, repeats)
    assert np.array_equal(np.ravel(grid), flat) and np.array_equal(flat[order], shuffled)

    idx = np.linspace(0, n - 1, min(loop_points, n)).astype(int)
    start = time.perf_counter()
    looped = [point(float(a[i]), int(g[i]), float(c[i]), float(b[i])) for i in idx]
    t_loop_a = (time.perf_counter() - start) * n / idx.size
    assert np.allclose(looped, flat[idx], rtol=1e-12, atol=1e-15)

    t_floor, _ = timed(lambda: result_floor(n), repeats)
    lists = [x.tolist() for x in (a, g, c, b)]
    loop_repeats = min(repeats, 3)
    t_loop_b, plain = timed(lambda: plain_loop(*lists), loop_repeats, warm=False)
    assert np.allclose(plain, flat, rtol=1e-12, atol=1e-15)
    loop_b = statistics.median(t_loop_b)

    scaled = "" if idx.size == n else f", timed on {idx.size:,} strided points and scaled x{n / idx.size:g}"
    print_notes([f"machine: {machine()}"], hang="    ")
    print(f"points: {n:,} = {ALPHA.size} alpha x {GAMMA.size} gamma x {C.size} c x {BATCH.size} batch")
    print_notes([f"times: median [min-max] over {repeats} runs after a warm-up run "
                 f"(loop B: {loop_repeats}, no warm-up)"], hang="    ")
    print(f"vectorized, broadcast grid          : {spread(t_grid, digits=2)} ms")
    print(f"vectorized, flat arrays             : {spread(t_flat)} ms")
    print(f"vectorized, flat arrays, shuffled   : {spread(t_shuf)} ms")
    print_notes([f"loop A, scalar roofline.step_time   : {t_loop_a:8.2f} s "
                 f"(validation + StepTime per call{scaled})"], hang="    ")
    print_notes([f"loop B, plain floats, consts hoisted: {spread(t_loop_b, 1, 2)} s (all {n:,} points)"], hang="    ")
    floor = statistics.median(t_floor)
    print_notes([f"floor, the 7 result arrays written  : {spread(t_floor)} ms (fresh memory, no arithmetic: "
          f"{loop_b / floor:,.0f}x loop B at most, for any implementation that allocates them per call)"], hang="    ")
    print(f"{'speedup (ratio of medians)':36s}  {'vs loop A':>10s}  {'vs loop B':>10s}  {'vs loop B, range':>17s}")
    verdicts = []
    for name, times in (("broadcast grid", t_grid), ("flat arrays", t_flat), ("flat, shuffled", t_shuf)):
        t = statistics.median(times)
        low, high = min(t_loop_b) / max(times), max(t_loop_b) / min(times)
        ok = loop_b / t >= TARGET_RATIO and t < TARGET_S
        verdicts.append(f"{name} {'MEETS' if ok else 'does NOT meet'} it ({loop_b / t:,.0f}x, {t * 1e3:.1f} ms)")
        print(f"  {name:34s}  {t_loop_a / t:9,.0f}x  {loop_b / t:9,.0f}x  {low:7,.0f}-{high:,.0f}x")
    print_notes([f"target >= {TARGET_RATIO:g}x against loop B ({loop_b / TARGET_RATIO * 1e3:.1f} ms in this run) and "
          f"< {TARGET_S:g} s: " + "; ".join(verdicts)], hang="    ")
    if floor > loop_b / TARGET_RATIO:
        print_notes([f"on this machine the target lies below the floor: writing the results alone takes "
              f"{floor / (loop_b / TARGET_RATIO):.1f}x the time it allows (median; the fastest runs, where the "
              f"allocator hands back memory it has not returned to the system, {min(t_floor) * 1e3:.1f} ms); "
              f"the flat path takes {statistics.median(t_flat) / floor:.2f}x the floor"], hang="    ")
    print(f"median speedup over the grid: {statistics.median(flat.tolist()):.3f}")


if __name__ == "__main__":
    main()
