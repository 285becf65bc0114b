"""The options several commands share, each declared once (name, flags, help)."""

from __future__ import annotations

from typing import Annotated, List, Optional

import typer

Format = Annotated[str, typer.Option("--format", "-f", help="Output: table, json, csv or markdown.")]
ModelOpt = Annotated[str, typer.Option("--model", "-m", help="Catalog name or path to a config.json.")]
GpuOpt = Annotated[str, typer.Option("--gpu", "-g", help="Catalog name or path to a datasheet JSON.")]
Preset = Annotated[str, typer.Option("--preset", "--profile", help="Efficiency profile: article, lecture, lecture-draft, measured, or a profile JSON file (llm-cost calibrate -o).")]
Mfu = Annotated[Optional[float], typer.Option("--mfu", help="Compute efficiency in (0, 1], overrides the preset.")]
BwEff = Annotated[Optional[float], typer.Option("--bw-eff", help="Bandwidth efficiency in (0, 1], overrides the preset.")]
FixedMs = Annotated[Optional[float], typer.Option("--fixed-ms", help="Fixed time per forward pass in ms, overrides the preset.")]
ReadEmb = Annotated[Optional[bool], typer.Option("--read-embedding/--no-read-embedding",
                                                 help="Count the input embedding table as read.")]
KvOpt = Annotated[Optional[bool], typer.Option("--kv/--no-kv", help="Count KV reads and attention FLOPs.")]
Weights = Annotated[str, typer.Option("--weights", "-w", help="Weight format: bf16, w4a16 (int4 g128), int8, fp8, or checkpoint (the model's own: FP8 blocks, MXFP4 experts, else torch_dtype).")]


Reserve = Annotated[float, typer.Option(help="Fraction of GPU memory held back from weights and KV, in [0, 1).")]
MaxLen = Annotated[Optional[int], typer.Option("--max-len", help="Tokens a max-length reservation holds (default: the model's context, 2048 for GPT-3).")]
KvTokens = Annotated[Optional[int], typer.Option("--kv-tokens", help="KV capacity in tokens, instead of memory - reserve - weights.")]
KvBytes = Annotated[float, typer.Option("--kv-bytes", help="Bytes per KV element (2 = BF16, 1 = FP8).")]
Rates = Annotated[Optional[List[float]], typer.Option("--rate", help="Poisson arrival rate in req/s, 'inf' for all at once (repeatable).")]
Requests = Annotated[int, typer.Option("--requests", "-n", help="Requests to simulate.")]
Seed = Annotated[int, typer.Option(help="Seed of the workload (same seed, same requests).")]

# A deployment (every timing command): `parse.deployment` turns these into a `Deployment`.
Tp = Annotated[int, typer.Option("--tp", help="Tensor-parallel GPUs per pipeline stage (divides the heads).")]
Pp = Annotated[int, typer.Option("--pp", help="Pipeline stages (layers split in balanced stages).")]
Ep = Annotated[int, typer.Option("--ep", help="Expert-parallel ranks of a MoE's routed experts (divides or is a multiple of --tp).")]
Gpus = Annotated[Optional[int], typer.Option("--gpus", help="GPUs in all, a multiple of tp x pp (default tp x pp: one replica).")]
KvDtype = Annotated[str, typer.Option("--kv-dtype", help="KV cache element type: bf16, fp16, fp8, int8 or int4.")]
OverlapComm = Annotated[bool, typer.Option("--overlap-comm/--no-overlap-comm", help="Hide collectives behind compute (default: they add).")]
Strict = Annotated[bool, typer.Option("--strict", help="Exit 2 when a deployment does not fit (memory or context).")]
