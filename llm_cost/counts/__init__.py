"""Counts: parameters, FLOPs per token, KV bytes per token, weight bytes, LoRA parameters.

All integer counts are exact (Python ints); bytes are floats only where a format has a
fractional width (INT4 with group scales). `params` (by component: total, active, GEMM),
`per_token` (FLOPs with context, KV bytes per token and per sequence with windows), `weights`
(bytes in a format), `checkpoint` (the bytes as the checkpoint ships them: FP8 blocks, MXFP4
experts, torch_dtype), `lora`.
"""

from llm_cost.counts.lora import LORA_TARGETS_ALL, LORA_TARGETS_ATTN, lora_params
from llm_cost.counts.params import BF16_BYTES, ParamCounts, param_counts
from llm_cost.counts.per_token import (attention_flops_per_context_token, flops_per_token, kv_bytes,
                                       kv_bytes_per_token, layer_windows)
from llm_cost.counts.weights import WeightBytes, weight_bytes

__all__ = ["LORA_TARGETS_ALL", "LORA_TARGETS_ATTN", "lora_params", "BF16_BYTES", "ParamCounts", "param_counts",
           "attention_flops_per_context_token", "flops_per_token", "kv_bytes", "kv_bytes_per_token", "layer_windows",
           "WeightBytes", "weight_bytes"]
