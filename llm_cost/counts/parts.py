r"""A checkpoint's parts counted apart: the text model, the vision tower + projector, the MTP modules.

A published total (the Hub's safetensors total) counts every tensor the checkpoint ships, so

.. math:: N_{checkpoint} = N_{text} + N_{vision} + L_{mtp}\,N_{mtp}

where N_text is `param_counts(model).total` (what runs per token), N_vision `vision_params`, and
N_mtp one MTP module as stored: its block and projection (`mtp_params(model).own`), plus its own
copies of the embedding and LM head where the checkpoint stores them (`mtp_stores_tables`:
DeepSeek-V3, GLM-4.5; MiMo shares the model's).
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.catalog import as_model
from llm_cost.counts.params import param_counts
from llm_cost.specs import ModelSpec


@dataclass(frozen=True)
class CheckpointParams:
    """Parameters by part of the checkpoint (counts): text, vision, mtp; `total` their sum."""

    text: int
    vision: int
    mtp: int

    @property
    def total(self) -> int:
        return self.text + self.vision + self.mtp


def mtp_checkpoint_params(model: ModelSpec) -> int:
    """Parameters of the model's MTP modules as its checkpoint stores them (0 without MTP):
    mtp_layers x (own + embedding and LM head when `mtp_stores_tables`)."""
    model = as_model(model)
    if not model.mtp_layers:
        return 0
    from llm_cost.counts.mtp import mtp_params

    module = mtp_params(model)
    return model.mtp_layers * (module.stored if model.mtp_stores_tables else module.own)


def checkpoint_params(model: ModelSpec) -> CheckpointParams:
    r"""Count the checkpoint by part: text model, vision tower + projector, MTP modules.

    .. math:: N_{checkpoint} = N_{text} + N_{vision} + N_{mtp}

    Parameters
    ----------
    model : ModelSpec
        The model (a spec).

    Returns
    -------
    CheckpointParams
        Exact integer counts; `.total` is what the Hub's safetensors total reports.

    Examples
    --------
    GLM-4.5-Air: 106.85B of text model and one MTP layer of 3.62B stored with its own embedding and
    head: 110,468,824,832, the Hub's total (tests/test_hub_configs_2025.py).

    >>> from llm_cost.catalog import load_model
    >>> p = checkpoint_params(load_model("llama-3-8b"))
    >>> p.text == p.total, p.vision, p.mtp
    (True, 0, 0)
    """
    model = as_model(model)
    vision = None
    if model.vision is not None:  # text only: the towers' counts not imported (the CLI's startup)
        from llm_cost.counts.vision import vision_params

        vision = vision_params(model)
    return CheckpointParams(text=param_counts(model).total, vision=vision.total if vision else 0,
                            mtp=mtp_checkpoint_params(model))
