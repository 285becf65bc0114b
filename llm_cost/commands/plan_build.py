"""`plan`'s inputs and its table's words: the defaults a run used, the profile as request_args name it,
`plot plan`'s search (`build`, the library's `plan_search`), and the title and caption of the table. Kept
out of `commands/plan.py` so that module stays readable; `plan` and `plot plan` call it."""

from __future__ import annotations

from llm_cost.commands.app import note
from llm_cost.commands.options import DEFAULT, DEFAULT_ISL, DEFAULT_OSL, DEFAULT_PLAN_GPUS


def profile_args(preset, mfu, bw_eff, fixed_ms, engine) -> list[str]:
    """request_args' profile: the preset (or file) as given, with the knobs given over it and the engine
    (`request --engine` prices the same fixed costs)."""
    knobs = (("--mfu", mfu), ("--bw-eff", bw_eff), ("--fixed-ms", fixed_ms))
    args = ["--preset", preset] + [item for flag, value in knobs if value is not None for item in (flag, f"{value:g}")]
    return args + (["--engine", engine] if engine is not None else [])


def defaults_of(model, gpu, gpus, isl, osl) -> tuple:
    """(model, gpu, gpus, isl, osl) with the ones left out set to every command's default (options.DEFAULT,
    DEFAULT_ISL and DEFAULT_OSL as `request`; DEFAULT_PLAN_GPUS, one node), and a function printing the
    note that names those used (called after the output: an error before it stays one line)."""
    given = dict(model=model, gpu=gpu or None, gpus=gpus, isl=isl, osl=osl)
    default = dict(model=DEFAULT.model, gpu=[DEFAULT.gpu], gpus=DEFAULT_PLAN_GPUS, isl=DEFAULT_ISL, osl=DEFAULT_OSL)
    used = " ".join(f"--{name} {value[0] if isinstance(value, list) else value}"
                    for name, value in default.items() if given[name] is None)

    def said() -> None:
        if used:
            note(f"defaults used: {used} (give any of them to change it)")
    return (*(default[name] if given[name] is None else given[name] for name in default), said)


def build(*, model, gpu, gpus, isl, osl, ttft_ms, tpot_ms, tokens_per_s_per_user, spec_alpha, c, draft, max_gamma,
          mtp_alpha, tp, pp, max_tp, weights, kv_dtype, batch, profile, ep=None, dp_attention=False):
    """(model spec, evaluated `plan.Grid`, `plan.Target`, refs) from `plot plan`'s options: the target in
    seconds, then the library's search (`planner.plan_run.plan_search`). `c` is the draft's cost
    coefficient, a draft step over a target step (--c)."""
    from llm_cost.commands import parse
    from llm_cost.planner.plan_request import PlanRequest
    from llm_cost.planner.frontier import MAX_SECONDS  # the target's bound, told in milliseconds
    from llm_cost.planner.plan_run import plan_search

    return plan_search(PlanRequest(
        model=model, gpu=tuple(gpu or ()), gpus=gpus, isl=isl, osl=osl,
        ttft_s=parse.seconds("ttft_ms", ttft_ms, positive=True, most_s=MAX_SECONDS),
        tpot_s=parse.seconds("tpot_ms", tpot_ms, positive=True, most_s=MAX_SECONDS),
        tokens_per_s_per_user=tokens_per_s_per_user, profile=profile, spec_alpha=spec_alpha, c=c, draft=draft,
        max_gamma=max_gamma, mtp_alpha=mtp_alpha, tp=tp, pp=pp, ep=ep, dp_attention=dp_attention, max_tp=max_tp,
        weights=weights, kv_dtype=kv_dtype, batch=batch))


def title_of(spec, grid, target) -> str:
    gpus = (", ".join(dict.fromkeys(group.gpu.name for group in grid.space.groups))
            or "no accelerator that runs it")
    bounds = []
    if target.ttft_s is not None:
        bounds.append(f"TTFT <= {target.ttft_s * 1e3:g} ms")
    if target.tpot_s is not None:
        bounds.append(f"TPOT <= {target.tpot_s * 1e3:g} ms")
    if target.tokens_per_s_per_user is not None:
        bounds.append(f">= {target.tokens_per_s_per_user:g} tok/s/user")
    return (f"Plan: {spec.name}, ISL {grid.isl}, OSL {grid.osl}, up to {grid.space.budget} x {gpus}, "
            f"preset {grid.profile.name}; target {', '.join(bounds) or 'none'}")


def caption_of(result) -> str:
    """How many configurations were searched, did not fit, missed the target (and which part), met
    it; what the space left out; which profile the times come from."""
    counts, prof = result.counts, result.grid.profile
    left = []
    if counts.get("left_out_split"):
        left.append(f"{counts['left_out_split']:,} on splits the model or chip cannot take")
    if counts.get("left_out_format"):
        left.append(f"{counts['left_out_format']:,} in formats the chip does not run")
    ranked = "$ per million output tokens" if result.usd_per_gpu_hour else "tokens/s per GPU"
    target = result.target
    if target.ttft_s is None and target.tpot_s is None and target.tokens_per_s_per_user is None:  # nothing to miss
        judged = f"{counts['meet']:,} fit (no target: --ttft-ms, --tpot-ms or --tokens-per-s-per-user sets one)"
    else:
        judged = (f"{counts['missed']:,} miss the target (TTFT {counts['missed_ttft']:,}, TPOT or tok/s/user "
                  f"{counts['missed_decode']:,}), {counts['meet']:,} meet it")
    text = (f"searched {counts['searched']:,} configurations: {counts['not_fit']:,} do not fit, {judged}; "
            f"frontier {counts['frontier']} (tokens/s per user against {ranked}, best first)")
    if left:
        text += "; left out " + ", ".join(left)
    return (text + f"; times from preset {prof.name} (bandwidth {prof.bw_efficiency:g}, "
                   f"MFU {prof.compute_efficiency:g}, {prof.fixed_time_s * 1e3:g} ms per pass), "
                   "static batches as `llm-cost request` times them")
