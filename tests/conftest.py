"""Shared fixtures: catalog lookups and the folder of test configs."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_cost.catalog import load_accelerator, load_model

DATA = Path(__file__).parent / "data"


@pytest.fixture(autouse=True)
def _wide_screen(monkeypatch):
    """Tests of content read figures and headers whole: a wide screen unless a test sets COLUMNS
    itself (tests/test_cli_screen.py checks the layout at 80, 100 and 120 columns)."""
    monkeypatch.setenv("COLUMNS", "400")


@pytest.fixture
def model():
    return load_model


@pytest.fixture
def gpu():
    return load_accelerator


@pytest.fixture
def data_dir() -> Path:
    return DATA
