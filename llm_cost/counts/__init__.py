"""Counts: parameters, FLOPs per token, KV bytes per token, weight bytes, LoRA parameters.

All integer counts are exact (Python ints); bytes are floats only where a format has a
fractional width (INT4 with group scales). `params` (by component: total, active, GEMM),
`per_token` (FLOPs with context, KV bytes per token and per sequence with windows), `weights`
(bytes in a format), `checkpoint` (the bytes as the checkpoint ships them: FP8 blocks, MXFP4
experts, torch_dtype), `lora`.
"""

from llm_cost._exports import lazy_exports, names_from

_EXPORTS = {
    **names_from(".lora", "LORA_TARGETS_ALL", "LORA_TARGETS_ATTN", "lora_params"),
    **names_from(".params", "BF16_BYTES", "ParamCounts", "param_counts"),
    **names_from(".per_token", "attention_flops_per_context_token", "flops_per_token", "kv_bytes",
                 "kv_bytes_per_token", "layer_windows"),
    **names_from(".weight_parts", "WeightBytes"),
    **names_from(".weights", "weight_bytes"),
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
