"""The wheel holds one import name, `llm_cost`, with the catalogs and the CLI inside it."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_has_one_top_level_name(tmp_path):
    pytest.importorskip("hatchling")
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    wheel = next(tmp_path.glob("llm_cost-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names}
    assert top == {"llm_cost", next(t for t in top if t.endswith(".dist-info"))}
    assert "llm_cost/cli.py" in names
    assert "llm_cost/models/llama-3-8b/config.json" in names
    assert "llm_cost/hardware/h100-sxm.json" in names


def test_cli_import_is_light():
    # `llm-cost model` must not pay for numpy, matplotlib or hypothesis
    code = ("import sys; from typer.testing import CliRunner; from llm_cost.cli import app;"
            "r = CliRunner().invoke(app, ['model', 'llama-3-8b', '-f', 'json']); assert r.exit_code == 0;"
            "heavy = {'numpy', 'matplotlib', 'hypothesis'} & set(sys.modules); print(sorted(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_editable_wheel_maps_only_llm_cost(tmp_path, monkeypatch):
    # pip install -e . must not put the checkout root on sys.path (that would make `cli`,
    # `models`, `tests` importable) nor copy cli.py / the catalogs into site-packages.
    build = pytest.importorskip("hatchling.build")
    pytest.importorskip("editables")  # what dev-mode-exact wheels import
    monkeypatch.chdir(ROOT)
    wheel = tmp_path / build.build_editable(str(tmp_path))
    archive = zipfile.ZipFile(wheel)
    names = archive.namelist()
    assert not any(n.startswith("llm_cost/") for n in names), names
    pth = [n for n in names if n.endswith(".pth")]
    assert pth and all(str(ROOT) not in archive.read(n).decode() for n in pth)


def test_checkout_exposes_only_the_package_and_its_cli():
    # Review defect: in a source checkout llm_cost.tests, llm_cost.bench and llm_cost.hatch_build
    # were importable (the checkout root was on the package path). Only llm_cost.cli maps there.
    code = ("import importlib, llm_cost.cli\n"
            "for name in ('llm_cost.tests', 'llm_cost.bench', 'llm_cost.hatch_build', 'llm_cost.models'):\n"
            "    try:\n"
            "        importlib.import_module(name)\n"
            "        print('importable', name)\n"
            "    except ModuleNotFoundError:\n"
            "        pass\n"
            "print(llm_cost.cli.__name__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT / "tests")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["llm_cost.cli"]
