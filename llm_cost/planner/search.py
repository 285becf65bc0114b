"""Every configuration of a `PlanSpace` evaluated at once: the `request` time model, vectorised.

Per group (an accelerator, a deployment, a weight format: one GPU's `PassCost`) the batches and
speculation variants are numpy arrays, and one `PassCost.step` call times them all:

    TTFT      = T(B x ISL rows, B sequences, context 0)                 (the prefill: `requests.phases.prefill_s`)
    decode    = sum over j = 0 .. OSL - 2 of T(B r rows, B, ISL + j)     (r = 1; verification r = gamma + 1)
    spec      = sum of (gamma t_draft + T_verify) / E per token          (`requests.request`'s mean field)

The sum over the OSL - 1 contexts is `requests.phases.decode_sum`, the request's own: exact and
closed-form where the memory and compute seconds of a pass are linear in its context (two lines that
cross at most once, `sum_of_max`), O(1) per configuration instead of O(OSL); windowed layers bend the
lines, and their models are summed over every context (exact, slower).

The fit is `requests.request_fit`'s: weights + the K/V of ISL + OSL tokens per sequence + the larger
workspace of the prefill and the (verification) decode step, plus a draft model's weights and K/V
when one shares the GPUs (`speculative.verification_fit`'s rule), or the MTP layers' weights and K/V
when they speculate (`speculative.fit.mtp_memory`: vLLM loads them only then).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llm_cost.errors import InvalidValueError, check_number
from llm_cost.parallel import deployed_cost, deployed_pass_cost, deployment_fit, workspace_bytes
from llm_cost.planner.space import MIN_OSL, PlanSpace
from llm_cost.requests import gpu_seconds
from llm_cost.requests.phases import decode_sum, prefill_s
from llm_cost.catalog.arguments import MAX_TOKENS
from llm_cost.speculative.closed_forms import expected_tokens_unchecked
from llm_cost.roofline import PassCost
from llm_cost.specs import BF16, Profile
from llm_cost.specs.deployment import attention_batch_for, busiest_rank_sequences
from llm_cost.catalog.arguments import check_arguments



@dataclass(frozen=True)
class Variant:
    """One decoding variant: none, a draft (gamma, alpha, `c` the draft's cost ratio, or a draft model) or MTP."""

    kind: str  # "none", "draft", "mtp"
    gamma: int = 0
    alpha: float | None = None
    c: float | None = None
    draft: object = None

    @property
    def rows_per_sequence(self) -> int:
        return self.gamma + 1


@dataclass(frozen=True)
class Grid:
    """Every configuration's numbers, flat numpy arrays of one length (SI); `group` indexes
    `space.groups`, `variant` indexes `variants`; `c` is the draft's cost ratio."""

    space: PlanSpace
    variants: tuple[Variant, ...]
    isl: int
    osl: int
    profile: Profile
    group: np.ndarray
    variant: np.ndarray
    batch: np.ndarray
    ttft_s: np.ndarray
    decode_s: np.ndarray  # the OSL - 1 decode tokens, summed
    c: np.ndarray  # the draft's cost ratio (MTP: its step over the model's at context 0); nan otherwise
    fits: np.ndarray
    needed_bytes: np.ndarray  # one GPU's peak memory
    available_bytes: np.ndarray
    decode_gpu_s: np.ndarray  # GPU-seconds of the decode (`requests.gpu_seconds`)
    output_tokens_per_s_per_gpu: np.ndarray
    output_tokens_per_s: np.ndarray  # all the deployment's GPUs
    prefill_fits: np.ndarray  # weights + the K/V of ISL tokens + the prefill's workspace (a prefill pool)

    def __len__(self) -> int:
        return len(self.batch)

    @property
    def tpot_s(self) -> np.ndarray:
        return self.decode_s / (self.osl - 1) if self.osl > 1 else np.zeros_like(self.decode_s)

    @property
    def e2e_s(self) -> np.ndarray:
        return self.ttft_s + self.decode_s

    @property
    def output_tokens_per_s_per_user(self) -> np.ndarray:
        return self.osl / self.e2e_s


def _full(x, shape):
    """`x` as an array of `shape` (a view when it is a number or smaller)."""
    if type(x) is np.ndarray and x.shape == shape:
        return x
    return np.broadcast_to(x, shape)


def variants_of(space: PlanSpace) -> tuple[Variant, ...]:
    """No speculation, then each option's gammas."""
    out = [Variant("none")]
    for option in space.speculation:
        for gamma in option.gammas:
            out.append(Variant(option.kind, gamma=int(gamma), alpha=option.alpha, c=option.c, draft=option.draft))
    return tuple(out)


def bound_of(grid: "Grid", i: int) -> str:
    """The bound (memory, compute, communication) of configuration `i`'s last decode (or verification)
    step: `PassCost.step(...).bound` at context ISL + OSL - 2, evaluated for the rows printed only."""
    grp, variant = grid.space.groups[grid.group[i]], grid.variants[grid.variant[i]]
    cost = deployed_pass_cost(grid.space.model, grp.gpu, grid.profile, grp.weights, grp.deployment)
    batch = float(grid.batch[i])
    return str(cost.step(batch * variant.rows_per_sequence, batch, float(grid.isl + grid.osl - 2),
                         count_kv=grid.profile.count_kv).bound)


@check_arguments()
def evaluate(space: PlanSpace, profile: Profile, *, isl: int, osl: int) -> Grid:
    """Every configuration of `space` for requests of `isl` prompt and `osl` output tokens (module doc).

    Examples
    --------
    The 240 configurations of Llama-3-8B on up to 2 H100s (lecture preset), 1,024-token prompts and
    128-token outputs: 225 fit, the fastest first token 8.84 ms, the fastest user 519.5 tokens/s:

    >>> import llm_cost as lc
    >>> space = lc.plan_space(lc.load_model("llama-3-8b"), [lc.load_accelerator("h100-sxm")], 2)
    >>> grid = lc.evaluate(space, lc.PRESETS["lecture"], isl=1024, osl=128)
    >>> len(grid), int(grid.fits.sum()), round(float(grid.ttft_s.min()) * 1e3, 2)
    (240, 225, 8.84)
    >>> round(float(grid.output_tokens_per_s_per_user.max()), 1)
    519.5
    """
    from llm_cost.speculative.fit import draft_deployment_for, mtp_memory

    model, count_kv = space.model, profile.count_kv
    check_number("isl", isl, low=1, high=MAX_TOKENS, integer=True)
    check_number("osl", osl, low=MIN_OSL, high=MAX_TOKENS, integer=True)
    if model.max_position_embeddings and isl > model.max_position_embeddings:
        raise InvalidValueError(f"isl must be at most the model's context of {model.max_position_embeddings} "
                                f"tokens, got {isl}", params=("isl",))
    isl, osl = int(isl), int(osl)
    variants = variants_of(space)
    batches = np.asarray(space.batches, dtype=float)
    nb, nv = len(batches), len(variants)
    rs = sorted({variant.rows_per_sequence for variant in variants})
    r_index = {rows: index for index, rows in enumerate(rs)}
    steps = osl - 1  # decode steps (>= 1)
    e_of, gam, rix, c_set, c_of, mtp, draft_models = _variant_columns(variants, r_index)
    groups, ng = space.groups, len(space.groups)
    base_costs, fits_of, available_of, workspaces = {}, {}, {}, {}
    ttft = np.empty((ng, nb))
    sums = np.empty((ng, len(rs), nb))  # the decode's seconds, summed over its `steps` contexts (`decode_sum`)
    per_s = np.empty(ng)  # GPU-seconds per second of a batch's life
    draft_sums = {name: np.empty((ng, nb)) for name in draft_models}
    mtp_c = np.full((ng, nb), np.nan)
    weight_b, kv_b, pre_kv_b, avail = np.empty(ng), np.empty(ng), np.empty(ng), np.empty(ng)
    extra_w, extra_kv = np.zeros((ng, nv, 1)), np.zeros((ng, nv, 1))
    ws, pre_ws = np.empty((ng, nv, nb)), np.empty((ng, nb))

    verify_rows = np.asarray(rs, dtype=float)[:, None] * batches  # (r, B): r rows per sequence

    for gi, grp in enumerate(groups):
        gpu, dep, weights = grp.gpu, grp.deployment.following(profile), grp.weights  # fits on the profile's memory
        key = (gpu.name, weights.name, dep.kv_dtype)
        if key not in base_costs:  # one GPU's coefficients; the deployment's share is `deployed_cost`'s
            base_costs[key] = PassCost.from_specs(model, gpu, profile, weights, dep.kv_bytes_per_element)
        cost = deployed_cost(base_costs[key], model, gpu, weights, dep)  # = `deployed_pass_cost`
        ttft[gi] = _full(prefill_s(cost, batches, isl, None, count_kv)[0]  # the request's prefill, + the engine's
                         + profile.ttft_overhead_s, (nb,))  # time to first token beyond it, as `request`
        sums[gi] = decode_sum(cost, verify_rows, batches, isl, steps, count_kv=count_kv)
        per_s[gi] = gpu_seconds(1.0, dep)  # GPU-seconds are linear in seconds
        if mtp.any():
            from llm_cost.speculative.mtp import mtp_step_time

            plain = cost.step(batches, batches, 0.0, count_kv=count_kv).step_time_s
            mtp_c[gi] = mtp_step_time(model, gpu, profile, batch=batches, deployment=dep).step_time_s / plain
            # speculating with MTP loads its layers (weights and their K/V), as a draft model's
            extra_w[gi, mtp], extra_kv[gi, mtp] = mtp_memory(model, weights, dep, context=isl + osl - 1)
        for name, (draft, at) in draft_models.items():
            on = draft_deployment_for(draft, dep)
            dcost = deployed_pass_cost(draft, gpu, profile, BF16, on)
            draft_sums[name][gi] = decode_sum(dcost, batches, batches, isl, steps, count_kv=count_kv)
            own = _draft_fit(draft, gpu, on, context=isl + osl - 1, fits_of=fits_of)
            extra_w[gi, at], extra_kv[gi, at] = own.weight_bytes, own.kv_bytes
        weight_b[gi], kv_b[gi], pre_kv_b[gi], avail[gi], (ws[gi], pre_ws[gi]) = _group_fit(
            model, gpu, dep, weights, space=space, variants=variants, isl=isl, osl=osl, fits_of=fits_of,
            available_of=available_of, workspaces=workspaces)

    base = sums[:, r_index[1]]
    draft_sum = c_of[None, :, None] * base[:, None, :]  # t_draft = c T(B) (0 without speculation: gamma 0)
    cs = np.broadcast_to(np.where(c_set, c_of, np.nan)[None, :, None], (ng, nv, nb)).copy()
    if mtp.any():
        draft_sum[:, mtp] = (mtp_c * base)[:, None, :]
        cs[:, mtp] = mtp_c[:, None, :]
    for name, (draft, at) in draft_models.items():
        draft_sum[:, at] = draft_sums[name][:, None, :]
    decode = (gam[None, :, None] * draft_sum + sums[:, rix]) / e_of[None, :, None]
    b3 = batches[None, None, :]
    held = _held_sequences(groups, batches)
    needed = weight_b[:, None, None] + extra_w + held[:, None, :] * kv_b[:, None, None] + b3 * extra_kv + ws
    context_ok = not model.max_position_embeddings or isl + osl <= model.max_position_embeddings
    fits = (needed <= avail[:, None, None]) & context_ok
    pre_fits = (weight_b[:, None] + held * pre_kv_b[:, None] + pre_ws <= avail[:, None]) & context_ok
    e2e = ttft[:, None, :] + decode
    per_gpu = b3 * osl / (e2e * per_s[:, None, None])
    return _flat_grid(space, variants, profile, isl=isl, osl=osl, ttft=ttft, decode=decode, cs=cs, fits=fits,
                      needed=needed, avail=avail, per_s=per_s, per_gpu=per_gpu, pre_fits=pre_fits)


def _variant_columns(variants: tuple[Variant, ...], r_index: dict) -> tuple:
    """Per variant, as arrays: E, the expected tokens per round (1 without speculation; Leviathan's
    (1 - alpha^(gamma + 1)) / (1 - alpha)), gamma, the index of its rows per sequence in `r_index`,
    whether its draft cost c is given (a draft without a model), that c (0 otherwise), whether it is
    MTP; and the draft models, {name: (spec, mask of its variants)}."""
    e_of = np.array([1.0 if variant.kind == "none" else float(expected_tokens_unchecked(
                         np.array(variant.alpha), np.array(float(variant.gamma))))
                     for variant in variants])
    gam = np.array([float(variant.gamma) for variant in variants])
    rix = np.array([r_index[variant.rows_per_sequence] for variant in variants])
    c_set = np.array([variant.kind == "draft" and variant.draft is None for variant in variants])
    c_of = np.array([variant.c if c_set[index] else 0.0 for index, variant in enumerate(variants)])
    mtp = np.array([variant.kind == "mtp" for variant in variants])
    draft_models = {}  # name -> (spec, mask of its variants)
    for index, variant in enumerate(variants):
        if variant.draft is not None:
            spec, at = draft_models.setdefault(variant.draft.name,
                                               (variant.draft, np.zeros(len(variants), dtype=bool)))
            at[index] = True
    return e_of, gam, rix, c_set, c_of, mtp, draft_models


def _draft_fit(draft, gpu, on, *, context: int, fits_of: dict):
    """A draft model's fit (BF16 weights, the K/V of `context` tokens per sequence) on its deployment
    `on` beside the target (`speculative.verification_fit`'s rule), cached in `fits_of`."""
    own = fits_of.get((draft.name, gpu.name, on))
    if own is None:
        own = fits_of[draft.name, gpu.name, on] = deployment_fit(draft, gpu, on, weights=BF16, rows=1, batch=1,
                                                                 context=context)
    return own


def _held_sequences(groups, batches):
    """(group, batch): the sequences whose K/V one GPU holds, in units of the group's average share
    (`Deployment.attention_batch`: the batch, or under dp-attention the busiest rank's ceil(B / dp) x dp)."""
    dp = np.array([group.deployment.attention_dp for group in groups], dtype=float)[:, None]
    return attention_batch_for(batches[None, :], dp)


def _group_fit(model, gpu, dep, weights, *, space: PlanSpace, variants, isl: int, osl: int, fits_of: dict,
               available_of: dict, workspaces: dict) -> tuple:
    """One group's fit terms, bytes: (weights, K/V of ISL + OSL - 1 tokens per sequence, K/V of the
    prefill per sequence, memory available on the chip, (workspace per variant and batch, the
    prefill's per batch)). Weights and K/V depend on the split, not the chip; the memory on the chip;
    the workspace is the larger of the prefill's and the (verification) step's. Cached in the dicts."""
    split = (dep.tp, dep.pp, dep.ep, dep.dp_attention, weights.name, dep.kv_dtype)
    if split not in fits_of:
        fits_of[split] = (deployment_fit(model, gpu, dep, weights=weights, rows=1, batch=1, context=isl + osl - 1),
                          deployment_fit(model, gpu, dep, weights=weights, rows=isl, batch=1, context=0))
    end_fit, pre_fit = fits_of[split]
    one = dep.attention_batch(1)  # data-parallel attention: the fit at batch 1 holds dp x the average share
    if gpu.name not in available_of:
        available_of[gpu.name] = deployment_fit(model, gpu, dep, weights=weights, rows=1, batch=1,
                                                context=0).available_bytes
    at = (dep.attention_tp, dep.attention_dp)
    if at not in workspaces:  # the larger workspace of the prefill and the (verification) step
        tp, dp = at  # under dp-attention the busiest rank's ceil(b / dp) sequences, whole
        ranks = [busiest_rank_sequences(batch, dp) for batch in space.batches]
        pre = [workspace_bytes(model, rank * isl, rank, tp) for rank in ranks]
        workspaces[at] = (np.array([[max(prefill, workspace_bytes(model, rank * variant.rows_per_sequence, rank, tp))
                                     for rank, prefill in zip(ranks, pre)] for variant in variants]),
                          np.array(pre))
    return (end_fit.weight_bytes, end_fit.kv_bytes / one, pre_fit.kv_bytes / one, available_of[gpu.name],
            workspaces[at])


def _flat_grid(space: PlanSpace, variants, profile: Profile, *, isl: int, osl: int, ttft, decode, cs, fits,
               needed, avail, per_s, per_gpu, pre_fits) -> Grid:
    """The (group, variant, batch) arrays flattened into a `Grid`; the deployment's tokens per second
    are one GPU's times its GPUs."""
    ng, nv, nb = decode.shape
    b3 = np.asarray(space.batches, dtype=float)[None, None, :]
    total_gpus = np.array([group.deployment.total_gpus for group in space.groups])
    shape = (ng, nv, nb)
    cat = {
        "group": np.broadcast_to(np.arange(ng)[:, None, None], shape).ravel(),
        "variant": np.broadcast_to(np.arange(nv)[None, :, None], shape).ravel(),
        "batch": np.broadcast_to(b3, shape).ravel(),
        "ttft": np.broadcast_to(ttft[:, None, :], shape).ravel(),
        "decode": decode.ravel(), "c": cs.ravel(), "fits": fits.ravel(), "needed": needed.ravel(),
        "available": np.broadcast_to(avail[:, None, None], shape).ravel(),
        "gpu_s": (decode * per_s[:, None, None]).ravel(), "per_gpu": per_gpu.ravel(),
        "total": (per_gpu * total_gpus[:, None, None]).ravel(),
        "prefill_fits": np.broadcast_to(pre_fits[:, None, :], shape).ravel(),
    }
    return Grid(space=space, variants=variants, isl=isl, osl=osl, profile=profile,
                group=cat["group"].astype(int), variant=cat["variant"].astype(int), batch=cat["batch"],
                ttft_s=cat["ttft"], decode_s=cat["decode"], c=cat["c"], fits=cat["fits"].astype(bool),
                needed_bytes=cat["needed"], available_bytes=cat["available"], decode_gpu_s=cat["gpu_s"],
                output_tokens_per_s_per_gpu=cat["per_gpu"], output_tokens_per_s=cat["total"],
                prefill_fits=cat["prefill_fits"].astype(bool))
