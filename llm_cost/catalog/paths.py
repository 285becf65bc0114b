"""Where catalog entries live, and how a reference (a name or a path) becomes a file.

A name is looked up ignoring case (`H100-SXM` is `h100-sxm`), then among the short aliases of
the common accelerators (`ALIASES`: `h100` is `h100-sxm`); an alias of several entries (`a100`)
and an unknown name are errors that say which names are nearest ("did you mean"), never a guess.
Anything that looks like a path (a separator, or a .json suffix) is read as a file.
"""

from __future__ import annotations

import json
from pathlib import Path

from llm_cost.errors import ConfigError, LlmCostError, UnknownNameError, did_you_mean

# Short names of the common accelerators -> the catalog entries they stand for. One entry: the
# alias is that entry. Several: the alias is ambiguous (A100 ships with 40 and 80 GB, and the
# capacity differs by 2x), and the error names them rather than picking one.
ALIASES: dict[str, dict[str, tuple[str, ...]]] = {
    "hardware": {
        "h100": ("h100-sxm",), "h100sxm": ("h100-sxm",), "h100-80gb": ("h100-sxm",),
        "a100": ("a100-40gb", "a100-80gb"), "a100-40": ("a100-40gb",), "a100-80": ("a100-80gb",),
        "mi300": ("mi300x",), "h200-sxm": ("h200",), "b200-sxm": ("b200",),
    },
    "models": {},
}


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
    path = _entry(kind, ref)
    if ref == ref.casefold() and path.is_file():  # the exact name (entries are lower case: where
        return path  # the file system ignores case, another spelling goes through the listing)
    name = catalog_name(ref, kind, what, strict=False)
    if name is not None:
        return _entry(kind, name)
    if Path(ref).exists():  # `llm-cost model my-model` where ./my-model/config.json exists
        return _as_file(ref, kind, what)
    return _entry(kind, catalog_name(ref, kind, what))


def _entry(kind: str, name: str) -> Path:
    folder = catalog_dir(kind)
    return folder / name / "config.json" if kind == "models" else folder / f"{name}.json"


def catalog_name(ref: str, kind: str, what: str, *, strict: bool = True) -> str | None:
    """The catalog entry `ref` names: itself, the same ignoring case, or the entry of an alias.

    An ambiguous alias is an error naming its entries; an unknown name (with `strict`; else None)
    an error naming the nearest entries and listing all.
    """
    names = catalog_names(kind)
    folded = {n.casefold(): n for n in names}
    key = ref.casefold()
    if key in folded:
        return folded[key]
    targets = ALIASES.get(kind, {}).get(key)
    if targets and len(targets) == 1:
        return targets[0]
    if targets:
        raise UnknownNameError(f"{what} {ref!r} is ambiguous: did you mean {' or '.join(targets)}?")
    if not strict:
        return None
    known = f"known: {', '.join(names)}"
    hint = did_you_mean(ref, names)
    raise UnknownNameError(f"unknown {what} {ref!r}{hint} ({known})" if hint else f"unknown {what} {ref!r}; {known}")


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
