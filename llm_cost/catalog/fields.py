"""Typed access to a config or datasheet dict; every error names the file and the key."""

from __future__ import annotations

from pathlib import Path

from llm_cost.errors import ConfigError, short_repr

MAX_SIZE = 2**24  # widths, layer and expert counts, vocabularies: 16.7M is far past any model


class Fields:
    """Typed access to a config dict; every error names the file and the key."""

    def __init__(self, data: dict, path: Path | str):
        self.data, self.path = data, path

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def get(self, key: str, default):
        """The value, or `default` when the key is absent or null (Hub configs write both)."""
        value = self.data.get(key)
        return default if value is None else value

    def int(self, key: str, default=None, *, minimum: int = 1, maximum: int = MAX_SIZE) -> int:
        value = self.get(key, default)
        if value is None:
            raise ConfigError(f"{self.path}: missing key '{key}'")
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise ConfigError(f"{self.path}: key '{key}' must be an integer, got {value!r}")
        if not minimum <= value <= maximum:
            raise ConfigError(f"{self.path}: key '{key}' must be in [{minimum}, {maximum}], got {short_repr(value)}")
        return value

    def number(self, key: str, low: float, high: float) -> float:
        value = self.data.get(key)
        if value is None:
            raise ConfigError(f"{self.path}: missing key '{key}'")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{self.path}: key '{key}' must be a number, got {value!r}")
        if not low <= value <= high:  # also rejects NaN and inf
            raise ConfigError(f"{self.path}: key '{key}' must be in [{low:g}, {high:g}], got {short_repr(value)}")
        return float(value)

    def bool(self, key: str, default: bool) -> bool:
        value = self.get(key, default)
        if not isinstance(value, bool):
            raise ConfigError(f"{self.path}: key '{key}' must be true or false, got {value!r}")
        return value

    def str(self, key: str, default=None) -> str:
        value = self.get(key, default)
        if value is None:
            raise ConfigError(f"{self.path}: missing key '{key}'")
        if not isinstance(value, str):
            raise ConfigError(f"{self.path}: key '{key}' must be a string, got {value!r}")
        return value
