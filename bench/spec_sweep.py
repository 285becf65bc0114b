"""A 10^6-point speculative-decoding sweep: one vectorized call against a plain Python loop.

Grid: 100 alpha x 10 gamma x 10 c x 100 batch = 10^6 points of the roofline speedup
(Llama-3-8B on H100, article preset). The vectorized side is timed twice: on the broadcast grid
(what a sweep normally is) and on the same points as flat 10^6-element arrays (no broadcasting
help: every point gets its own time-model evaluation). The loop side is a plain Python loop, one
point at a time: plain floats, the foundation's scalar `roofline.step_time` for T(B) and
T(B (gamma + 1)), Eq. 1 and the round cost written out. A full loop takes about half a minute, so
by default it runs on an evenly strided subset of the points and is scaled to 10^6, which the
output says. Both sides run in this process, in this run, and must agree to 1e-12.

Usage: python bench/spec_sweep.py [LOOP_POINTS]   (default 20000; 1000000 for the full loop)
Target: vectorized >= 50x faster than the loop and under 0.2 s.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llm_cost.catalog import load_accelerator, load_model  # noqa: E402
from llm_cost.roofline import step_time  # noqa: E402
from llm_cost.speculative_roofline import roofline_speedup  # noqa: E402
from llm_cost.specs import PRESETS  # noqa: E402

MODEL, GPU, PROFILE = load_model("llama-3-8b"), load_accelerator("h100-sxm"), PRESETS["article"]
ALPHA = np.linspace(0.0, 1.0, 100)
GAMMA = np.arange(1, 11, dtype=float)
C = np.linspace(0.0, 0.3, 10)
BATCH = np.round(np.geomspace(1, 1024, 100))


def best_of(fn, repeats: int = 5) -> tuple[float, object]:
    """Fastest of `repeats` runs (seconds) and the last result."""
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def point(alpha: float, gamma: int, c: float, batch: float) -> float:
    """One point in plain Python: E T(B) / (gamma c T(B) + T(B (gamma + 1)))."""
    base = step_time(MODEL, GPU, PROFILE, rows=batch, batch=batch).total_s
    verify = step_time(MODEL, GPU, PROFILE, rows=batch * (gamma + 1), batch=batch).total_s
    expected = gamma + 1.0 if alpha == 1.0 else (1.0 - alpha ** (gamma + 1)) / (1.0 - alpha)
    return expected * base / (gamma * c * base + verify)


def vectorized_grid():
    return roofline_speedup(MODEL, GPU, PROFILE, alpha=ALPHA[:, None, None, None],
                            gamma=GAMMA[None, :, None, None], c=C[None, None, :, None],
                            batch=BATCH[None, None, None, :]).speedup


def main() -> None:
    loop_points = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    a, g, c, b = (x.ravel() for x in np.meshgrid(ALPHA, GAMMA, C, BATCH, indexing="ij"))
    n = a.size
    assert n == 1_000_000

    t_grid, grid = best_of(vectorized_grid)
    t_flat, flat = best_of(lambda: roofline_speedup(MODEL, GPU, PROFILE, alpha=a, gamma=g, c=c, batch=b).speedup)
    assert np.array_equal(np.ravel(grid), flat)

    idx = np.linspace(0, n - 1, min(loop_points, n)).astype(int)
    start = time.perf_counter()
    looped = [point(float(a[i]), int(g[i]), float(c[i]), float(b[i])) for i in idx]
    t_loop_subset = time.perf_counter() - start
    assert np.allclose(looped, flat[idx], rtol=1e-12, atol=1e-15)
    t_loop = t_loop_subset * n / idx.size

    scaled = "" if idx.size == n else f" (timed on {idx.size:,} strided points, scaled x{n / idx.size:g})"
    print(f"points: {n:,} = {ALPHA.size} alpha x {GAMMA.size} gamma x {C.size} c x {BATCH.size} batch")
    print(f"vectorized, broadcast grid : {t_grid * 1e3:8.1f} ms (best of 5)")
    print(f"vectorized, flat arrays    : {t_flat * 1e3:8.1f} ms (best of 5)")
    print(f"python loop, plain floats  : {t_loop:8.1f} s{scaled}")
    print(f"speedup grid / flat        : {t_loop / t_grid:,.0f}x / {t_loop / t_flat:,.0f}x "
          f"(target >= 50x, < 0.2 s: {'met' if max(t_grid, t_flat) < 0.2 and t_loop / t_flat >= 50 else 'NOT met'})")
    print(f"median speedup over the grid: {statistics.median(flat.tolist()):.3f}")


if __name__ == "__main__":
    main()
