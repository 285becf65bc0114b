"""`import llm_cost as lc`: the names a script needs, resolved lazily, with names or specs."""

from __future__ import annotations

import dataclasses
import importlib
import subprocess
import sys

import numpy as np
import pytest

import llm_cost as lc
from helpers import half_unit

PACKAGES = ["llm_cost", "llm_cost.specs", "llm_cost.catalog", "llm_cost.counts", "llm_cost.roofline",
            "llm_cost.speculative", "llm_cost.serving", "llm_cost.planner"]


@pytest.mark.parametrize("package", PACKAGES)
def test_every_exported_name_resolves(package):
    module = importlib.import_module(package)
    assert module.__all__, package
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{package}.{name}"
    assert set(module.__all__) <= set(dir(module))


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        lc.nope  # noqa: B018


def test_import_is_light():
    # a script that only loads a config must not pay for numpy
    code = "import sys, llm_cost as lc; lc.load_model('llama-3-8b'); print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_issue_example_prints_the_article_decode_bound():
    # issue 9's acceptance line: the article §1.2, Llama-3-8B on an H100, decode bound 4.79 ms
    code = "import llm_cost as lc; print(lc.step_time('llama-3-8b', 'h100-sxm', lc.PRESETS['article']).step_time_s)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert float(out.stdout) * 1e3 == pytest.approx(4.79, abs=half_unit(2))


def test_names_and_specs_give_the_same_result():
    by_name = lc.step_time("llama-3-8b", "h100-sxm", "lecture", batch=8, context=512)
    by_spec = lc.step_time(lc.load_model("llama-3-8b"), lc.load_accelerator("h100-sxm"), lc.PRESETS["lecture"],
                           batch=8, context=512)
    assert by_name == by_spec


def test_step_time_takes_arrays_and_numbers_alike():
    rows = np.array([1, 64, 512, 4096])
    grid = lc.step_time("llama-3-8b", "h100-sxm", "article", rows=rows)
    for i, m in enumerate(rows.tolist()):
        one = lc.step_time("llama-3-8b", "h100-sxm", "article", rows=m)
        assert isinstance(one.step_time_s, float) and isinstance(one.bound, str)
        assert grid.step_time_s[i] == pytest.approx(one.step_time_s, rel=1e-12)
        assert grid.bound[i] == one.bound
        assert grid.flops[i] == pytest.approx(one.flops, rel=1e-12)


def test_speedup_forms_return_floats_for_numbers():
    assert isinstance(lc.speedup(0.8, 4, 0.1), float)
    assert isinstance(lc.expected_tokens(0.8, 4), float)


def test_profile_knobs_are_keyword_only():
    with pytest.raises(TypeError):
        lc.Profile("x", 0.8, 0.6)  # efficiencies by position are easy to swap
    assert lc.Profile("x", bw_efficiency=0.8, compute_efficiency=0.6).compute_efficiency == 0.6


@pytest.mark.parametrize("package", PACKAGES)
def test_no_export_is_named_like_a_submodule(package):
    # a submodule named like an exported function shadows it once imported (roofline.step_time did)
    import pkgutil

    module = importlib.import_module(package)
    submodules = {m.name for m in pkgutil.iter_modules(module.__path__)}
    assert not submodules & set(module.__all__)


def test_roofline_speedup_gives_numbers_for_numbers():
    # issue 9: roofline_speedup returned 0-d arrays for scalars while speedup returned floats
    r = lc.roofline_speedup("llama-3-8b", "h100-sxm", "article", alpha=0.8, gamma=4, c=0.1, batch=64)
    assert isinstance(r.speedup, float) and isinstance(r.verify_compute_bound, bool)
    assert isinstance(lc.best_gamma("llama-3-8b", "h100-sxm", "article", alpha=0.8, c=0.1).gamma, float)
    grid = lc.roofline_speedup("llama-3-8b", "h100-sxm", "article", alpha=[0.8], gamma=4, c=0.1, batch=64)
    assert grid.speedup.shape == (1,) and grid.speedup[0] == r.speedup


@pytest.mark.parametrize("call", [
    lambda: lc.param_counts("llama-3-8b").total,
    lambda: lc.flops_per_token("llama-3-8b"),
    lambda: lc.kv_bytes_per_token("llama-3-8b"),
    lambda: lc.weight_bytes("llama-3-8b").total,
    lambda: lc.lora_params("llama-3-8b"),
    lambda: lc.mtp_params("deepseek-v3").own,
    lambda: lc.kv_capacity("gpt-3-13b", "a100-40gb").kv_tokens,
    lambda: lc.Replica.from_specs("gpt-3-13b", "a100-40gb").kv_capacity_tokens,
    lambda: lc.ridge_point("h100-sxm", "article"),
    lambda: lc.critical_rows("llama-3-8b", "h100-sxm", "article"),
    lambda: lc.tree_speedup("llama-3.1-8b", "h100-sxm", "lecture", widths=(4, 2, 2, 1),
                            hits=lc.TopKHits.of({1: 0.44, 2: 0.64, 4: 0.79, 8: 0.91})).tau,
])
def test_functions_take_catalog_names(call):
    # review finding: the counts and serving functions raised AttributeError on a name
    assert call() > 0


def test_serving_and_planning_are_in_the_package():
    # issue 24, deliverable 5: a script reaches the engine, one request's cost and the planner from lc
    assert {"Deployment", "serve", "ServeConfig", "ServeResult", "request_cost", "plan", "step_time"} <= set(lc.__all__)
    import llm_cost.planner  # noqa: F401  (a subpackage named `plan` used to shadow lc.plan once imported)

    assert callable(lc.plan) and lc.plan.__module__ == "llm_cost.planner.frontier"


def test_the_plan_and_the_calibration_are_in_the_package():
    # issue 24.5: `llm-cost plan` and `llm-cost calibrate` as one call each, from lc; the calibration is
    # `calibrate_profile`, since `lc.calibrate` is the subpackage (a function of that name would be shadowed
    # once `llm_cost.calibrate` is imported, or shadow it)
    assert {"PlanRequest", "run_plan", "PlanOutcome", "calibrate_profile", "Calibration"} <= set(lc.__all__)
    import llm_cost.calibrate

    assert lc.calibrate is llm_cost.calibrate and lc.calibrate_profile.__module__ == "llm_cost.calibrate.calibration"
    assert lc.run_plan(lc.PlanRequest(model="llama-3.2-1b", gpu="h100-sxm", gpus=1, osl=16, profile="lecture",
                                      batch=(1,), weights="bf16", kv_dtype="bf16")).result.counts["searched"] == 1


def test_step_time_on_a_deployment_is_the_deployed_pass():
    # lc.step_time(..., deployment=) is parallel.deployed_step_time; without it the one-GPU roofline
    from llm_cost.parallel import deployed_step_time
    from llm_cost.roofline import step_time as one_gpu

    d = lc.Deployment(tp=2, kv_dtype="fp8")
    assert lc.step_time("llama-3-8b", "h100-sxm", "lecture", batch=8, context=512, deployment=d) == \
        deployed_step_time("llama-3-8b", "h100-sxm", "lecture", d, batch=8, context=512)
    one = lc.step_time("llama-3-8b", "h100-sxm", "lecture", batch=8)
    floor = one_gpu("llama-3-8b", "h100-sxm", "lecture", batch=8)  # the roofline floor leaves the fit to parallel
    assert one == dataclasses.replace(floor, fits=True, fit_note="") and floor.fits is None
    assert one.fits is True and one.fit_note == ""  # one pass carries its fit on one GPU too (issue 28.8)
    with pytest.raises(lc.InvalidValueError, match="kv_bytes_per_element and deployment"):
        lc.step_time("llama-3-8b", "h100-sxm", "lecture", kv_bytes_per_element=1, deployment=d)


def test_no_private_name_crosses_a_serving_or_planner_module():
    # issue 24: modules of the serving engine and the planner import no `_name` from one another
    import ast
    import pathlib

    root = pathlib.Path(lc.__file__).parent
    found = []
    for path in [*(root / "serving").glob("*.py"), *(root / "planner").glob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("llm_cost.serving"):
                found += [f"{path.name}: {a.name}" for a in node.names if a.name.startswith("_")
                          and not a.name.startswith("__")]
    assert not found, found


def test_weight_formats_by_name_in_the_library():
    """Issue 28, deliverable 8: `lc.step_time(..., weights="fp8")` raised AttributeError; a format's name
    is accepted wherever a WeightFormat is, with the same result, and anything else is refused naming
    the parameter."""
    import pytest

    import llm_cost as lc
    from llm_cost.specs import FP8, INT4_G128

    by_name = lc.step_time("llama-3-70b", "h100-sxm", "article", rows=4096, weights="fp8")
    assert by_name == lc.step_time("llama-3-70b", "h100-sxm", "article", rows=4096, weights=FP8)
    assert lc.weight_bytes("llama-3-8b", "int4") == lc.weight_bytes("llama-3-8b", INT4_G128)
    assert lc.kv_capacity("llama-3-8b", "h100-sxm", weights="W4A16").kv_tokens == \
        lc.kv_capacity("llama-3-8b", "h100-sxm", weights=INT4_G128).kv_tokens
    with pytest.raises(ValueError, match="weights must be"):
        lc.step_time("llama-3-8b", "h100-sxm", "article", weights=3)


def test_one_name_for_the_communication_time():
    # issue 28.8: a pass's communication is comm_time_s in the library as in the CLI's rows
    from llm_cost.requests import Phases
    from llm_cost.roofline import PassCost, StepTime

    assert callable(PassCost.comm_time_s) and not hasattr(PassCost, "comm_s")
    fields = {f.name for f in dataclasses.fields(Phases)} | {f.name for f in dataclasses.fields(StepTime)}
    assert {"comm_time_s", "prefill_comm_time_s", "decode_comm_time_s"} <= fields
    assert not [name for name in fields if name.endswith("comm_s")]
