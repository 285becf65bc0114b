"""`validate_points(points, profile)`: every measured point predicted under a profile (issue 24.4, the
library half of `llm-cost validate`).

Each point is predicted alone (`prediction.predict`: deterministic, its point and the profile only), so the
rows run through the executor (`executor.run_tasks`: local processes or Ray) in any order and come back in
the points' order, the same list whatever runs them. The served rows of one condition (its metrics) go to
one process together (`prediction.served_groups`): they share one simulation, which each process would
otherwise run again (on two cores, `validate` of train_inferencex.csv took twice the CPU of one process). Ctrl-C keeps the rows predicted so far, in the points'
order: the `Validation` says how many of all (`interrupted`), for the caller to print them as partial.
Errors and summaries of the predictions are `metrics`' (`summaries`), rendering them the caller's.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Validation:
    """What `validate_points` predicted.

    Attributes
    ----------
    predictions
        One `prediction.Prediction` per point, in the points' order; after Ctrl-C, those that finished
        (still in order).
    total
        The points asked.

    Examples
    --------
    >>> Validation(predictions=(), total=3).interrupted
    True
    """

    predictions: tuple
    total: int

    @property
    def interrupted(self) -> bool:
        """Ctrl-C stopped the predictions before every point had one."""
        return len(self.predictions) < self.total


def validate_points(points, profile, *, engine: str | None = None, steps_budget: float | None = None,
                    jobs: int | None = None, ray: str | None = None, on_done=None) -> Validation:
    """Predict every point under `profile` (`prediction.predict`), as served by `engine` (None: each
    point's own), a served row past `steps_budget` engine steps not covered (None: the default budget,
    `points.SERVED_STEPS_BUDGET`); `jobs` and `ray` the executor's, `on_done(done, total)` after each row.

    Parameters
    ----------
    points : sequence of Point
        The measured points (`points.read_points`).
    profile : Profile or str
        The profile predicted with, or a preset's name.
    engine : str, optional
        Serve every row with this engine (`specs.engines`) instead of its own.
    steps_budget : float, optional
        Engine steps one served row may take (its estimate, before it runs).
    jobs, ray, on_done
        As above (`executor.run_tasks`).

    Returns
    -------
    Validation
        The predictions in the points' order (after Ctrl-C: those that finished).

    Examples
    --------
    Two decode speeds of Llama-3-8B on one H100, predicted under the `measured` profile:

    >>> from llm_cost.calibrate import Point
    >>> pts = [Point(f"b{batch}", "demo", "A", "llama-3-8b", "h100-sxm", "bf16", 0, "bf16", 1, 1, 1, batch,
    ...              "static", 128, 128, "decode_tok_per_s_per_user", value) for batch, value in ((1, 88.0), (8, 85.0))]
    >>> done = validate_points(pts, "measured", jobs=1)
    >>> [round(row.predicted, 1) for row in done.predictions], [round(row.ape, 3) for row in done.predictions]
    ([100.6, 98.4], [0.144, 0.158])
    >>> done.interrupted
    False
    """
    from functools import partial

    from llm_cost.calibrate.prediction import predict_each, served_groups
    from llm_cost.executor import Interrupted, run_tasks

    points, profile, engine = _checked(points, profile, engine, steps_budget)
    served = served_groups(points)
    grouped = {index for at in served for index in at}
    groups = served + [[index] for index in range(len(points)) if index not in grouped]
    tick = None
    if on_done is not None:  # rows done: the finished tasks' share of the rows (exact at the end)
        tick = lambda done, total: on_done(len(points) * done // total, len(points))  # noqa: E731
    try:
        done = dict(enumerate(run_tasks(partial(predict_each, profile=profile, engine=engine,
                                                steps_budget=steps_budget),
                                        [[points[index] for index in at] for at in groups],
                                        jobs=jobs, ray=ray, on_done=tick)))
    except Interrupted as stop:  # Ctrl-C: the rows predicted so far, in the points' order
        done = stop.done
    by_index = {index: pred for task, preds in done.items() for index, pred in zip(groups[task], preds)}
    return Validation(tuple(by_index[index] for index in sorted(by_index)), len(points))


def _checked(points, profile, engine, steps_budget) -> tuple:
    """(points as a list, the profile, the engine's name) or an error naming the parameter."""
    from llm_cost.calibrate.points import Point
    from llm_cost.catalog.arguments import default_rules
    from llm_cost.errors import InvalidValueError, check_number, short_repr

    if isinstance(points, str) or not hasattr(points, "__iter__"):
        raise InvalidValueError(f"points must be a list of Points (points.read_points), got {short_repr(points)}",
                                params=("points",))
    points = list(points)
    for point in points:
        if not isinstance(point, Point):
            raise InvalidValueError(f"points must be Points (points.read_points), got {short_repr(point)}",
                                    params=("points",))
    profile = default_rules()["profile"].check("profile", profile)
    if engine is not None:
        from llm_cost.specs.engines import ENGINES, engine as named

        if not isinstance(engine, str):
            raise InvalidValueError(f"engine must be one of {', '.join(ENGINES)}, got {short_repr(engine)}",
                                    params=("engine",))
        engine = named(engine).name
    if steps_budget is not None:
        check_number("steps_budget", steps_budget, low=0)
    return points, profile, engine
