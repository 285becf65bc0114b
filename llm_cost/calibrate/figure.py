"""Predicted against measured on log axes, one marker per metric, with the +-10% band.

Drawn with `llm_cost.report.figures`' figure and save (the one module that imports matplotlib).
"""

from __future__ import annotations


def validation_figure(predictions, path, *, title: str = ""):
    """Draw the covered predictions (x measured, y predicted, log-log), y = x and the +-10% band, to
    `path` (.png or .svg); returns the path."""
    from llm_cost.report.figures import new_figure, check_output, save

    check_output(path)
    covered = [pred for pred in predictions if pred.covered]
    fig, ax = new_figure()
    for metric in dict.fromkeys(pred.point.metric for pred in covered):
        ax.scatter([pred.point.value for pred in covered if pred.point.metric == metric],
                   [pred.predicted for pred in covered if pred.point.metric == metric], s=18, label=metric)
    if covered:
        lo = min(min(pred.point.value, pred.predicted) for pred in covered) / 1.5
        hi = max(max(pred.point.value, pred.predicted) for pred in covered) * 1.5
        ax.plot([lo, hi], [lo, hi], color="black", lw=1)
        ax.fill_between([lo, hi], [lo * 0.9, hi * 0.9], [lo * 1.1, hi * 1.1], color="grey", alpha=0.25,
                        label="+-10%")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured (the metric's unit: tok/s or ms)")
    ax.set_ylabel("predicted")
    ax.set_title(title or "predicted vs measured")
    ax.legend(fontsize=7)
    return save(fig, path)
