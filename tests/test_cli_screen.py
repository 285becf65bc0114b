"""Tables that never split a number (issue 15, deliverable 1): fitted at 80 and 120 columns.

The screen width comes from an explicit COLUMNS (piped output honours it; a terminal's own width
takes the same path) and, once, from a real pseudo-terminal. Every number of the full-width table
must appear whole in the fitted text, and no line may pass the width.
"""

from __future__ import annotations

import json
import os
import re
import sys

import pytest
from typer.testing import CliRunner

from llm_cost.cli import app

from test_cli_markdown import COMMANDS

NUMBER = re.compile(r"(?<![\w/.\-])\d[\d,]*(?:\.\d+)?(?![\w/\-])")  # a figure, not a digit in a URL or a name
runner = CliRunner()


def _out(args, columns=None) -> str:
    env = {"COLUMNS": str(columns)} if columns else {"COLUMNS": ""}
    out = runner.invoke(app, [str(a) for a in args], env=env)
    assert out.exit_code == 0, out.output
    return out.stdout


def _numbers(text: str) -> set[str]:
    return set(NUMBER.findall(text))


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("command", sorted(set(COMMANDS) - {"check"}) + ["check"])
def test_numbers_whole_at_width(command, width):
    args = COMMANDS[command]
    full, fitted = _out(args), _out(args, width)
    # a command to paste (`plan`'s best row as `llm-cost request ...`) is printed whole on one line
    assert max(len(ln) for ln in fitted.splitlines() if not ln.startswith("llm-cost ")) <= width, fitted
    missing = _numbers(full) - _numbers(fitted)
    assert not missing, f"split or lost at {width} columns: {sorted(missing)[:10]}\n{fitted}"


@pytest.mark.parametrize("args", [["spec", "--alpha", "0.8", "--gamma", "4", "--batch", "64"],
                                  ["capacity", "--model", "gpt-3-13b", "--gpu", "a100-40gb", "--reserve", "0.1"],
                                  ["batching", "--scheduler", "iteration", "--max-batch", "32", "--slo-ms", "45",
                                   "-n", "100"]])
def test_issue_examples_keep_their_figures_at_80(args):
    fitted = _out(args, 80)
    for number in _numbers(_out(args)):
        assert number in _numbers(fitted)


def test_piped_without_columns_is_100_wide():
    """Issue 28, deliverable 4: piped output at the width of COLUMNS, or 100 without it."""
    assert max(len(ln) for ln in _out(["catalog"]).splitlines()) <= 100


def test_piped_with_columns_fits():
    assert max(len(ln) for ln in _out(["catalog"], 80).splitlines()) <= 80


def _in_pseudo_terminal(args, width: int) -> tuple[int, str]:
    """Run `llm-cost ARGS` with a pseudo-terminal of `width` columns as its screen: (exit code, text)."""
    import fcntl
    import pty
    import struct
    import subprocess
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, width, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["TERM"], env["NO_COLOR"] = "xterm", "1"
    proc = subprocess.Popen([sys.executable, "-m", "llm_cost.cli", *args], stdout=slave, stderr=slave,
                            stdin=slave, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(master)
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode("utf-8", "replace"))
    # what the terminal shows: a progress bar redraws its line after each carriage return
    return proc.returncode, "\n".join(line.split("\r")[-1] for line in screen.replace("\r\n", "\n").split("\n"))


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_pseudo_terminal(command, width):
    code, screen = _in_pseudo_terminal(COMMANDS[command], width)
    assert code == 0, screen
    # on a terminal a warning or note is wrapped to its width too (issue 28, deliverable 4), and a
    # command to paste goes on lines joined by " \\" (`render.print_command`)
    assert max(len(ln) for ln in screen.splitlines()) <= width, screen
    missing = _numbers(_out(COMMANDS[command])) - _numbers(screen)
    assert not missing, f"split or lost in a {width}-column terminal: {sorted(missing)[:10]}\n{screen}"


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_pseudo_terminal_issue_example():
    code, screen = _in_pseudo_terminal(["spec", "--alpha", "0.8", "--gamma", "4", "--batch", "64"], 80)
    assert code == 0, screen
    assert {"4.794", "8.094", "2.38", "1.61"} <= _numbers(screen), screen


def _said(screen: str, prefix: str) -> list[str]:
    """The lines of the first `prefix` line ("Warning: ") on `screen` and its continuation lines."""
    lines = screen.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(prefix))
    end = start + 1
    while end < len(lines) and re.match(r"  \S", lines[end]):  # a continuation: two spaces, then a word
        end += 1
    return lines[start:end]


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
@pytest.mark.parametrize("args, prefix", [(["roofline", "--model", "llama-3-70b"], "Warning: "),
                                          (["roofline", "--context", "4096", "--batch", "64", "--rows", "64"],
                                           "Note: ")])
def test_stderr_wrapped_on_a_terminal_one_line_piped(args, prefix):
    """Issue 28, deliverable 4: a warning or note on a terminal is wrapped to its width at word boundaries,
    continuation lines indented two spaces; piped it stays one line (scripts grep it)."""
    piped = [ln for ln in runner.invoke(app, args).stderr.splitlines() if ln.startswith(prefix)]
    assert len(piped) == 1 and len(piped[0]) > 80  # long enough to need wrapping at 80 columns
    code, screen = _in_pseudo_terminal(args, 80)
    assert code == 0, screen
    said = _said(screen, prefix)
    assert len(said) >= 2 and all(len(ln) <= 80 for ln in said), screen
    assert " ".join(ln.strip() for ln in said) == piped[0]  # same words, none cut: only the breaks differ


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
@pytest.mark.parametrize("args", [["request", "--model", "nosuchmodel"],  # a library error
                                  ["batching", "--rate", "6", "--scheduler", "nosuchscheduler-" + "x" * 60]])
def test_error_wrapped_on_a_terminal_one_line_piped(args):
    """Issue 28, deliverable 4: an error line (library or usage) on a terminal wraps as warnings do;
    piped it stays one line."""
    result = runner.invoke(app, args)
    piped = [ln for ln in result.stderr.splitlines() if ln.startswith("Error: ")]
    assert result.exit_code == 2 and len(piped) == 1 and len(piped[0]) > 80, result.stderr
    code, screen = _in_pseudo_terminal(args, 80)
    assert code == 2, screen
    said = _said(screen, "Error: ")
    assert len(said) >= 2 and all(len(ln) <= 80 for ln in said), screen
    assert " ".join(ln.strip() for ln in said) == piped[0]


# Several GPUs (and models) in one table (issue 28, deliverable 6): the key columns are names, and at 80
# columns a name folded over two lines ("A100" / "80GB") read as two rows. The sweep of every README
# command at 80 columns found `capacity` and `request` with two GPUs folding too.
SEVERAL_GPUS = {
    "capacity": ["capacity", "--gpu", "h100-sxm", "--gpu", "a100-80gb", "--gpu", "mi300x"],
    "roofline": ["roofline", "--gpu", "h100-sxm", "--gpu", "a100-80gb", "--gpu", "mi300x", "--gpu", "gh200"],
    "request": ["request", "--model", "llama-3-8b", "--model", "llama-3.2-1b", "--gpu", "h100-sxm", "--gpu", "l4"],
    "capacity one gpu": ["capacity", "--model", "gpt-3-13b", "--gpu", "a100-40gb", "--reserve", "0.1"],
}


def _table_lines(text: str) -> list[list[str]]:
    """The body rows of every Rich table in `text`, as lists of stripped cells."""
    return [[c.strip() for c in ln.strip().strip("│").split("│")] for ln in text.splitlines() if ln.startswith("│")]


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("name", sorted(SEVERAL_GPUS))
def test_key_names_never_fold(name, width):
    args = SEVERAL_GPUS[name]
    rows = json.loads(_out([*args, "--format", "json"]))
    fitted = _out(args, width)
    assert max(len(ln) for ln in fitted.splitlines()) <= width, fitted
    names = {r["gpu"] for r in rows} | {r["model"] for r in rows}  # the gpu column: the catalog key (28.8)
    lines = _table_lines(fitted)
    assert lines, fitted
    for cells in lines:  # no continuation line: every row's key cells say a whole name
        assert cells[0], f"a row folded at {width} columns:\n{fitted}"
    if len({r["gpu"] for r in rows}) > 1:
        assert names <= {c for cells in lines for c in cells}, fitted
    missing = _numbers(_out(args)) - _numbers(fitted)
    assert not missing, f"split or lost at {width} columns: {sorted(missing)[:10]}\n{fitted}"


def test_render_keeps_a_key_name_whole():
    """The leading text columns are the key every stacked table repeats: a name of several words
    stays on one line where a prose cell of a later text column wraps at its spaces."""
    import io

    from llm_cost.report.render import Column, fixed, render

    rows = [{"gpu": "GH200 (96GB HBM3)", "x": 1.0 * i, "y": 2.0} for i in range(3)]
    columns = [Column("gpu", "gpu")] + [Column(k, f"a long header {k} (ms)", fixed(3)) for k in "xy"] * 4
    out = io.StringIO()
    os.environ["COLUMNS"], saved = "40", os.environ.get("COLUMNS")
    try:
        render(rows, columns, "table", out=out)
    finally:
        os.environ.pop("COLUMNS") if saved is None else os.environ.__setitem__("COLUMNS", saved)
    text = out.getvalue()
    assert text.count("GH200 (96GB HBM3)") >= 3 and all(len(ln) <= 40 for ln in text.splitlines()), text


def test_validate_at_80_columns_keeps_each_id_whole_and_no_exponent():
    """Issue 28.4 audit: `validate train.csv` at 80 columns cut its longer ids mid-token
    ("trtllm09-h200-mistral7b-b896-tp1-128" / "x128": two rows to the eye) and printed 2.046e+04 beside
    2,423; an id stands whole (a one-token key up to 48 characters) and a figure past 9,999 is whole."""
    from pathlib import Path

    points = Path(__file__).parent / "data" / "measured" / "train.csv"
    rows = json.loads(_out(["validate", str(points), "--format", "json"]))
    fitted = _out(["validate", str(points)], 80)
    assert max(len(ln) for ln in fitted.splitlines()) <= 80
    ids = {cells[0] for cells in _table_lines(fitted)}
    assert {r["id"] for r in rows} <= ids and "e+0" not in fitted, fitted
    assert any(r["value"] >= 1e4 for r in rows) and f"{max(r['value'] for r in rows):,.0f}" in fitted


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_a_command_to_paste_wraps_as_the_shell_reads_it_at_80():
    """`plan`'s best row as `llm-cost request ...` (177 characters at the defaults) on an 80-column
    terminal: lines of at most 80 joined by " \\", no option parted from its value, and the shell's
    reading of them is the row's request_args word for word; piped, one line."""
    import json
    import shlex

    code, screen = _in_pseudo_terminal(["plan"], 80)
    assert code == 0, screen
    lines = screen.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("llm-cost request "))
    end = next(i for i in range(start, len(lines)) if not lines[i].endswith(" \\"))
    assert end > start and all(len(ln) <= 80 for ln in lines[start:end + 1])
    assert all(not ln.rstrip(" \\").endswith(("--model", "--gpu", "--batch")) for ln in lines[start:end])
    words = shlex.split(" ".join(ln.removesuffix(" \\") for ln in lines[start:end + 1]))
    best = json.loads(_out(["plan", "--format", "json"]))[0]
    assert words == ["llm-cost", "request", *shlex.split(best["request_args"])]
    piped = [ln for ln in _out(["plan"]).splitlines() if ln.startswith("llm-cost request ")]
    assert piped == [f"llm-cost request {best['request_args']}"]
