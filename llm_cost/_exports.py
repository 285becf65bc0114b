"""Lazy re-exports: a package names its public API in `__all__` without importing it up front.

`llm-cost model` must not pay for numpy, and `import llm_cost` must stay light, yet
`llm_cost.step_time` and `from llm_cost.roofline import step_time` should just work. Each
package maps its public names to the private module that defines them; a name is imported on
first use (PEP 562 module `__getattr__`) and then cached in the package's namespace.
"""

from __future__ import annotations

import importlib


def lazy_exports(namespace: dict, exports: dict[str, str]):
    """`__getattr__` and `__dir__` for a package whose names live in `exports` (name -> module).

    Modules are given relative to the package (".step_time") or absolute ("llm_cost.counts").
    """
    package = namespace["__name__"]

    def __getattr__(name: str):
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def __dir__():
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__


def names_from(module: str, *names: str) -> dict[str, str]:
    """{name: module} for each name: the building block of an `exports` table."""
    return dict.fromkeys(names, module)
