"""`--engine` (declared in options.py): the serving engine a timing command prices (its fitted fixed costs: `Profile.for_engine`)."""

from __future__ import annotations


def with_engine(profile, engine: str | None, fixed_ms: float | None = None, mfu: float | None = None, *,
                serves: bool = False):
    """`profile` with `engine`'s fitted knobs (None: as it is); an explicit --fixed-ms or --mfu still wins.
    `serves`: the command also serves with the engine's defaults (plan --verify), so a profile without
    fixed costs still changes something."""
    if engine is None:
        return profile
    from llm_cost.specs.engines import engine as check_engine

    name = check_engine(engine).name
    if not profile.engine_costs:  # never silent: the option would change nothing
        from llm_cost.commands.app import note

        note(f"--engine {name} " + ("sets the serving defaults only" if serves else "changes nothing here")
             + f": profile {profile.name} has no per-engine fixed costs (fit them with llm-cost calibrate "
               "--engines, then --profile FILE)")
    prof = profile.for_engine(name)
    return prof.with_(fixed_time_s=None if fixed_ms is None else fixed_ms / 1e3, compute_efficiency=mfu)
