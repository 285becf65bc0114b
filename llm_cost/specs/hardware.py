"""The accelerator spec: a datasheet's figures, SI units, dense (no sparsity)."""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.errors import InvalidValueError, check_number


@dataclass(frozen=True)
class Accelerator:
    """An accelerator's datasheet figures (dense, no sparsity).

        ridge = bf16_flops_per_s / bandwidth_bytes_per_s      (FLOP/byte)

    Parameters
    ----------
    name : str
        Non-empty; as the datasheet names the part.
    memory_bytes : float
        Memory capacity in bytes (GB = 1e9 bytes), > 0.
    bandwidth_bytes_per_s : float
        Peak memory bandwidth in bytes/s, > 0.
    bf16_flops_per_s : float
        Peak dense BF16 FLOP/s, > 0.
    source : str, optional
        Where the figures come from.

    Raises
    ------
    InvalidValueError
        Naming the field (`gpu.bandwidth_bytes_per_s must be in (0, inf), got 0`).

    Examples
    --------
    The article's H100 SXM (its script: 80e9 bytes, 3.35e12 B/s, 989e12 FLOP/s):

    >>> from llm_cost.catalog import load_accelerator
    >>> h100 = load_accelerator("h100-sxm")
    >>> h100.memory_bytes / 1e9, h100.bandwidth_bytes_per_s / 1e12, h100.bf16_flops_per_s / 1e12
    (80.0, 3.35, 989.0)
    >>> Accelerator("x", 80e9, 0, 989e12)
    Traceback (most recent call last):
    ...
    llm_cost.errors.InvalidValueError: gpu.bandwidth_bytes_per_s must be in (0, inf), got 0
    """

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
        r"""Peak FLOP/s over peak bytes/s: the arithmetic intensity where the roofline bends.

        .. math:: I^* = F / BW \quad\text{(FLOP/byte)}

        Examples
        --------
        The article §1.2: 989e12 / 3.35e12 ~ 295 for the H100 SXM.

        >>> from llm_cost.catalog import load_accelerator
        >>> round(load_accelerator("h100-sxm").ridge_flops_per_byte)
        295
        """
        return self.bf16_flops_per_s / self.bandwidth_bytes_per_s
