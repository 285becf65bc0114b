"""Rendering result rows: a Rich table, JSON, CSV or Markdown.

Rows are flat dicts whose keys are snake_case with the unit in the name (`step_time_s`,
`weight_bytes`) and whose values stay SI. Only the human table converts: each Column says how
(GB = 1e9 bytes, ms), and its header names the unit. Rich is imported only to draw a table,
and json and csv only to write them: startup is paid on every command.
"""

from __future__ import annotations

import io
import math
import re
import sys
from dataclasses import dataclass
from typing import Any, Callable, Sequence

FORMATS = ("table", "json", "csv", "markdown")  # every table command takes each
FORMATS_WITH_MARKDOWN = FORMATS  # the name `table` used when only it wrote Markdown


@dataclass(frozen=True)
class Column:
    """One table column: the row key it shows, its header (with unit), how to print a value."""

    key: str
    header: str
    text: Callable[[Any], str] = str


def fixed(digits: int, scale: float = 1.0) -> Callable[[Any], str]:
    """Formatter: value / scale with `digits` decimals (scale 1e9 for GB, 1e-3 for ms)."""

    def fmt(value: Any) -> str:
        if value is None:
            return "-"
        if isinstance(value, float) and not math.isfinite(value):
            return str(value)
        return f"{value / scale:,.{digits}f}"

    return fmt


def _json_value(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy scalar
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def render(rows: Sequence[dict], columns: Sequence[Column], fmt: str, *, title: str = "",
           caption: str = "", out=None) -> None:
    """Print `rows` in `fmt`: table (Rich), json (array of flat objects), csv, or markdown."""
    out = out or sys.stdout
    if fmt == "json":
        import json

        out.write(json.dumps([{k: _json_value(v) for k, v in r.items()} for r in rows], indent=2) + "\n")
    elif fmt == "csv":
        import csv

        keys = list(rows[0].keys()) if rows else [c.key for c in columns]
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=keys, lineterminator="\n")
        writer.writeheader()
        for r in rows:
            writer.writerow({k: _json_value(r.get(k)) for k in keys})
        out.write(buf.getvalue())
    elif fmt == "markdown":
        lines = [f"**{title}**", ""] if title else []
        lines.append("| " + " | ".join(_md_cell(c.header) for c in columns) + " |")
        lines.append("|" + "|".join(" --- " if c.text is str else " ---: " for c in columns) + "|")
        for r in rows:
            lines.append("| " + " | ".join(_md_cell(c.text(r.get(c.key))) for c in columns) + " |")
        if caption:
            lines += ["", caption]
        out.write("\n".join(lines) + "\n")
    else:
        _print_table(rows, columns, title, caption, out)


def _md_cell(text: str) -> str:
    """A Markdown table cell: a `|` escaped, a line break as <br>."""
    return text.replace("|", "\\|").replace("\n", "<br>")


_EMOJI_CODE = re.compile(r"(:(\S*?)(?:(?:\-)(emoji|text))?:)")  # rich._emoji_replace's pattern


def _print_table(rows, columns, title: str, caption: str, out) -> None:
    """The Rich table. Piped or captured, it is printed as wide as it is: never a number cut to
    fit 80 columns."""
    from rich.console import Console
    from rich.table import Table

    cells = [[c.text(r.get(c.key)) for c in columns] for r in rows]
    texts = [title or "", caption or "", *(c.header for c in columns), *(t for line in cells for t in line)]
    # Rich replaces :name: emoji codes (its own pattern); with none, its emoji table (a 2 ms
    # import) is not needed for the same output.
    emoji = any(_EMOJI_CODE.search(t) for t in texts)
    table = Table(title=title or None, caption=caption or None)
    for c in columns:
        table.add_column(c.header, justify="left" if c.text is str else "right", overflow="fold")
    for line in cells:
        table.add_row(*line)
    console = Console(file=out if out is not sys.stdout else None, emoji=emoji)
    if not console.is_terminal:
        # Any width at least the table's own renders it the same (it is not expanded, and the
        # title and caption wrap to the table's width), so an upper bound replaces measuring
        # it: each column's longest text at two cells a character, padding and rules.
        widest = [max((len(t) for t in (c.header, *(line[i] for line in cells))), default=0)
                  for i, c in enumerate(columns)]
        bound = sum(2 * w + 3 for w in widest) + 1
        console = Console(file=console.file, width=max(console.width, bound), emoji=emoji)
    console.print(table)
