"""Where catalog entries live, and how a reference (a name or a path) becomes a file.

A name is looked up exactly (no fuzzy matching); an unknown name lists the known ones.
Anything that looks like a path (a separator, or a .json suffix) is read as a file.
"""

from __future__ import annotations

import json
from pathlib import Path

from llm_cost.errors import ConfigError, LlmCostError, UnknownNameError


def catalog_dir(kind: str) -> Path:
    """The folder of a catalog: inside the installed package, or at the checkout root."""
    import llm_cost

    for folder in (Path(llm_cost.__file__).parent, llm_cost.CHECKOUT_ROOT):
        if folder is not None and (folder / kind).is_dir():
            return folder / kind
    raise LlmCostError(f"the {kind}/ catalog is missing from this installation")  # pragma: no cover


def catalog_names(kind: str) -> list[str]:
    """Names of the catalog entries of `kind` ("models" or "hardware"), sorted."""
    folder = catalog_dir(kind)
    if kind == "models":
        return sorted(p.parent.name for p in folder.glob("*/config.json"))
    return sorted(p.stem for p in folder.glob("*.json"))


def _looks_like_path(ref: str) -> bool:
    """A separator or a .json suffix makes a reference a path; a bare word is a catalog name first."""
    return "/" in ref or "\\" in ref or ref.endswith(".json") or ref in (".", "..")


def _as_file(ref: str, kind: str, what: str) -> Path:
    path = Path(ref)
    if kind == "models" and path.is_dir():
        path = path / "config.json"
    if not path.is_file():
        raise ConfigError(f"{what} file not found: {path}")
    return path


def resolve(ref: str, kind: str, what: str) -> Path:
    """The file a reference names: a path, else a catalog entry, else a bare local path."""
    if not isinstance(ref, str) or not ref:
        raise UnknownNameError(f"{what} must be a catalog name or a path, got {ref!r}")
    if _looks_like_path(ref):
        return _as_file(ref, kind, what)
    folder = catalog_dir(kind)
    path = folder / ref / "config.json" if kind == "models" else folder / f"{ref}.json"
    if path.is_file():
        return path
    if Path(ref).exists():  # `llm-cost model my-model` where ./my-model/config.json exists
        return _as_file(ref, kind, what)
    raise UnknownNameError(f"unknown {what} {ref!r}; known: {', '.join(catalog_names(kind))}")


def read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a UTF-8 text file") from None
    except json.JSONDecodeError as err:
        raise ConfigError(f"{path}: malformed JSON at line {err.lineno}: {err.msg}") from None
    except OSError as err:
        raise ConfigError(f"{path}: cannot read ({err.strerror})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object at the top level")
    return data
