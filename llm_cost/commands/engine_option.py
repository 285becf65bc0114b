"""`--engine` (declared in options.py): the serving engine a timing command prices (its fitted fixed costs: `Profile.for_engine`)."""

from __future__ import annotations


def with_engine(profile, engine: str | None, fixed_ms: float | None = None, mfu: float | None = None):
    """`profile` with `engine`'s fitted knobs (None: as it is); an explicit --fixed-ms or --mfu still wins."""
    if engine is None:
        return profile
    from llm_cost.specs.engines import engine as check_engine

    name = check_engine(engine).name
    if not profile.engine_costs:  # never silent: the option would change nothing
        from llm_cost.commands.app import note

        note(f"--engine {name} changes nothing here: profile {profile.name} has no per-engine fixed costs "
             f"(fit them with llm-cost calibrate --engines, then --profile FILE)")
    prof = profile.for_engine(name)
    return prof.with_(fixed_time_s=None if fixed_ms is None else fixed_ms / 1e3, compute_efficiency=mfu)
