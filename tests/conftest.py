"""Shared fixtures: catalog lookups and the folder of test configs."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_cost.catalog import load_accelerator, load_model

DATA = Path(__file__).parent / "data"


@pytest.fixture
def model():
    return load_model


@pytest.fixture
def gpu():
    return load_accelerator


@pytest.fixture
def data_dir() -> Path:
    return DATA
