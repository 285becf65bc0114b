"""The `llm-cost` command line: parse options, call the library, render rows.

Thin by design: every number comes from `llm_cost`. The Typer app and the shared options live in
`llm_cost/commands/base.py`; each area's commands in a module beside it. Heavy imports (numpy,
matplotlib, hypothesis) happen inside the commands that need them.
"""

from __future__ import annotations

# Importing a command module registers its commands, in this order in --help.
from llm_cost.commands import foundation  # noqa: F401  isort: skip
from llm_cost.commands import memory  # noqa: F401  isort: skip
from llm_cost.commands import speculative  # noqa: F401  isort: skip
from llm_cost.commands import check  # noqa: F401  isort: skip
from llm_cost.commands.base import app

__all__ = ["app", "main"]


def main() -> None:
    """Entry point of the `llm-cost` script."""
    app()


if __name__ == "__main__":
    main()
