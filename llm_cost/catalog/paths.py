"""Where catalog entries live, and how a reference (a name or a path) becomes a file.

A name is looked up ignoring case (`H100-SXM` is `h100-sxm`), then among the short aliases of
the common accelerators (`ALIASES`: `h100` is `h100-sxm`); an alias of several entries (`a100`)
and an unknown name are errors that say which names are nearest ("did you mean"), never a guess.
Anything that looks like a path (a separator, or a .json suffix) is read as a file.
"""

from __future__ import annotations

from pathlib import Path

from llm_cost.errors import ConfigError, LlmCostError, UnknownNameError, did_you_mean, short_repr

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
    """Names of the catalog entries of `kind` ("models" or "hardware"), sorted.

    Each name is what `load_model` or `load_accelerator` (and the CLI's `--model` and `--gpu`) take.

    Parameters
    ----------
    kind : str
        "models" (the `models/*/config.json` folders) or "hardware" (the `hardware/*.json` datasheets).

    Returns
    -------
    list of str
        The entries' names, sorted.

    Examples
    --------
    >>> import llm_cost as lc
    >>> gpus = lc.catalog_names("hardware")
    >>> "h100-sxm" in gpus, gpus == sorted(gpus)
    (True, True)
    >>> [name for name in lc.catalog_names("models") if name.startswith("gpt-oss")]
    ['gpt-oss-120b', 'gpt-oss-20b']
    >>> {name: lc.load_accelerator(name).name for name in gpus if name.startswith("h100")}
    {'h100-pcie': 'H100 PCIe', 'h100-sxm': 'H100 SXM'}
    >>> lc.catalog_names("gpus")
    Traceback (most recent call last):
    ...
    llm_cost.errors.UnknownNameError: kind must be one of models, hardware, got 'gpus'
    """
    from llm_cost.errors import check_choice

    kind = check_choice("kind", kind, ("models", "hardware"))
    folder = catalog_dir(kind)
    if kind == "models":
        return sorted(path.parent.name for path in folder.glob("*/config.json"))
    return sorted(path.stem for path in folder.glob("*.json"))


def _looks_like_path(ref: str) -> bool:
    """A separator or a .json suffix makes a reference a path; a bare word is a catalog name first."""
    return "/" in ref or "\\" in ref or ref.endswith(".json") or ref in (".", "..")


def _as_file(ref: str, kind: str, what: str) -> Path:
    from llm_cost.files import input_file

    path = Path(ref)
    if kind == "models" and _safely(path.is_dir):
        path = path / "config.json"
    return input_file(path, what)  # a FIFO is refused as one, not as "not found"


def _safely(test) -> bool:
    """A file-system test that is False where the name cannot be a file (too long, a NUL byte)."""
    try:
        return test()
    except (OSError, ValueError):
        return False


def resolve(ref: str, kind: str, what: str) -> Path:
    """The file a reference names: a path, else a catalog entry, else a bare local path."""
    if not isinstance(ref, str) or not ref:
        raise UnknownNameError(f"{what} must be a catalog name or a path, got {short_repr(ref)}")
    if _looks_like_path(ref):
        return _as_file(ref, kind, what)
    path = _entry(kind, ref)
    if ref == ref.casefold() and _safely(path.is_file):  # the exact name (entries are lower case: where
        return path  # the file system ignores case, another spelling goes through the listing)
    name = catalog_name(ref, kind, what, strict=False)
    if name is not None:
        return _entry(kind, name)
    if _safely(Path(ref).exists):  # `llm-cost model my-model` where ./my-model/config.json exists
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
    folded = {name.casefold(): name for name in names}
    key = ref.casefold()
    if key in folded:
        return folded[key]
    targets = ALIASES.get(kind, {}).get(key)
    if targets and len(targets) == 1:
        return targets[0]
    if targets:
        raise UnknownNameError(f"{what} {short_repr(ref)} is ambiguous: did you mean {' or '.join(targets)}?")
    if not strict:
        return None
    known = f"known: {', '.join(names)}"
    hint = did_you_mean(ref, names)
    raise UnknownNameError(f"unknown {what} {short_repr(ref)}{hint} ({known})" if hint
                           else f"unknown {what} {short_repr(ref)}; {known}")


def read_json(path: Path, what: str = "config") -> dict:
    """The JSON object in the file at `path` (`llm_cost.files.read_json`: a regular file, UTF-8 with or
    without a BOM, no key given twice, no deep nesting or huge integer)."""
    from llm_cost.files import read_json as read, shown

    data = read(path, what)
    if not isinstance(data, dict):
        raise ConfigError(f"{shown(path)}: expected a JSON object at the top level")
    return data
