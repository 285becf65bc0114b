"""What `llm-cost check` runs: every invariant, per (model, gpu) pair or once for the formulas.

`run` turns one invariant's hypothesis test into a CheckResult, a failure carrying hypothesis's
shrunk counterexample; `run_all` runs the model invariants for every pair, then the formula
invariants once. Imports `properties`, `deployments`, `formulas` and `throughput`; none imports this module.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

from llm_cost.checks.deployments import DEPLOYMENTS
from llm_cost.checks.formulas import FORMULAS
from llm_cost.checks.invariant import CheckResult, Invariant
from llm_cost.checks.properties import FOUNDATION
from llm_cost.checks.throughput import SERVING
from llm_cost.specs import Accelerator, ModelSpec


def all_invariants() -> list[Invariant]:
    """Every registered invariant: per-model ones first, then the formulas'."""
    return list(FOUNDATION) + list(DEPLOYMENTS) + list(FORMULAS) + list(SERVING)


def run(invariant: Invariant, model: ModelSpec, gpu: Accelerator, *, examples: int = 50) -> CheckResult:
    """Run one invariant with `examples` hypothesis examples; a failure carries its counterexample."""
    test = invariant.build(model, gpu)
    names = dict(model=model.name, gpu=gpu.label, gpu_name=gpu.name) if invariant.scope == "model" else {}
    if hasattr(test, "hypothesis"):
        test = settings(max_examples=examples, deadline=None, database=None, derandomize=True,
                        suppress_health_check=list(HealthCheck), print_blob=False,
                        report_multiple_bugs=False)(test)
    try:
        test()
    except Exception as err:  # an assertion, or a crash inside the property: both are a FAIL row
        notes = [note for note in getattr(err, "__notes__", []) if note.strip()]
        first = str(err).splitlines()[0] if str(err) else ""
        if not isinstance(err, AssertionError):
            first = f"{type(err).__name__}: {first}"
        detail = "; ".join([first or "assertion failed", *notes])
        return CheckResult(invariant.name, invariant.statement, False, " ".join(detail.split()), **names)
    return CheckResult(invariant.name, invariant.statement, True, **names)


def run_all(models: list[ModelSpec], gpus: list[Accelerator], *, examples: int = 50,
            invariants: list[Invariant] | None = None, progress=None) -> list[CheckResult]:
    """Model invariants for every (model, gpu) pair, then formula invariants once.

    `progress`, if given, is called with (done, total) after each check (a progress bar). Ctrl-C raises
    `executor.Interrupted` holding the results that finished."""
    invariants = all_invariants() if invariants is None else invariants
    jobs = [(inv, model, gpu) for inv in invariants if inv.scope == "model" for model in models for gpu in gpus]
    if models and gpus:
        jobs += [(inv, models[0], gpus[0]) for inv in invariants if inv.scope == "formula"]
    from llm_cost.executor import Interrupted

    results = []
    try:
        for inv, model, gpu in jobs:
            results.append(run(inv, model, gpu, examples=examples))
            if progress is not None:
                progress(len(results), len(jobs))
    except KeyboardInterrupt:
        raise Interrupted(dict(enumerate(results)), total=len(jobs)) from None
    return results
