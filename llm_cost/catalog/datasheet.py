"""Accelerator datasheet JSON -> Accelerator: the name, three figures (SI), and their sources."""

from __future__ import annotations

from pathlib import Path

from llm_cost.catalog.fields import Fields
from llm_cost.errors import ConfigError, LlmCostError
from llm_cost.specs import Accelerator

# Plausible ranges, SI: a typo of a unit (GB/s written as bytes/s) lands outside them.
DATASHEET_RANGES = {
    "memory_bytes": (1e8, 1e14),  # 100 MB .. 100 TB
    "bandwidth_bytes_per_s": (1e9, 1e15),  # 1 GB/s .. 1 PB/s
    "bf16_flops_per_s": (1e11, 1e18),  # 0.1 TFLOP/s .. 1 EFLOP/s
}


def accelerator_from_datasheet(data: dict, *, path: Path | str = "<datasheet>") -> Accelerator:
    """Build an Accelerator from a datasheet dict: name, the three figures, their sources."""
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object at the top level, got {type(data).__name__}")
    f = Fields(data, path)
    try:
        return Accelerator(
            name=f.str("name"),
            memory_bytes=f.number("memory_bytes", *DATASHEET_RANGES["memory_bytes"]),
            bandwidth_bytes_per_s=f.number("bandwidth_bytes_per_s", *DATASHEET_RANGES["bandwidth_bytes_per_s"]),
            bf16_flops_per_s=f.number("bf16_flops_per_s", *DATASHEET_RANGES["bf16_flops_per_s"]),
            source=str(data.get("source", path)),
        )
    except ConfigError:
        raise
    except LlmCostError as err:
        raise ConfigError(f"{path}: {err}") from None
