"""Issue 24.7: `llm-cost model` imports what counting a model's bytes needs and no more: not the
deployment, the profiles, the vision towers' counts of a text-only model, numpy, the planner or the other
commands' shared options (bench/cli_startup.py times the command against its import floor)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

NOT_FOR_MODEL = ("numpy", "llm_cost.specs.deployment", "llm_cost.specs.profiles", "llm_cost.counts.vision",
                 "llm_cost.roofline", "llm_cost.planner", "llm_cost.serving", "llm_cost.commands.options")


def _loaded(*args: str) -> set[str]:
    code = ("import sys, runpy; sys.argv = ['llm-cost', *sys.argv[1:]]\n"
            "try:\n    runpy.run_module('llm_cost.cli', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            f"print('LOADED', *(m for m in {NOT_FOR_MODEL!r} if m in sys.modules))")
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True, cwd=root)
    return set(out.stdout.splitlines()[-1].split()[1:])


def test_model_imports_no_deployment_profile_or_vision():
    assert _loaded("model", "llama-3-8b") == set()


def test_a_vision_model_still_counts_its_tower():
    # the towers' counts are imported where a model has one (MedGemma's SigLIP)
    assert "llm_cost.counts.vision" in _loaded("model", "tests/data/configs/medgemma-27b-it.json")
