"""Issue 26.4: `plan --verify`'s bar shows the candidates done beside its ETA, though it advances by the
candidates' weights (`planner.verify.weighted_progress`)."""

from __future__ import annotations

import io


def test_the_bar_names_the_candidates_done():
    from rich.console import Console

    from llm_cost.commands.progress import SweepProgress
    from llm_cost.planner.verify import weighted_progress

    out = io.StringIO()
    bar = SweepProgress("serving 3 candidates", Console(file=out, force_terminal=True, width=100))
    bar._start -= 10.0  # ten seconds in: a long run, the bar shows at once
    tick = weighted_progress(bar, [1.0, 7.5, 1.0])
    with bar:
        tick(1, 3)
        assert bar.shown
        bar._bar.refresh()
    import re

    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    assert "serving 3 candidates: 1 done" in text and "79%" in text  # 7.5 of 9.5 by weight, the heaviest first
