"""Every configuration of a `PlanSpace` evaluated at once: the `request` time model, vectorised.

Per group (an accelerator, a deployment, a weight format: one GPU's `PassCost`) the batches and
speculation variants are numpy arrays, and one `PassCost.step` call times them all:

    TTFT      = T(B x ISL rows, B sequences, context 0)                 (the prefill: `requests.phases`)
    decode    = sum over j = 0 .. OSL - 2 of T(B r rows, B, ISL + j)     (r = 1; verification r = gamma + 1)
    spec      = sum of (gamma t_draft + T_verify) / E per token          (`requests.request`'s mean field)

The sum over the OSL - 1 contexts is exact and closed-form: on a model without windowed layers the
memory and compute seconds of a pass are linear in its context, so their max is two lines that
cross at most once (`sum_of_max`), and a step is stages x max + (collectives + fixed). It needs
`PassCost.step` at the first and last context only: O(1) per configuration instead of O(OSL).
Windowed layers bend the lines; their models are summed over every context (exact, slower).

The fit is `requests.request_fit`'s: weights + the K/V of ISL + OSL tokens per sequence + the larger
workspace of the prefill and the (verification) decode step, plus a draft model's weights and K/V
when one shares the GPUs (`speculative.verification_fit`'s rule).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llm_cost.errors import InvalidValueError, check_number
from llm_cost.parallel import deployed_pass_cost, deployment_fit, workspace_bytes
from llm_cost.plan.space import PlanSpace
from llm_cost.requests import gpu_seconds
from llm_cost.requests.request import MAX_TOKENS
from llm_cost.speculative.closed_forms import expected_tokens_unchecked
from llm_cost.specs import BF16, Profile


@dataclass(frozen=True)
class Variant:
    """One decoding variant: none, a draft (gamma, alpha, c or a draft model) or MTP."""

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
    `space.groups`, `variant` indexes `variants`."""

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
    bound: np.ndarray  # of the last decode (or verification) step; the prefill's when OSL = 1
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


def sum_of_max(m0, m1, c0, c1, n: int):
    r"""Sum over j = 0 .. n - 1 of max(M_j, C_j) for M and C linear in j, given at j = 0 and n - 1.

    D = M - C is linear, so the points where M is the larger are a prefix (D falling) or a suffix
    (D rising) of the n; each part is an arithmetic series:

    .. math:: \sum_{j=a}^{b} L_j = (b - a + 1) L_0 + \Delta L\,(a + b)(b - a + 1) / 2

    Element-wise over numpy arrays (broadcast). n = 1: max(M_0, C_0).
    """
    m0, m1, c0, c1 = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (m0, m1, c0, c1)))
    if n == 1:
        return np.maximum(m0, c0)
    dm, dc = (m1 - m0) / (n - 1), (c1 - c0) / (n - 1)
    d0, d1 = m0 - c0, m1 - c1
    with np.errstate(divide="ignore", invalid="ignore"):
        cross = np.where(d0 != d1, d0 / (d0 - d1) * (n - 1), 0.0)  # where D = 0, in steps
    falling, rising = d1 < d0, d1 > d0
    # points where memory is the larger: a prefix [0, p) when falling, a suffix [n - s, n) when rising
    prefix = np.where(falling, np.clip(np.floor(cross) + 1, 0, n), np.where(rising, 0, np.where(d0 >= 0, n, 0)))
    suffix = np.where(rising, np.clip(n - np.ceil(cross), 0, n), 0)

    def head(l0, dl, k):  # j in [0, k)
        return k * l0 + dl * (k - 1) * k / 2

    def tail(l0, dl, k):  # j in [n - k, n)
        return k * l0 + dl * k * (2 * n - k - 1) / 2

    all_c = head(c0, dc, n)
    memory = head(m0, dm, prefix) + tail(m0, dm, suffix)
    compute = all_c - head(c0, dc, prefix) - tail(c0, dc, suffix)
    return memory + compute


def variants_of(space: PlanSpace) -> tuple[Variant, ...]:
    """No speculation, then each option's gammas."""
    out = [Variant("none")]
    for s in space.speculation:
        for g in s.gammas:
            out.append(Variant(s.kind, gamma=int(g), alpha=s.alpha, c=s.c, draft=s.draft))
    return tuple(out)


def _decode_sums(cost, count_kv: bool, batches, rows_per_seq, isl: int, n: int):
    """(sum of the n step times at contexts isl .. isl + n - 1, bound at the last) for every
    (r, B): arrays (len(rows_per_seq), len(batches))."""
    b = np.broadcast_to(batches, (len(rows_per_seq), len(batches)))
    rows = np.asarray(rows_per_seq, dtype=float)[:, None] * b
    if cost.kv_windows and count_kv and n > 1:  # windowed layers: not linear in the context
        contexts = isl + np.arange(n, dtype=float)
        t = cost.step(rows[..., None], b[..., None], contexts, count_kv=count_kv)
        total = np.broadcast_to(t.total_s, rows.shape + (n,))
        return total.sum(axis=-1), np.broadcast_to(t.bound, rows.shape + (n,))[..., -1]
    ends = np.array([isl, isl + n - 1], dtype=float)[:, None, None]
    t = cost.step(rows, b, ends, count_kv=count_kv)
    shape = (2,) + rows.shape
    total = np.broadcast_to(t.total_s, shape)
    mem, comp = np.broadcast_to(t.memory_s, shape), np.broadcast_to(t.compute_s, shape)
    longest = sum_of_max(mem[0], mem[1], comp[0], comp[1], n)
    first_max = np.maximum(mem[0], comp[0])
    # each step is stages x max(memory, compute) + (collectives + fixed): the same addend at every context
    summed = n * total[0] + cost.stages * (longest - n * first_max)
    return summed, np.broadcast_to(t.bound, shape)[1]


def evaluate(space: PlanSpace, profile: Profile, *, isl: int, osl: int) -> Grid:
    """Every configuration of `space` for requests of `isl` prompt and `osl` output tokens (module doc)."""
    from llm_cost.speculative.batched import draft_deployment_for

    model, count_kv = space.model, profile.count_kv
    check_number("isl", isl, low=1, high=MAX_TOKENS, integer=True)
    check_number("osl", osl, low=2, high=MAX_TOKENS, integer=True)  # a plan ranks decoding: one token at least
    if model.max_position_embeddings and isl > model.max_position_embeddings:
        raise InvalidValueError(f"isl must be at most the model's context of {model.max_position_embeddings} "
                                f"tokens, got {isl}", params=("isl",))
    isl, osl = int(isl), int(osl)
    variants = variants_of(space)
    batches = np.asarray(space.batches, dtype=float)
    nb, nv = len(batches), len(variants)
    rs = sorted({v.rows_per_sequence for v in variants})
    r_index = {r: i for i, r in enumerate(rs)}
    n = osl - 1
    e_of = [1.0 if v.kind == "none" else float(expected_tokens_unchecked(np.array(v.alpha), np.array(float(v.gamma))))
            for v in variants]
    workspaces = {}  # tp -> (variants, batches) workspace bytes; ("prefill", tp) -> (batches,)

    out = {k: [] for k in ("group", "variant", "batch", "ttft", "decode", "c", "fits", "needed", "available",
                           "gpu_s", "per_gpu", "total", "bound", "prefill_fits")}
    var_index = np.repeat(np.arange(nv), nb)
    batch_flat = np.tile(batches, nv)
    for gi, grp in enumerate(space.groups):
        gpu, dep, w = grp.gpu, grp.deployment, grp.weights
        cost = deployed_pass_cost(model, gpu, profile, w, dep)
        pre = cost.step(batches * isl, batches, 0.0, count_kv=count_kv)
        ttft = np.broadcast_to(pre.total_s, (nb,))
        decode = np.zeros((nv, nb))
        cs = np.full((nv, nb), np.nan)
        bound = np.empty((nv, nb), dtype=object)
        if n >= 1:
            sums, bounds = _decode_sums(cost, count_kv, batches, rs, isl, n)
            base = sums[r_index[1]]
            drafts, mtp_c = {}, None
            for vi, v in enumerate(variants):
                ri = r_index[v.rows_per_sequence]
                bound[vi] = bounds[ri]
                if v.kind == "none":
                    decode[vi] = base
                    continue
                if v.kind == "mtp":
                    if mtp_c is None:
                        from llm_cost.speculative.mtp import mtp_step_time

                        plain = cost.step(batches, batches, 0.0, count_kv=count_kv).total_s
                        mtp_c = mtp_step_time(model, gpu, profile, batch=batches, deployment=dep).total_s / plain
                    cs[vi] = mtp_c
                    draft_sum = mtp_c * base
                elif v.draft is None:
                    cs[vi] = v.c
                    draft_sum = v.c * base
                else:
                    if v.draft.name not in drafts:
                        on = draft_deployment_for(v.draft, dep)
                        dcost = deployed_pass_cost(v.draft, gpu, profile, BF16, on)
                        drafts[v.draft.name] = _decode_sums(dcost, count_kv, batches, [1], isl, n)[0][0]
                    draft_sum = drafts[v.draft.name]
                decode[vi] = (v.gamma * draft_sum + sums[ri]) / e_of[vi]
        else:
            bound[:] = np.broadcast_to(pre.bound, (nb,))
        fit1 = deployment_fit(model, gpu, dep, weights=w, rows=1, batch=1, context=isl + osl - 1)
        if dep.tp not in workspaces:  # the larger workspace of the prefill and the decode step, per variant
            workspaces[dep.tp] = np.array([[max(workspace_bytes(model, b * isl, b, dep.tp),
                                                workspace_bytes(model, b * v.rows_per_sequence, b, dep.tp))
                                            for b in space.batches] for v in variants])
        extra_w, extra_kv = np.zeros((nv, 1)), np.zeros((nv, 1))
        for vi, v in enumerate(variants):
            if v.kind == "draft" and v.draft is not None:  # the draft's weights and K/V share the GPUs
                own = deployment_fit(v.draft, gpu, draft_deployment_for(v.draft, dep), weights=BF16, rows=1, batch=1,
                                     context=isl + osl - 1)
                extra_w[vi], extra_kv[vi] = own.weight_bytes, own.kv_bytes
        needed = fit1.weight_bytes + extra_w + batches[None, :] * (fit1.kv_bytes + extra_kv) + workspaces[dep.tp]
        fits = (needed <= fit1.available_bytes) & fit1.fits_context
        pre_fit = deployment_fit(model, gpu, dep, weights=w, rows=isl, batch=1, context=0)
        if ("prefill", dep.tp) not in workspaces:
            workspaces["prefill", dep.tp] = np.array([workspace_bytes(model, b * isl, b, dep.tp) for b in space.batches])
        pre_needed = pre_fit.weight_bytes + batches * pre_fit.kv_bytes + workspaces["prefill", dep.tp]
        pre_fits = (pre_needed <= pre_fit.available_bytes) & pre_fit.fits_context
        e2e = ttft[None, :] + decode
        per_gpu = batches[None, :] * osl / gpu_seconds(e2e, dep)
        out["group"].append(np.full(nv * nb, gi))
        out["variant"].append(var_index)
        out["batch"].append(batch_flat)
        out["ttft"].append(np.tile(ttft, nv))
        out["decode"].append(decode.ravel())
        out["c"].append(cs.ravel())
        out["fits"].append(fits.ravel())
        out["needed"].append(needed.ravel())
        out["available"].append(np.full(nv * nb, fit1.available_bytes))
        out["gpu_s"].append(gpu_seconds(decode, dep).ravel())
        out["per_gpu"].append(per_gpu.ravel())
        out["total"].append(per_gpu.ravel() * dep.total_gpus)
        out["bound"].append(bound.ravel())
        out["prefill_fits"].append(np.tile(pre_fits, nv))
    cat = {k: (np.concatenate(v) if v else np.zeros(0)) for k, v in out.items()}
    return Grid(space=space, variants=variants, isl=isl, osl=osl, profile=profile,
                group=cat["group"].astype(int), variant=cat["variant"].astype(int), batch=cat["batch"],
                ttft_s=cat["ttft"], decode_s=cat["decode"], c=cat["c"], fits=cat["fits"].astype(bool),
                needed_bytes=cat["needed"], available_bytes=cat["available"], decode_gpu_s=cat["gpu_s"],
                output_tokens_per_s_per_gpu=cat["per_gpu"], output_tokens_per_s=cat["total"], bound=cat["bound"],
                prefill_fits=cat["prefill_fits"].astype(bool))
