"""Write the table excerpts tests/test_kernel_tables_ops.py checks the shipped fits against.

Rows drawn with random.seed(23) from the same tables and the same row selection as the fits
(analysis/fit_kernel_ops.py). Run: PYTHONPATH=<pyarrow> python3 analysis/kernel_excerpts.py /tmp/aicore
"""

from __future__ import annotations

import csv
import json
import random
import sys
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fit_kernel_ops as ops  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "data" / "kernels"
SYSTEMS = {"h100_sxm": "h100-sxm", "h200_sxm": "h200"}
PER_TABLE = 60


def write(path: Path, header: str, rows: list[dict], columns: list[str]) -> None:
    with path.open("w", newline="") as f:
        f.write(header)
        w = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def main(root: str) -> None:
    data = Path(root) / "aiconfigurator_core" / "systems" / "data"
    for system, hw in SYSTEMS.items():
        shipped = json.loads((REPO / "hardware" / "kernels" / f"{hw}.json").read_text())
        rng = random.Random(23)
        moe_file = f"{system}/moe/trtllm/{shipped['moe']['engine_version']}/moe_perf.parquet"
        table = pq.read_table(data / moe_file).to_pylist()
        for dtype, (fmt, _, _) in ops.MOE_ELEMENT.items():
            rows = ops.moe_rows(table, dtype)
            sample = sorted(rng.sample(rows, PER_TABLE), key=lambda r: (r["num_tokens"], r["hidden_size"]))
            write(OUT / f"{system}_moe_{fmt}_excerpt.csv",
                  f"# {PER_TABLE} rows drawn (random.seed(23)) from aiconfigurator_core 0.12.0 (NVIDIA, Apache-2.0),\n"
                  f"# aiconfigurator_core/systems/data/{moe_file}, moe_dtype {dtype}, balanced, "
                  f"{ops.MOE_KERNEL}, moe_tp_size 1, moe_ep_size <= 8; latency in ms\n",
                  sample, ["num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_ep_size", "latency"])
        nccl_file = f"{system}/comm/nccl/{shipped['all_to_all']['nccl_version']}/nccl_perf.parquet"
        a2a = [r for r in pq.read_table(data / nccl_file).to_pylist()
               if r["op_name"] == "alltoall" and r["nccl_dtype"] == "half"]
        write(OUT / f"{system}_alltoall_excerpt.csv",
              "# every row of op alltoall, nccl_dtype half (message_size in fp16 elements, latency in ms) from\n"
              f"# aiconfigurator_core 0.12.0 (NVIDIA, Apache-2.0), aiconfigurator_core/systems/data/{nccl_file}\n",
              a2a, ["num_gpus", "message_size", "latency"])
        att_file = (f"{system}/attention/trtllm/{shipped['decode_attention']['engine_version']}/"
                    "generation_attention_perf.parquet")
        rows = ops.decode_rows(pq.read_table(data / att_file).to_pylist())
        sample = []
        for low, high in ops.GQA_GROUPS:
            group = [r for r in rows if low <= r["num_heads"] / r["num_key_value_heads"] <= high]
            sample += rng.sample(group, PER_TABLE)
        write(OUT / f"{system}_decode_attention_excerpt.csv",
              f"# {PER_TABLE} rows per GQA group range {ops.GQA_GROUPS} drawn (random.seed(23)) from aiconfigurator_core\n"
              f"# 0.12.0 (NVIDIA, Apache-2.0), aiconfigurator_core/systems/data/{att_file}, K/V bfloat16, no window;\n"
              "# step = cached tokens, latency in ms\n",
              sample, ["batch_size", "step", "num_heads", "num_key_value_heads", "head_dim", "latency"])


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/aicore")
