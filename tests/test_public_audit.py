"""Issue 29, deliverable 5: every public callable, every parameter, every hostile value.

The public API is `llm_cost.__all__` and the `__all__` of the subpackages it re-exports from. For
each callable, `EXAMPLES` holds one small valid call (from its doctest, shrunk to run in
milliseconds). Each parameter of the signature is then replaced in turn by each of `HOSTILE`
(a string for a number, None, a list, nan, inf, -1, 0, a huge number). Every probe must end in one
of two ways:

- a result holding no nan, no inf and no negative number (dataclass fields, arrays, tuples, dicts
  walked), or
- an `LlmCostError` whose message or `params` names the parameter;

never another exception (TypeError, AttributeError, ZeroDivisionError, OverflowError, MemoryError,
RecursionError, ...) and never a call past `PROBE_S` (a hang, cut by SIGALRM). Result records (the
dataclasses the library returns) and the error classes are not inputs: `NOT_INPUTS` lists them, and a
test checks that every public callable is either audited or listed there with its reason.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import numbers
import re
import signal
import time

import numpy as np
import pytest

import llm_cost as lc
from llm_cost.errors import LlmCostError

PACKAGES = ["llm_cost", "llm_cost.specs", "llm_cost.catalog", "llm_cost.counts", "llm_cost.roofline",
            "llm_cost.parallel", "llm_cost.speculative", "llm_cost.serving", "llm_cost.requests",
            "llm_cost.planner"]
HOSTILE = ["x", None, [1], math.nan, math.inf, -1, 0, 1e300]
PROBE_S = 3.0  # one probe; a valid small call takes milliseconds
BUDGET_S = 60.0  # the whole audit (the limit)
# parameters that take a callable or a connection, not a value: probing them with data says nothing
NOT_VALUES = {"on_progress", "on_step", "longer", "cls", "ray", "process", "f", "progress", "on_warning", "on_bad", "on_done"}


def _model():
    return lc.load_model("llama-3.2-1b")


def _gpu():
    return lc.load_accelerator("h100-sxm")


def _moe():
    return lc.load_model("mixtral-8x7b")


def _replica():
    from llm_cost.serving.replica import IterationCost

    return lc.Replica(IterationCost.unit(), 100, 2048)


def _workload():
    return lc.fixed_workload([(4, 5), (8, 3)])


def _fields(instance) -> dict:
    return {f.name: getattr(instance, f.name) for f in dataclasses.fields(instance) if f.init}


def _space():
    return lc.plan_space(_model(), [_gpu()], 1, weights=("bf16",), kv_dtypes=("bf16",), batches=(1, 8))


def _grid():
    return lc.evaluate(_space(), lc.PRESETS["lecture"], isl=128, osl=16)


def _hits():
    return lc.TopKHits.of({1: 0.6, 2: 0.7})


# name -> (positional args, keyword args): one small valid call
EXAMPLES = {
    "load_model": lambda: (["llama-3.2-1b"], {}),
    "load_accelerator": lambda: (["h100-sxm"], {}),
    "catalog_names": lambda: (["models"], {}),
    "model_from_config": lambda: ([{"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
                                    "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128,
                                    "vocab_size": 100}], {"name": "tiny"}),
    "accelerator_from_datasheet": lambda: ([{"name": "g", "memory_bytes": 8e10, "bandwidth_bytes_per_s": 3e12,
                                             "bf16_flops_per_s": 9e14}], {}),
    "preset": lambda: (["lecture"], {}),
    "weight_format": lambda: (["int4"], {}),
    "as_weights": lambda: (["fp8"], {}),
    "draft_profile_for": lambda: ([lc.PRESETS["lecture"]], {}),
    "as_model": lambda: (["llama-3.2-1b"], {}),
    "as_accelerator": lambda: (["h100-sxm"], {}),
    "as_profile": lambda: (["lecture"], {}),
    "param_counts": lambda: ([_model()], {}),
    "flops_per_token": lambda: ([_model()], {"context": 128}),
    "kv_bytes_per_token": lambda: ([_model()], {"bytes_per_element": 2}),
    "kv_bytes": lambda: ([_model(), 128], {"bytes_per_element": 2}),
    "weight_bytes": lambda: ([_model()], {"weights": lc.INT4_G128}),
    "lora_params": lambda: ([_model()], {"rank": 16}),
    "checkpoint_bytes": lambda: ([_model()], {}),
    "checkpoint_format": lambda: ([_model()], {}),
    "attention_flops_per_context_token": lambda: ([_model()], {}),
    "layer_windows": lambda: ([lc.load_model("gemma-2-9b")], {}),
    "step_time": lambda: ([_model(), _gpu(), "lecture"], {"rows": 4, "batch": 2, "context": 64}),
    "check_pass": lambda: ([4, 2, 64], {}),
    "causal_pairs": lambda: ([4], {"context": 64}),
    "decode_pairs": lambda: ([4, 2, 64], {}),
    "roofline_total": lambda: ([1e-3, 2e-3, 1e-4], {}),
    "uniform_pass": lambda: ([4, 2, 64], {}),
    "windowed_pairs": lambda: ([4, 64, 32], {}),
    "windowed_pass": lambda: ([4, 2, 64, ((32, 2), (0, 2))], {"num_layers": 4}),
    "first_crossing": lambda: ([lambda x: x - 3.0, 1.0, 10.0], {}),
    "ridge_point": lambda: ([_gpu(), "lecture"], {"compute": "bf16"}),
    "critical_rows": lambda: ([_model(), _gpu(), "lecture"], {"batch": 1, "context": 64}),
    "critical_batch": lambda: ([_model(), _gpu(), "lecture"], {"rows_per_sequence": 1, "context": 64}),
    "expected_experts_touched": lambda: ([8, 2, 4], {}),
    "all_reduce_s": lambda: ([1e6, 2, _gpu()], {}),
    "all_to_all_s": lambda: ([1e6, 2, _gpu()], {}),
    "send_s": lambda: ([1e6, _gpu()], {}),
    "check_deployment": lambda: ([_model(), _gpu(), lc.Deployment(tp=2)], {}),
    "comm_terms": lambda: ([_model(), _gpu(), lc.Deployment(tp=2)], {}),
    "kv_share": lambda: ([_model(), 2], {}),
    "deployment_kv_share": lambda: ([_model(), lc.Deployment(tp=2)], {}),
    "replicated_params_per_layer": lambda: ([_model(), 2], {}),
    "weight_bytes_per_gpu": lambda: ([_model(), lc.BF16, lc.Deployment(tp=2)], {}),
    "deployment_fit": lambda: ([_model(), _gpu(), lc.Deployment()], {"weights": lc.BF16, "rows": 1, "batch": 2,
                                                                    "context": 64}),
    "largest_batch": lambda: ([_model(), _gpu(), lc.Deployment()], {"weights": lc.BF16, "tokens": 256}),
    "workspace_bytes": lambda: ([_model(), 4, 2], {"tp": 1}),
    "deployed_pass_cost": lambda: ([_model(), _gpu(), "lecture"], {}),
    "deployed_cost": lambda: ([_pass_cost(), _model(), _gpu(), lc.BF16, lc.Deployment(tp=2)], {}),
    "deployed_step_time": lambda: ([_model(), _gpu(), "lecture", lc.Deployment(tp=2)], {"batch": 2, "context": 64}),
    "step_fit": lambda: ([_model(), _gpu()], {"batch": 2, "context": 64}),
    "expected_tokens": lambda: ([0.8, 4], {}),
    "speedup": lambda: ([0.8, 4, 0.1], {}),
    "gamma_one_speedup": lambda: ([0.8, 0.1], {}),
    "ops_factor": lambda: ([0.8, 4], {"c_hat": 0.1}),
    "weight_reads_per_token": lambda: ([0.8, 4], {}),
    "compute_bound_speedup": lambda: ([0.8, 4, 0.1], {}),
    "implied_c": lambda: ([0.8, 4, 2.0], {}),
    "check_alpha": lambda: ([0.8], {}),
    "check_gamma": lambda: ([4], {}),
    "check_cost": lambda: (["c", 0.1], {}),
    "optimal_gamma": lambda: ([0.8, 0.1], {"gamma_max": 16}),
    "leviathan": lambda: ([0.8, 4], {"c": 0.1, "c_hat": 0.1}),
    "roofline_speedup": lambda: ([_model(), _gpu(), "lecture"], {"alpha": 0.8, "gamma": 4, "batch": 8, "c": 0.1}),
    "best_gamma": lambda: ([_model(), _gpu(), "lecture"], {"alpha": 0.8, "batch": 8, "c": 0.1, "gamma_max": 4}),
    "verification_fit": lambda: ([_model(), _gpu()], {"rows": 5, "batch": 2}),
    "draft_deployment_for": lambda: ([_model(), lc.Deployment(tp=2)], {}),
    "turning_batch": lambda: ([_model(), _gpu(), lc.PRESETS["lecture"]], {"gamma": 4}),
    "costly_verification_batch": lambda: ([_model(), _gpu(), lc.PRESETS["lecture"]], {"gamma": 4}),
    "break_even_batch": lambda: ([_model(), _gpu(), "lecture"], {"alpha": 0.8, "gamma": 4, "c": 0.1,
                                                                "batch_max": 1e4}),
    "dense_twin": lambda: ([_moe()], {}),
    "moe_vs_dense": lambda: ([_moe(), _gpu(), "lecture"], {"alpha": 0.8, "gamma": 4, "c": 0.1}),
    "tree_nodes": lambda: ([(4, 2, 2, 1)], {}),
    "tree_tau": lambda: ([(2, 1), _hits()], {}),
    "tree_speedup": lambda: ([_model(), _gpu(), lc.PRESETS["lecture"]], {"widths": (2, 1), "hits": _hits(),
                                                                        "batch": 2}),
    "mtp_params": lambda: ([lc.load_model("deepseek-v3")], {}),
    "mtp_speedup": lambda: ([lc.load_model("deepseek-v3"), _gpu(), "article"], {"alphas": (0.85,), "batch": 1}),
    "mtp_step_time": lambda: ([lc.load_model("deepseek-v3"), _gpu(), "article"], {"batch": 1}),
    "speculative_step": lambda: ([[0.5, 0.5], [0.25, 0.75]], {"temperature": 1.0}),
    "output_distribution": lambda: ([[0.5, 0.5], [0.25, 0.75]], {}),
    "total_variation": lambda: ([[0.5, 0.5], [0.25, 0.75]], {}),
    "sample_outputs": lambda: ([[0.5, 0.5], [0.25, 0.75]], {"samples": 100}),
    "simulate_rounds": lambda: ([lc.speculative.IndependentAcceptance(0.8), 4], {"streams": 4, "positions": 64}),
    "alpha_from_tau": lambda: ([3.0, 4], {}),
    "kv_capacity": lambda: ([_model(), _gpu()], {"reserve": 0.1}),
    "sequences_that_fit": lambda: ([_model(), _gpu(), 1024], {"reserve": 0.1}),
    "requests_that_fit": lambda: ([12_596, 2048], {}),
    "requests_by_policy": lambda: ([12_596], {"max_len": 2048, "prompt": 272, "max_gen": 64.5}),
    "model_max_len": lambda: ([_model()], {"max_len": 1024}),
    "padding_waste": lambda: ([[100, 300, 200], [10, 50, 30]], {}),
    "padded_positions": lambda: ([3, 300, 50], {}),
    "attention_launches": lambda: ([_model(), _gpu(), lc.PRESETS["lecture"]], {"requests": 4, "context": 128,
                                                                              "launch_cost_s": 1e-5}),
    "poisson_workload": lambda: ([20, 2.0], {"seed": 0, "prompt": (4, 16), "output": (1, 8)}),
    "fixed_workload": lambda: ([[(4, 5), (8, 3)]], {"arrivals_s": [0.0, 0.5]}),
    "synthetic_workload": lambda: ([20, 2.0], {"prompt": "uniform:4:16", "output": "uniform:1:8"}),
    "serve": lambda: ([_workload(), _replica(), lc.ServeConfig(max_batch=4)], {}),
    "path_of": lambda: ([_workload(), _replica(), lc.ServeConfig(max_batch=4)], {}),
    "runs_step_level": lambda: ([_workload(), _replica(), lc.ServeConfig(max_batch=4)], {}),
    "config_for": lambda: (["iteration"], {"max_batch": 4}),
    "highest_rate": lambda: ([lc.poisson_workload(20, 1.0, prompt=(4, 16), output=(1, 8)), _replica()],
                             {"scheduler": "iteration", "max_batch": 4, "slo_s": 0.5, "rel_tol": 0.1}),
    "reservation_tokens": lambda: (["declared", 4, 8, 2048], {}),
    "unloaded_latency_per_token": lambda: ([_workload(), _replica().cost], {}),
    "host_link_bytes_per_s": lambda: ([_gpu()], {}),
    "read_trace": lambda: ([str(_TRACE)], {}),
    "parse_length": lambda: (["prompt", "uniform:4:16"], {}),
    "sweep": lambda: ([_model(), _gpu(), "lecture"], {"rate_req_per_s": 2.0, "requests": 20, "prompt": "16",
                                                     "output": "4", "batch": (4,), "jobs": 1}),
    "request_cost": lambda: ([_model(), _gpu(), "lecture"], {"batch": 1, "isl": 64, "osl": 8}),
    "gpu_seconds": lambda: ([1.0, lc.Deployment(tp=2)], {}),
    "request_fit": lambda: ([_model(), _gpu(), lc.Deployment(), lc.BF16], {"batch": 1, "isl": 64, "osl": 8}),
    "plan_space": lambda: ([_model(), [_gpu()], 1], {"weights": ("bf16",), "kv_dtypes": ("bf16",),
                                                     "batches": (1, 8)}),
    "evaluate": lambda: ([_space(), lc.PRESETS["lecture"]], {"isl": 128, "osl": 16}),
    "plan_grid": lambda: ([_model(), [_gpu()], 1], {"isl": 128, "osl": 16, "profile": lc.PRESETS["lecture"],
                                                    "weights": ("bf16",), "kv_dtypes": ("bf16",), "batches": (1, 8)}),
    "plan": lambda: ([_grid(), lc.Target(ttft_s=0.5, tpot_s=0.05)], {}),
    "pareto": lambda: ([np.array([1.0, 2.0, 3.0]), np.array([3.0, 2.0, 1.0])], {}),
    "best_split": lambda: ([_grid(), lc.Target(ttft_s=0.5, tpot_s=0.05)], {}),
    "run_batching": lambda: ([_batching()], {}),
    "run_plan": lambda: ([_plan_request()], {}),
    "calibrate_profile": lambda: ([_points(), lc.PRESETS["lecture"], ["bw_efficiency"]], {"jobs": 1}),
    "validate_points": lambda: ([_points(), "lecture"], {"jobs": 1}),
    # input specs: their constructors validate (`__post_init__`)
    "ModelSpec": lambda: ([], _fields(_model())),
    "MoESpec": lambda: ([], _fields(_moe().moe)),
    "MLASpec": lambda: ([], _fields(lc.load_model("deepseek-v3").mla)),
    "VisionSpec": lambda: ([], _fields(_vision())),
    "QuantizationConfig": lambda: ([], {"method": "fp8", "settings": (("weight_block_size", (128, 128)),)}),
    "Accelerator": lambda: ([], _fields(_gpu())),
    "Profile": lambda: ([], _fields(lc.PRESETS["lecture"])),
    "WeightFormat": lambda: ([], _fields(lc.INT4_G128)),
    "Deployment": lambda: ([], {"tp": 2, "pp": 1, "ep": 1, "gpus": 2, "kv_dtype": "bf16", "reserve": 0.1}),
    "TopKHits": lambda: ([], {"rates": ((1, 0.6), (2, 0.7))}),
    "PassCost": lambda: ([], _fields(_pass_cost())),
    "IterationCost": lambda: ([], _fields(_replica().cost)),
    "Replica": lambda: ([], _fields(_replica())),
    "Workload": lambda: ([], _fields(_workload())),
    "ServeConfig": lambda: ([], {"max_batch": 4, "block_size": 16, "watermark": 0.01}),
    "SpecConfig": lambda: ([], {"gamma": 4, "alpha": 0.8, "c": 0.1}),
    "Speculation": lambda: ([], {"alpha": 0.8, "gamma": 4, "c": 0.1}),
    "Target": lambda: ([], {"ttft_s": 0.5, "tpot_s": 0.05}),
    "SpecOption": lambda: ([], {"kind": "draft", "alpha": 0.8, "gammas": (2, 4), "c": 0.1}),
    "IndependentAcceptance": lambda: ([0.8], {}),
    "BurstyAcceptance": lambda: ([0.9, 0.3, 0.1, 0.2], {}),
    "BatchingRequest": lambda: ([], _fields(_batching())),
    "PlanRequest": lambda: ([], _fields(_plan_request())),
}


def _plan_request():
    return lc.PlanRequest(model=_model(), gpu=(_gpu(),), gpus=1, isl=128, osl=16, profile="lecture", tpot_s=0.05,
                          weights=("bf16",), kv_dtype=("bf16",), batch=(1, 8))


def _points():
    from llm_cost.calibrate import Point

    return [Point(f"b{batch}", "demo", "A", "llama-3.2-1b", "h100-sxm", "bf16", 0, "bf16", 1, 1, 1, batch, "static",
                  128, 16, "decode_tok_per_s_per_user", value) for batch, value in ((1, 300.0), (8, 290.0), (32, 270.0))]


def _batching():
    return lc.BatchingRequest(model=_model(), gpu=_gpu(), profile="lecture", rates=(2.0,), requests=10,
                              prompt="uniform:4:16", output="uniform:1:8")


def _vision():
    from llm_cost.specs import VisionSpec

    return VisionSpec("siglip", 1152, 27, 4304, 16, 14, 896)  # its doctest (model_towers.py)


def _pass_cost():
    from llm_cost.parallel import deployed_pass_cost

    return deployed_pass_cost(_model(), _gpu(), "lecture")


_TRACE = None  # written once by the fixture below


# result records and errors: built by the library, not given by a caller
NOT_INPUTS = {
    "ParamCounts", "WeightBytes", "CheckpointBytes", "CheckpointFormat", "StepTime", "RooflineSpeedup",
    "KvCapacity", "ServeResult", "RequestCost", "Plan", "OptimalGamma", "LeviathanForms", "BestGamma",
    "TurningBatch", "MoeVsDense", "TreeSpeedup", "MtpParams", "MtpSpeedup", "SpeculativeStep", "RoundStats",
    "RequestsFit", "PaddingWaste", "AttentionLaunches", "StepRun", "Deadlock", "Holder", "RateSearch", "DraftMemory",
    "Phases", "Fit", "PlanSpace", "Grid", "Disaggregated", "BatchingOutcome", "PlanOutcome", "Calibration", "Validation", "LlmCostError", "InvalidValueError", "UnknownNameError",
    "ConfigError",
}


def public_callables() -> dict[str, object]:
    """Every callable the public API names, once each (the first package that exports it)."""
    found: dict[str, object] = {}
    for package in PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            value = getattr(module, name)
            if callable(value) and name not in found and all(value is not v for v in found.values()):
                found[name] = value
    return found


class Hang(Exception):
    """A probe past PROBE_S."""


def _alarm(signum, frame):
    raise Hang


# nan as "not applicable" in a valid result, by (record, field): not a hostile input's doing. The planner
# grid's c where a row has no speculation: one float column of a numpy grid (None would make it objects).
NAN_MEANS_NONE = {("Grid", "c")}  # ServeResult's K/V reserved and written are None where not counted
# inf as a documented answer: a rate of inf (every request at time 0, `Workload`'s doc) and the searches
# whose docstring says "inf if never" (no crossing below the bound they were given)
INF_MEANS = {("Workload", "rate_req_per_s")}
INF_MEANS_NEVER = {"first_crossing", "costly_verification_batch", "break_even_batch"}


def bad_numbers(value, path="result", depth=0, nan_ok=False, inf_ok=False) -> list[str]:
    """Where `value` holds a nan, an inf or a negative number (walking dataclasses, arrays, tuples, dicts)."""
    if depth > 6 or value is None or isinstance(value, (str, bytes, bool, np.bool_)):
        return []
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "iuf":
            return [] if value.dtype.kind != "O" else [p for i, v in enumerate(value.ravel()[:100])
                                                      for p in bad_numbers(v, f"{path}[{i}]", depth + 1)]
        if value.dtype.kind == "f":
            bad = (np.isneginf(value) | (value < 0)) | (np.isnan(value) & (not nan_ok)) | (np.isposinf(value) & (not inf_ok))
        else:
            bad = value < 0
        return [f"{path}={value[bad].ravel()[:3].tolist()}"] if bad.any() else []
    if isinstance(value, numbers.Real):
        try:
            bad = value < 0 or (math.isnan(value) and not nan_ok) or (value == math.inf and not inf_ok)
        except OverflowError:  # a huge int is finite
            bad = value < 0
        return [f"{path}={value!r}"] if bad else []
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        kind = type(value).__name__
        return [p for f in dataclasses.fields(value)
                for p in bad_numbers(getattr(value, f.name), f"{path}.{f.name}", depth + 1,
                                     (kind, f.name) in NAN_MEANS_NONE, (kind, f.name) in INF_MEANS)]
    if isinstance(value, dict):
        return [p for k, v in list(value.items())[:200] for p in bad_numbers(v, f"{path}[{k!r}]", depth + 1)]
    if isinstance(value, (list, tuple)):
        return [p for i, v in enumerate(value[:200]) for p in bad_numbers(v, f"{path}[{i}]", depth + 1, nan_ok)]
    return []


def probes(fn, args, kwargs):
    """(parameter, value, args, kwargs) for each parameter of `fn`'s signature and each hostile value."""
    params = inspect.signature(fn).parameters
    positional = [p for p in params.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    for index, p in enumerate(params.values()):
        if p.name in NOT_VALUES or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.name not in kwargs and p.default is inspect.Parameter.empty and index >= len(args):
            continue  # a required parameter the example does not give (keyword-only set elsewhere)
        for value in HOSTILE:
            a, k = list(args), dict(kwargs)
            if p in positional and index < len(a):
                a[index] = value
            else:
                k[p.name] = value
            yield p.name, value, a, k


# (callable, parameter) -> the word its messages use instead: the CLI's name of the same quantity, which
# the CLI rewrites into its flag (prompt_len -> --prompt-len, preset -> --preset, model -> --model), or
# (parse_length) the option named by the call itself
ALIASES = {
    ("load_model", "ref"): ("model",), ("load_accelerator", "ref"): ("gpu",), ("preset", "name"): ("preset",),
    ("as_profile", "profile"): ("preset",), ("weight_format", "name"): ("weights",),
    ("synthetic_workload", "prompt"): ("prompt_len",), ("synthetic_workload", "output"): ("output_len",),
    ("poisson_workload", "prompt"): ("prompt_len",), ("poisson_workload", "output"): ("output_len",),
    ("sweep", "prompt"): ("prompt_len",), ("sweep", "output"): ("output_len",), ("sweep", "rate_req_per_s"): ("rate",),
    ("parse_length", "text"): ("prompt",), ("SpecConfig", "alpha"): ("spec_alpha",),
    ("SpecConfig", "gamma"): ("spec_gamma",), ("SpecConfig", "policy"): ("spec_policy",),
    ("highest_rate", "metric"): ("slo_metric",), ("plan_space", "kv_dtypes"): ("kv_dtype",),
    ("plan_grid", "kv_dtypes"): ("kv_dtype",),
    ("Workload", "rate_req_per_s"): ("rate",), ("read_trace", "path"): ("trace",),
}


def names_param(err: LlmCostError, param: str, callable_name: str = "") -> bool:
    words = (param, *ALIASES.get((callable_name, param), ()))
    return any(w in err.params or re.search(rf"(?<![A-Za-z0-9_]){re.escape(w)}(?![A-Za-z0-9_])", str(err))
               for w in words)


def audit(name: str, fn) -> tuple[int, list[str]]:
    """The number of probes of `fn` and the failures among them."""
    args, kwargs = EXAMPLES[name]()
    failures, count = [], 0
    previous = signal.signal(signal.SIGALRM, _alarm)
    try:
        for param, value, a, k in probes(fn, args, kwargs):
            count += 1
            what = f"{name}({param}={value!r})"
            try:
                signal.setitimer(signal.ITIMER_REAL, PROBE_S)
                try:
                    result = fn(*a, **k)
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
            except Hang:
                failures.append(f"{what}: still running after {PROBE_S} s")
            except LlmCostError as err:
                if not names_param(err, param, name):
                    failures.append(f"{what}: {type(err).__name__} not naming {param}: {str(err)[:150]}")
            except Exception as err:  # noqa: BLE001 - any other type is the defect being audited
                failures.append(f"{what}: {type(err).__name__}: {str(err)[:150]}")
            else:
                bad = bad_numbers(result, inf_ok=name in INF_MEANS_NEVER)
                if bad:
                    failures.append(f"{what}: returned {', '.join(bad[:3])}")
    finally:
        signal.signal(signal.SIGALRM, previous)
    return count, failures


@pytest.fixture(scope="module", autouse=True)
def _trace_file(tmp_path_factory):
    global _TRACE
    _TRACE = tmp_path_factory.mktemp("audit") / "trace.csv"
    _TRACE.write_text("arrival_s,prompt_tokens,output_tokens\n0,10,10\n0.5,20,3\n")


def test_every_public_callable_is_audited_or_not_an_input():
    names = set(public_callables())
    assert names - set(EXAMPLES) - NOT_INPUTS == set(), "add an example call to EXAMPLES"
    assert set(EXAMPLES) - names == set(), "EXAMPLES names a callable that is no longer public"


def test_every_example_is_a_valid_call():
    bad = {}
    for name, fn in public_callables().items():
        if name in EXAMPLES:
            args, kwargs = EXAMPLES[name]()
            found = bad_numbers(fn(*args, **kwargs))
            if found:
                bad[name] = found
    assert bad == {}


def test_the_walk_finds_nan_inf_and_negatives():
    @dataclasses.dataclass
    class R:
        a: float
        b: tuple

    assert bad_numbers(R(1.0, (2, np.array([1.0, -3.0])))) == ["result.b[1]=[-3.0]"]
    assert bad_numbers({"x": math.nan}) == ["result['x']=nan"] and bad_numbers(10**400) == []


def test_every_parameter_of_every_public_callable(tmp_path, monkeypatch):
    # a probe of a path (calibrate_profile's output "x") writes in a folder of its own, not in the checkout
    start, total, failures = time.monotonic(), 0, []
    callables = {n: f for n, f in public_callables().items() if n in EXAMPLES}
    for name, fn in callables.items():
        (tmp_path / name).mkdir()
        monkeypatch.chdir(tmp_path / name)  # what one callable's probes write is not a path the next one reads
        count, failed = audit(name, fn)
        total += count
        failures += failed
    elapsed = time.monotonic() - start
    print(f"\naudited {len(callables)} callables, {total} probes, {len(failures)} failures in {elapsed:.1f} s")
    assert not failures, "\n".join(failures)
    assert elapsed < BUDGET_S
