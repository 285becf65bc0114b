"""Weight formats: bits per weight, plain or group-quantized (the article's INT4 g128: 4.25 bits),
or the model's own checkpoint format (`CHECKPOINT`, resolved per component from its config)."""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.errors import check_choice, check_number


@dataclass(frozen=True)
class WeightFormat:
    """Bits per weight: plain (BF16) or group-quantized (one scale and zero per group).

    effective bits = bits + (scale_bits + zero_bits) / group_size

    `checkpoint`: the format is the model's own, as its checkpoint ships it (`quantization_config`,
    else `torch_dtype`); `counts.weight_bytes` then takes each component's width from the model
    (`llm_cost.counts.checkpoint`), and `bits` (16) only stands in where a caller needs one width.

    Parameters
    ----------
    name : str
        The format's name ("bf16", "int4", ...).
    bits : float
        Bits per stored weight, in (0, 64].
    group_size : int, optional
        Weights sharing one scale and zero, a whole number >= 1 (default 1).
    scale_bits, zero_bits : float, optional
        Bits of each group's scale and zero, in [0, 64] (default 0).
    keep_embeddings_bf16 : bool, optional
        Keep the embedding table and LM head at 16 bits (default False).
    checkpoint : bool, optional
        Use the model's own per-component formats (default False).

    Raises
    ------
    InvalidValueError
        Naming the field (`weights.bits must be in (0, 64], got 0`).

    Examples
    --------
    The article's INT4 g128 (§3.1, "INT4(g128) 4.25 bit"): 4 + (16 + 16) / 128.

    >>> INT4_G128.effective_bits, INT4_G128.bytes_per_weight, BF16.bytes_per_weight
    (4.25, 0.53125, 2.0)
    >>> WeightFormat("w", 0)
    Traceback (most recent call last):
    ...
    llm_cost.errors.InvalidValueError: weights.bits must be in (0, 64], got 0
    """

    name: str
    bits: float
    group_size: int = 1
    scale_bits: float = 0.0
    zero_bits: float = 0.0
    keep_embeddings_bf16: bool = False  # embedding table and LM head stay at 16 bits
    checkpoint: bool = False  # the model's own per-component formats (`llm_cost.counts.checkpoint`)

    def __post_init__(self) -> None:
        check_number("weights.bits", self.bits, low=0, high=64, low_open=True)
        check_number("weights.group_size", self.group_size, low=1, integer=True)
        check_number("weights.scale_bits", self.scale_bits, low=0, high=64)
        check_number("weights.zero_bits", self.zero_bits, low=0, high=64)

    @property
    def effective_bits(self) -> float:
        """Bits per weight with the group's scale and zero spread over it: bits + (scale + zero) / group.

        Examples
        --------
        >>> INT4_G128.effective_bits, INT8_G128.effective_bits  # the article's INT4 g128: 4.25
        (4.25, 8.25)
        """
        return self.bits + (self.scale_bits + self.zero_bits) / self.group_size

    @property
    def bytes_per_weight(self) -> float:
        """Bytes per weight: effective_bits / 8 (BF16: 2)."""
        return self.effective_bits / 8


BF16 = WeightFormat("bf16", 16)
# The article's INT4: group 128, a 16-bit scale and a 16-bit zero per group -> 4.25 bits
INT4_G128 = WeightFormat("int4", 4, group_size=128, scale_bits=16, zero_bits=16)
INT8_G128 = WeightFormat("int8", 8, group_size=128, scale_bits=16, zero_bits=16)
FP8 = WeightFormat("fp8", 8)
# Each model in the format its checkpoint ships: FP8 128 x 128 blocks (DeepSeek-V3, Kimi-K2), MXFP4
# experts (gpt-oss), else its torch_dtype (BF16; OLMo 2: F32). The bits are BF16's, a stand-in.
CHECKPOINT = WeightFormat("checkpoint", 16, checkpoint=True)
WEIGHT_FORMATS: dict[str, WeightFormat] = {
    "bf16": BF16,
    "w4a16": INT4_G128,
    "int4": INT4_G128,
    "int8": INT8_G128,
    "fp8": FP8,
    "checkpoint": CHECKPOINT,
}


def weight_format(name: str) -> WeightFormat:
    """A weight format by name: bf16, w4a16 / int4 (g128, 4.25 bits), int8 (g128), fp8, or
    checkpoint (each model's own, `CHECKPOINT`).

        effective bits = bits + (scale_bits + zero_bits) / group_size

    Parameters
    ----------
    name : str
        One of WEIGHT_FORMATS' keys, case ignored.

    Returns
    -------
    WeightFormat

    Raises
    ------
    UnknownNameError
        For any other name; the message lists the known ones.

    Examples
    --------
    The article's INT4 g128 (§3.1):

    >>> weight_format("int4").effective_bits
    4.25
    >>> weight_format("W4A16") is INT4_G128
    True
    >>> weight_format("int3")
    Traceback (most recent call last):
    ...
    llm_cost.errors.UnknownNameError: weights must be one of bf16, w4a16, int4, int8, fp8, checkpoint,
        got 'int3'; did you mean int8 or int4?
    """
    return WEIGHT_FORMATS[check_choice("weights", name, tuple(WEIGHT_FORMATS))]

