"""Loading a model or an accelerator by catalog name or path; the specs as they come.

A catalog entry and a user's own file go through the same loader, and each is read once per
process (cached). Functions that take a model, an accelerator or a profile accept the spec
itself or its name or path (`as_model`, `as_accelerator`, `as_profile`).
"""

from __future__ import annotations

from functools import lru_cache

from llm_cost.catalog.config import model_from_config
from llm_cost.catalog.datasheet import accelerator_from_datasheet
from llm_cost.catalog.paths import catalog_dir, read_json, resolve
from llm_cost.errors import UnknownNameError
from llm_cost.specs import Accelerator, ModelSpec, Profile


@lru_cache(maxsize=64)
def load_model(ref: str) -> ModelSpec:
    """A model by catalog name (`llama-3-8b`) or by path to a config.json (or its folder)."""
    path = resolve(ref, "models", "model")
    catalog = path.parent.parent == catalog_dir("models")
    name = ref if catalog else (path.resolve().parent.name if path.name == "config.json" else path.stem)
    return model_from_config(read_json(path), name=name, path=path)


@lru_cache(maxsize=64)
def load_accelerator(ref: str) -> Accelerator:
    """An accelerator by catalog name (`h100-sxm`) or by path to a datasheet JSON."""
    path = resolve(ref, "hardware", "gpu")
    return accelerator_from_datasheet(read_json(path), path=path)


def as_model(model) -> ModelSpec:
    """A ModelSpec as given, or loaded from its catalog name or path."""
    if isinstance(model, ModelSpec):
        return model
    if isinstance(model, str):
        return load_model(model)
    raise UnknownNameError(f"model must be a ModelSpec, a catalog name or a path, got {type(model).__name__}",
                           params=("model",))


def as_accelerator(gpu) -> Accelerator:
    """An Accelerator as given, or loaded from its catalog name or path."""
    if isinstance(gpu, Accelerator):
        return gpu
    if isinstance(gpu, str):
        return load_accelerator(gpu)
    raise UnknownNameError(f"gpu must be an Accelerator, a catalog name or a path, got {type(gpu).__name__}",
                           params=("gpu",))


def as_profile(profile) -> Profile:
    """A Profile as given, or a preset by name (article, lecture, lecture-draft)."""
    if isinstance(profile, Profile):
        return profile
    from llm_cost.specs.profiles import preset

    if isinstance(profile, str):
        return preset(profile)
    raise UnknownNameError(f"profile must be a Profile or a preset name, got {type(profile).__name__}",
                           params=("profile",))
