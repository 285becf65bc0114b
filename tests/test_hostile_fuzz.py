"""Issue 29's fuzzing classes over every command, within 60 s: hostile files (a FIFO, a BOM, Latin-1,
UTF-16, a key given twice, JSON nested 10,000 deep, a 5,000-digit integer, a name of 300 characters),
hostile numbers (subnormal, 1e300, 400 digits, nan), names in another case, outputs that exist or are
inputs. Every call ends in one of: exit 0, a failed check (exit 1), or one short error line (exit 2);
never a traceback, never an echo of a 4 KB input, never an input overwritten."""

from __future__ import annotations

import os
import tempfile
import time
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
BUDGET_S = 50.0  # every command together (the limit is 60 s), shared evenly
PER_COMMAND = 40  # examples a command, as many as its share of the budget allows
# `check` runs hypothesis itself: one example of each invariant on a small model, whatever is drawn
PREFIX = {"check": ["--examples", "1", "--model", "llama-3.2-1b"]}
DIR = Path(tempfile.mkdtemp(prefix="llm-cost-hostile-"))
ROOT = Path(__file__).resolve().parent.parent
LLAMA = (ROOT / "models" / "llama-3-8b" / "config.json").read_text()
POINTS = "id,metric,value,config,gpu_name,weights,group_size,kv,tp,pp,gpu_count,batch,batch_kind,isl,osl\n" \
         "m1,decode_tok_per_s_per_user,100,llama-3.1-8b,a100-80gb,bf16,0,bf16,1,1,1,1,static,5,200\n"


def _files() -> dict[str, Path]:
    """One file per hostile class, written once."""
    made = {
        "bom.json": b"\xef\xbb\xbf" + LLAMA.encode(),
        "latin1.json": LLAMA.replace('"llama"', '"ll\xe9ma"').encode("latin-1"),
        "utf16.json": LLAMA.encode("utf-16"),
        "twice.json": (LLAMA.rstrip().rstrip("}") + ', "num_hidden_layers": 1}').encode(),
        "deep.json": ('{"a":' + "[" * 10_000 + "]" * 10_000 + "}").encode(),
        "bigint.json": ('{"vocab_size": ' + "9" * 5000 + "}").encode(),
        "points.csv": POINTS.encode(),
        "points_latin1.csv": POINTS.replace("m1", "m\xe9").encode("latin-1"),
        "points_twice.csv": POINTS.replace("osl\n", "osl,value\n").replace("200\n", "200,5\n").encode(),
        "trace.csv": b"\xef\xbb\xbfarrival_s,prompt_tokens,output_tokens\n0,10,10\n0.5,inf,3\n",
        "existing.png": b"not a png, keep me",
    }
    paths = {}
    for name, data in made.items():
        paths[name] = DIR / name
        paths[name].write_bytes(data)
    if hasattr(os, "mkfifo"):
        paths["fifo"] = DIR / "fifo.csv"
        os.mkfifo(paths["fifo"])
    return paths


FILES = _files()
NUMBERS = ["0", "-1", "nan", "inf", "1e300", "4.9e-324", "1" + "0" * 400, "2", "64", "0.5", "1e-16"]
NAMES = ["LLAMA-3-8B", "H100-SXM", "REQUEST", "Iteration", "JSON", "x" * 4096, "a" * 300, "llama-3-8b", "h100-sxm"]
VALUES = NUMBERS + NAMES + [str(p) for p in FILES.values()] + ["/nonexistent/x.json"]
OUTPUTS = [str(FILES["existing.png"]), str(FILES["points.csv"]), str(DIR / "new.png"), str(DIR / "p.json"),
           "/nonexistent/dir/f.png", str(DIR / ("n" * 300 + ".png"))]


def option_names(command) -> list[str]:
    names = []
    for p in command.params:
        names += [n for n in getattr(p, "opts", []) if n.startswith("-")]
    return names


@st.composite
def hostile_calls(draw, name: str):
    command = GROUP.commands[name]
    args = [name, *PREFIX.get(name, [])]
    for p in command.params:
        if getattr(p, "param_type_name", "") == "argument":
            args.append(draw(st.sampled_from(VALUES)))
    opts = option_names(command)
    for _ in range(draw(st.integers(0, 3))):
        opt = draw(st.sampled_from(opts))
        args.append(opt)
        args.append(draw(st.sampled_from(OUTPUTS if opt in ("-o", "--output", "--plot") else VALUES)))
    return args


INPUTS_BEFORE = {p: p.read_bytes() for k, p in FILES.items() if k != "fifo"}


@pytest.mark.parametrize("name", COMMANDS)
def test_hostile_calls_end_cleanly(name):
    started = time.monotonic()

    @settings(max_examples=PER_COMMAND, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(args=hostile_calls(name))
    def prop(args):
        if time.monotonic() - started > BUDGET_S / len(COMMANDS):
            return  # this command's share of the budget is spent: its remaining examples are skipped
        result = runner.invoke(app, args)
        shown = [a[:40] for a in args]
        assert "Traceback" not in result.output, (shown, result.output[-600:])
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise AssertionError(f"{shown}: {type(result.exception).__name__}: {str(result.exception)[:300]}")
        assert result.exit_code in (0, 1, 2), (shown, result.exit_code)
        if result.exit_code == 2:
            lines = [ln for ln in result.output.splitlines() if ln.strip()]
            assert len(lines) == 1 and lines[0].startswith("Error: "), (shown, result.output[:600])
            assert len(lines[0]) < 2000, (shown, len(lines[0]))

    prop()
    for path, data in INPUTS_BEFORE.items():  # no input replaced, whatever -o named
        assert path.read_bytes() == data, path.name
