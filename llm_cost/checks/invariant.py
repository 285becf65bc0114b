"""An invariant (one promised property and the builder of its hypothesis test) and its result.

REL, the float tolerance of identities that hold exactly in real arithmetic, is defined here
once. Imports only the specs: `properties`, `formulas` and `runner` import this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from llm_cost.specs import Accelerator, ModelSpec

REL = 1e-9  # float tolerance for identities that hold exactly in real arithmetic


@dataclass(frozen=True)
class Invariant:
    """One promised property: a name, the statement, and a builder of its hypothesis test."""

    name: str
    statement: str
    build: Callable[[ModelSpec, Accelerator], Callable[[], None]]
    scope: str = "model"  # "model": run per (model, gpu); "formula": independent of both, run once


@dataclass(frozen=True)
class CheckResult:
    name: str
    statement: str
    passed: bool
    counterexample: str = ""
    model: str = "-"
    gpu: str = "-"  # the catalog key (`Accelerator.label`), as rows' gpu
    gpu_name: str = "-"  # the display name
