"""Every public function and class shows how to use it in a doctested example.

tests/test_doctests.py runs the examples; this test makes sure each callable in
``llm_cost.__all__`` has one, so a new public name cannot arrive without it.
"""

from __future__ import annotations

import inspect

import llm_cost as lc

# Names whose example is still to come (none now; a name here must stay without one, below).
LATER: set[str] = set()


def _public_callables() -> dict[str, object]:
    objects = {name: getattr(lc, name) for name in lc.__all__}
    return {name: obj for name, obj in objects.items() if inspect.isclass(obj) or callable(obj)}


def test_every_public_callable_has_an_example():
    missing = sorted(
        name for name, obj in _public_callables().items() if name not in LATER and ">>>" not in (inspect.getdoc(obj) or "")
    )
    assert not missing, f"public names without a '>>>' example in their docstring: {missing}"


def test_later_names_are_public_and_still_without_examples():
    # once one of them gains an example it must leave LATER, so the exemption cannot go stale
    callables = _public_callables()
    assert LATER <= set(callables)
    stale = sorted(name for name in LATER if ">>>" in (inspect.getdoc(callables[name]) or ""))
    assert not stale, f"these have examples now; remove them from LATER: {stale}"
