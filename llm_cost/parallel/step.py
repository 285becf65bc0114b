"""One forward pass on a deployment: one GPU's time (all stages, collectives), and whether it fits."""

from __future__ import annotations

from llm_cost.catalog import as_accelerator, as_model, as_profile
from llm_cost.parallel.fit import Fit, deployment_fit
from llm_cost.parallel.shard import deployed_cost
from llm_cost.roofline.pass_cost import PassCost
from llm_cost.roofline.step import check_pass
from llm_cost.roofline.timing import StepTime
from llm_cost.specs import BF16, WeightFormat
from llm_cost.specs.deployment import SINGLE_GPU, Deployment
from llm_cost.catalog.arguments import check_arguments


@check_arguments()
def deployed_pass_cost(model, gpu, profile, weights: WeightFormat = BF16,
                       deployment: Deployment = SINGLE_GPU, *, cls=PassCost) -> PassCost:
    """The `PassCost` of one GPU of `deployment` (K/V at its `kv_dtype`); `cls` a PassCost subclass."""
    model, gpu, profile = as_model(model), as_accelerator(gpu), as_profile(profile)
    cost = cls.from_specs(model, gpu, profile, weights, deployment.kv_bytes_per_element)
    return deployed_cost(cost, model, gpu, weights, deployment)


@check_arguments(rows=None, batch=None, context=None)  # the grids: checked once, by check_pass
def deployed_step_time(model, gpu, profile, deployment: Deployment = SINGLE_GPU, *, rows=None, batch=1,
                       context=0, weights: WeightFormat = BF16) -> StepTime:
    """`roofline.step_time` on a deployment: one GPU's share of each stage, stages x max(memory,
    compute) + collectives + fixed. `deployment` SINGLE_GPU (and kv_dtype bf16) is step_time exactly.
    For one pass (numbers, not arrays) the result carries the fit (`with_fit`): `fits` and, when it
    does not, `fit_note` (the article's "70B on one card" keeps its time and says it does not fit).

    Examples
    --------
    Llama-3-70B decode at batch 1 on 4 H100s (article preset): a quarter of the weights per GPU,
    plus 160 all-reduces.

    >>> from llm_cost.specs.deployment import Deployment
    >>> t = deployed_step_time("llama-3-70b", "h100-sxm", "article", Deployment(tp=4))
    >>> round(t.memory_time_s * 1e3, 2), round(t.comm_time_s * 1e3, 3), t.bound, t.fits
    (10.53, 0.46, 'memory', True)
    >>> one = deployed_step_time("llama-3-70b", "h100-sxm", "article")
    >>> one.fits, one.fit_note.split(" (")[0]
    (False, 'needs 141.1 GB per GPU')
    """
    model, gpu, profile = as_model(model), as_accelerator(gpu), as_profile(profile)
    rows, batch, context = check_pass(rows, batch, context)
    cost = deployed_pass_cost(model, gpu, profile, weights, deployment)
    step = cost.step(rows, batch, context, count_kv=profile.count_kv)
    return with_fit(step, model, gpu, profile, deployment, weights)


def with_fit(step: StepTime, model, gpu, profile, deployment: Deployment, weights: WeightFormat) -> StepTime:
    """`step` with whether its pass fits one GPU of `deployment` (`deployment_fit` on the profile's
    memory basis unless the deployment names one): `fits`, and `fit_note` when it does not. The time
    is kept. A grid (any of the step's rows, batch, context an array) is returned as it is: the fit
    is asked per point.

    `deployed_step_time` asks it of its pass, `lc.step_time` of `roofline.step_time`'s one-GPU pass
    (the roofline floor does not ask it: memory is this floor's question).
    """
    import dataclasses

    import numpy as np

    if max(np.ndim(step.rows), np.ndim(step.batch), np.ndim(step.context)) > 0:
        return step
    fit = deployment_fit(model, gpu, deployment.following(profile), weights=weights, rows=step.rows,
                         batch=step.batch, context=step.context)
    return dataclasses.replace(step, fits=fit.fits, fit_note=fit.reason)


@check_arguments()
def step_fit(model, gpu, deployment: Deployment = SINGLE_GPU, *, rows=None, batch=1, context=0,
             weights: WeightFormat = BF16) -> Fit:
    """`parallel.fit.deployment_fit` with catalog names accepted and the pass checked."""
    model, gpu = as_model(model), as_accelerator(gpu)
    rows, batch, context = check_pass(rows, batch, context)
    return deployment_fit(model, gpu, deployment, weights=weights, rows=rows, batch=batch, context=context)
