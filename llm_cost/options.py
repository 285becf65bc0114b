"""Named choices the CLI and the library share: presets, weight formats, catalog references.

One lookup per kind, exact names only; an unknown name lists the known ones.
"""

from __future__ import annotations

from llm_cost.errors import UnknownNameError, check_number
from llm_cost.specs.model import PRESETS, WEIGHT_FORMATS, Profile, WeightFormat


def choose(option: str, value: str, allowed) -> str:
    """`value` if it is one of `allowed`, else an error naming the option and the choices."""
    if value not in allowed:
        raise UnknownNameError(f"{option} must be one of {', '.join(allowed)}, got {value!r}")
    return value


def weight_format(name: str) -> WeightFormat:
    """A weight format by name: bf16, w4a16 / int4 (g128, 4.25 bits), int8, fp8."""
    return WEIGHT_FORMATS[choose("--weights", name, tuple(WEIGHT_FORMATS))]


def profile(preset: str = "article", *, mfu: float | None = None, bw_eff: float | None = None,
            fixed_ms: float | None = None, read_embedding: bool | None = None,
            kv: bool | None = None) -> Profile:
    """A preset with the knobs the user overrode (None keeps the preset's value)."""
    base = PRESETS[choose("--preset", preset, tuple(PRESETS))]
    changes = {}
    if mfu is not None:
        check_number("--mfu", mfu, low=0, high=1, low_open=True)
        changes["compute_efficiency"] = mfu
    if bw_eff is not None:
        check_number("--bw-eff", bw_eff, low=0, high=1, low_open=True)
        changes["bw_efficiency"] = bw_eff
    if fixed_ms is not None:
        check_number("--fixed-ms", fixed_ms, low=0)
        changes["fixed_time_s"] = fixed_ms * 1e-3
    if read_embedding is not None:
        changes["read_input_embedding"] = read_embedding
    if kv is not None:
        changes["count_kv"] = kv
    return base.with_(**changes) if changes else base
