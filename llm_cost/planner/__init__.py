"""Planning: the best deployment for a workload and a latency target.

`space` lists the configurations (accelerator x tp x pp x weights x KV dtype x batch x
speculation) and what it left out, `search` evaluates them all at once (TTFT, TPOT, fit, tokens per
second, dollars) with the `request` time model, `frontier` keeps those that fit and meet the target
and their Pareto frontier, `build.plan_grid` checks a plan's inputs and evaluates its space (what `llm-cost plan`
calls), `disaggregate` splits the GPUs into a prefill and a decode pool, `rows` gives a plan's rows. `plan_run.run_plan`
is `llm-cost plan` as one call: a `plan_request.PlanRequest` searched, ranked, split, served
(`plan_served`) and its best row launched (`emit`), one `plan_run.PlanOutcome` back.
"""

from llm_cost._exports import lazy_exports, names_from

_EXPORTS = {
    **names_from(".space", "PlanSpace", "SpecOption", "plan_space", "DEFAULT_BATCHES", "DEFAULT_KV_DTYPES",
                 "DEFAULT_WEIGHTS"),
    **names_from(".search", "Grid", "evaluate"),
    **names_from(".frontier", "Target", "Plan", "plan", "pareto"),
    **names_from(".build", "plan_grid"),
    **names_from(".disaggregate", "Disaggregated", "best_split"),
    **names_from(".plan_request", "PlanRequest"),
    **names_from(".plan_run", "run_plan", "PlanOutcome"),
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
