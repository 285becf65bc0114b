"""Figures (matplotlib, non-interactive): each function draws one kind and saves it.

Used only by `llm-cost plot` and `calibrate validate`, and the only module that imports
matplotlib (on the first figure, with the Agg backend). The numbers come from `llm_cost.report.series`
(and, for `validation`, calibrate's predictions); here they are only converted (s -> ms) and drawn.
Every axis names its unit. The file format follows the extension: .png, .svg.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

EXTENSIONS = (".png", ".svg")
COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink",
          "tab:gray", "tab:olive", "tab:cyan", "navy", "darkgoldenrod")
STYLES = ("-", "--", ":", "-.")


def check_output(path: str | Path, *, force: bool = True, inputs=()) -> Path:
    """The output path, if it ends in .png or .svg, its folder exists and it is not one of `inputs`;
    an existing file only with `force` (the library's default; the CLI asks for --force):
    `llm_cost.files.output_path`."""
    from llm_cost.files import output_path

    return output_path(path, force=force, inputs=inputs, suffixes=EXTENSIONS, param="path")


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # no display: render to files only
    import matplotlib.pyplot as plt

    return plt


def new_figure(ncols: int = 1):
    plt = _pyplot()
    fig, axes = plt.subplots(1, ncols, figsize=(7.5 * ncols if ncols == 1 else 5.8 * ncols, 5),
                             layout="constrained")
    return fig, axes


def save(fig, path: str | Path) -> Path:
    """Draw `fig` to `path` atomically: a temporary file beside it, renamed into place once complete
    (an interrupt leaves no truncated image)."""
    from llm_cost.files import atomic_write

    path = check_output(path)
    try:
        return atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=150, format=path.suffix[1:].lower()), param="path")
    finally:
        _pyplot().close(fig)


def _plain_log(axis) -> None:
    """Ticks of a log axis at 1, 2, 5 x 10^k, written as plain numbers (20, not 2x10^1)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_minor_formatter(NullFormatter())


def _label_fmt(weights) -> str:
    return "BF16" if weights.name == "bf16" else f"W4A16 ({weights.name.upper()} g{weights.group_size})"


def roofline(series, path: str | Path, *, gamma: int, title: str) -> Path:
    """T(m) on log axes, one line per weight format, with the decode (filled) and verification
    (open) points of each batch: the article §2.4's figure."""
    fig, ax = new_figure()
    markers = ("o", "s", "^", "D")
    low = min(float(curve.time_s.min()) for curve in series) * 1e3
    for index, curve in enumerate(series):
        color = COLORS[index]
        plateau = float(curve.time_s[0]) * 1e3
        ax.plot(curve.rows, curve.time_s * 1e3, color=color, linewidth=3.0 - index, alpha=0.85,
                label=f"{_label_fmt(curve.weights)}: T(1) = {plateau:.2f} ms, compute-bound from m* = {curve.knee_rows:.0f}")
        ax.axvline(curve.knee_rows, color=color, linestyle=":", linewidth=1)
        ax.annotate(f"m* = {curve.knee_rows:.0f}", (curve.knee_rows, low * 0.55), xytext=(3, 0),
                    textcoords="offset points", color=color, fontsize=8)
        batches = list(dict.fromkeys(batch for batch, _, _ in curve.points))
        for batch, rows, time_s in curve.points:
            marker = markers[batches.index(batch) % len(markers)]
            ax.plot([rows], [time_s * 1e3], marker=marker, color=color, markersize=7, linestyle="none",
                    markerfacecolor=color if rows == batch else "white", zorder=3)
    for batch in batches:
        ax.plot([], [], marker=markers[batches.index(batch) % len(markers)], color="gray", linestyle="none",
                label=f"B = {batch}: decode {batch} row{'s' if batch > 1 else ''} (filled), verify {batch * (gamma + 1)} rows (open)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(bottom=low * 0.45)
    _plain_log(ax.yaxis)
    ax.set_xlabel("rows m per forward pass (tokens)")
    ax.set_ylabel("forward-pass time T(m) (ms)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    return save(fig, path)


def _varying(curves, names: Sequence[str]) -> list[str]:
    return [name for name in names if len({getattr(curve, name) for curve in curves}) > 1]


def _describe(curve, names: Sequence[str]) -> str:
    text = {"alpha": lambda value: f"α {value:g}", "gamma": lambda value: f"γ {value}", "c": lambda value: f"c {value:g}",
            "mfu": lambda value: f"MFU {value:.0%}"}
    return ", ".join(text[name](getattr(curve, name)) for name in names)


def spec_vs_batch(curves, path: str | Path, *, title: str) -> Path:
    """Speedup against batch (log x): flat while verification is free, then falling below 1."""
    fig, ax = new_figure()
    names = ("alpha", "gamma", "c", "mfu")
    varying = _varying(curves, names) or ["mfu"]
    fixed_part = _describe(curves[0], [name for name in names if name not in varying])
    top = max(float(curve.speedup.max()) for curve in curves)
    draft_keys = list(dict.fromkeys((cv.alpha, cv.gamma, cv.c) for cv in curves))
    mfus = list(dict.fromkeys(cv.mfu for cv in curves))
    for cv in curves:  # colour per draft (alpha, gamma, c) or else per MFU; line style per MFU
        color_index = draft_keys.index((cv.alpha, cv.gamma, cv.c)) if len(draft_keys) > 1 else mfus.index(cv.mfu)
        color = COLORS[color_index % len(COLORS)]
        style = STYLES[mfus.index(cv.mfu) % len(STYLES)]
        label = f"{_describe(cv, varying)}: verification compute-bound from B ≈ {cv.turning_batch:.0f}"
        if cv.break_even_batch <= cv.batch[-1]:
            label += f", no gain from B ≈ {cv.break_even_batch:.0f}"
            ax.plot([cv.break_even_batch], [1.0], "x", color=color, markersize=8, mew=2)
        ax.plot(cv.batch, cv.speedup, color=color, linestyle=style, label=label)
        ax.plot([batch for batch, _ in cv.marks], [speedup for _, speedup in cv.marks], "o", color=color, markersize=4)
        ax.axvline(cv.turning_batch, color=color, linestyle=":", linewidth=1)
    ax.axhline(1.0, color="0.3", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_ylim(0, top * 1.1)
    ax.set_xlabel("batch B (sequences decoded together)")
    ax.set_ylabel("speedup over plain decoding (×)")
    ax.set_title(f"{title}\n{fixed_part}; dots: the marked batches; dotted: turning batch; x: no gain",
                 fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    fig.legend(fontsize=8, loc="outside lower center")  # below the axes: never over a curve
    return save(fig, path)


def gamma(curves, path: str | Path, *, title: str) -> Path:
    """Speedup against gamma: colour per alpha, line style per `c` (the draft's cost coefficient), the
    optimum marked."""
    fig, ax = new_figure()
    alphas = list(dict.fromkeys(curve.alpha for curve in curves))
    cs = list(dict.fromkeys(curve.c for curve in curves))
    for cv in curves:
        color, style = COLORS[alphas.index(cv.alpha) % len(COLORS)], STYLES[cs.index(cv.c) % len(STYLES)]
        ax.plot(cv.gamma, cv.speedup, color=color, linestyle=style, linewidth=1.4)
        ax.plot([cv.gamma_opt], [cv.speedup_opt], "o", color=color, markersize=5,
                markerfacecolor="white" if cv.capped else color, clip_on=False, zorder=3)
    for alpha in alphas:
        ax.plot([], [], color=COLORS[alphas.index(alpha) % len(COLORS)], label=f"α = {alpha:g}")
    for c in cs:
        ax.plot([], [], color="gray", linestyle=STYLES[cs.index(c) % len(STYLES)], label=f"c = {c:g}")
    ax.plot([], [], "o", color="gray", label="best integer γ")
    if any(cv.capped for cv in curves):
        ax.plot([], [], "o", color="gray", markerfacecolor="white", label="still rising at the axis end")
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.set_xlim(0, curves[0].gamma[-1])
    ax.set_ylim(bottom=0)
    ax.set_xlabel("draft length γ (tokens per round)")
    ax.set_ylabel("speedup E / (γ c + 1) (×)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, ncol=2, loc="upper left")
    return save(fig, path)


def tree(points, path: str | Path, *, title: str) -> Path:
    """Left: tau against tree size; right: the speedup at each batch (the lecture §10.3)."""
    fig, (left, right) = new_figure(2)
    nodes = [point.nodes for point in points]
    left.plot(nodes, [point.tau for point in points], "o-", color="black", markersize=4)
    for point in points:
        left.annotate(point.label, (point.nodes, point.tau), xytext=(4, -10), textcoords="offset points", fontsize=7)
    left.set_ylabel("τ: expected tokens per round (tokens)")
    for index, batch in enumerate(points[0].batch):
        right.plot(nodes, [point.speedup[index] for point in points], "o-", color=COLORS[index % len(COLORS)], markersize=4,
                   label=f"batch {batch:g}")
    right.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    right.set_ylabel("speedup over plain decoding (×)")
    right.set_ylim(bottom=0)
    right.legend(fontsize=8)
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_xlabel("tree size (draft tokens verified per round)")
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle(title, fontsize=10)
    return save(fig, path)


def batching(curves, path: str | Path, *, title: str, slo_s: float | None = None) -> Path:
    """Three panels against throughput, one curve per scheduler and batch limit: the median per-token
    latency (the lecture §3.3, Orca Figure 10: the curve turns up where the server saturates), its
    p99 (the tail), and the time to first token at p50 (solid) and p99 (dashed), queueing included."""
    fig, axes = new_figure(3)
    panels = ((axes[0], "latency_median_s", "median latency per generated token (ms)", slo_s),
              (axes[1], "latency_p99_s", "p99 latency per generated token (ms)", slo_s),
              (axes[2], "ttft_median_s", "time to first token, p50 solid, p99 dashed (ms)", None))
    for index, cv in enumerate(curves):
        limits = ", ".join(map(str, cv.max_batches))
        label = f"{cv.scheduler}-level, max batch {limits}"
        if cv.scheduler == "request" and cv.effective_batch < max(cv.max_batches):
            label += f" ({cv.effective_batch} fit at max-length reservations)"
        color = COLORS[index % len(COLORS)]
        for panel, (ax, key, _, _) in enumerate(panels):
            ys = getattr(cv, key)
            if ys:
                ax.plot(cv.throughput_req_per_s, [value * 1e3 for value in ys], "o-", color=color, markersize=4,
                        label=label if panel == 0 else None)
        if cv.ttft_p99_s:
            axes[2].plot(cv.throughput_req_per_s, [value * 1e3 for value in cv.ttft_p99_s], "s--", color=color,
                         markersize=3)
    for ax, _, ylabel, target in panels:
        if target is not None:
            ax.axhline(target * 1e3, color="black", linewidth=0.8, linestyle="--",
                       label=f"target {target * 1e3:g} ms" if ax is axes[0] else None)
        ax.set_yscale("log")
        _plain_log(ax.yaxis)
        ax.set_xlim(left=0)
        ax.set_xlabel("throughput (requests/s)")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle(title, fontsize=10)
    fig.legend(fontsize=8, loc="outside lower center")  # below the axes: never over a curve
    return save(fig, path)


def plan(result, path: str | Path, *, title: str) -> Path:
    """A plan's configurations (tokens/s per user against tokens/s per GPU): those that fit, those that
    meet the target, the Pareto frontier, its first (chosen) row, and the per-user rate a configuration
    at both latency limits reaches, OSL / (TTFT + (OSL - 1) TPOT): every one meeting them lies right of it."""
    grid, target = result.grid, result.target
    fig, ax = new_figure()
    user, per_gpu = grid.output_tokens_per_s_per_user, grid.output_tokens_per_s_per_gpu
    fit = grid.fits & ~result.meets
    ax.scatter(user[fit], per_gpu[fit], s=6, color="lightgray", label=f"fit, miss the target ({fit.sum():,})")
    ax.scatter(user[result.meets], per_gpu[result.meets], s=8, color="tab:blue", alpha=0.5,
               label=f"meet the target ({result.meets.sum():,})")
    front = result.frontier
    if len(front):
        ax.plot(user[front], per_gpu[front], "o-", color="tab:red", markersize=5, label=f"frontier ({len(front)})")
        first = front[0]
        grp, variant = grid.space.groups[grid.group[first]], grid.variants[grid.variant[first]]
        ax.plot([user[first]], [per_gpu[first]], "*", color="black", markersize=14,
                label=f"chosen: {grp.gpu.name} tp {grp.deployment.tp} pp {grp.deployment.pp}, {grp.weights.name}, "
                      f"KV {grp.deployment.kv_dtype}, batch {int(grid.batch[first])}, {variant.kind}"
                      + (f" gamma {variant.gamma}" if variant.gamma else ""))
    if target.ttft_s is not None and target.tpot_s is not None:
        limit = grid.osl / (target.ttft_s + (grid.osl - 1) * target.tpot_s)
        ax.axvline(limit, color="black", linestyle="--", linewidth=0.8,
                   label=f"TTFT {target.ttft_s * 1e3:g} ms and TPOT {target.tpot_s * 1e3:g} ms at their limits")
    elif target.tokens_per_s_per_user is not None:
        ax.axvline(target.tokens_per_s_per_user, color="black", linestyle="--", linewidth=0.8,
                   label=f"target {target.tokens_per_s_per_user:g} tok/s/user")
    ax.set_xscale("log")
    ax.set_yscale("log")
    _plain_log(ax.xaxis)
    _plain_log(ax.yaxis)
    ax.set_xlabel("output tokens/s per user (OSL / e2e)")
    ax.set_ylabel("output tokens/s per GPU")
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    fig.legend(fontsize=7, loc="outside lower center")
    return save(fig, path)


def validation(predictions, path: str | Path, *, title: str = "") -> Path:
    """Predicted against measured (`calibrate validate`'s figure, `plot validation`): the covered
    predictions (x measured, y predicted, log-log), one marker per metric, y = x and the +-10% band,
    to `path` (.png or .svg); returns the path. `predictions`: `calibrate.Prediction`s (read for
    `covered`, `predicted`, `point.metric` and `point.value`: the figure imports no calibrate module)."""
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
