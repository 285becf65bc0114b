"""Issue 24 review, items 5 and 7: an option that changes nothing says so, a refusal says what is
meant, and a message names the parameter and its one range."""

from __future__ import annotations

import pytest

from llm_cost.errors import InvalidValueError
from llm_cost.serving.serve_config import ServeConfig
from llm_cost.serving.workload import fixed_workload
from tests.helpers import error_line, run

SWAP_NOTE = "Note: --preemption swap changed nothing: only --reservation paged preempts"


def test_swap_under_a_reservation_that_never_preempts_is_noted():
    plain, swap = run("batching", "--rate", "1", "-n", "20"), run("batching", "--rate", "1", "-n", "20", "--preemption", "swap")
    assert plain.exit_code == 0 and swap.exit_code == 0
    assert swap.stdout == plain.stdout and SWAP_NOTE in swap.stderr and SWAP_NOTE not in plain.stderr
    paged = run("batching", "--rate", "1", "-n", "20", "--preemption", "swap", "--reservation", "paged")
    assert paged.exit_code == 0 and "--preemption" not in paged.stderr


def test_a_rate_search_over_a_closed_loop_says_to_drop_the_closed_loop():
    line = error_line("batching", "--slo-ms", "45", "--concurrency", "4", "-n", "50")
    assert line == "Error: a rate search needs an open loop: drop --concurrency (a closed loop of clients sets its own rate)"


@pytest.mark.parametrize("pair, named", [((0, 5), "request 0's prompt tokens"), ((4, 0), "request 0's generated tokens")])
def test_a_zero_length_names_which_length(pair, named):
    with pytest.raises(InvalidValueError, match=f"^{named} must be in \\[1, 10000000\\], got 0$"):
        fixed_workload([pair])


@pytest.mark.parametrize("value", [-0.1, 2, 1])
def test_the_watermark_has_one_range(value):
    with pytest.raises(InvalidValueError, match=rf"^watermark must be in \[0, 1\), got {value}$"):
        ServeConfig(watermark=value)
    assert error_line("batching", "--rate", "1", "--watermark", value).startswith("Error: --watermark must be in [0, 1), got")


@pytest.mark.parametrize("field, value, low", [("max_batch", -1, 1), ("prefill_chunk", -1, 1)])
def test_a_negative_setting_is_told_its_own_range(field, value, low):
    with pytest.raises(InvalidValueError, match=rf"^{field} must be in \[{low}, inf\), got {value}$"):
        ServeConfig(**{field: value})
