"""`calibrate` takes points, files, or both (whole-diff review: Points given beside files were dropped, a
generator was read once before the fit)."""

from __future__ import annotations

from pathlib import Path

import pytest

import llm_cost.calibrate.fit as fit
from llm_cost.calibrate.calibration import calibrate_profile
from llm_cost.calibrate.points import read_point_files
from llm_cost.specs import PRESETS

TRAIN = str(Path(__file__).parent / "data" / "measured" / "train.csv")


class Seen(Exception):
    pass


@pytest.fixture
def fitted(monkeypatch):
    """The points the fit is handed (the fit itself not run)."""
    def capture(points, *args, **kwargs):
        raise Seen(list(points))
    monkeypatch.setattr(fit, "fit_profile", capture)

    def run(points):
        with pytest.raises(Seen) as seen:
            calibrate_profile(points, PRESETS["lecture"], cv=False)
        return seen.value.args[0]
    return run


def test_points_given_beside_a_file_are_kept(fitted):
    from_file = list(read_point_files([TRAIN]))
    given = from_file[:2]
    assert len(fitted([*given, TRAIN])) == len(given) + len(from_file)


def test_a_generator_of_points_is_read_once_and_fitted_whole(fitted):
    from_file = list(read_point_files([TRAIN]))
    assert len(fitted(point for point in from_file)) == len(from_file)
