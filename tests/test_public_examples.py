"""Every public function and class shows how to use it in a doctested example.

tests/test_doctests.py runs the examples; this test makes sure each callable in
``llm_cost.__all__`` has one, so a new public name cannot arrive without it.
"""

from __future__ import annotations

import inspect

import llm_cost as lc


def _public_callables() -> dict[str, object]:
    objects = {name: getattr(lc, name) for name in lc.__all__}
    return {name: obj for name, obj in objects.items() if inspect.isclass(obj) or callable(obj)}


def test_every_public_callable_has_an_example():
    missing = sorted(
        name for name, obj in _public_callables().items() if ">>>" not in (inspect.getdoc(obj) or "")
    )
    assert not missing, f"public names without a '>>>' example in their docstring: {missing}"
