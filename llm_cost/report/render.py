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
    whole: bool = False  # a key (`model`, `gpu`): each cell a name, never folded (set by the table)


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

        out.write(json.dumps([{key: _json_value(value) for key, value in row.items()} for row in rows], indent=2) + "\n")
    elif fmt == "csv":
        import csv

        keys = list(rows[0].keys()) if rows else [column.key for column in columns]
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=keys, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({key: _json_value(row.get(key)) for key in keys})
        out.write(buf.getvalue())
    elif fmt == "markdown":
        lines = [f"**{title}**", ""] if title else []
        lines.append("| " + " | ".join(_md_cell(column.header) for column in columns) + " |")
        lines.append("|" + "|".join(" --- " if column.text is str else " ---: " for column in columns) + "|")
        for row in rows:
            lines.append("| " + " | ".join(_md_cell(column.text(row.get(column.key))) for column in columns) + " |")
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
    """The Rich table, whose numbers are never cut.

    It fits the screen (a terminal's width, an explicit COLUMNS, or `PIPED_WIDTH` when piped):
    numbers are never cut and words wrap only at their boundaries; a table too wide for the screen
    is stacked as several tables, each led by its first (key) column, and only when even two
    columns cannot fit does it become one key/value block per row.
    """
    from rich.console import Console

    from rich.markup import escape

    cells = [[column.text(row.get(column.key)) for column in columns] for row in rows]
    texts = [title or "", caption or "", *(column.header for column in columns), *(text for line in cells for text in line)]
    # Rich replaces :name: emoji codes (its own pattern); with none, its emoji table (a 2 ms
    # import) is not needed for the same output.
    emoji = any(_EMOJI_CODE.search(text) for text in texts)
    # Text is printed as written: `E[tokens]` is not Rich markup to be swallowed. The leading text
    # columns are the row's key, repeated by every stacked table: a name there ("A100 80GB") stays whole.
    lead = _lead(columns)
    columns = [Column(column.key, escape(column.header), column.text, whole=column.whole or index < lead) for index, column in enumerate(columns)]
    cells = [[escape(text) for text in line] for line in cells]
    title, caption = escape(title or ""), escape(caption or "")
    console = Console(file=out if out is not sys.stdout else None, emoji=emoji)
    screen = _screen_width(console)
    # Without colours (piped, NO_COLOR) a highlighted number prints as its plain text: Rich's highlighter
    # (its regexes compiled at first use, ~4 ms of a command's startup) only where colours show.
    console = Console(file=console.file, width=screen, emoji=emoji, highlight=console.color_system is not None)
    widths = _fitted_widths(columns, cells, screen)
    if widths is not None:
        console.print(_table(columns, cells, title, caption, widths))
        return
    groups = _column_groups(columns, cells, screen)
    if groups is None:
        _print_records(console, columns, cells, title, caption)
        return
    for position, group in enumerate(groups):  # stacked tables, each led by the first (key) column
        part = [columns[index] for index in group]
        part_cells = [[line[index] for index in group] for line in cells]
        console.print(_table(part, part_cells, title if position == 0 else "", "",
                             _fitted_widths(part, part_cells, screen)))
    if caption:  # under the stack, left-aligned at the screen's width (a table's caption is centred)
        console.print(caption, justify="left")


def _column_groups(columns, cells, screen: int) -> list[list[int]] | None:
    """Column indices split into tables that each fit `screen`, in order, every one led by the row's
    key: its leading text columns (`model`, `gpu`), or column 0 alone when those do not fit beside
    another; None when the key and any one other column cannot fit together."""
    def fits(group):
        return _fitted_widths([columns[index] for index in group], [[line[index] for index in group] for line in cells], screen)

    leading = [*range(max(_lead(columns), 1))]
    for keys in (_telling(leading, cells), leading, [0]):
        groups, current = [], list(keys)
        for candidate in (index for index in range(len(columns)) if index not in keys):
            if fits(current + [candidate]):
                current.append(candidate)
                continue
            if len(current) == len(keys) or not fits(keys + [candidate]):
                break
            groups.append(current)
            current = keys + [candidate]
        else:
            groups.append(current)
            return groups
    return None


def _lead(columns) -> int:
    """How many text columns lead the table (its key: `model`, `gpu`) before the first numeric one."""
    return next((index for index, column in enumerate(columns) if _numeric(column)), len(columns))


def _telling(keys: list[int], cells) -> list[int]:
    """`keys` and, while two rows share their key, each later column that tells some of them apart
    (spec's rows at MFU 1 and 0.6): every stacked table then shows which row is which."""
    keys = list(keys)
    for column in range(max(keys) + 1, len(cells[0]) if cells else 0):
        seen = len({tuple(line[key] for key in keys) for line in cells})
        if seen == len(cells):
            break
        if len({tuple(line[key] for key in keys + [column]) for line in cells}) > seen:
            keys.append(column)
    return keys


def _fitted_widths(columns, cells, screen: int) -> list[int] | None:
    """Column widths (padding excluded) that fit `screen` with no number or word cut, or None.

    Each column gets at least `_least_width` and at most its one-line width; the room between
    goes to each column in proportion to what it lacks. Rich's own shrinking ignores a column's
    minimum (it narrows the widest columns first), so the widths are fixed here.
    """
    from rich.cells import cell_len

    least = [_least_width(column, [line[index] for line in cells]) for index, column in enumerate(columns)]
    most = [max([cell_len(column.header), *(cell_len(line[index]) for line in cells)], default=1)
            for index, column in enumerate(columns)]
    most = [max(widest, lo) for widest, lo in zip(most, least)]
    room = screen - (3 * len(columns) + 1)  # a rule and a space each side of each cell
    if sum(least) > room:
        return None
    if sum(most) <= room:
        return most
    extra, lack = room - sum(least), [widest - lo for widest, lo in zip(most, least)]
    widths = [lo + extra * missing // sum(lack) for lo, missing in zip(least, lack)]
    for index in sorted(range(len(widths)), key=lambda index: widths[index] - most[index]):  # rounding's leftovers
        if sum(widths) < room and widths[index] < most[index]:
            widths[index] += 1
    return widths


def print_notes(lines, out=None, hang: str = "") -> None:
    """Lines of prose below a table, left-aligned, wrapped at word boundaries to the width the
    table was fitted to (`_screen_width`); a word longer than the width (a URL) is never cut.
    `hang` indents each line's continuation."""
    import textwrap

    out = out or sys.stdout
    width = _screen_width(_Tty(out))
    for line in lines:
        out.write(textwrap.fill(line, width, break_long_words=False, break_on_hyphens=False,
                                subsequent_indent=hang) + "\n")


def print_command(command: str, out=None) -> None:
    """A shell command to paste, never cut inside a word: on a terminal narrower than it, its options
    go on lines joined by ` \\` (the shell reads one command); piped or where it fits, one line (a
    script can take it from the last line).

    >>> import io; out = io.StringIO(); print_command("llm-cost request --model m --gpu g", out); out.getvalue()
    'llm-cost request --model m --gpu g\\n'
    """
    import shlex

    out = out or sys.stdout
    tty = _Tty(out)
    width = _screen_width(tty)
    if not tty.is_terminal or len(command) <= width:
        out.write(command + "\n")
        return
    groups: list[str] = []
    for word in shlex.split(command):
        quoted = shlex.quote(word)
        if groups and not word.startswith("-") and groups[-1].startswith("-"):
            groups[-1] += " " + quoted  # an option's value stays beside it
        else:
            groups.append(quoted)
    lines, line = [], ""
    for group in groups:
        if line and len(line) + 1 + len(group) > width - 2:  # room for " \\"
            lines.append(line)
            line = "    " + group
        else:
            line = f"{line} {group}" if line else group
    out.write(" \\\n".join(lines + [line]) + "\n")


def screen_width(out=None) -> int:
    """The width `render` and `print_notes` fit to on `out` (default stdout): a terminal's, an
    explicit COLUMNS when piped, else `PIPED_WIDTH`."""
    return _screen_width(_Tty(out or sys.stdout))


class _Tty:
    """What `_screen_width` asks of a console, for a plain stream."""

    def __init__(self, out):
        self.is_terminal = hasattr(out, "isatty") and out.isatty()
        self.width = __import__("shutil").get_terminal_size().columns


def _screen_width(console) -> int:
    """The width to fit: the terminal's, an explicit COLUMNS when piped, else `PIPED_WIDTH`."""
    import os

    if console.is_terminal:
        return console.width
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else PIPED_WIDTH


PIPED_WIDTH = 100  # piped or captured with no COLUMNS: a width a file or a pager reads well

_LONGEST_TEXT_WORD = 32  # a longer word (a URL) may fold; a name (`qwen3-next-80b-a3b-thinking`) never does
_LONGEST_KEY_TOKEN = 48  # a key cell of one token (an id) up to this long stays whole: cut, it reads as two rows
_LONGEST_NAME = 30  # a key cell up to this long is a name ("GH200 (96GB HBM3)", "first-token overhead (engine)"), kept on one line; longer is prose


def _numeric(column: Column) -> bool:
    return column.text is not str  # formatted numbers (right-aligned), not free text


def _least_width(column: Column, texts) -> int:
    """The narrowest the column can be without cutting a number or a word: a numeric cell whole,
    the longest word of a header or text cell (at most `_LONGEST_TEXT_WORD`), and in a key column
    (`Column.whole`) each cell of at most `_LONGEST_NAME` characters whole: a name is not folded."""
    from rich.cells import cell_len

    words = [cell_len(piece) for text in (column.header, *([] if _numeric(column) else texts)) for piece in text.split()]
    if column.whole:
        words += [cell_len(text) for text in texts if cell_len(text) <= _LONGEST_NAME]
    word = min(max(words, default=1), _LONGEST_TEXT_WORD)
    if column.whole:  # a key of one token (a point's id) is never cut, up to `_LONGEST_KEY_TOKEN`
        word = max([word, *(cell_len(text) for text in texts if len(text.split()) == 1 and cell_len(text) <= _LONGEST_KEY_TOKEN)])
    if not _numeric(column):
        return word
    # a number is one token, never cut; words beside it in the cell wrap at their spaces
    return max([word, *(cell_len(token) for text in texts for token in (text.split() or [text]))])


def _table(columns, cells, title: str, caption: str, widths=None):
    from rich.table import Table

    table = Table(title=title or None, caption=caption or None)
    for index, column in enumerate(columns):
        table.add_column(column.header, justify="right" if _numeric(column) else "left", overflow="fold",
                         width=widths[index] if widths else None)
    for line in cells:
        table.add_row(*line)
    return table


def _print_records(console, columns, cells, title: str, caption: str) -> None:
    """A table too wide for the screen: one key/value block per row, numbers whole."""
    from rich.table import Table

    if title:
        console.print(title, style="italic")
    for index, line in enumerate(cells):
        block = Table(show_header=False, box=None, padding=(0, 1))
        block.add_column("key", style="bold", overflow="fold")
        block.add_column("value", overflow="fold")
        for column, text in zip(columns, line):
            block.add_row(column.header, text)
        if index:
            console.print()
        console.print(block)
    if caption:
        console.print(caption, style="dim")
