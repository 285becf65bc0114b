"""Issue 24.7: `llm-cost model` imports what counting a model's bytes needs and no more: not the
deployment, the profiles, the vision towers' counts of a text-only model, numpy, the planner or the other
commands' shared options (bench/cli_startup.py times the command against its import floor)."""

from __future__ import annotations

import os
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


def _after(code_after: str, *args: str) -> str:
    """The last line `code_after` prints after `llm-cost ARGS` ran in a fresh process, its table piped."""
    code = ("import sys, gc, re, runpy; sys.argv = ['llm-cost', *sys.argv[1:]]\n"
            "try:\n    runpy.run_module('llm_cost.cli', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            + code_after)
    root = Path(__file__).resolve().parent.parent
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}  # as a user pipes it (conftest widens it)
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True, cwd=root,
                         env=env)
    return out.stdout.splitlines()[-1]


SPEC = ("spec", "--alpha", "0.8", "--gamma", "4", "--batch", "64")


def test_a_piped_table_compiles_no_highlighter():
    # Rich's highlighter colours numbers in a caption; piped there are no colours, so its regexes (compiled
    # at first use, ~4 ms of spec's startup) are not used: the same text
    code = "print('COMPILED', any('(?P<ipv4>' in str(key[1]) for key in re._cache))"  # ReprHighlighter's
    assert _after(code, *SPEC) == "COMPILED False"


def test_the_command_runs_with_the_collector_and_main_gives_it_back():
    # cli.main starts without the cyclic collector and turns it on (the start's objects frozen) as the
    # command runs; when main returns, the collector is on and nothing is left frozen
    code = ("print('AFTER', gc.isenabled(), gc.get_freeze_count())")
    assert _after(code, *SPEC) == "AFTER True 0"
    during = ("import llm_cost.report.speculative_rows as rows\n"
              "seen = []\n"
              "def gamma_rows(**kw):\n    seen.append((gc.isenabled(), gc.get_freeze_count() > 0))\n    return []\n"
              "rows.gamma_rows = gamma_rows\n"
              "sys.argv = ['llm-cost', 'gamma']\n"
              "from llm_cost.cli import main\n"
              "gc.disable()\n"
              "try:\n    main()\nexcept SystemExit:\n    pass\n"
              "off = gc.isenabled()\n"
              "gc.enable()\n"
              "try:\n    main()\nexcept SystemExit:\n    pass\n"
              "print('DURING', seen, off, gc.isenabled(), gc.get_freeze_count())")
    # a caller that turned the collector off keeps it off (nothing frozen); one that had it on gets it back
    assert _after(during, "model", "llama-3-8b") == "DURING [(False, False), (True, True)] False True 0"


def test_a_callers_frozen_objects_stay_frozen():
    # review: main unfroze every object, a caller's gc.freeze() too; now it freezes (and gives back) only
    # when nothing was frozen before it
    code = ("from llm_cost.cli import main\n"
            "keep = [[index] for index in range(1000)]\n"
            "gc.freeze()\n"
            "before = gc.get_freeze_count()\n"
            "sys.argv = ['llm-cost', 'model', 'llama-3-8b']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('KEPT', gc.get_freeze_count() >= before - 100 > 900, gc.isenabled())")
    assert _after(code, "model", "llama-3-8b") == "KEPT True True"


NOT_FOR_SPEC = ("llm_cost.roofline.kernels", "llm_cost.counts.checkpoint", "llm_cost.counts.lora",
                "llm_cost.speculative.moe", "llm_cost.speculative.gamma_choice", "statistics",
                "llm_cost.specs.model_parts", "llm_cost.specs.model_towers", "llm_cost.serving.prefixes")


def test_spec_on_a_datasheet_profile_imports_no_kernel_tables_checkpoint_or_closed_form_search():
    # spec's import floor is typer, rich and numpy (bench/cli_startup.py); a dense BF16 target under the
    # article's datasheet profile needs no measured kernel tables, no checkpoint formats, no LoRA counts,
    # no MoE twin and no closed-form gamma search: each was ~1-4 ms of its start; nor the part classes
    # of a model it does not have (MoE, MLA, a checkpoint's quantization, recurrent mixers, vision towers:
    # five frozen dataclasses, ~2.4 ms), nor the workload code for the default of --turns (~0.7 ms)
    code = f"print('LOADED', *(m for m in {NOT_FOR_SPEC!r} if m in sys.modules))"
    assert _after(code, *SPEC) == "LOADED"


def test_the_measured_profile_still_reads_its_tables():
    code = "print('LOADED', 'llm_cost.roofline.kernels' in sys.modules)"
    assert _after(code, *SPEC, "--profile", "analysis/measured_kernels.json") == "LOADED True"  # kernels "measured"


def test_a_moe_mla_model_still_builds_its_parts():
    # the part classes are imported where a config builds them (DeepSeek-V3: MoE and MLA)
    code = "print('LOADED', *(m for m in ('llm_cost.specs.model_parts',) if m in sys.modules))"
    assert _after(code, "model", "deepseek-v3") == "LOADED llm_cost.specs.model_parts"
