"""README runs as written: its library example reproduces the article's table (§2.4), its commands run, and
what it says of the files and columns is what the code reads."""

from __future__ import annotations

import csv
import re
import runpy

import pytest

from helpers import README, half_unit



def test_library_sweep_writes_the_articles_table(tmp_path, monkeypatch):
    section = README.read_text(encoding="utf-8").split("## Library", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(code.strip().splitlines()) <= 12  # "a ten-line sweep"
    script = tmp_path / "sweep.py"
    script.write_text(code, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(script))
    rows = list(csv.DictReader((tmp_path / "sweep.csv").open()))
    assert len(rows) == 8 * 6
    at = {(int(r["gamma"]), int(r["batch"])): float(r["speedup"]) for r in rows}
    # the article §2.4, alpha 0.8, gamma 4, c 0.1, peak: B = 1, 64, 128, 256 -> 2.40, 2.38, 1.39, 0.76
    for b, printed in ((1, 2.40), (64, 2.38), (128, 1.39), (256, 0.76)):
        assert at[(4, b)] == pytest.approx(printed, abs=half_unit(2))


def test_property_test_example_runs():
    section = README.read_text(encoding="utf-8").split("## Property tests for your own models", 1)[1]
    (code,) = re.findall(r"```python\n(.*?)```", section.split("\n## ", 1)[0], re.S)
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)
    tests = [v for k, v in namespace.items() if k.startswith("test_")]
    assert len(tests) == 1
    tests[0]()  # hypothesis runs the example test with its own settings


def test_every_use_command_runs(tmp_path, monkeypatch):
    """The README's "Use" lines run as written (those naming your own files aside); a line whose
    comment says "exit 2" exits 2 (a --strict deployment that does not fit)."""
    import shlex

    from tests.helpers import README, run

    section = README.read_text(encoding="utf-8").split("## Use", 1)[1].split("\n## ", 1)[0]
    lines = [ln.strip() for ln in section.splitlines() if ln.startswith("    llm-cost ")]
    monkeypatch.chdir(tmp_path)  # plot writes its file here
    ran = 0
    for line in lines:
        command, _, comment = line.partition("#")
        if "./my-" in command:
            continue
        out = run(*shlex.split(command)[1:])
        assert out.exit_code == (2 if "exit 2" in comment else 0), (line, out.output[-500:])
        # issue 28: an example whose option changes nothing, or that does not fit without saying so in
        # its comment, teaches the wrong thing
        assert "changes nothing" not in out.stderr, (line, out.stderr)
        if "does not fit" in out.stderr or "do not fit" in out.stderr:
            assert any(w in comment for w in ("fit", "exit 2", "short")), (line, out.stderr)
        missing = [q for q in _quoted(comment) if not _printed(q, out.stdout + out.stderr)]
        assert not missing, (line, missing)  # issue 28.3: the figures a comment quotes are the command's
        ran += 1
    assert ran >= 15


def _quoted(comment: str) -> list[str]:
    """The figures a Use line's comment quotes ("42.12 ms", "12 vs 7 positions", "60% MFU"), not its labels
    (figure 5, exercise 1, exit 2) nor what another test checks (the W8A8 line's one-GPU "short by")."""
    import re

    if "short by" in comment:
        return []
    return [m.group(1) + m.group(2) for m in re.finditer(r"(?<![\w.])(\d+(?:\.\d+)?)(%?)(?![\w.])", comment)
            if not re.search(r"(figure|exercise|exit|demo)\s*$", comment[:m.start()])]


def _printed(quoted: str, text: str) -> bool:
    """`quoted` (to its printed decimals; a percent as a fraction) is among the numbers of `text`."""
    import re

    digits = len(quoted.split(".")[1]) if "." in quoted else 0
    want = float(quoted.rstrip("%")) / (100 if quoted.endswith("%") else 1)
    places = digits + (2 if quoted.endswith("%") else 0)
    return any(round(float(n), places) == round(want, places) for n in re.findall(r"\d+(?:\.\d+)?", text.replace(",", "")))


def test_a_quoted_figure_must_be_printed():
    """The check can fail: a figure the output lacks, to its printed decimals."""
    assert _quoted("42.12 ms, then exit 2: 141 GB; figure 5, 60% MFU") == ["42.12", "141", "60%"]
    assert _printed("42.12", "42.122 ms") and _printed("141", "141.1 GB") and _printed("60%", "MFU 0.6")
    assert not _printed("42.13", "42.122 ms") and not _printed("12", "7 positions")


# Examples the README quotes outside "Use" run as written too (issue 28.3), from a directory of the
# user's, the checkout's files by their path there. Two run on fewer requests (-n 300: the same options
# parsed and simulated, about 15 s less); calibrate's fit to train.csv is
# test_readme_calibrate_example_gives_its_table (the same command, about 23 s of CPU).
FEWER = {"--spec-policy adaptive", "--slo-ms 200"}


def _examples() -> list[str]:
    """Every indented `llm-cost` command of README after "Use" (continuation lines joined), comments off."""
    lines = README.read_text(encoding="utf-8").split("## Use", 1)[1].split("\n## ", 1)[1].splitlines()
    commands, i = [], 0
    while i < len(lines):
        if lines[i].startswith("    llm-cost "):
            command = lines[i].strip()
            while command.endswith("\\"):
                i += 1
                command = command[:-1].rstrip() + " " + lines[i].strip()
            commands.append(command.split("  #", 1)[0].strip())
        i += 1
    return commands


def test_every_example_outside_use_runs(tmp_path, monkeypatch):
    import shlex

    from helpers import run

    root = README.parent
    (tmp_path / "requests.csv").write_text("arrival_s,prompt_tokens,output_tokens\n0,128,16\n0.5,256,32\n")
    monkeypatch.chdir(tmp_path)  # the trace example names a file of the user's: this one
    commands = _examples()
    assert len(commands) >= 10
    for command in commands:
        if command.startswith("llm-cost calibrate "):
            continue
        args = [str(root / a) if a.startswith("tests/data/") else a for a in shlex.split(command)[1:]]
        if any(flag in command for flag in FEWER):
            args += ["-n", "300"]
        out = run(*args)
        assert out.exit_code == 0, (command, out.output[-500:])


def test_validate_section_names_every_required_column():
    """Issue 28.3: README's validate paragraph lists the columns a points file needs (calibrate/points.py)."""
    from llm_cost.calibrate.points import REQUIRED

    section = README.read_text(encoding="utf-8").split("`llm-cost validate POINTS.csv", 1)[1].split("\n\n", 1)[0]
    required = section.split("required:", 1)[1].split(") and", 1)[0]
    assert set(re.findall(r"`(\w+)`", required)) == set(REQUIRED)


def test_readme_w8a8_shortfall_is_what_roofline_prints():
    """Review (issue 28): README's W8A8 example runs as written (two H100s, no shortfall), and the figure
    its comment quotes for one H100 is what the same command without `--tp 2` prints under the default
    preset (article, marketed memory); under `measured` that one H100 fits."""
    import json
    import re
    import shlex

    from tests.helpers import README, run

    line = next(ln for ln in README.read_text(encoding="utf-8").splitlines()
                if ln.startswith("    llm-cost roofline --model llama-3-70b --weights fp8 "))
    command, comment = line.split("  #", 1)
    args = shlex.split(command)[1:]
    assert args[args.index("--tp") + 1] == "2" and "on two H100s" in comment
    out = run(*args)
    assert out.exit_code == 0 and "short by" not in out.stderr, out.output
    k = args.index("--tp")
    on_one = args[:k] + args[k + 2:]  # README's command on one GPU: every other option as written
    out = run(*on_one)
    assert "preset article" in out.stdout
    short = re.search(r"short by ([0-9.]+ GB)", out.stderr).group(1)
    assert f'(on one: "short by {short}" under article' in comment
    fits = json.loads(run(*on_one, "--preset", "measured", "-f", "json").stdout)
    assert all(r["fits"] for r in fits) and "fits under measured" in comment


UNITS = {"ms": 1e-3, "us": 1e-6}


def _figure(text: str) -> tuple[float, float]:
    """A README table cell ("0.7647", "461 us", "1,068", "10.3%") as (SI value, half a unit of its last digit)."""
    number, _, unit = text.strip().partition(" ")
    percent = number.endswith("%")
    number = number.rstrip("%").replace(",", "")
    digits = len(number.partition(".")[2])
    scale = UNITS.get(unit, 1.0) * (0.01 if percent else 1.0)
    return float(number) * scale, half_unit(digits) * scale


def test_readme_calibrate_example_gives_its_table(tmp_path, monkeypatch):
    """Review (issue 28, item 5): README's calibrate example, run as written (from a directory of the
    user's, train.csv by its path in the checkout), writes the knobs of the knob table's right-hand column
    ("train.csv only (before)") and the in-sample and cross-validated errors of the table below it
    ("with the ramp"), each to the digits README prints. About 23 s of CPU (five fits of 88 points)."""
    import json
    import shlex

    from helpers import run

    (command,) = [c for c in _examples() if c.startswith("llm-cost calibrate tests/data/measured/train.csv")]
    args = [str(README.parent / a) if a.startswith("tests/data/") else a for a in shlex.split(command)[1:]]
    monkeypatch.chdir(tmp_path)
    out = run(*args)
    assert out.exit_code == 0, out.output[-500:]
    written = json.loads((tmp_path / args[args.index("-o") + 1]).read_text())
    text = README.read_text(encoding="utf-8")
    knobs = re.findall(r"^\| `(\w+)` \| [^|]+ \| [^|]+ \| ([^|]+) \|$", text.split("train.csv only (before)", 1)[1].split("\n\n", 1)[0], re.M)
    assert len(knobs) >= 9
    for knob, cell in knobs:
        value, tolerance = _figure(cell)
        assert abs(written[knob] - value) <= tolerance, (knob, written[knob], cell)
    for row, key in (("in sample, with the ramp", "in_sample"), ("cross-validated by source, with the ramp", "cross_validated")):
        cells = re.search(rf"^\| {row} \| ([^|]+) \| ([^|]+) \| ([^|]+) \|$", text, re.M).groups()
        for cell, stat in zip(cells, ("median_ape", "mape", "p90_ape")):
            value, tolerance = _figure(cell)
            assert abs(written["calibration"][key][stat] - value) <= tolerance, (row, stat, cell)
