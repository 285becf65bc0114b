"""A plan's search from its inputs: the model, the accelerators and the GPU budget, the workload's
prompt and output lengths, the profile, the speculation to search and the space's axes, checked and
evaluated (`space.plan_space`, `search.evaluate`). `llm-cost plan` and `plot plan` parse their options
into these parameters and call it; `frontier.plan` ranks the grid under a target."""

from __future__ import annotations

from llm_cost.catalog.arguments import Many, Number, Spec, check_arguments
from llm_cost.catalog.loader import as_accelerator
from llm_cost.errors import InvalidValueError, check_number
from llm_cost.planner.space import (DEFAULT_BATCHES, DEFAULT_KV_DTYPES, DEFAULT_MAX_TP, DEFAULT_WEIGHTS, DEGREES,
                                    MAX_BATCH, MAX_BUDGET, SpecOption)
from llm_cost.specs.deployment import MAX_DEGREE

from llm_cost.requests.request import DEFAULT_C, MAX_C  # a draft cost unless given, and its bound (one place)
from llm_cost.speculative.mtp import MTP_ALPHA_REPORTED

MAX_GAMMA = 64  # the largest gamma the search takes
DEFAULT_MTP_ALPHA = MTP_ALPHA_REPORTED[0]  # DeepSeek-V3's reported MTP acceptance (speculative.mtp)
DEFAULT_MAX_GAMMA = 8  # draft tokens per round a plan searches: 1 .. this



def speculation_of(model, *, spec_alpha=None, c=None, draft=None, max_gamma: int = DEFAULT_MAX_GAMMA,
                   mtp_alpha: float = DEFAULT_MTP_ALPHA) -> list:
    """The `SpecOption`s to search: a draft (acceptance `spec_alpha`, gamma 1 .. `max_gamma`, its cost
    `c` (default `DEFAULT_C`) or the `draft` model's own) when `spec_alpha` is given, and the model's
    own MTP head at `mtp_alpha` when it has one. `c` and `draft` exclude each other and need `spec_alpha`."""
    from llm_cost.catalog import as_model

    out = []
    if spec_alpha is not None:
        check_number("max_gamma", max_gamma, low=1, high=MAX_GAMMA, integer=True)
        if c is not None and draft is not None:
            raise InvalidValueError("c and draft exclude each other: the drafting model's cost is one or the other",
                                    params=("c", "draft"))
        from llm_cost.speculative import check_alpha

        check_alpha(spec_alpha)
        draft_spec = as_model(draft) if draft is not None else None
        if c is not None:
            check_number("c", c, low=0, high=MAX_C)
        out.append(SpecOption("draft", float(spec_alpha), tuple(range(1, int(max_gamma) + 1)),
                              c=None if draft_spec else (DEFAULT_C if c is None else float(c)), draft=draft_spec))
    elif c is not None or draft is not None:
        raise InvalidValueError("c and draft describe the drafting model of speculative decoding: give spec_alpha",
                                params=("c", "draft", "spec_alpha"))
    if model.mtp_layers:
        check_number("mtp_alpha", mtp_alpha, low=0, high=1)
        out.append(SpecOption("mtp", float(mtp_alpha), (1,)))
    return out


@check_arguments(gpus=Many(Spec("Accelerator", as_accelerator)), budget=Number(1, MAX_BUDGET, integer=True),
                 spec_alpha=Number(0, 1), max_gamma=Number(1, MAX_GAMMA, integer=True), mtp_alpha=Number(0, 1),
                 tps=DEGREES, pps=DEGREES, eps=DEGREES, max_tp=Number(1, MAX_DEGREE, integer=True), weights=Many(),
                 kv_dtypes=Many(), batches=Many(Number(1, MAX_BATCH, integer=True)))
def plan_grid(model, gpus, budget, *, isl, osl, profile, spec_alpha=None, c=None, draft=None, max_gamma: int = DEFAULT_MAX_GAMMA,
              mtp_alpha: float = DEFAULT_MTP_ALPHA, tps=None, pps=None, eps=None, max_tp: int = DEFAULT_MAX_TP,
              weights=None, kv_dtypes=None, batches=None, dp_attention: bool = False):
    """The evaluated `search.Grid` of `model` (a spec or catalog name) on `gpus` (specs or names) with at
    most `budget` GPUs, for requests of `isl` prompt and `osl` output tokens under `profile`; the
    speculation as `speculation_of` (`c` the draft's cost ratio), the axes as `space.plan_space` (None:
    its defaults).

    Examples
    --------
    Llama-3-8B on up to 2 H100s (as `frontier.plan`'s example, from names):

    >>> import llm_cost as lc
    >>> grid = lc.plan_grid("llama-3-8b", ["h100-sxm"], 2, isl=1024, osl=128, profile=lc.PRESETS["lecture"])
    >>> lc.plan(grid, lc.Target(ttft_s=0.5, tpot_s=0.02)).counts["meet"]
    134
    """
    from llm_cost.catalog import as_model
    from llm_cost.planner.search import evaluate
    from llm_cost.planner.space import plan_space

    spec = as_model(model)
    accelerators = [as_accelerator(gpu) for gpu in dict.fromkeys(gpus)]
    speculation = speculation_of(spec, spec_alpha=spec_alpha, c=c, draft=draft, max_gamma=max_gamma,
                                 mtp_alpha=mtp_alpha)
    space = plan_space(spec, accelerators, budget, tps=tps, pps=pps, max_tp=max_tp, weights=weights or DEFAULT_WEIGHTS,
                       kv_dtypes=kv_dtypes or DEFAULT_KV_DTYPES, batches=batches or DEFAULT_BATCHES,
                       speculation=speculation, eps=eps, dp_attention=dp_attention)
    return evaluate(space, profile, isl=isl, osl=osl)
