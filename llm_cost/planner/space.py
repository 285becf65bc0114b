"""The configurations a plan searches, and the ones it leaves out (counted, never silent).

    accelerator x (tp, pp) x weights x KV dtype x batch x speculation

- (tp, pp): powers of two (or the lists given) with tp x pp at most the GPU budget N and tp at most
  `max_tp` (one NVLink domain: the datasheet's interconnect is one tier); replicas = floor(N / (tp pp)),
  so a plan uses at most N GPUs and a larger budget only adds configurations (monotone).
  Splits the model or chip cannot take (`parallel.check_deployment`: tp must divide the heads, a
  split needs an interconnect), or a draft model on the target's tp and pp (pp past its layers), are
  left out and counted; a degree given in `tps` or `pps` that a draft cannot take is refused.
- weights: bf16, fp8 (W8A8), int8 (W8A16), int4 (W4A16 g128) by default; a format whose GEMM
  precision the chip lacks (fp8 on an A100) is left out and counted: the chip does not run it.
- KV dtype: bf16, fp8 by default.
- batch: 1, 2, 4, ..., 512 by default (a static batch, as `request` serves).
- speculation: none; a draft (acceptance alpha, cost ratio c or a draft model; gamma searched
  1..gamma_max); MTP for models with MTP modules (gamma 1, alpha given).
"""

from __future__ import annotations

from itertools import product

from dataclasses import dataclass, field, replace

from llm_cost.errors import InvalidValueError, check_all, check_choice, check_number
from llm_cost.specs import Accelerator, ModelSpec, WeightFormat
from llm_cost.specs.deployment import KV_DTYPES, MAX_DEGREE, Deployment
from llm_cost.specs.weights import weight_format
from llm_cost.catalog.arguments import Many, Number, Spec, check_arguments, default_rules
from llm_cost.catalog.loader import as_accelerator

DEGREES = Many(Number(1, MAX_DEGREE, integer=True))  # tp, pp or ep degrees to search
from llm_cost.specs.validate import check_fields, check_value

DEFAULT_WEIGHTS = ("bf16", "fp8", "int8", "int4")
DEFAULT_KV_DTYPES = ("bf16", "fp8")
DEFAULT_BATCHES = tuple(2**power for power in range(10))  # 1 .. 512
DEFAULT_MAX_TP = 8  # an HGX node's NVLink domain
MAX_BUDGET = 4096  # GPUs: far past any single model's deployment
MAX_BATCH = 1e9  # sequences in one static batch searched
MIN_OSL = 2  # output tokens of a planned request: a plan ranks decoding, one decode step at least


@dataclass(frozen=True)
class SpecOption:
    """One kind of speculative decoding the plan tries: "draft" (alpha with `c`, the draft's cost ratio, or
    a draft model, each gamma in `gammas`) or "mtp" (the model's MTP module, gamma 1). `draft`: a ModelSpec, or a
    catalog name or config path, held as the spec it loads (as `requests.Speculation` holds it)."""

    kind: str
    alpha: float
    gammas: tuple[int, ...]
    c: float | None = None
    draft: object = None  # a ModelSpec, or a catalog name or path (held as the spec it loads)

    def __post_init__(self) -> None:
        check_fields(self)
        check_value("draft", self.draft, "ModelSpec | str | None", field="draft")
        if isinstance(self.draft, str):  # resolved once, here: equal to the spec it names
            object.__setattr__(self, "draft", default_rules()["draft"].check("draft", self.draft))


@dataclass(frozen=True)
class Group:
    """The configurations that share one GPU's time model: an accelerator, a deployment, a format."""

    gpu: Accelerator
    deployment: Deployment
    weights: WeightFormat


@dataclass(frozen=True)
class PlanSpace:
    """What the search evaluates: the groups, and per group every batch x speculation variant."""

    model: ModelSpec
    budget: int
    groups: tuple[Group, ...]
    batches: tuple[int, ...]
    speculation: tuple[SpecOption, ...]
    left_out: dict = field(default_factory=dict)  # reason -> configurations left out

    @property
    def variants(self) -> int:
        """Speculation variants per batch: none, plus one per (option, gamma)."""
        return 1 + sum(len(option.gammas) for option in self.speculation)

    @property
    def size(self) -> int:
        """Configurations the search evaluates."""
        return len(self.groups) * len(self.batches) * self.variants


def powers_of_two(limit: int) -> tuple[int, ...]:
    """1, 2, 4, ... up to `limit`."""
    out, power = [], 1
    while power <= limit:
        out.append(power)
        power *= 2
    return tuple(out)


@check_arguments(gpus=Many(Spec("Accelerator", as_accelerator)), budget=Number(1, MAX_BUDGET, integer=True), tps=DEGREES,
                 pps=DEGREES, eps=DEGREES, max_tp=Number(1, MAX_DEGREE, integer=True), weights=Many(), kv_dtypes=Many(),
                 batches=Many(Number(1, MAX_BATCH, integer=True)), speculation=Many(Spec("SpecOption"), empty=True))
def plan_space(model: ModelSpec, gpus, budget: int, *, tps=None, pps=None, max_tp: int = DEFAULT_MAX_TP,
               weights=DEFAULT_WEIGHTS, kv_dtypes=DEFAULT_KV_DTYPES, batches=DEFAULT_BATCHES,
               speculation=(), reserve: float | None = None, eps=None, dp_attention: bool = False) -> PlanSpace:
    """The `PlanSpace` of `model` on the accelerators `gpus` with at most `budget` GPUs (module doc).

    `eps`: expert-parallel degrees to search for a MoE model (default: 1 and tp, the routed experts
    spread over each tensor-parallel group; a degree that is not 1 or a multiple of tp, or that needs
    more replicas than the budget holds, is left out as a split). `dp_attention`: each split of a MoE with
    tp > 1 and ep a multiple of tp is also searched with attention data parallel (`Deployment.dp_attention`).

    Raises InvalidValueError naming the parameter: no accelerator, a budget or degree < 1, an
    unknown weight format or KV dtype, a batch < 1, expert parallelism for a model without experts,
    a given tp or pp a draft model of `speculation` cannot take (`check_drafts`).

    Examples
    --------
    Llama-3-8B on up to 2 H100s: 24 groups (splits tp x pp by weight and K/V formats), ten batches each:

    >>> import llm_cost as lc
    >>> space = lc.plan_space(lc.load_model("llama-3-8b"), [lc.load_accelerator("h100-sxm")], 2)
    >>> len(space.groups), space.batches
    (24, (1, 2, 4, 8, 16, 32, 64, 128, 256, 512))
    >>> sorted({(group.deployment.tp, group.deployment.pp) for group in space.groups})
    [(1, 1), (1, 2), (2, 1)]
    """
    gpus = tuple(gpus)
    if not gpus:
        raise InvalidValueError("gpu: give at least one accelerator to search", params=("gpu",))
    check_number("gpus", budget, low=1, high=MAX_BUDGET, integer=True)
    budget = int(budget)
    check_number("max_tp", max_tp, low=1, high=MAX_DEGREE, integer=True)
    given = tuple(name for name, degrees in (("tp", tps), ("pp", pps)) if degrees)  # what the user narrowed
    tps = tuple(check_all("tps", tps, low=1, high=MAX_DEGREE, integer=True)) if tps else powers_of_two(
        min(budget, max_tp))
    pps = tuple(check_all("pps", pps, low=1, high=MAX_DEGREE, integer=True)) if pps else powers_of_two(budget)
    if eps:
        eps = tuple(check_all("eps", eps, low=1, high=MAX_DEGREE, integer=True))
        if any(degree > 1 for degree in eps) and not model.is_moe:
            raise InvalidValueError(f"eps: expert parallelism needs routed experts; {model.name} has none",
                                    params=("eps",))
    # formats or their names (any case), each once
    formats = list(dict.fromkeys(fmt if isinstance(fmt, WeightFormat) else weight_format(str(fmt).lower())
                                 for fmt in weights))
    if not formats:
        raise InvalidValueError("weights: give at least one weight format", params=("weights",))
    kvs = tuple(dict.fromkeys(check_choice("kv_dtype", str(dtype).lower(), tuple(KV_DTYPES)) for dtype in kv_dtypes))
    if not kvs:
        raise InvalidValueError("kv_dtype: give at least one KV dtype", params=("kv_dtype",))
    batches = tuple(sorted(set(int(batch)
                               for batch in check_all("batches", batches, low=1, high=MAX_BATCH, integer=True))))
    if not batches:
        raise InvalidValueError("batches: give at least one batch", params=("batches",))
    speculation = tuple(speculation)
    variants = 1 + sum(len(option.gammas) for option in speculation)
    per_group = len(batches) * variants
    from llm_cost.parallel import check_deployment

    groups, left_out = [], {"split": 0, "format": 0}
    extra = {} if reserve is None else {"reserve": reserve}
    for gpu in gpus:
        for tp in tps:
            for pp in pps:
                if tp * pp > budget:
                    continue
                replicas = budget // (tp * pp)
                for ep, fmt, kv in product(_eps(model, tp, eps), formats, kvs):
                    deployment = Deployment(tp=tp, pp=pp, ep=ep, gpus=replicas * tp * pp, kv_dtype=kv, **extra)
                    try:
                        check_deployment(model, gpu, deployment)
                        check_drafts(speculation, gpu, deployment, given=given)
                    except SplitRefused:
                        raise
                    except InvalidValueError:
                        left_out["split"] += per_group
                        continue
                    if not fmt.checkpoint and gpu.compute_precision(fmt.compute) != fmt.compute:
                        left_out["format"] += per_group
                        continue
                    groups.append(Group(gpu, deployment, fmt))
                    if dp_attention and tp > 1 and ep > 1 and ep % tp == 0:
                        groups.append(Group(gpu, replace(deployment, dp_attention=True), fmt))
    return PlanSpace(model=model, budget=budget, groups=tuple(groups), batches=batches, speculation=speculation,
                     left_out=left_out)


def check_drafts(speculation, gpu, deployment: Deployment, *, given=()) -> None:
    """Each draft model of `speculation` on the target's `deployment` (`speculative.fit.draft_deployment_for`:
    the same tp and pp): InvalidValueError when one cannot take it (pp past its layers, tp not dividing
    its heads), the split left out; SplitRefused (not left out: the plan refuses) when the degree at
    fault is one the user gave (`given`: "tp", "pp"), naming the draft."""
    from llm_cost.parallel import check_deployment
    from llm_cost.speculative.fit import draft_deployment_for

    for draft in dict.fromkeys(option.draft for option in speculation if option.draft is not None):
        try:
            check_deployment(draft, gpu, draft_deployment_for(draft, deployment))
        except InvalidValueError as err:
            if any(param in given for param in err.params):
                message = str(err).replace("the model's", f"the draft {draft.name}'s")
                if message == str(err):
                    message += f" (for the draft {draft.name}, on the target's split)"
                raise SplitRefused(message, params=err.params) from None
            raise


class SplitRefused(InvalidValueError):
    """A degree the user gave that a draft model cannot take: the plan refuses it, not leaves it out."""


def _eps(model: ModelSpec, tp: int, eps) -> tuple:
    """The expert-parallel degrees searched at `tp`: the given ones, else 1 and tp for a MoE model."""
    if eps:
        return tuple(dict.fromkeys(int(degree) for degree in eps))
    return tuple(dict.fromkeys((1, tp))) if model.is_moe else (1,)

