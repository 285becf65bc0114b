"""Calibration against published measurements: read points, predict them, measure the error, fit a profile.

    points.py        the CSV of measured figures (columns of tests/data/measured/train.csv), checked
    prediction.py    a point -> its predicted value under a profile, or not covered and why
    under_load.py    rows under load (a request rate, a closed loop) through the serving engine
    metrics.py       APE = |predicted / value - 1| and its summaries (MAPE, median, p90)
    fit.py           least squares of log error over bounded knobs; k-fold by source
    profile_file.py  profiles as JSON files (`--profile FILE`)
    validation.py    every point predicted under a profile, through the executor (`llm-cost validate`)
    calibration.py   the whole calibration as one call: fit, cross-validate, write (`calibrate_profile`,
                     `llm-cost calibrate`)
"""

from llm_cost._exports import lazy_exports, names_from

_EXPORTS = {
    **names_from(".points", "Point", "PointsError", "read_points", "METRICS", "BATCH_KINDS"),
    **names_from(".prediction", "Prediction", "predict", "weight_format_of", "deployment_of"),
    **names_from(".metrics", "Summary", "ape", "summarize", "summaries"),
    **names_from(".fit", "FitResult", "KNOBS", "fit_profile", "cross_validate"),
    **names_from(".profile_file", "read_profile", "write_profile", "profile_to_json"),
    **names_from(".calibration", "calibrate_profile", "Calibration"),
    **names_from(".validation", "validate_points", "Validation"),
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
