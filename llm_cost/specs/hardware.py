"""The accelerator spec: a datasheet's figures, SI units, dense (no sparsity)."""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.errors import InvalidValueError, check_number


@dataclass(frozen=True)
class Accelerator:
    """An accelerator's datasheet figures (dense, no sparsity)."""

    name: str
    memory_bytes: float
    bandwidth_bytes_per_s: float
    bf16_flops_per_s: float
    source: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InvalidValueError("gpu.name must be a non-empty string")
        for name in ("memory_bytes", "bandwidth_bytes_per_s", "bf16_flops_per_s"):
            check_number(f"gpu.{name}", getattr(self, name), low=0, low_open=True)

    @property
    def ridge_flops_per_byte(self) -> float:
        """Peak FLOP/s over peak bytes/s: the arithmetic intensity where the roofline bends."""
        return self.bf16_flops_per_s / self.bandwidth_bytes_per_s
