"""Result rows for the CLI's `spec`, `gamma`, `tree` and `leviathan` commands.

Flat dicts, SI values, the unit in the key (`base_step_s`); errors name the parameters
(`alphas must be in [0, 1], got 1.5`), which the CLI shows as its flags. Kept out of the
commands so they can be tested and reused without Typer.

`spec` and `tree` rows of a deployment (default one GPU) carry `report.deployment_rows`' keys:
the fit of the verification pass at the row's batch and context (the draft model's weights and
K/V included), the verification step's collectives, and tokens per second of the round.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dataclasses import replace
from itertools import product

import numpy as np

from llm_cost.speculative.batched import ROOFLINE_GAMMA_MAX
from llm_cost.speculative.fit import draft_deployment_for, verification_fit
from llm_cost.speculative.inputs import GAMMA_MAX
from llm_cost.specs.profiles import ARTICLE_DRAFT
from llm_cost.errors import InvalidValueError, check_all, check_number
from llm_cost.specs import Accelerator, ModelSpec, Profile, WeightFormat
from llm_cost.specs.profiles import draft_profile_for
from llm_cost import speculative as speculative
from llm_cost.speculative import (VERIFY_COSTLY, TurningBatch, best_gamma, costly_verification_batch,
                                          roofline_speedup, turning_batch)
from llm_cost.specs.deployment import SINGLE_GPU, Deployment

if TYPE_CHECKING:  # the tree model loads in `tree_rows`: `spec` does not need it
    from llm_cost.speculative.trees import TopKHits

ARTICLE_MFU = 0.6  # the article's second column (the article §2.4)


def _alphas(values) -> list:
    return check_all("alphas", values, low=0, high=1)


def _gammas(values, low=0) -> list:
    return [int(gamma) for gamma in check_all("gammas", values, low=low, integer=True)]


def _costs(name: str, values) -> list:
    return check_all(name, values, low=0)


def _batches(values) -> list:
    return [int(batch) for batch in check_all("batches", values, low=1, integer=True)]


def mfu_values(profile: Profile, mfus) -> list:
    """The MFUs to show: as given, else the profile's own and 60% (the article's two columns)."""
    if mfus:
        return check_all("mfus", mfus, low=0, high=1, low_open=True)
    own = profile.compute_efficiency
    return [own] if own == ARTICLE_MFU else [own, ARTICLE_MFU]


def _turning_note(target: ModelSpec, gpu: Accelerator, prof, turn: TurningBatch, mfu: float, context: int,
                  weights: WeightFormat) -> str:
    """Where verification stops being free. A dense target: up to the turning batch. A MoE target
    turns compute-bound there too, but below it the gamma + 1 rows per sequence already read more
    experts than one row does, so verification is not free there either: say from which batch it
    costs over VERIFY_COSTLY decode steps, and what it costs at batch 1."""
    head = f"gamma {turn.gamma}, MFU {mfu:g}: verification"
    if not (target.is_moe and turn.gamma):
        return f"{head} free up to batch {turn.batch:.1f} (ridge rule {turn.ridge_estimate:.1f})"
    costly = costly_verification_batch(target, gpu, prof, gamma=turn.gamma, context=context, weights=weights)
    at_one = float(roofline_speedup(target, gpu, prof, alpha=0.0, gamma=turn.gamma, batch=1, c=0.0,
                                    context=context, weights=weights).verify_over_base)
    costs = (f"over {VERIFY_COSTLY:g}x from batch {round(costly, 1):g}" if costly < float("inf")
             else f"at most {VERIFY_COSTLY:g}x at any batch")
    return (f"{head} compute-bound from batch {turn.batch:.1f} (ridge rule {turn.ridge_estimate:.1f}); below it "
            f"verification still reads more experts: {at_one:.2f}x a decode step at batch 1, {costs}")


DEFAULT_ALPHAS = (0.8,)  # spec_rows' acceptance without alphas or taus (the article, §2.3)


def spec_rows(target: ModelSpec, gpu: Accelerator, profile: Profile, *, alphas=None, taus=None, gammas, batches,
              **grid) -> tuple[list[dict], str]:
    """`spec`'s rows and caption: `grid_rows` over the `alphas` (default `DEFAULT_ALPHAS`) and every gamma, or,
    with `taus` (mean accepted lengths, E tokens a round), per gamma over the alphas they give there
    (`speculative.tau.alpha_from_tau`: alpha depends on gamma), each row then carrying its `tau`; `grid`: the
    rest of `grid_rows`' keywords. The caption: what a decode and a verify step are, the turning notes, the
    gamma search (`_spec_caption`; the draft's memory in sequences of context + the first gamma + 1), and with
    `taus` the alphas solved."""
    if taus and alphas:
        raise InvalidValueError("alphas and taus exclude each other: give the acceptance rates or the mean accepted "
                                "lengths they are solved from", params=("alphas", "taus"))
    if not taus:
        rows, notes, twin, memory = grid_rows(target, gpu, profile, alphas=list(alphas or DEFAULT_ALPHAS),
                                              gammas=gammas, batches=batches, **grid)
        solved = []
    else:
        from llm_cost.speculative.tau import alpha_from_tau

        rows, notes, solved = [], [], []
        for gamma in _gammas(gammas):
            solved_alphas = [float(alpha_from_tau(tau, gamma)) for tau in check_all("taus", taus, low=1)]
            part, part_notes, twin, memory = grid_rows(target, gpu, profile, alphas=solved_alphas, gammas=[gamma],
                                                       batches=batches, **grid)
            for row in part:
                row["tau"] = taus[solved_alphas.index(row["alpha"])]
            solved += [f"tau {tau:g} at gamma {gamma}: alpha {alpha:.4f}" for tau, alpha in zip(taus, solved_alphas)]
            rows, notes = rows + part, notes + part_notes
    caption = _spec_caption(rows, notes, gamma_max=grid.get("gamma_max", ROOFLINE_GAMMA_MAX), twin=twin,
                            memory=memory, tokens=grid.get("context", 0) + _gammas(gammas)[0] + 1)
    caption = "decode step: one target pass over B rows; verify step: over B (gamma + 1) rows. " + caption
    return rows, ("alpha from tau (E tokens = tau): " + ", ".join(solved) + ". " + caption if solved else caption)


def grid_rows(target: ModelSpec, gpu: Accelerator, profile: Profile, *, alphas, gammas, batches,
              cs=None, draft: ModelSpec | None = None, draft_profile: Profile | None = None, mfus=None,
              context: int = 0, weights: WeightFormat, gamma_max: int = ROOFLINE_GAMMA_MAX,
              deployment: Deployment = SINGLE_GPU) -> tuple[list[dict], list[str], ModelSpec | None, object]:
    """One row per (alpha, gamma, c, batch, MFU): the roofline speedup, the best gamma there,
    and where verification stops being free; MoE targets also get their dense twin's speedup.
    (rows, the turning notes, the dense twin or None, the draft's `DraftMemory` or None).

    Each MFU in `mfus` (default: the profile's own and 0.6) replaces the compute efficiency of
    `profile` and of `draft_profile` (default `draft_profile_for(profile)`).

    On `deployment` the target and the draft run on one GPU's share (`roofline_speedup`); each row
    carries the deployment's keys (`deployment_fields`: the fit of the verification pass over
    batch x (gamma + 1) rows, the draft included; that pass's collectives; tokens per second of
    the round) and `gamma_skipped_unfit`, the gammas the best-gamma search left out there because
    their verification does not fit. The turning batch stays the one-GPU figure.

    `A`, `G`, `C` and `B`: the alphas, gammas, cost coefficients c and batches as arrays broadcast
    against each other (axes alpha, gamma, c, batch).
    """
    alphas, gammas, batches = _alphas(alphas), _gammas(gammas), _batches(batches)
    deployment = deployment.following(profile)  # fits on the profile's memory basis
    check_number("context", context, low=0, integer=True)
    check_number("gamma_max", gamma_max, low=1, high=1024, integer=True)  # one pass per gamma
    if draft is not None and cs:
        raise InvalidValueError("c and draft exclude each other: draft derives c from the roofline",
                                params=("c", "draft"))
    cs = [None] if draft is not None else _costs("cs", cs or [ARTICLE_DRAFT.c])
    if draft is not None and draft_profile is None:
        draft_profile = draft_profile_for(profile)
    from llm_cost.parallel import check_deployment, deployed_pass_cost
    from llm_cost.report.deployment_rows import deployment_fields

    check_deployment(target, gpu, deployment)
    on = draft_deployment_for(draft, deployment) if draft is not None else None
    if draft is not None:
        check_deployment(draft, gpu, on)
    A, G, C, B = (np.array(values, dtype=float) for values in (alphas, gammas, [0.0 if coefficient is None else coefficient for coefficient in cs], batches))
    A, G, C, B = A[:, None, None, None], G[None, :, None, None], C[None, None, :, None], B[None, None, None, :]
    rows, notes, fits = [], [], {}
    memory = None
    if draft is not None:  # the draft's weights and K/V beside the target's (the lecture §9.3)
        from llm_cost.serving.draft_memory import draft_memory

        memory = draft_memory(target, draft, gpu, weights=weights, deployment=deployment)
    for mfu_index, mfu in enumerate(mfu_values(profile, mfus)):
        prof = profile.with_(compute_efficiency=mfu)
        draft_kw = dict(c=C) if draft is None else dict(
            draft=draft, draft_profile=draft_profile.with_(compute_efficiency=mfu))
        grid = dict(alpha=A, gamma=G, batch=B, context=context, weights=weights, **draft_kw)
        speedups, tw, twin = _speedups(target, gpu, prof, deployment, grid)
        best = best_gamma(target, gpu, prof, alpha=A[:, 0], batch=B[:, 0], context=context, weights=weights,
                          gamma_max=gamma_max, deployment=deployment,
                          **{name: (value[:, 0] if name == "c" else value) for name, value in draft_kw.items()})
        cost = deployed_pass_cost(target, gpu, prof, weights, deployment)  # the verification's collectives
        turning = {gamma: turning_batch(target, gpu, prof, gamma=gamma, context=context, weights=weights) for gamma in gammas}
        notes += [_turning_note(target, gpu, prof, turn, mfu, context, weights) for turn in turning.values()]
        for (alpha_index, alpha), (gamma_index, gamma), (c_index, _), (batch_index, batch) in product(*(list(enumerate(axis)) for axis in (alphas, gammas, cs, batches))):
            at = (alpha_index, gamma_index, c_index, batch_index)
            row = {
                "model": target.name, "gpu": gpu.label, "gpu_name": gpu.name, "preset": prof.name, "weights": weights.name,
                "draft": draft.name if draft else None, "context": context,
                "batch": batch, "alpha": alpha, "gamma": gamma, "c": float(speedups.c[at]), "mfu": mfu,
                "expected_tokens": float(speedups.expected_tokens[at]),
                "base_step_s": float(speedups.base_s[at]), "verify_step_s": float(speedups.verify_s[at]),
                "draft_step_s": float(speedups.draft_s[at]), "round_s": float(speedups.round_s[at]),
                "verify_over_base": float(speedups.verify_over_base[at]),
                "verify_bound": "compute" if speedups.verify_compute_bound[at] else "memory",
                "speedup": float(speedups.speedup[at]), "tokens_per_s": float(speedups.tokens_per_s[at]),
                "gamma_opt": int(best.gamma[alpha_index, c_index, batch_index]), "speedup_opt": float(best.speedup[alpha_index, c_index, batch_index]),
                "turning_batch": turning[gamma].batch, "turning_batch_estimate": turning[gamma].ridge_estimate,
            }
            if tw is not None:
                row["dense_twin_speedup"] = float(tw.speedup[at])
            verify_rows = batch * (gamma + 1)
            fit = fits.get((batch, gamma))
            if fit is None:
                fit = fits[batch, gamma] = verification_fit(target, gpu, deployment, rows=verify_rows, batch=batch,
                                                            context=context, weights=weights, draft=draft,
                                                            draft_deployment=on)
            row.update(deployment_fields(target, gpu, deployment, weights, fit,
                                         comm_time_s=float(cost.comm_time_s(verify_rows)), step_s=row["round_s"],
                                         tokens=batch * row["expected_tokens"]))
            row.update(round_energy(cost, gpu, deployment.gpus_per_replica, row, count_kv=prof.count_kv))
            row["gamma_skipped_unfit"] = int(best.gamma_skipped_unfit[alpha_index, c_index, batch_index])
            row["draft_weight_bytes_per_gpu"] = memory.draft_weight_bytes if memory else None
            row["sequences_lost_to_draft"] = memory.sequences_lost(context + gamma + 1) if memory else None
            rows.append((at + (mfu_index,), row))  # each batch's MFUs side by side, like the article's table
    return [row for _, row in sorted(rows, key=lambda pair: pair[0])], notes, twin, memory


def round_energy(cost, gpu, gpus: int, row: dict, *, count_kv: bool) -> dict:
    """watts and joules_per_token (estimates, `roofline.energy.step_energy`) of one speculative round of
    a `spec` row on `gpus` GPUs: the verification pass over B (gamma + 1) rows, and gamma draft steps,
    each c times the target's decode step over B rows at that step's power (c = t_draft / T(B)):

        E = E_verify + gamma x c x E_decode;   J/token = E / (B x E[tokens]);   W = E / round_s

    None without the datasheet's board power (`verified_round_energy`)."""
    batch, gamma = float(row["batch"]), row["gamma"]
    return verified_round_energy(cost, gpu, gpus, batch=batch, verify_rows=batch * (gamma + 1), draft_steps=gamma, c=row["c"],
                                 context=float(row["context"]), round_s=row["round_s"],
                                 tokens=batch * row["expected_tokens"], count_kv=count_kv)


def verified_round_energy(cost, gpu, gpus: int, *, batch: float, verify_rows: float, draft_steps: float, c: float,
                          context: float, round_s: float, tokens: float, count_kv: bool) -> dict:
    """watts and joules_per_token of a round of `draft_steps` draft steps, each `c` times the target's decode
    step over `batch` rows, and one verification pass over `verify_rows` rows (`spec`: B (gamma + 1), gamma
    steps; `tree`: B (nodes + 1), depth levels), at `context`: E = E_verify + draft_steps x c x E_decode,
    W = E / round_s, J/token = E / tokens; None without the datasheet's board power."""
    from llm_cost.roofline.energy import has_power, step_energy

    if not has_power(gpu):
        return {"watts": None, "joules_per_token": None}
    verify = step_energy(cost.step(verify_rows, batch, context, count_kv=count_kv), gpu, gpus).joules
    decode = step_energy(cost.step(batch, batch, context, count_kv=count_kv), gpu, gpus).joules
    joules = verify + draft_steps * c * decode
    return {"watts": joules / round_s, "joules_per_token": joules / tokens}


def _speedups(target: ModelSpec, gpu: Accelerator, prof: Profile, deployment: Deployment, grid: dict):
    """The target's roofline speedups on `grid`, and for a MoE target its dense twin's and the twin.

    On one GPU with the default K/V dtype the twin comes from `moe_vs_dense` (same active
    parameters); on a deployment the twin runs on the same GPUs with ep 1 (it has no experts to
    spread). A dense target has no twin: `(speedups, None, None)`.
    """
    if target.is_moe and deployment.is_single and deployment.kv_dtype == SINGLE_GPU.kv_dtype:
        pair = speculative.moe_vs_dense(target, gpu, prof, **grid)  # beside its dense twin (same active parameters)
        return pair.moe, pair.dense, pair.dense_model
    if target.is_moe:  # the twin on the same GPUs; it has no experts to spread (ep 1)
        twin = speculative.dense_twin(target)  # the facade imports speculative.moe for MoE targets only
        return (roofline_speedup(target, gpu, prof, deployment=deployment, **grid),
                roofline_speedup(twin, gpu, prof, deployment=replace(deployment, ep=1), **grid), twin)
    return roofline_speedup(target, gpu, prof, deployment=deployment, **grid), None, None


def _spec_caption(rows: list[dict], notes: list[str], *, gamma_max: int, twin, memory, tokens: int) -> str:
    """The `spec` table's caption: the turning notes, the gamma search range, the gammas left out
    because their verification does not fit, the dense twin, and what the draft's memory costs in
    sequences of `tokens` (context + the first gamma + 1)."""
    caption = "; ".join(notes) + f". Best gamma searched in 0..{gamma_max}."
    cut = {row["batch"]: row["gamma_skipped_unfit"] for row in rows if row["gamma_skipped_unfit"]}
    if cut:
        caption += (" Gammas whose verification does not fit were left out: "
                    + ", ".join(f"above {gamma_max - skipped} at batch {batch}" for batch, skipped in cut.items()) + ".")
    if twin:
        caption += f" Dense twin: {twin.name}, MLP width {twin.intermediate_size}."
    if memory is not None:
        from llm_cost.serving.policies import requests_that_fit

        caption += (f" The draft's weights ({memory.draft_weight_bytes / 1e9:.2f} GB per GPU) and K/V cost "
                    f"{memory.sequences_lost(tokens)} of {requests_that_fit(memory.kv_tokens_without_draft, tokens)} "
                    f"sequences of {tokens:,} tokens.")
    return caption


def gamma_rows(*, alphas, cs, gamma_max: int = GAMMA_MAX) -> list[dict]:
    """The optimal integer gamma for each (alpha, `c`) and its speedup (verification free), `c` the
    draft's cost coefficient."""
    alphas, cs = _alphas(alphas), _costs("cs", cs)
    check_number("gamma_max", gamma_max, low=1, integer=True)
    opt = speculative.optimal_gamma(np.array(alphas)[:, None], np.array(cs)[None, :], gamma_max=gamma_max)
    one = speculative.gamma_one_speedup(np.array(alphas)[:, None], np.array(cs)[None, :])
    return [{"alpha": alpha, "c": c, "gamma_opt": int(opt.gamma[alpha_index, c_index]), "speedup": float(opt.speedup[alpha_index, c_index]),
             "expected_tokens": float(opt.expected_tokens[alpha_index, c_index]), "gamma1_speedup": float(one[alpha_index, c_index]),
             "speculation_pays": bool(alpha > c), "gamma_capped": bool(opt.capped[alpha_index, c_index])}
            for (alpha_index, alpha), (c_index, c) in product(enumerate(alphas), enumerate(cs))]


def tree_rows(model: ModelSpec, gpu: Accelerator, profile, *, widths_list, hits: TopKHits, batches,
              c: float, context: int, weights: WeightFormat,
              deployment: Deployment = SINGLE_GPU) -> list[dict]:
    """One row per (tree, batch): nodes, tau, verification rows and the speedup, beside the
    chain of the same depth (top-1 rate as alpha), and the round's watts and J/token (estimates,
    `verified_round_energy`: the verification over `B` (nodes + 1) rows plus depth draft levels; `B` the
    batches as an array, `c` the draft's cost coefficient).

    On `deployment` each row carries the deployment's keys (`deployment_fields`: the fit of the
    verification pass over batch x (nodes + 1) rows, its collectives, tokens per second of the round).
    """
    from llm_cost.parallel import check_deployment, deployed_pass_cost
    from llm_cost.report.deployment_rows import deployment_fields
    from llm_cost.speculative.trees import tree_speedup

    check_deployment(model, gpu, deployment)
    deployment = deployment.following(profile)  # fits on the profile's memory basis
    batches = _batches(batches)
    check_number("c", c, low=0)
    check_number("context", context, low=0, integer=True)
    B = np.array(batches, dtype=float)
    cost = deployed_pass_cost(model, gpu, profile, weights, deployment)  # the verification's collectives
    rows = []
    for widths in widths_list:
        hits.require(widths)
        tree = tree_speedup(model, gpu, profile, widths=widths, hits=hits, batch=B, c=c, context=context,
                            weights=weights, deployment=deployment)
        chain = (tree_speedup(model, gpu, profile, widths=(1,) * len(widths), hits=hits, batch=B, c=c,
                              context=context, weights=weights, deployment=deployment) if 1 in hits.ks else None)
        for batch_index, batch in enumerate(batches):
            verify_rows = int(tree.verify_rows[batch_index])
            fit = verification_fit(model, gpu, deployment, rows=verify_rows, batch=batch, context=context,
                                   weights=weights)
            rows.append({
                "model": model.name, "gpu": gpu.label, "gpu_name": gpu.name, "preset": profile.name, "weights": weights.name,
                "context": context, "widths": "x".join(map(str, widths)), "batch": batch,
                "nodes": tree.nodes, "depth": tree.depth, "verify_rows": int(tree.verify_rows[batch_index]), "tau": tree.tau, "c": c,
                "base_step_s": float(tree.base_s[batch_index]), "verify_step_s": float(tree.verify_s[batch_index]),
                "draft_round_s": float(tree.draft_round_s[batch_index]), "round_s": float(tree.round_s[batch_index]),
                "verify_over_base": float(tree.verify_over_base[batch_index]), "speedup": float(tree.speedup[batch_index]),
                "chain_speedup": float(chain.speedup[batch_index]) if chain else None,
                **deployment_fields(model, gpu, deployment, weights, fit, comm_time_s=float(cost.comm_time_s(verify_rows)),
                                    step_s=float(tree.round_s[batch_index]), tokens=batch * tree.tau),
                **verified_round_energy(cost, gpu, deployment.gpus_per_replica, batch=float(batch), verify_rows=verify_rows,
                                        draft_steps=tree.depth, c=c, context=float(context), round_s=float(tree.round_s[batch_index]),
                                        tokens=batch * tree.tau, count_kv=profile.count_kv),
            })
    return rows


def _paired(name: str, values: list, count: int, pair_with: str) -> list:
    if len(values) == count:
        return values
    if len(values) == 1:
        return values * count
    raise InvalidValueError(f"{name} takes one value or one per {pair_with} ({count}), got {len(values)}",
                            params=(name,))


def leviathan_rows(*, alphas, gammas, cs, c_hats) -> list[dict]:
    """Leviathan's closed forms for each (alpha, gamma) pair; c and c_hat one value or one per pair."""
    alphas, gammas = _alphas(alphas), _gammas(gammas)
    if len(alphas) != len(gammas) and 1 not in (len(alphas), len(gammas)):
        raise InvalidValueError(f"alphas and gammas come in pairs: got {len(alphas)} alphas "
                                f"and {len(gammas)} gammas", params=("alphas", "gammas"))
    pairs = max(len(alphas), len(gammas))
    alphas, gammas = _paired("alphas", alphas, pairs, "pair"), _paired("gammas", gammas, pairs, "pair")
    cs = _paired("cs", _costs("cs", cs), pairs, "(alpha, gamma) pair")
    c_hats = _paired("c_hats", _costs("c_hats", c_hats), pairs, "(alpha, gamma) pair")
    forms = speculative.leviathan(np.array(alphas), np.array(gammas), np.array(cs), np.array(c_hats))
    return [{"alpha": alphas[pair], "gamma": gammas[pair], "c": cs[pair], "c_hat": c_hats[pair],
             "expected_tokens": float(forms.expected_tokens[pair]), "speedup": float(forms.speedup[pair]),
             "ops_factor": float(forms.ops_factor[pair]), "weight_reads_per_token": float(forms.weight_reads_per_token[pair])}
            for pair in range(pairs)]
