"""Result rows for the CLI's `spec`, `gamma`, `tree` and `leviathan` commands.

Flat dicts, SI values, the unit in the key (`base_step_s`); checked with the option names the
user typed (`--alpha must be in [0, 1], got 1.5`). Kept out of cli.py so they can be tested
and reused without Typer.
"""

from __future__ import annotations

from itertools import product

import numpy as np

from llm_cost import options

from llm_cost.speculative import closed_forms as speculative
from llm_cost.errors import InvalidValueError, check_number
from llm_cost.speculative.batched import (VERIFY_COSTLY, TurningBatch, best_gamma, costly_verification_batch,
                                           moe_vs_dense, roofline_speedup, turning_batch)
from llm_cost.specs.model import PRESETS, Accelerator, ModelSpec, WeightFormat
from llm_cost.speculative.trees import TopKHits, tree_speedup


def _check_all(option: str, values, **limits) -> list:
    if not values:
        raise InvalidValueError(f"{option} needs at least one value")
    for v in values:
        check_number(option, v, **limits)
    return list(values)


def _alphas(values) -> list:
    return _check_all("--alpha", values, low=0, high=1)


def _gammas(values, low=0) -> list:
    return [int(g) for g in _check_all("--gamma", values, low=low, integer=True)]


def _costs(option: str, values) -> list:
    return _check_all(option, values, low=0)


def _batches(values) -> list:
    return [int(b) for b in _check_all("--batch", values, low=1, integer=True)]


def parse_widths(text: str) -> tuple[int, ...]:
    """'4,2,2,1' or '4x2x2x1' -> (4, 2, 2, 1); each width a whole number >= 1."""
    parts = text.replace("x", ",").replace("X", ",").split(",")
    try:
        widths = tuple(int(p) for p in parts)
    except ValueError:
        raise InvalidValueError(f"--widths must be whole numbers >= 1 per depth, like 4,2,2,1; "
                                f"got {text!r}") from None
    for w in widths:
        check_number(f"--widths {text}: each width", w, low=1, integer=True)
    return widths


def parse_hits(text: str) -> TopKHits:
    """'1:0.44,2:0.64,4:0.79,8:0.91' -> the draft's top-k hit rates (k >= 1, rate in [0, 1])."""
    rates = {}
    for pair in text.split(","):
        k, sep, rate = pair.partition(":")
        try:
            k_int, rate_f = int(k), float(rate)
        except ValueError:
            raise InvalidValueError(f"--hits must be k:rate pairs like 1:0.44,2:0.64; got {pair!r}") from None
        if not sep or k_int in rates:
            raise InvalidValueError(f"--hits must be k:rate pairs, each k once; got {text!r}")
        check_number(f"--hits rate for k = {k_int}", rate_f, low=0, high=1)
        check_number("--hits k", k_int, low=1, integer=True)
        rates[k_int] = rate_f
    try:
        return TopKHits.of(rates)
    except InvalidValueError as err:
        raise InvalidValueError(f"--hits: {err}") from None


def mfu_values(preset: str, mfus) -> list:
    """The MFUs to show: as given, else the preset's own and 60% (the article's two columns)."""
    if mfus:
        return _check_all("--mfu", mfus, low=0, high=1, low_open=True)
    own = options.profile(preset).compute_efficiency
    return [own] if own == 0.6 else [own, 0.6]


def _turning_note(target: ModelSpec, gpu: Accelerator, prof, t: TurningBatch, mfu: float, context: int,
                  fmt: WeightFormat) -> str:
    """Where verification stops being free. A dense target: up to the turning batch. A MoE target
    turns compute-bound there too, but below it the gamma + 1 rows per sequence already read more
    experts than one row does, so verification is not free there either: say from which batch it
    costs over VERIFY_COSTLY decode steps, and what it costs at batch 1."""
    head = f"gamma {t.gamma}, MFU {mfu:g}: verification"
    if not (target.is_moe and t.gamma):
        return f"{head} free up to batch {t.batch:.1f} (ridge rule {t.ridge_estimate:.1f})"
    costly = costly_verification_batch(target, gpu, prof, gamma=t.gamma, context=context, fmt=fmt)
    at_one = float(roofline_speedup(target, gpu, prof, alpha=0.0, gamma=t.gamma, batch=1, c=0.0,
                                    context=context, fmt=fmt).verify_over_base)
    costs = (f"over {VERIFY_COSTLY:g}x from batch {round(costly, 1):g}" if costly < float("inf")
             else f"at most {VERIFY_COSTLY:g}x at any batch")
    return (f"{head} compute-bound from batch {t.batch:.1f} (ridge rule {t.ridge_estimate:.1f}); below it "
            f"verification still reads more experts: {at_one:.2f}x a decode step at batch 1, {costs}")


def spec_rows(target: ModelSpec, gpu: Accelerator, *, alphas, gammas, batches, cs=None,
              draft: ModelSpec | None = None, preset: str = "article", draft_preset: str | None = None,
              mfus=None, bw_eff: float | None = None, context: int = 0, fmt: WeightFormat,
              gamma_max: int = 16) -> tuple[list[dict], str]:
    """One row per (alpha, gamma, c, batch, MFU): the roofline speedup, the best gamma there,
    and where verification stops being free; MoE targets also get their dense twin's speedup."""
    alphas, gammas, batches = _alphas(alphas), _gammas(gammas), _batches(batches)
    check_number("--context", context, low=0, integer=True)
    check_number("--gamma-max", gamma_max, low=1, high=1024, integer=True)  # one pass per gamma
    if draft is not None and cs:
        raise InvalidValueError("--c and --draft exclude each other: --draft derives c from the roofline")
    cs = [None] if draft is not None else _costs("--c", cs or [0.1])
    if draft_preset is None:
        draft_preset = "lecture-draft" if preset == "lecture" else preset
    options.choose("--draft-preset", draft_preset, tuple(PRESETS))
    twin = None
    A, G, C, B = (np.array(v, dtype=float) for v in (alphas, gammas, [0.0 if c is None else c for c in cs], batches))
    A, G, C, B = A[:, None, None, None], G[None, :, None, None], C[None, None, :, None], B[None, None, None, :]
    rows, notes = [], []
    for n, mfu in enumerate(mfu_values(preset, mfus)):
        prof = options.profile(preset, mfu=mfu, bw_eff=bw_eff)
        draft_kw = dict(c=C) if draft is None else dict(
            draft=draft, draft_profile=options.profile(draft_preset, mfu=mfu, bw_eff=bw_eff))
        grid = dict(alpha=A, gamma=G, batch=B, context=context, fmt=fmt, **draft_kw)
        if target.is_moe:  # beside its dense twin (same active parameters)
            pair = moe_vs_dense(target, gpu, prof, **grid)
            r, tw, twin = pair.moe, pair.dense, pair.dense_model
        else:
            r, tw = roofline_speedup(target, gpu, prof, **grid), None
        best = best_gamma(target, gpu, prof, alpha=A[:, 0], batch=B[:, 0], context=context, fmt=fmt,
                          gamma_max=gamma_max, **{k: (v[:, 0] if k == "c" else v) for k, v in draft_kw.items()})
        turning = {g: turning_batch(target, gpu, prof, gamma=g, context=context, fmt=fmt) for g in gammas}
        notes += [_turning_note(target, gpu, prof, t, mfu, context, fmt) for t in turning.values()]
        for (i, a), (j, g), (k, _), (m, b) in product(*(list(enumerate(v)) for v in (alphas, gammas, cs, batches))):
            at = (i, j, k, m)
            row = {
                "model": target.name, "gpu": gpu.name, "preset": prof.name, "weights": fmt.name,
                "draft": draft.name if draft else None, "context": context,
                "batch": b, "alpha": a, "gamma": g, "c": float(r.c[at]), "mfu": mfu,
                "expected_tokens": float(r.expected_tokens[at]),
                "base_step_s": float(r.base_s[at]), "verify_step_s": float(r.verify_s[at]),
                "draft_step_s": float(r.draft_s[at]), "round_s": float(r.round_s[at]),
                "verify_over_base": float(r.verify_over_base[at]),
                "verify_bound": "compute" if r.verify_compute_bound[at] else "memory",
                "speedup": float(r.speedup[at]), "tokens_per_s": float(r.tokens_per_s[at]),
                "gamma_opt": int(best.gamma[i, k, m]), "speedup_opt": float(best.speedup[i, k, m]),
                "turning_batch": turning[g].batch, "turning_batch_estimate": turning[g].ridge_estimate,
            }
            if tw is not None:
                row["dense_twin_speedup"] = float(tw.speedup[at])
            rows.append((at + (n,), row))  # each batch's MFUs side by side, like the article's table
    rows = [row for _, row in sorted(rows, key=lambda pair: pair[0])]
    caption = "; ".join(notes) + f". Best gamma searched in 0..{gamma_max}."
    if twin:
        caption += f" Dense twin: {twin.name}, MLP width {twin.intermediate_size}."
    return rows, caption


def gamma_rows(*, alphas, cs, gamma_max: int = 64) -> list[dict]:
    """The optimal integer gamma for each (alpha, c) and its speedup (verification free)."""
    alphas, cs = _alphas(alphas), _costs("--c", cs)
    check_number("--gamma-max", gamma_max, low=1, integer=True)
    opt = speculative.optimal_gamma(np.array(alphas)[:, None], np.array(cs)[None, :], gamma_max=gamma_max)
    one = speculative.gamma_one_speedup(np.array(alphas)[:, None], np.array(cs)[None, :])
    return [{"alpha": a, "c": c, "gamma_opt": int(opt.gamma[i, j]), "speedup": float(opt.speedup[i, j]),
             "expected_tokens": float(opt.expected_tokens[i, j]), "gamma1_speedup": float(one[i, j]),
             "speculation_pays": bool(a > c), "gamma_capped": bool(opt.capped[i, j])}
            for (i, a), (j, c) in product(enumerate(alphas), enumerate(cs))]


def tree_rows(model: ModelSpec, gpu: Accelerator, profile, *, widths_list, hits: TopKHits, batches,
              c: float, context: int, fmt: WeightFormat) -> list[dict]:
    """One row per (tree, batch): nodes, tau, verification rows and the speedup, beside the
    chain of the same depth (top-1 rate as alpha)."""
    batches = _batches(batches)
    check_number("--c", c, low=0)
    check_number("--context", context, low=0, integer=True)
    B = np.array(batches, dtype=float)
    rows = []
    for widths in widths_list:
        hits.require(widths)
        t = tree_speedup(model, gpu, profile, widths=widths, hits=hits, batch=B, c=c, context=context, fmt=fmt)
        chain = (tree_speedup(model, gpu, profile, widths=(1,) * len(widths), hits=hits, batch=B, c=c,
                              context=context, fmt=fmt) if 1 in hits.ks else None)
        for m, b in enumerate(batches):
            rows.append({
                "model": model.name, "gpu": gpu.name, "preset": profile.name, "weights": fmt.name,
                "context": context, "widths": "x".join(map(str, widths)), "batch": b,
                "nodes": t.nodes, "depth": t.depth, "verify_rows": int(t.verify_rows[m]), "tau": t.tau, "c": c,
                "base_step_s": float(t.base_s[m]), "verify_step_s": float(t.verify_s[m]),
                "draft_round_s": float(t.draft_round_s[m]), "round_s": float(t.round_s[m]),
                "verify_over_base": float(t.verify_over_base[m]), "speedup": float(t.speedup[m]),
                "chain_speedup": float(chain.speedup[m]) if chain else None,
            })
    return rows


def _paired(option: str, values: list, n: int, pair_with: str) -> list:
    if len(values) == n:
        return values
    if len(values) == 1:
        return values * n
    raise InvalidValueError(f"{option} takes one value or one per {pair_with} ({n}), got {len(values)}")


def leviathan_rows(*, alphas, gammas, cs, c_hats) -> list[dict]:
    """Leviathan's closed forms for each (alpha, gamma) pair; c and c_hat one value or one per pair."""
    alphas, gammas = _alphas(alphas), _gammas(gammas)
    if len(alphas) != len(gammas) and 1 not in (len(alphas), len(gammas)):
        raise InvalidValueError(f"--alpha and --gamma come in pairs: got {len(alphas)} --alpha "
                                f"and {len(gammas)} --gamma")
    n = max(len(alphas), len(gammas))
    alphas, gammas = _paired("--alpha", alphas, n, "pair"), _paired("--gamma", gammas, n, "pair")
    cs = _paired("--c", _costs("--c", cs), n, "--alpha/--gamma pair")
    c_hats = _paired("--c-hat", _costs("--c-hat", c_hats), n, "--alpha/--gamma pair")
    f = speculative.leviathan(np.array(alphas), np.array(gammas), np.array(cs), np.array(c_hats))
    return [{"alpha": alphas[i], "gamma": gammas[i], "c": cs[i], "c_hat": c_hats[i],
             "expected_tokens": float(f.expected_tokens[i]), "speedup": float(f.speedup[i]),
             "ops_factor": float(f.ops_factor[i]), "weight_reads_per_token": float(f.weight_reads_per_token[i])}
            for i in range(n)]
