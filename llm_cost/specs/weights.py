"""Weight formats: bits per weight, plain or group-quantized (the article's INT4 g128: 4.25 bits),
or the model's own checkpoint format (`CHECKPOINT`, resolved per component from its config)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from llm_cost.errors import InvalidValueError, check_choice, check_number
from llm_cost.specs.validate import check_fields


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
    compute : str, optional
        The GEMMs' precision, whose peak FLOP/s the roofline uses: "bf16" for BF16 and the
        weight-only formats (W4A16, W8A16: weights are dequantized to BF16), "fp8" for FP8 W8A8,
        "int8" for INT8 W8A8, "fp4" for NVFP4 W4A4 (default "bf16").

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
    compute: str = "bf16"  # the GEMMs' precision: bf16 (and weight-only W4A16/W8A16), fp8, int8, fp4

    def __post_init__(self) -> None:
        check_fields(self, "weights.")
        object.__setattr__(self, "compute", check_choice("weights.compute", self.compute, COMPUTE_PRECISIONS))  # as spelled in the list
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


COMPUTE_PRECISIONS = ("bf16", "fp8", "int8", "fp4")

BF16 = WeightFormat("bf16", 16)
# The article's INT4: group 128, a 16-bit scale and a 16-bit zero per group -> 4.25 bits
INT4_G128 = WeightFormat("int4", 4, group_size=128, scale_bits=16, zero_bits=16)
INT8_G128 = WeightFormat("int8", 8, group_size=128, scale_bits=16, zero_bits=16)
# The W8A8 and W4A4 formats keep the embedding and the LM head at 16 bits, as shipped FP8 and NVFP4
# checkpoints do (llm-compressor's and ModelOpt's recipes ignore lm_head; embeddings are a lookup).
# FP8 W8A8 (per-tensor or per-channel scales: a few bytes per matrix, not counted): the FP8 peak
FP8 = WeightFormat("fp8", 8, compute="fp8", keep_embeddings_bf16=True)
# INT8 W8A8 (SmoothQuant-style, per-channel scales): the INT8 peak
INT8_W8A8 = WeightFormat("w8a8", 8, compute="int8", keep_embeddings_bf16=True)
# NVFP4: 4-bit E2M1 weights, one FP8 scale per 16 (4 + 8/16 = 4.5 bits), FP4 GEMMs (Blackwell)
NVFP4 = WeightFormat("nvfp4", 4, group_size=16, scale_bits=8, compute="fp4", keep_embeddings_bf16=True)
# Each model in the format its checkpoint ships: FP8 128 x 128 blocks (DeepSeek-V3, Kimi-K2), MXFP4
# experts (gpt-oss), else its torch_dtype (BF16; OLMo 2: F32). The bits are BF16's, a stand-in.
CHECKPOINT = WeightFormat("checkpoint", 16, checkpoint=True)
# llama.cpp's block formats (ggml `block_q8_0`, `block_q4_0`): one 16-bit scale per 32 weights, no zero:
# 8.5 and 4.5 bits (llama.cpp ggml/src/ggml-common.h)
Q8_0 = WeightFormat("q8_0", 8, group_size=32, scale_bits=16)
Q4_0 = WeightFormat("q4_0", 4, group_size=32, scale_bits=16)
# The one registry of formats by name: the CLI's `--weights`, the planner's and measurement files'
# `weights` column all read it (`weight_format`). FP16 moves the bytes of BF16 at its peak.
WEIGHT_FORMATS: dict[str, WeightFormat] = {
    "bf16": BF16,
    "fp16": BF16,
    "w4a16": INT4_G128,
    "int4": INT4_G128,
    "int8": INT8_G128,
    "w8a16": INT8_G128,
    "fp8": FP8,
    "w8a8": INT8_W8A8,
    "nvfp4": NVFP4,
    "q8_0": Q8_0,
    "q4_0": Q4_0,
    "checkpoint": CHECKPOINT,
}
# A model's own checkpoint format by the name a measurement gives it (its config's quantization
# method), with a model that ships it: the `checkpoint` format for such a model, refused for any other
# (`calibrate.prediction.weight_format_of`; InferenceX's gpt-oss rows say mxfp4).
SHIPPED_FORMATS: dict[str, str] = {"mxfp4": "gpt-oss"}


def weight_format_names() -> str:
    """The registry's formats for a help line, each once with its other names and its bits per weight.

    >>> weight_format_names().startswith("bf16/fp16 (16 bits), w4a16/int4 (4.25 bits, g128), int8/w8a16 (8.25")
    True
    """
    names: dict[WeightFormat, list[str]] = {}
    for name, fmt in WEIGHT_FORMATS.items():
        names.setdefault(fmt, []).append(name)
    parts = []
    for fmt, aliases in names.items():
        if fmt.checkpoint:
            what = "the model's own: FP8 blocks, MXFP4 experts, else torch_dtype"
        else:
            what = f"{fmt.effective_bits:g} bits" + (f", g{fmt.group_size}" if fmt.group_size > 1 else "")
        parts.append(f"{'/'.join(aliases)} ({what})")
    return ", ".join(parts)


def weight_format(name: str, group_size: int | None = None) -> WeightFormat:
    """A weight format by name: bf16 / fp16, w4a16 / int4 (g128, 4.25 bits), int8 / w8a16 (g128,
    weight-only), fp8 (W8A8), w8a8 (INT8 W8A8), nvfp4 (W4A4, 4.5 bits), llama.cpp's q8_0 / q4_0 (8.5
    and 4.5 bits), or checkpoint (each model's own, `CHECKPOINT`).

        effective bits = bits + (scale_bits + zero_bits) / group_size

    Parameters
    ----------
    name : str
        One of WEIGHT_FORMATS' keys, case ignored.
    group_size : int, optional
        For the group-quantized weight-only integer formats (int4, int8: a 16-bit scale and a 16-bit
        zero per group, GPTQ / AWQ / gpt-fast): the weights per group, 0 for per-output-channel scales
        (no group overhead counted). Default: the registry's g128. Ignored by the other formats,
        whose grouping is fixed by their definition.

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
    >>> weight_format("int4", group_size=32).effective_bits, weight_format("int8", group_size=0).effective_bits
    (5.0, 8.0)
    >>> weight_format("int3")
    Traceback (most recent call last):
    ...
    llm_cost.errors.UnknownNameError: weights must be one of bf16, fp16, w4a16, int4, int8, w8a16, fp8, w8a8,
        nvfp4, q8_0, q4_0, checkpoint, got 'int3'; did you mean int8 or int4?
    """
    fmt = WEIGHT_FORMATS[check_choice("weights", name, tuple(WEIGHT_FORMATS))]
    if group_size is None or not fmt.zero_bits:
        return fmt
    check_number("group_size", group_size, low=0, integer=True)
    if group_size == 0:
        return WeightFormat(fmt.name, fmt.bits)
    return dataclasses.replace(fmt, group_size=int(group_size))


def as_weights(weights) -> WeightFormat:
    """A WeightFormat as given, or by its name (`weight_format`): what every library function that
    takes a weight format accepts (`weights="fp8"` as well as `weights=FP8`).

    >>> as_weights("fp8") is FP8, as_weights(FP8) is FP8
    (True, True)
    """
    if isinstance(weights, WeightFormat):
        return weights
    if isinstance(weights, str):
        return weight_format(weights)
    raise InvalidValueError(f"weights must be a WeightFormat or a format's name, got {type(weights).__name__}",
                            params=("weights",))
