"""Commands for speculative decoding: `spec`, `gamma`, `leviathan` (token trees: `trees.py`).

`c` is the draft's cost coefficient, a draft step over a target step (--c).
"""

from __future__ import annotations

from typing import Annotated, List, Optional

import typer

from llm_cost.commands.engine_option import with_engine
from llm_cost.commands.app import command, emit, note, warn_unfit
from llm_cost.commands.options import (Alphas, AS_GIVEN, Batches, BwEff, Context, deployment_options, DeploymentArgs,
                                       DraftCs, DraftModel, EngineOpt, Format, GammaMax, Gammas, GpuOpt, MaybeAlphas,
                                       Mfus, ModelOpt, Preset, Taus, UsdPerKwh, Weights)
from llm_cost.report.deployment_rows import deployed_columns
from llm_cost.report.render import Column, fixed
from llm_cost.specs.profiles import ARTICLE_SETTING

# ---- speculative decoding -------------------------------------------------------------------




SPEC_COLUMNS = [
    Column("batch", "batch"),
    Column("alpha", "alpha", fixed(2)),
    Column("gamma", "gamma"),
    Column("c", "c", fixed(3)),
    Column("mfu", "MFU", fixed(2)),
    Column("expected_tokens", "E tokens", fixed(2)),
    Column("base_step_s", "decode step (ms)", fixed(3, 1e-3)),
    Column("verify_step_s", "verify step (ms)", fixed(3, 1e-3)),
    Column("verify_over_base", "verify/base", fixed(2)),
    Column("speedup", "speedup", fixed(2)),
    Column("gamma_opt", "best gamma"),
    Column("speedup_opt", "best speedup", fixed(2)),
]
# as `roofline` shows them: when the deployment is more than one GPU (json and csv carry every key)


def _skipped(rows) -> int:
    """Gammas the best-gamma searches left out, once per batch (the same for every alpha, c, MFU)."""
    return sum({row["batch"]: row["gamma_skipped_unfit"] for row in rows}.values())


@command("spec", epilog="Example: llm-cost spec --alpha 0.8 --gamma 4 --batch 1 --batch 64 --batch 128; "
                        "with a draft model: llm-cost spec --model llama-3.1-8b --draft llama-3.2-1b "
                        "--preset lecture --context 1024")
@deployment_options
def spec_cmd(
    alpha: MaybeAlphas = None,
    tau: Taus = None,
    gamma: Gammas = [4],  # noqa: B006
    batch: Batches = [1],  # noqa: B006
    c: DraftCs = None,
    draft: DraftModel = None,
    model: ModelOpt = ARTICLE_SETTING.model,
    gpu: GpuOpt = ARTICLE_SETTING.gpu,
    preset: Preset = ARTICLE_SETTING.preset,
    draft_preset: Annotated[Optional[str], typer.Option("--draft-preset", help="Draft's profile (default: lecture-draft with --preset lecture, else the same).")] = None,
    mfu: Mfus = None,
    bw_eff: BwEff = None,
    context: Context = 0,
    weights: Weights = "bf16",
    gamma_max: GammaMax = 16,
    deploy: DeploymentArgs = AS_GIVEN,
    engine: EngineOpt = None,
    usd_per_kwh: UsdPerKwh = None,
    fmt: Format = "table",
) -> None:
    """Speculative decoding at batch B: E[tokens] T(B) / (gamma t_draft + T(B (gamma + 1))); on
    --tp/--pp/--ep GPUs each pass is one GPU's share with its collectives (the draft on the same GPUs).
    Rows carry the round's watts and J/token (estimates; JSON, CSV); --usd-per-kwh adds their price."""
    from llm_cost.commands import parse
    from llm_cost.catalog import load_accelerator, load_model
    from llm_cost.report.speculative_rows import spec_rows

    if usd_per_kwh is not None:  # before any work
        from llm_cost.errors import check_number

        check_number("--usd-per-kwh", usd_per_kwh, low=0, high=1e3)
    target, acc = load_model(model), load_accelerator(gpu)
    draft_spec = load_model(draft) if draft is not None else None
    prof = with_engine(parse.profile(preset, bw_eff=bw_eff), engine)
    draft_prof = (parse.profile(draft_preset, bw_eff=bw_eff, option="draft_preset")
                  if draft_preset is not None else None)
    deployment = parse.deployment(deploy, prof)
    rows, caption = spec_rows(target, acc, prof, alphas=alpha, taus=tau, gammas=gamma, batches=batch, cs=c,
                              draft=draft_spec, draft_profile=draft_prof, mfus=mfu, context=context,
                              weights=parse.weights(weights), gamma_max=gamma_max, deployment=deployment)
    columns = SPEC_COLUMNS + ([Column("dense_twin_speedup", "dense twin", fixed(2))]
                              if target.is_moe else [])
    if tau:
        columns = [*columns[:2], Column("tau", "tau", fixed(2)), *columns[2:]]
    drafted = f", draft {draft_spec.name}" if draft_spec else ""
    ignored = parse.ignored_context(prof, context, "use --preset lecture")
    if ignored:  # after the library accepted the context
        note(ignored)
    columns = deployed_columns(columns, rows, deployment)
    if usd_per_kwh is not None and any(row["joules_per_token"] is not None for row in rows):
        from llm_cost.commands.options import ENERGY_COLUMNS, ENERGY_PRICE_COLUMN
        from llm_cost.roofline.energy import add_energy_usd

        add_energy_usd(rows, usd_per_kwh)
        columns = columns + ENERGY_COLUMNS[1:] + [ENERGY_PRICE_COLUMN]  # J/token and its price
    emit(rows, columns, fmt, caption=caption,
         title=f"Speculative decoding: {target.name} on {acc.name}{deployment.label}, {weights.lower()}, "
               f"preset {prof.name}{drafted}")
    warn_unfit(rows, deploy.strict, skipped=_skipped(rows), what="gamma")


def _yes_no(value) -> str:
    return "yes" if value else "no"


@command("gamma", epilog="Example: llm-cost gamma --alpha 0.6 --alpha 0.8 --alpha 0.9 --c 0.05 --c 0.186")
def gamma_cmd(
    alpha: Alphas = [0.5, 0.6, 0.7, 0.8, 0.9],  # noqa: B006
    c: DraftCs = [0.01, 0.05, 0.1, 0.2],  # noqa: B006
    gamma_max: GammaMax = 64,
    fmt: Format = "table",
) -> None:
    """Optimal integer gamma of E / (gamma c + 1) for each alpha and c (verification free)."""
    from llm_cost.report.speculative_rows import gamma_rows

    emit(gamma_rows(alphas=alpha, cs=c, gamma_max=gamma_max), [
        Column("alpha", "alpha", fixed(2)), Column("c", "c", fixed(3)),
        Column("gamma_opt", "best gamma"), Column("speedup", "speedup", fixed(2)),
        Column("expected_tokens", "E tokens", fixed(2)), Column("gamma1_speedup", "gamma=1 bound", fixed(2)),
        Column("gamma_capped", "capped", _yes_no),
    ], fmt, title="Optimal gamma (Leviathan Theorem 3.8)",
        caption=f"gamma 0 = do not speculate (alpha <= c); capped = still rising at --gamma-max {gamma_max}")


@command("leviathan", epilog="Example: llm-cost leviathan --alpha 0.7 --gamma 3 --alpha 0.8 --gamma 4 --c-hat 0.1")
def leviathan_cmd(
    alpha: Alphas = [0.8],  # noqa: B006
    gamma: Gammas = [4],  # noqa: B006
    c: DraftCs = [0.0],  # noqa: B006
    c_hat: Annotated[List[float], typer.Option("--c-hat", help="Draft arithmetic over target's (one, or one per pair).")] = [0.0],  # noqa: B006
    fmt: Format = "table",
) -> None:
    """Leviathan's closed forms per (alpha, gamma) pair: E[tokens], speedup, operations factor."""
    from llm_cost.report.speculative_rows import leviathan_rows

    emit(leviathan_rows(alphas=alpha, gammas=gamma, cs=c, c_hats=c_hat), [
        Column("alpha", "alpha", fixed(3)), Column("gamma", "gamma"), Column("c", "c", fixed(3)),
        Column("c_hat", "c_hat", fixed(3)), Column("expected_tokens", "E tokens", fixed(3)),
        Column("speedup", "speedup", fixed(3)), Column("ops_factor", "ops factor", fixed(3)),
        Column("weight_reads_per_token", "weight reads/token", fixed(3)),
    ], fmt, title="Leviathan et al. 2023: Eq. 1, Theorems 3.8 and 3.11")
