"""The accelerator spec: a datasheet's figures, SI units, dense (no sparsity)."""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.errors import InvalidValueError, check_number
from llm_cost.specs.validate import check_fields


# GEMM precision -> the datasheet field of its dense peak
COMPUTE_PEAKS = {"bf16": "bf16_flops_per_s", "fp8": "fp8_flops_per_s", "int8": "int8_ops_per_s",
                 "fp4": "fp4_flops_per_s"}
OPTIONAL_FIGURES = ("usable_memory_bytes", "fp8_flops_per_s", "int8_ops_per_s", "fp4_flops_per_s",
                    "interconnect_bytes_per_s", "interconnect_latency_s", "scale_out_bytes_per_s",
                    "scale_out_latency_s", "max_power_w", "idle_power_w")


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
    usable_memory_bytes : float, optional
        Memory a program can allocate as the driver reports it (an "80GB" H100: 81,559 MiB);
        0 means unknown: `memory_available` then uses `memory_bytes`.
    fp8_flops_per_s, int8_ops_per_s, fp4_flops_per_s : float, optional
        Dense peaks of FP8, INT8 and FP4 GEMMs; 0 where the chip has no such tensor cores.
    interconnect : str, optional
        The GPU-to-GPU link ("NVLink 4", "PCIe Gen4 x16"); "" when unknown.
    interconnect_bytes_per_s : float, optional
        That link's bandwidth per GPU per direction (0 when unknown: no tp/pp/ep > 1).
    interconnect_latency_s : float, optional
        Latency of one step of a collective over the link (a ring hop).
    scale_up_gpus : int, optional
        GPUs that link joins (one NVLink or Infinity Fabric domain: 8 on an HGX board); 0 when
        unknown or unbounded: every group is timed on the link.
    key : str, optional
        What `catalog.load_accelerator` takes to load it again: the catalog name (`h100-sxm`, also when loaded by an
        alias) or the datasheet's path as given (`catalog.load_accelerator` sets it). Rows show it in
        their `gpu` column and `name` in `gpu_name` (`label` falls back to the name when empty).
    scale_out_bytes_per_s, scale_out_latency_s : float, optional
        The network between domains, per GPU per direction (one 400 Gb/s NIC per GPU: 50e9 B/s),
        and one step's latency; 0 when not given (a group past `scale_up_gpus` is then timed on the
        link, an optimistic bound). `parallel.comm` says how a group that spans domains is timed.

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
    usable_memory_bytes: float = 0.0
    fp8_flops_per_s: float = 0.0
    int8_ops_per_s: float = 0.0
    fp4_flops_per_s: float = 0.0
    interconnect: str = ""
    interconnect_bytes_per_s: float = 0.0
    interconnect_latency_s: float = 0.0
    scale_up_gpus: int = 0
    scale_out_bytes_per_s: float = 0.0
    scale_out_latency_s: float = 0.0
    max_power_w: float = 0.0
    idle_power_w: float = 0.0
    key: str = ""  # the catalog name (`h100-sxm`), or the path a datasheet was loaded from; "" when built by hand

    def __post_init__(self) -> None:
        check_fields(self, "gpu.")
        if not isinstance(self.name, str) or not self.name:
            raise InvalidValueError("gpu.name must be a non-empty string")
        for name in ("memory_bytes", "bandwidth_bytes_per_s", "bf16_flops_per_s"):
            check_number(f"gpu.{name}", getattr(self, name), low=0, low_open=True)
        for name in OPTIONAL_FIGURES:
            check_number(f"gpu.{name}", getattr(self, name), low=0)
        check_number("gpu.scale_up_gpus", self.scale_up_gpus, low=0, integer=True)
        if self.max_power_w and self.idle_power_w > self.max_power_w:
            raise InvalidValueError(f"gpu.idle_power_w must be in [0, max_power_w = {self.max_power_w:g}], "
                                    f"got {self.idle_power_w:g}")

    @property
    def label(self) -> str:
        """The catalog name (`key`), or the part's name for an accelerator built by hand.

        >>> from llm_cost.catalog import load_accelerator
        >>> load_accelerator("h100-sxm").label, Accelerator("x", 80e9, 3.35e12, 989e12).label
        ('h100-sxm', 'x')
        """
        return self.key or self.name

    def domains(self, gpus: int) -> int:
        """Scale-up domains a group of `gpus` GPUs spans (1 when it fits one, or no network is given).

        >>> from llm_cost.catalog import load_accelerator
        >>> h100 = load_accelerator("h100-sxm")
        >>> h100.domains(8), h100.domains(16), load_accelerator("l4").domains(16)
        (1, 2, 1)
        """
        if not (self.scale_up_gpus and self.scale_out_bytes_per_s) or gpus <= self.scale_up_gpus:
            return 1
        return -(-int(gpus) // self.scale_up_gpus)

    def peak_flops_per_s(self, compute: str = "bf16") -> float:
        """The dense GEMM peak of a compute precision: bf16, fp8, int8 or fp4.

        A chip without that precision's tensor cores runs it as a weight-only format (A100 and
        FP8: vLLM's W8A16 Marlin kernels), at the BF16 peak: `compute_precision` says which.
        """
        return getattr(self, COMPUTE_PEAKS[self.compute_precision(compute)])

    def compute_precision(self, compute: str = "bf16") -> str:
        """The precision whose peak a `compute` GEMM runs at here: itself, or bf16 when the chip lacks it."""
        return compute if getattr(self, COMPUTE_PEAKS[compute]) else "bf16"

    @property
    def memory_available_bytes(self) -> float:
        """Memory a program can use: `usable_memory_bytes`, else the marketed `memory_bytes`."""
        return self.usable_memory_bytes or self.memory_bytes

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
