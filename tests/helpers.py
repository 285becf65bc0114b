"""Helpers the test modules share: invoking the CLI, and the golden tests' tolerance."""

from __future__ import annotations

import json
from pathlib import Path

from llm_cost.cli import app
from typer.testing import CliRunner

runner = CliRunner()
README = Path(__file__).resolve().parent.parent / "README.md"


def run(*args):
    """Invoke `llm-cost ARGS...` in-process; the Result carries exit code and output."""
    return runner.invoke(app, [str(a) for a in args])


def rows_of(*args):
    """The JSON rows of a command that must succeed."""
    out = run(*args, "--format", "json")
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)


def error_line(*args) -> str:
    """The one line a command that must fail prints: exit 2, no traceback, nothing else."""
    out = run(*args)
    assert out.exit_code == 2 and "Traceback" not in out.output, out.output
    lines = [ln for ln in out.output.splitlines() if ln.strip()]
    assert len(lines) == 1, out.output
    return lines[0]


def half_unit(digits: int) -> float:
    """Half a unit of the last printed digit: the tolerance of a golden figure printed to `digits`."""
    return 0.5 * 10 ** -digits


CONFIGS = Path(__file__).parent / "data" / "configs"  # real and transcribed Hub configs (README there)


def load_config(file: str):
    """A test config of tests/data/configs by its file name."""
    from llm_cost.catalog import load_model

    return load_model(str(CONFIGS / file))


def edited_config(tmp_path, file: str, **changes) -> str:
    """A test config with keys changed (None removes a key), written to tmp_path; its path."""
    data = json.loads((CONFIGS / file).read_text())
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    out = tmp_path / file
    out.write_text(json.dumps(data))
    return str(out)


# The documents' settings, named in the command as their examples are (every command defaults to
# Llama-3-8B on an H100 SXM under `measured`: README, first screen).
ORCA = ("--model", "gpt-3-13b", "--gpu", "a100-40gb", "--preset", "lecture")  # the lecture §3.3 (Orca's setting)
ORCA_GPU = ORCA[2:]  # the same, for a test that names its own model
DEMO05 = ("--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--preset", "lecture")  # the lecture, demo 05 (§9-§10)


def stop_after(monkeypatch, module, name: str, n: int = 1):
    """`module.name` raises KeyboardInterrupt on its call after the first `n` (a Ctrl-C mid-run)."""
    real, calls = getattr(module, name), []

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) > n:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, interrupted)
