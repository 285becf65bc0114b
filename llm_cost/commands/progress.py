"""A Rich progress bar for sweeps of simulations, shown only on a terminal and only when slow; `QUIET`,
set by `--quiet` for one command's run (`app.command`), silences it and the notes."""

from __future__ import annotations

QUIET = {"on": False}  # this run's --quiet: no progress display, no "Note:" lines (warnings and errors stay)


def quiet() -> bool:
    """Whether this command's run was given --quiet."""
    return QUIET["on"]


class SweepProgress:
    """A Rich progress bar on stderr for a sweep of simulations that runs longer than a second.

    Called after each step with (done, total); it stays hidden while the sweep looks short, and
    always when `quiet` or the run's `--quiet`. Leaving the `with` block stops it, an interrupt (Ctrl-C) too.
    """

    def __init__(self, label: str, console=None, *, quiet: bool = False) -> None:
        import time

        self._clock = time.perf_counter
        self._start = self._clock()
        self._label, self._console = label, console
        self._bar = self._task = None
        if quiet or QUIET["on"]:
            self._bar = False  # never shown

    def __call__(self, done: float, total: float, count: int | None = None) -> None:
        """`done` of `total` (steps, or weights: `planner.verify.weighted_progress`); `count`: the tasks
        done, shown beside the label ("serving 7 candidates: 3 done") when the bar is in weights."""
        elapsed = self._clock() - self._start
        if self._bar is False:
            return
        if self._bar is None:
            if elapsed < 1.0 and elapsed / max(done, 1) * total < 1.0:
                return
            from rich.console import Console
            from rich.progress import Progress

            console = self._console or Console(stderr=True)
            if not console.is_terminal:  # piped or captured: no bar, not even a blank line
                self._bar = False
                return
            self._bar = Progress(console=console, transient=True)
            self._bar.start()
            self._task = self._bar.add_task(self._label, total=total)
        if self._bar:
            label = self._label if count is None else f"{self._label}: {count} done"
            self._bar.update(self._task, completed=done, total=total, description=label)

    @property
    def shown(self) -> bool:
        return bool(self._bar)

    def __enter__(self) -> "SweepProgress":
        return self

    def __exit__(self, *exc) -> None:
        if self._bar:
            self._bar.stop()
