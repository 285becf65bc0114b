"""Output files of the commands that write one (`plot -o`, `validate --plot`, `calibrate -o`): the
path checked before the work (`llm_cost.files.output_path`), an existing file replaced only with
`--force` or a yes at a terminal's prompt, never when it is one of the command's inputs; the write
itself is atomic (`llm_cost.files.atomic_write`, in the writers)."""

from __future__ import annotations

import sys
from pathlib import Path
import typer



def _interactive() -> bool:
    try:
        return sys.stdin.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def target(path, *, force: bool, inputs=(), suffixes=None, param: str = "output") -> Path:
    """The checked output path (`files.output_path`); at a terminal, an existing file is replaced
    after a yes to a prompt, elsewhere only with `--force`."""
    from llm_cost.errors import InvalidValueError
    from llm_cost.files import output_path, shown

    inputs = [given for given in inputs if isinstance(given, str) and given]
    try:
        return output_path(path, force=force, inputs=inputs, suffixes=suffixes, param=param)
    except InvalidValueError as err:
        if "force" not in (err.params or ()) or not _interactive():  # not "exists: give --force"
            raise
        if not typer.confirm(f"{shown(path)} exists. Replace it?", default=False, err=True):
            raise typer.Exit(1) from None
        return output_path(path, force=True, inputs=inputs, suffixes=suffixes, param=param)
