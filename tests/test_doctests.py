"""Every module's doctests run, and they cannot silently vanish.

The package itself and each of its modules (pkgutil.walk_packages) is imported and its doctests
run as one case. The docstrings' examples reproduce the article's and the lecture's figures from
the library, so a failure here is either a broken example or a changed figure.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import llm_cost

OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
MIN_EXAMPLES = 25  # across the package; the docstrings hold far more


def _module_names() -> list[str]:
    # onerror: a subpackage that fails to import must fail its case below, not vanish from the walk
    walked = pkgutil.walk_packages(llm_cost.__path__, prefix="llm_cost.", onerror=lambda name: None)
    return ["llm_cost"] + sorted(m.name for m in walked)


MODULES = _module_names()


def _run(name: str) -> doctest.TestResults:
    return doctest.testmod(importlib.import_module(name), optionflags=OPTIONS, verbose=False, report=False)


@pytest.mark.parametrize("name", MODULES)
def test_module_doctests(name):
    result = _run(name)
    assert result.failed == 0, f"{result.failed} of {result.attempted} doctest examples failed in {name}"


def test_the_walk_finds_the_package():
    assert {"llm_cost", "llm_cost.counts", "llm_cost.serving.fast_reservations", "llm_cost.speculative.trees"} <= set(MODULES)


def test_doctests_do_not_vanish():
    attempted = sum(_run(name).attempted for name in MODULES)
    assert attempted >= MIN_EXAMPLES, f"only {attempted} doctest examples in llm_cost"
