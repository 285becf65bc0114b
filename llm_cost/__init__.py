"""llm-cost: an analytic calculator of what LLM inference costs on an accelerator.

Flow: specs -> catalog -> counts -> roofline -> speculative / serving -> report -> commands.

Everything inside the library is SI: bytes, seconds, FLOP, FLOP/s, bytes/s. Conversions to GB
(1e9 bytes) or ms happen only where results are rendered. `import llm_cost as lc` gives the
names a script needs (`__all__`); each is imported on first use, so importing the package
costs nothing until then.

>>> import llm_cost as lc
>>> round(lc.step_time("llama-3-8b", "h100-sxm", lc.PRESETS["article"]).step_time_s, 5)
0.00479
"""

from __future__ import annotations

from pathlib import Path as _Path

from llm_cost._exports import lazy_exports, names_from

__version__ = "0.1.0"

# In a source checkout the design card keeps cli.py, hardware/ and models/ beside this package
# rather than inside it (the wheel maps them in with force-include). `CHECKOUT_ROOT` is that
# folder when this is a checkout (None in an installed wheel); the catalogs look there after the
# package folder, and a finder maps exactly one module name, `llm_cost.cli`, to its cli.py.
# Nothing else of the checkout (tests/, bench/, hatch_build.py) becomes part of the package.
def _checkout_root():
    root = _Path(__file__).resolve().parent.parent
    return root if (root / "cli.py").is_file() and (root / "pyproject.toml").is_file() else None


CHECKOUT_ROOT = _checkout_root()
if CHECKOUT_ROOT is not None and not (_Path(__file__).parent / "cli.py").is_file():
    import sys as _sys

    class _CheckoutCli:
        """Finds `llm_cost.cli` at the checkout root, and nothing else."""

        @staticmethod
        def find_spec(fullname, path=None, target=None):
            if fullname != "llm_cost.cli":
                return None
            from importlib.util import spec_from_file_location

            return spec_from_file_location(fullname, CHECKOUT_ROOT / "cli.py")

    _sys.meta_path.append(_CheckoutCli)
    del _sys

_EXPORTS = {
    # loading
    **names_from("llm_cost.catalog", "load_model", "load_accelerator", "catalog_names", "model_from_config",
                 "accelerator_from_datasheet"),
    # specs and presets
    **names_from("llm_cost.specs", "ModelSpec", "MoESpec", "MLASpec", "Accelerator", "Profile", "PRESETS",
                 "preset", "WeightFormat", "WEIGHT_FORMATS", "weight_format", "BF16", "INT4_G128",
                 "INT8_G128", "FP8", "CHECKPOINT"),
    # counts
    **names_from("llm_cost.counts", "param_counts", "ParamCounts", "flops_per_token", "kv_bytes_per_token",
                 "kv_bytes", "weight_bytes", "WeightBytes", "lora_params"),
    # checkpoint formats (FP8 blocks, MXFP4 experts, torch_dtype)
    **names_from("llm_cost.counts.checkpoint", "checkpoint_bytes", "CheckpointBytes", "checkpoint_format",
                 "CheckpointFormat"),
    # deployments and the time model (`step_time` on one GPU or, with `deployment=`, on tp x pp of them)
    **names_from("llm_cost.specs.deployment", "Deployment"),
    **names_from("llm_cost.public", "step_time"),
    # serving a grid of configurations through the executor (local processes or Ray)
    **names_from("llm_cost.planner.sweep", "sweep"),
    **names_from("llm_cost.roofline", "StepTime", "PassCost", "ridge_point", "critical_rows",
                 "critical_batch", "expected_experts_touched"),
    # speculative decoding
    **names_from("llm_cost.speculative", "expected_tokens", "speedup", "gamma_one_speedup", "ops_factor",
                 "weight_reads_per_token", "implied_c", "optimal_gamma", "leviathan", "roofline_speedup",
                 "RooflineSpeedup", "best_gamma", "turning_batch", "break_even_batch", "moe_vs_dense",
                 "TopKHits", "tree_nodes", "tree_tau", "tree_speedup", "mtp_params", "mtp_speedup",
                 "speculative_step", "alpha_from_tau"),
    # KV capacity, reservation policies and the simulator
    **names_from("llm_cost.serving", "kv_capacity", "KvCapacity", "sequences_that_fit", "requests_that_fit", "requests_by_policy",
                 "padding_waste", "Replica", "Workload", "poisson_workload", "fixed_workload",
                 "highest_rate", "serve", "ServeConfig", "SpecConfig", "config_for",
                 "ServeResult", "synthetic_workload", "BatchingRequest", "run_batching", "BatchingOutcome"),
    # one request's cost, and the planner
    **names_from("llm_cost.requests", "request_cost", "RequestCost", "Speculation"),
    **names_from("llm_cost.planner", "plan", "plan_grid", "plan_space", "evaluate", "Target", "Plan"),
    # `llm-cost plan` as one call: a PlanRequest searched, ranked, split, served and launched
    **names_from("llm_cost.planner", "PlanRequest", "run_plan", "PlanOutcome"),
    # measured points predicted (`llm-cost validate`) and a profile fitted to them (`llm-cost calibrate`; not
    # `calibrate`: that is the subpackage)
    **names_from("llm_cost.calibrate", "calibrate_profile", "Calibration", "validate_points", "Validation"),
    # errors
    **names_from("llm_cost.errors", "LlmCostError", "InvalidValueError", "UnknownNameError", "ConfigError"),
}
__all__ = ["__version__", *_EXPORTS]
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
