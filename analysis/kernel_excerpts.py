"""Write the table excerpts tests/test_kernel_tables_ops.py checks the shipped fits against.

Rows drawn with random.seed(23) from the same tables and the same row selection as the fits
(analysis/fit_kernel_ops.py, fit_attention_ops.py; the attention excerpts with their own random.seed(23)). Run: PYTHONPATH=<pyarrow> python3 analysis/kernel_excerpts.py /tmp/aicore
"""

from __future__ import annotations

import csv
import json
import random
import sys
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fit_attention_ops as att_ops  # noqa: E402
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
        attention_excerpts(data, system, shipped)


def attention_excerpts(data: Path, system: str, shipped: dict) -> None:
    """Context attention (head dims 64 and 128, each GQA group range) and MLA prefill and decode rows."""
    rng = random.Random(23)
    att_file = (f"{system}/attention/trtllm/{shipped['context_attention']['engine_version']}/"
                "context_attention_perf.parquet")
    rows = att_ops.context_rows(pq.read_table(data / att_file).to_pylist())
    sample = []
    for d in (64, 128):
        for low, high in ops.GQA_GROUPS:
            sample += rng.sample([r for r in rows if r["head_dim"] == d
                                  and low <= r["num_heads"] / r["num_key_value_heads"] <= high], 2 * PER_TABLE)
    write(OUT / f"{system}_context_attention_excerpt.csv",
          f"# {2 * PER_TABLE} rows per head dim (64, 128) and GQA group range {ops.GQA_GROUPS} drawn (random.seed(23))\n"
          f"# from aiconfigurator_core 0.12.0 (NVIDIA, Apache-2.0), aiconfigurator_core/systems/data/{att_file},\n"
          "# BF16 activations and K/V, no window, no prefix; isl = new tokens a sequence, latency in ms\n",
          sample, ["batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim", "latency"])
    version = shipped["mla"]["engine_version"]
    for name, kind in (("context_mla_perf.parquet", "prefill"), ("generation_mla_perf.parquet", "decode")):
        mla_file = f"{system}/mla/trtllm/{version}/{name}"
        rows = att_ops.mla_context_rows(pq.read_table(data / mla_file).to_pylist())
        write(OUT / f"{system}_mla_{kind}_excerpt.csv",
              f"# {PER_TABLE} rows drawn (random.seed(23)) from aiconfigurator_core 0.12.0 (NVIDIA, Apache-2.0),\n"
              f"# aiconfigurator_core/systems/data/{mla_file}, BF16 and BF16 K/V; num_heads per GPU,\n"
              "# isl = new tokens, step = cached tokens (decode), latency in ms\n",
              rng.sample(rows, PER_TABLE), ["batch_size", "isl", "step", "num_heads", "latency"])


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/aicore")
