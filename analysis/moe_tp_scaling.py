"""How a MoE layer's grouped GEMMs scale with tensor parallelism in NVIDIA's measured tables, and the GEMM
half width (`Profile.gemm_half_width`) each table implies: the check on the width that `measured` fits to
the training files (README "Calibration", "A GEMM's width").

Source: aiconfigurator_core 0.12.0 (NVIDIA, Apache-2.0), `systems/data/<gpu>/moe/<engine>/<version>/
moe_perf.parquet`: the latency of one MoE layer by tokens, shapes, format, moe_tp_size and moe_ep_size.
For gpt-oss-120b's shapes (hidden 2,880, expert intermediate 2,880, 128 experts, top 4) and DeepSeek-V3's
(7,168, 2,048, 256, top 8), balanced routing, ep 1, 8,192 tokens (a prefill iteration): the speedup
t(tp 1) / t(tp) at tp 2, 4, 8, and the w_h for which the width model tp (1 + w_h / I) / (1 + w_h tp / I)
fits those three best (I the expert intermediate; least squares on log speedup, scipy). Not run by CI
(the wheel is not in the repo). Run: PYTHONPATH=<pyarrow> python3 analysis/moe_tp_scaling.py /tmp/aicore
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from scipy.optimize import least_squares

TABLES = (("h100_sxm", "vllm", "0.24.0"), ("h200_sxm", "vllm", "0.24.0"), ("h100_sxm", "trtllm", "1.3.0rc20"),
          ("h200_sxm", "trtllm", "1.3.0rc20"))
SHAPES = {"gpt-oss-120b": (2880, 2880, 128, 4), "deepseek-v3": (7168, 2048, 256, 8)}
TOKENS = 8192
DEGREES = (2, 4, 8)


def implied_half_width(speedups: dict[int, float], inter: int) -> float:
    """w_h whose width model best fits the measured speedups (tp -> t(1) / t(tp))."""
    degrees = np.array(sorted(speedups), dtype=float)
    measured = np.log([speedups[int(tp)] for tp in degrees])

    def residuals(p):
        x = np.exp(p[0]) / inter
        return np.log(degrees * (1 + x) / (1 + degrees * x)) - measured

    return float(np.exp(least_squares(residuals, [np.log(300.0)]).x[0]))


def main(root: str) -> None:
    for system, engine, version in TABLES:
        path = Path(root) / "aiconfigurator_core/systems/data" / system / "moe" / engine / version / "moe_perf.parquet"
        if not path.exists():
            continue
        table = pq.read_table(path).to_pandas()
        for name, (hidden, inter, experts, top_k) in SHAPES.items():
            rows = table[(table.hidden_size == hidden) & (table.inter_size == inter) & (table.num_experts == experts)
                         & (table.topk == top_k) & (table.distribution == "balanced") & (table.moe_ep_size == 1)
                         & (table.num_tokens == TOKENS)]
            for dtype in sorted(rows.moe_dtype.unique()):
                t = rows[rows.moe_dtype == dtype].groupby("moe_tp_size").latency.min()
                if 1 not in t.index or not all(tp in t.index for tp in DEGREES):
                    continue
                speedups = {tp: float(t[1] / t[tp]) for tp in DEGREES}
                text = ", ".join(f"tp {tp} {s:.2f}x" for tp, s in speedups.items())
                print(f"{system} {engine} {version} {name} {dtype}: {text}; "
                      f"w_h {implied_half_width(speedups, inter):.0f} columns")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/aicore")
