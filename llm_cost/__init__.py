"""llm-cost: an analytic calculator of what LLM inference costs on an accelerator.

Flow: specs -> catalog -> counts -> roofline -> speculative / memory / batching -> cli.

Everything inside the library is SI: bytes, seconds, FLOP, FLOP/s, bytes/s.
Conversions to GB (1e9 bytes) or ms happen only where results are rendered.
"""

from __future__ import annotations

from pathlib import Path as _Path

__version__ = "0.1.0"

# In a source checkout the design card keeps cli.py, hardware/ and models/ beside
# this package rather than inside it (the wheel maps them in with force-include).
# Appending the checkout root to __path__ makes `llm_cost.cli` and the catalog
# folders resolve the same way in both cases.
_root = _Path(__file__).resolve().parent.parent
if (_root / "cli.py").is_file() and (_root / "pyproject.toml").is_file():
    __path__.append(str(_root))  # type: ignore[name-defined]
del _root
