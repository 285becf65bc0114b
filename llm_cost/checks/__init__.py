"""Checks: the properties the formulas promise, as hypothesis tests anyone can run.

`strategies` (public hypothesis strategies: models, accelerators, profiles, alpha / gamma / c,
distributions), `invariant` (Invariant, CheckResult, the tolerance REL), `properties` and
`formulas` (the invariants), `runner` (what `llm-cost check` runs). Imports hypothesis: only
`llm-cost check` and test suites import this package's modules.
"""

__all__ = ["strategies", "invariant", "properties", "formulas", "runner"]
