"""Weight formats: bits per weight, plain or group-quantized (the article's INT4 g128: 4.25 bits)."""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.errors import check_choice, check_number


@dataclass(frozen=True)
class WeightFormat:
    """Bits per weight: plain (BF16) or group-quantized (one scale and zero per group).

    effective bits = bits + (scale_bits + zero_bits) / group_size
    """

    name: str
    bits: float
    group_size: int = 1
    scale_bits: float = 0.0
    zero_bits: float = 0.0
    keep_embeddings_bf16: bool = False  # embedding table and LM head stay at 16 bits

    def __post_init__(self) -> None:
        check_number("weights.bits", self.bits, low=0, high=64, low_open=True)
        check_number("weights.group_size", self.group_size, low=1, integer=True)
        check_number("weights.scale_bits", self.scale_bits, low=0, high=64)
        check_number("weights.zero_bits", self.zero_bits, low=0, high=64)

    @property
    def effective_bits(self) -> float:
        return self.bits + (self.scale_bits + self.zero_bits) / self.group_size

    @property
    def bytes_per_weight(self) -> float:
        return self.effective_bits / 8


BF16 = WeightFormat("bf16", 16)
# The article's INT4: group 128, a 16-bit scale and a 16-bit zero per group -> 4.25 bits
INT4_G128 = WeightFormat("int4", 4, group_size=128, scale_bits=16, zero_bits=16)
INT8_G128 = WeightFormat("int8", 8, group_size=128, scale_bits=16, zero_bits=16)
FP8 = WeightFormat("fp8", 8)
WEIGHT_FORMATS: dict[str, WeightFormat] = {
    "bf16": BF16,
    "w4a16": INT4_G128,
    "int4": INT4_G128,
    "int8": INT8_G128,
    "fp8": FP8,
}


def weight_format(name: str) -> WeightFormat:
    """A weight format by name: bf16, w4a16 / int4 (g128, 4.25 bits), int8 (g128), fp8.

    >>> weight_format("int4").effective_bits
    4.25
    """
    return WEIGHT_FORMATS[check_choice("weights", name, tuple(WEIGHT_FORMATS))]

