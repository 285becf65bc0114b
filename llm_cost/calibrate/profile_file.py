"""Profiles as JSON files: `{"name": ..., "bw_efficiency": ..., ...}`, every `Profile` field by name."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from llm_cost.errors import InvalidValueError, LlmCostError, short_repr
from llm_cost.specs.profiles import ENGINE_KNOBS, Profile

FIELDS = tuple(field.name for field in dataclasses.fields(Profile) if field.name != "_")


def profile_to_json(profile: Profile, **extra) -> str:
    """The profile's fields (and `extra` keys, e.g. the calibration's error) as indented JSON."""
    data = {name: getattr(profile, name) for name in FIELDS}
    # engine_costs as {engine: {knob: value}}: readable, and refused by key when malformed
    data["engine_costs"] = {entry[0]: dict(zip(ENGINE_KNOBS, entry[1:])) for entry in profile.engine_costs}
    data.update(extra)
    return json.dumps(data, indent=2) + "\n"


def write_profile(profile: Profile, path, **extra) -> None:
    """Write `profile_to_json(profile, **extra)` to `path`, atomically (`llm_cost.files.write_text`:
    a temporary file renamed into place); the caller checks the path first (`files.output_path`)."""
    from llm_cost.files import write_text

    write_text(path, profile_to_json(profile, **extra))


def read_profile(path) -> Profile:
    """The Profile in the JSON file at `path`; unknown keys other than `calibration` are refused.

    Raises
    ------
    InvalidValueError
        One line naming the file and the bad key or value.
    """
    from llm_cost.files import read_json, shown

    path = Path(path)
    data = read_json(path, "profile", InvalidValueError)
    path = shown(path)
    if not isinstance(data, dict):
        raise InvalidValueError(f"profile file {path}: must hold a JSON object of profile knobs")
    unknown = [key for key in data if key not in FIELDS and key != "calibration"]
    if unknown:
        raise InvalidValueError(f"profile file {path}: unknown key {short_repr(unknown[0])} (known: {', '.join(FIELDS)})")
    knobs = {key: value for key, value in data.items() if key in FIELDS}
    knobs.setdefault("name", Path(str(path)).stem)
    if "engine_costs" in knobs:
        knobs["engine_costs"] = _engine_costs(path, knobs["engine_costs"])
    for key in ("read_input_embedding", "count_kv"):
        if key in knobs and not isinstance(knobs[key], bool):
            raise InvalidValueError(f"profile file {path}: {key} must be true or false, got {short_repr(knobs[key])}")
    try:
        return Profile(**knobs)
    except (LlmCostError, TypeError) as err:
        raise InvalidValueError(f"profile file {path}: {err}") from None


def _engine_costs(path: Path, data) -> tuple:
    """`{engine: {fixed_time_s, fixed_time_per_layer_s, ttft_overhead_s[, compute_efficiency]}}` as
    `Profile.engine_costs` (without compute_efficiency, as files written before it was an engine's: the
    profile's own)."""
    from llm_cost.specs.engines import NAMES

    if not isinstance(data, dict):
        raise InvalidValueError(f"profile file {path}: engine_costs must be an object of engines")
    out = []
    for name, knobs in data.items():
        if name not in NAMES:
            raise InvalidValueError(f"profile file {path}: engine_costs: unknown engine {name!r} "
                                    f"(known: {', '.join(NAMES)})")
        if not isinstance(knobs, dict) or set(knobs) not in (set(ENGINE_KNOBS), set(ENGINE_KNOBS[:3])):
            raise InvalidValueError(f"profile file {path}: engine_costs[{name}] must give {', '.join(ENGINE_KNOBS)}")
        if not all(isinstance(value, (int, float)) and not isinstance(value, bool) for value in knobs.values()):
            raise InvalidValueError(f"profile file {path}: engine_costs[{name}] values must be numbers")
        out.append((name, *(float(knobs[knob]) for knob in ENGINE_KNOBS if knob in knobs)))
    return tuple(out)
