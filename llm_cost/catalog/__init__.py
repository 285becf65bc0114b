"""Catalogs: Hugging Face style config.json files (models/) and datasheets (hardware/).

`paths` finds a file for a name or path, `fields` reads typed keys naming file and key,
`config` turns a config.json into a ModelSpec (one adapter per architecture family),
`datasheet` a datasheet into an Accelerator, `loader` caches both and resolves references.
"""

from llm_cost.catalog.config import SUPPORTED_MODEL_TYPES, model_from_config
from llm_cost.catalog.datasheet import accelerator_from_datasheet
from llm_cost.catalog.loader import as_accelerator, as_model, as_profile, load_accelerator, load_model
from llm_cost.catalog.paths import catalog_names

__all__ = ["SUPPORTED_MODEL_TYPES", "model_from_config", "accelerator_from_datasheet", "as_accelerator",
           "as_model", "as_profile", "load_accelerator", "load_model", "catalog_names"]
