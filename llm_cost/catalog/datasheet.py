"""Accelerator datasheet JSON -> Accelerator: the name, the figures (SI, dense), their sources.

Schema (README, "Datasheets"): required `name`, `memory_bytes`, `bandwidth_bytes_per_s`,
`bf16_flops_per_s`; optional `usable_memory_bytes`, `fp8_flops_per_s`, `int8_ops_per_s`,
`fp4_flops_per_s`, `interconnect`, `interconnect_bytes_per_s`, `interconnect_latency_s`,
`scale_up_gpus`, `scale_out_bytes_per_s`, `scale_out_latency_s` (the three together), `source`,
`sources`. Any other key is refused naming it (a typo such as `memory_byts` must not pass), and
every figure must lie in a plausible range: a unit slip (3.35e9 B/s for an H100's 3.35e12) lands
outside it; an FP8, INT8 or FP4 peak below the BF16 peak and a `sources` entry for an unknown key
are refused too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pathlib import Path

from llm_cost.catalog.fields import Fields
from llm_cost.errors import ConfigError, LlmCostError, did_you_mean

if TYPE_CHECKING:  # annotations only: the spec modules load where they are used
    from llm_cost.specs import Accelerator

# Plausible ranges, SI: a slip of a unit (GB/s written as MB/s, TFLOP/s as GFLOP/s) lands outside.
FLOPS_RANGE = (1e12, 1e17)  # 1 TFLOP/s .. 100 PFLOP/s dense, any precision
DATASHEET_RANGES = {
    "memory_bytes": (1e9, 1e13),  # 1 GB .. 10 TB
    "usable_memory_bytes": (1e9, 1e13),
    "bandwidth_bytes_per_s": (5e10, 1e14),  # 50 GB/s (a laptop's DRAM) .. 100 TB/s
    "bf16_flops_per_s": FLOPS_RANGE,
    "fp8_flops_per_s": FLOPS_RANGE,
    "int8_ops_per_s": FLOPS_RANGE,
    "fp4_flops_per_s": FLOPS_RANGE,
    "interconnect_bytes_per_s": (1e9, 1e13),  # PCIe Gen3 x4 .. 10 TB/s per direction
    "interconnect_latency_s": (1e-8, 1e-3),  # 10 ns .. 1 ms per collective step
    "scale_up_gpus": (1, 1e5),  # GPUs one link domain joins
    "scale_out_bytes_per_s": (1e8, 1e12),  # 1 Gb/s Ethernet .. 8 Tb/s per GPU
    "scale_out_latency_s": (1e-8, 1e-2),
    "max_power_w": (10, 1e4),  # board power: 10 W .. 10 kW
    "idle_power_w": (1, 1e4),
}
SCALE_OUT = ("scale_up_gpus", "scale_out_bytes_per_s", "scale_out_latency_s")
REQUIRED = ("memory_bytes", "bandwidth_bytes_per_s", "bf16_flops_per_s")
OPTIONAL = ("usable_memory_bytes", "fp8_flops_per_s", "int8_ops_per_s", "fp4_flops_per_s",
            "interconnect_bytes_per_s", "interconnect_latency_s", *SCALE_OUT, "max_power_w", "idle_power_w")
KNOWN_KEYS = ("name", *REQUIRED, *OPTIONAL, "interconnect", "source", "sources")
# usable / marketed: drivers report a few percent more or less than the label (81,559 MiB of an
# "80GB" H100 is 1.07x); a factor outside this range is a unit slip.
USABLE_RATIO = (0.5, 1.5)
# Ratios of two figures, against the span of the 14 datasheets of hardware/ (in brackets) with some
# room: a unit slip inside each figure's own range still moves a ratio out (issue 29: 9 of 27 slips
# passed the ranges alone). (numerator, denominator, low, high, what a figure outside suggests)
RATIOS = (
    ("bf16_flops_per_s", "bandwidth_bytes_per_s", 40, 560,  # FLOP per byte [120, 419]
     "sparse FLOP/s for dense, or a bandwidth 10x off?"),
    ("bandwidth_bytes_per_s", "memory_bytes", 8, 150,  # reads of the whole memory a second [12.5, 50.6]
     "memory in bits, or a bandwidth 10x off?"),
    ("fp8_flops_per_s", "bf16_flops_per_s", 1, 2.1, "sparse FP8 FLOP/s for dense?"),  # [2, 2.02]
    ("int8_ops_per_s", "bf16_flops_per_s", 1, 4.1, "sparse INT8 ops for dense?"),  # [1, 4]
    ("fp4_flops_per_s", "bf16_flops_per_s", 1, 4.1, "sparse FP4 FLOP/s for dense?"),  # [4]
    ("interconnect_bytes_per_s", "bandwidth_bytes_per_s", 0, 0.21,  # [0.032, 0.193]
     "NVLink's bidirectional figure for one direction, or bits for bytes?"),
    ("scale_out_bytes_per_s", "interconnect_bytes_per_s", 0, 0.5,  # [0.056, 0.112]
     "a network's Gb/s written as GB/s?"),
)


def _check_ratios(figures: dict, path) -> None:
    """ConfigError when two figures' ratio leaves RATIOS' span (a unit slip inside each range)."""
    for top, bottom, low, high, hint in RATIOS:
        if top in figures and bottom in figures:
            ratio = figures[top] / figures[bottom]
            if not low <= ratio <= high:
                raise ConfigError(f"{path}: '{top}' / '{bottom}' = {ratio:.3g}, outside [{low:g}, {high:g}] "
                                  f"(every datasheet of the catalog is inside): {hint}")


def accelerator_from_datasheet(data: dict, *, path: Path | str = "<datasheet>") -> Accelerator:
    """Build an Accelerator from a datasheet dict: name, figures, interconnect, sources.

    Parameters
    ----------
    data : dict
        The datasheet's keys (module doc): figures in SI units, dense (not sparse) peaks.
    path : Path or str, optional
        Where the datasheet came from, named in errors (and the `source` when `data` has none).

    Returns
    -------
    Accelerator
        The spec `step_time`, `kv_capacity` and the rest take in place of a catalog name.

    Raises
    ------
    ConfigError
        A key the schema does not know, a figure outside its plausible range, or two figures
        whose ratio no datasheet of the catalog has (a unit slip), in one line naming the key.

    Examples
    --------
    A GPU not in the catalog, from its three required figures (48 GB, 1 TB/s, 200 TFLOP/s BF16):

    >>> import llm_cost as lc
    >>> sheet = {"name": "My GPU", "memory_bytes": 48e9, "bandwidth_bytes_per_s": 1.0e12,
    ...          "bf16_flops_per_s": 200e12}
    >>> gpu = lc.accelerator_from_datasheet(sheet, path="my-gpu.json")
    >>> gpu.name, gpu.memory_bytes / 1e9, gpu.ridge_flops_per_byte, gpu.source
    ('My GPU', 48.0, 200.0, 'my-gpu.json')
    >>> round(lc.step_time("llama-3-8b", gpu, "article").step_time_s * 1e3, 2)
    16.06

    A typo in a key, or bandwidth in the wrong unit, is refused rather than read:

    >>> lc.accelerator_from_datasheet({**sheet, "bandwith_bytes_per_s": 1.0e12}, path="my-gpu.json")
    Traceback (most recent call last):
    ...
    llm_cost.errors.ConfigError: my-gpu.json: unknown key 'bandwith_bytes_per_s'; did you mean bandwidth_bytes_per_s, ...
    >>> lc.accelerator_from_datasheet({**sheet, "bandwidth_bytes_per_s": 1.0e9}, path="my-gpu.json")
    Traceback (most recent call last):
    ...
    llm_cost.errors.ConfigError: my-gpu.json: key 'bandwidth_bytes_per_s' must be in [5e+10, 1e+14], got 1000000000.0
    """
    from llm_cost.specs.hardware import Accelerator
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object at the top level (data must be a dict), "
                          f"got {type(data).__name__}", params=("data",))
    for key in data:
        if key not in KNOWN_KEYS:
            raise ConfigError(f"{path}: unknown key '{key}'{did_you_mean(key, KNOWN_KEYS)} "
                              f"(known: {', '.join(KNOWN_KEYS)})")
    fields = Fields(data, path)
    figures = {key: fields.number(key, *DATASHEET_RANGES[key]) for key in REQUIRED}
    figures.update({key: fields.number(key, *DATASHEET_RANGES[key]) for key in OPTIONAL if fields.has(key)})
    usable = figures.get("usable_memory_bytes")
    if usable is not None and not USABLE_RATIO[0] <= usable / figures["memory_bytes"] <= USABLE_RATIO[1]:
        raise ConfigError(f"{path}: key 'usable_memory_bytes' must be within {USABLE_RATIO[0]:g}x.."
                          f"{USABLE_RATIO[1]:g}x of 'memory_bytes' ({figures['memory_bytes']:g}), got {usable:g}")
    for key in ("fp8_flops_per_s", "int8_ops_per_s", "fp4_flops_per_s"):
        if key in figures and figures[key] < figures["bf16_flops_per_s"]:
            raise ConfigError(f"{path}: key '{key}' ({figures[key]:g}) must be at least 'bf16_flops_per_s' "
                              f"({figures['bf16_flops_per_s']:g}): narrower tensor cores are never slower (a unit slip?)")
    _check_ratios(figures, path)
    sources = data.get("sources", {})
    if not isinstance(sources, dict):
        raise ConfigError(f"{path}: key 'sources' must be an object of key -> quoted source, got {type(sources).__name__}")
    for key in sources:
        if key not in KNOWN_KEYS:
            raise ConfigError(f"{path}: unknown key 'sources.{key}'{did_you_mean(key, KNOWN_KEYS)}")
    if fields.has("interconnect_bytes_per_s") != fields.has("interconnect_latency_s"):
        raise ConfigError(f"{path}: keys 'interconnect_bytes_per_s' and 'interconnect_latency_s' go together "
                          "(give both, or neither for a single-GPU datasheet)")
    given = [key for key in SCALE_OUT if fields.has(key)]
    if given and (len(given) < len(SCALE_OUT) or not fields.has("interconnect_bytes_per_s")):
        raise ConfigError(f"{path}: keys {', '.join(repr(name) for name in SCALE_OUT)} go together, beside "
                          "'interconnect_bytes_per_s' (the link inside a domain; give all, or none)")
    if "scale_up_gpus" in figures:
        if figures["scale_up_gpus"] != int(figures["scale_up_gpus"]):
            raise ConfigError(f"{path}: key 'scale_up_gpus' must be a whole number, got {figures['scale_up_gpus']:g}")
        figures["scale_up_gpus"] = int(figures["scale_up_gpus"])
    try:
        return Accelerator(name=fields.str("name"), source=str(data.get("source", path)),
                           interconnect=fields.str("interconnect", ""), **figures)
    except ConfigError:
        raise
    except LlmCostError as err:
        raise ConfigError(f"{path}: {err}") from None
