"""Loading a model or an accelerator by catalog name or path; the specs as they come.

A catalog entry and a user's own file go through the same loader, and each is read once per
process (cached). Functions that take a model, an accelerator or a profile accept the spec
itself or its name or path (`as_model`, `as_accelerator`, `as_profile`).
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from llm_cost.catalog.config import model_from_config
from llm_cost.catalog.datasheet import accelerator_from_datasheet
from llm_cost.catalog.paths import catalog_dir, catalog_names, read_json, resolve
from llm_cost.errors import UnknownNameError
from llm_cost.specs.model import ModelSpec

if TYPE_CHECKING:  # imported where used: `llm-cost model` never builds an Accelerator or a Profile
    from llm_cost.specs import Accelerator, Profile


def load_model(ref: str) -> ModelSpec:
    """A model by catalog name (`llama-3-8b`) or by path to a config.json (or its folder).

    The file is read once per process (cached): equal references give the same object.

        name -> <catalog>/models/<name>/config.json;  path -> that file (or <folder>/config.json)

    Parameters
    ----------
    ref : str
        A catalog name (see `llm_cost.catalog.catalog_names("models")`), or a path to a Hugging
        Face style config.json or to the folder that holds one.

    Returns
    -------
    ModelSpec
        The model, named after the catalog entry, the config's folder or the file's stem.

    Examples
    --------
    Llama-3-8B's config.json (the article's model):

    >>> m = load_model("llama-3-8b")
    >>> m.name, m.num_layers, m.hidden_size, m.num_kv_heads, m.head_dim
    ('llama-3-8b', 32, 4096, 8, 128)
    >>> load_model("llama-3-8b") is m
    True
    """
    return _load_model(as_reference('model', ref))


@lru_cache(maxsize=64)
def _load_model(ref):
    """`load_model`'s work, cached per reference."""
    path = resolve(ref, "models", "model")
    catalog = path.parent.parent == catalog_dir("models")
    name = path.parent.name if catalog else (path.resolve().parent.name if path.name == "config.json" else path.stem)
    return model_from_config(read_json(path), name=name, path=path)


def load_accelerator(ref: str) -> Accelerator:
    """An accelerator by catalog name (`h100-sxm`) or by path to a datasheet JSON.

    The file is read once per process (cached).

        name -> <catalog>/hardware/<name>.json;  path -> that file

    Parameters
    ----------
    ref : str
        A catalog name (see `llm_cost.catalog.catalog_names("hardware")`) or a path to a
        datasheet JSON.

    Returns
    -------
    Accelerator
        Memory (bytes), HBM bandwidth (bytes/s) and dense BF16 throughput (FLOP/s), with the
        datasheet's source.

    Examples
    --------
    The article's H100: 80 GB, 3.35 TB/s, 989 TFLOPS BF16 dense.

    >>> h100 = load_accelerator("h100-sxm")
    >>> h100.name, h100.memory_bytes / 1e9, h100.bandwidth_bytes_per_s / 1e12, h100.bf16_flops_per_s / 1e12
    ('H100 SXM', 80.0, 3.35, 989.0)
    """
    return _load_accelerator(as_reference('gpu', ref))


@lru_cache(maxsize=64)
def _load_accelerator(ref):
    """`load_accelerator`'s work, cached per reference."""
    import dataclasses

    path = resolve(ref, "hardware", "gpu")
    acc = accelerator_from_datasheet(read_json(path, "datasheet"), path=path)
    # its key: the catalog name (an alias or another case: the entry's), or a file as the user gave it
    in_catalog = path.parent == catalog_dir("hardware") and path.stem in catalog_names("hardware")
    return dataclasses.replace(acc, key=path.stem if in_catalog else ref)


def as_reference(kind: str, ref):
    """`ref` when it is a catalog name or a path (str or os.PathLike), else UnknownNameError naming `kind`.

    >>> as_reference("model", None)
    Traceback (most recent call last):
    ...
    llm_cost.errors.UnknownNameError: model must be a catalog name or a path, got None
    """
    import os

    from llm_cost.errors import short_repr

    if isinstance(ref, (str, os.PathLike)):
        return ref
    raise UnknownNameError(f"{kind} must be a catalog name or a path, got {short_repr(ref)}", params=(kind,))


def as_model(model) -> ModelSpec:
    """A ModelSpec as given, or loaded from its catalog name or path.

        as_model(m) = m if m is a ModelSpec else load_model(m)

    Parameters
    ----------
    model : ModelSpec or str
        A spec (returned unchanged), or a catalog name or path for `load_model`.

    Returns
    -------
    ModelSpec

    Examples
    --------
    >>> as_model("gpt-3-13b").num_layers
    40
    >>> as_model(load_model("gpt-3-13b")) is load_model("gpt-3-13b")
    True
    """
    if isinstance(model, ModelSpec):
        return model
    if isinstance(model, str):
        return load_model(model)
    raise UnknownNameError(f"model must be a ModelSpec, a catalog name or a path, got {type(model).__name__}",
                           params=("model",))


def as_accelerator(gpu) -> Accelerator:
    """An Accelerator as given, or loaded from its catalog name or path.

        as_accelerator(g) = g if g is an Accelerator else load_accelerator(g)

    Parameters
    ----------
    gpu : Accelerator or str
        A spec (returned unchanged), or a catalog name or path for `load_accelerator`.

    Returns
    -------
    Accelerator

    Examples
    --------
    The lecture's GPU (§2.3): an A100 with 40 GB.

    >>> a100 = as_accelerator("a100-40gb")
    >>> a100.name, a100.memory_bytes / 1e9
    ('A100 40GB', 40.0)
    """
    from llm_cost.specs.hardware import Accelerator
    if isinstance(gpu, Accelerator):
        return gpu
    if isinstance(gpu, str):
        return load_accelerator(gpu)
    raise UnknownNameError(f"gpu must be an Accelerator, a catalog name or a path, got {type(gpu).__name__}",
                           params=("gpu",))


def as_profile(profile) -> Profile:
    """A Profile as given, or a preset by name (article, lecture, lecture-draft).

        as_profile(p) = p if p is a Profile else PRESETS[p]

    Parameters
    ----------
    profile : Profile or str
        A profile (returned unchanged) or a preset name.

    Returns
    -------
    Profile
        Bandwidth and compute efficiencies (fractions in (0, 1]), the fixed time per step
        (seconds) and what a step reads.

    Examples
    --------
    The lecture's preset: 80% of peak bandwidth, 60% of peak compute, 1 ms per step.

    >>> p = as_profile("lecture")
    >>> p.bw_efficiency, p.compute_efficiency, p.fixed_time_s
    (0.8, 0.6, 0.001)
    """
    from llm_cost.specs.profiles import Profile
    if isinstance(profile, Profile):
        return profile
    from llm_cost.specs.profiles import preset

    if isinstance(profile, str):
        return preset(profile)
    raise UnknownNameError(f"profile must be a Profile or a preset name, got {type(profile).__name__}",
                           params=("profile",))
