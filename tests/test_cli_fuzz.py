"""Every command, fed hypothesis-generated argument lists through CliRunner, never shows a
traceback: it either runs (exit 0), reports a failed check (exit 1), or prints one error line
naming the option (exit 2)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.main import get_command
from typer.testing import CliRunner

from llm_cost.cli import app

runner = CliRunner()
GROUP = get_command(app)
COMMANDS = sorted(GROUP.commands)
OUT_DIR = Path(tempfile.mkdtemp(prefix="llm-cost-fuzz-"))

# values that have broken tools of this kind: signs, zero, NaN, inf, huge, empty, wrong type
NASTY = ["0", "1", "-1", "0.5", "1.5", "nan", "inf", "-inf", "1e9", "1e308", "-0", "", "abc",
         "3", "64", "0.8", "1:0.44", "1:0.44,2:0.64", "4,2,2,1", "4,,2", "2:1.5", "x:y",
         "llama-3-8b", "h100-sxm", "gpt-3-13b", "a100-40gb", "nope", "/nonexistent/config.json",
         "article", "lecture", "table", "json", "csv", "markdown", "bf16", "w4a16",
         "1" + "0" * 400, "-" + "9" * 400, "1e-300", "4.9e-324"]  # beyond float range, subnormal
OUTPUTS = [str(OUT_DIR / "f.png"), str(OUT_DIR / "f.svg"), str(OUT_DIR / "f.txt"), "/nonexistent/dir/f.png"]


def option_names(command) -> list[str]:
    names = []
    for p in command.params:
        names += [n for n in getattr(p, "opts", []) if n.startswith("-")]
        names += [n for n in getattr(p, "secondary_opts", [])]
    return names


@st.composite
def argument_lists(draw, name: str):
    command = GROUP.commands[name]
    opts = option_names(command) + ["--bogus"]
    args = [name]
    positional = [p for p in command.params if getattr(p, "param_type_name", "") == "argument"]
    for _ in positional:
        args.append(draw(st.sampled_from(NASTY)))
    for _ in range(draw(st.integers(0, 5))):
        opt = draw(st.sampled_from(opts))
        args.append(opt)
        if opt in ("-o", "--output"):
            args.append(draw(st.sampled_from(OUTPUTS)))
        elif draw(st.integers(0, 9)):  # mostly with a value, sometimes a dangling flag
            args.append(draw(st.sampled_from(NASTY)))
    return args


@pytest.mark.parametrize("name", COMMANDS)
def test_fuzzed_arguments_never_trace_back(name):
    @settings(max_examples=60, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(args=argument_lists(name))
    def prop(args):
        result = runner.invoke(app, args)
        assert "Traceback" not in result.output, (args, result.output)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise AssertionError(f"{args}: {type(result.exception).__name__}: {result.exception}")
        assert result.exit_code in (0, 1, 2), (args, result.exit_code, result.output)
        if result.exit_code == 2:
            lines = [ln for ln in result.output.splitlines() if ln.strip()]
            assert len(lines) == 1 and lines[0].startswith("Error: "), (args, result.output)

    prop()


@pytest.mark.parametrize("name", COMMANDS)
def test_help_has_an_example(name):
    out = runner.invoke(app, [name, "--help"])
    assert out.exit_code == 0 and "Example: llm-cost" in out.output
