"""Typed access to a config or datasheet dict; every error names the file and the key."""

from __future__ import annotations

from pathlib import Path

from llm_cost.errors import ConfigError, short_repr

MAX_SIZE = 2**24  # widths, layer and expert counts, vocabularies: 16.7M is far past any model


class Fields:
    """Typed access to a config dict; every error names the file and the key.

    `prefix` names a nested object in messages: the `text_config` of a multimodal wrapper
    reads as key 'text_config.hidden_size'.
    """

    def __init__(self, data: dict, path: Path | str, prefix: str = ""):
        self.data, self.path, self.prefix = data, path, prefix

    def key(self, key: str) -> str:
        """The key as messages quote it: 'hidden_size', 'text_config.hidden_size'."""
        return f"'{self.prefix}{key}'"

    def error(self, message: str) -> ConfigError:
        """A ConfigError that names the file: `<path>: <message>`."""
        return ConfigError(f"{self.path}: {message}")

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def get(self, key: str, default):
        """The value, or `default` when the key is absent or null (Hub configs write both)."""
        value = self.data.get(key)
        return default if value is None else value

    def sub(self, key: str) -> "Fields":
        """The nested object `key` (a multimodal config's `text_config`), read the same way."""
        value = self.get(key, None)
        if value is None:
            raise self.error(f"missing key {self.key(key)}")
        if not isinstance(value, dict):
            raise self.error(f"key {self.key(key)} must be an object, got {short_repr(value)}")
        return Fields(value, self.path, f"{self.prefix}{key}.")

    def int(self, key: str, default=None, *, minimum: int = 1, maximum: int = MAX_SIZE) -> int:
        return self._int(key, self.get(key, default), minimum, maximum)

    def _int(self, key: str, value, minimum: int, maximum: int, what: str = "") -> int:
        where = f"key {self.key(key)}{what}"
        if value is None:
            raise self.error(f"missing key {self.key(key)}")
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise self.error(f"{where} must be an integer, got {value!r}")
        if not minimum <= value <= maximum:
            raise self.error(f"{where} must be in [{minimum}, {maximum}], got {short_repr(value)}")
        return value

    def number(self, key: str, low: float, high: float) -> float:
        value = self.data.get(key)
        if value is None:
            raise self.error(f"missing key {self.key(key)}")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(f"key {self.key(key)} must be a number, got {value!r}")
        if not low <= value <= high:  # also rejects NaN and inf
            raise self.error(f"key {self.key(key)} must be in [{low:g}, {high:g}], got {short_repr(value)}")
        return float(value)

    def bool(self, key: str, default: bool) -> bool:
        value = self.get(key, default)
        if not isinstance(value, bool):
            raise self.error(f"key {self.key(key)} must be true or false, got {value!r}")
        return value

    def str(self, key: str, default=None) -> str:
        value = self.get(key, default)
        if value is None:
            raise self.error(f"missing key {self.key(key)}")
        if not isinstance(value, str):
            raise self.error(f"key {self.key(key)} must be a string, got {value!r}")
        return value

    def _list(self, key: str, default) -> list:
        value = self.get(key, default)
        if value is None:
            raise self.error(f"missing key {self.key(key)}")
        if not isinstance(value, list):
            raise self.error(f"key {self.key(key)} must be a list, got {short_repr(value)}")
        return value

    def int_list(self, key: str, default=None, *, minimum: int = 0, maximum: int = MAX_SIZE) -> list[int]:
        """A list of integers in [minimum, maximum] (layer indices, 0/1 flags)."""
        return [self._int(key, entry, minimum, maximum, f" entry {index}")
                for index, entry in enumerate(self._list(key, default))]

    def str_list(self, key: str, default=None) -> list[str]:
        """A list of strings (`architectures`, `layer_types`)."""
        values = self._list(key, default)
        for index, entry in enumerate(values):
            if not isinstance(entry, str):
                raise self.error(f"key {self.key(key)} entry {index} must be a string, got {short_repr(entry)}")
        return values
