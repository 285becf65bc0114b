"""Units are converted where options are parsed: a value is checked in the unit the user typed."""

from __future__ import annotations

import pytest

from helpers import run


@pytest.mark.parametrize("args,needle", [
    # review defect: --slo-ms -5 reported "-0.005" (the value already in seconds)
    (["batching", "--slo-ms", "-5"], "--slo-ms must be in (0, inf), got -5"),
    (["plot", "batching", "-o", "x.png", "--slo-ms", "-5"], "--slo-ms must be in (0, inf), got -5"),
    (["roofline", "--fixed-ms", "-2"], "--fixed-ms must be in [0, inf), got -2"),
])
def test_milliseconds_are_checked_in_milliseconds(args, needle):
    out = run(*args)
    assert out.exit_code == 2, out.output
    assert needle in out.output and "0.00" not in out.output


def test_library_errors_name_parameters_and_the_cli_its_flags():
    from llm_cost.errors import InvalidValueError
    from llm_cost.report.figures import check_output

    with pytest.raises(InvalidValueError, match="^path must end in .png or .svg") as err:
        check_output("x.pdf")
    assert err.value.params == ("path",)
    out = run("plot", "gamma", "-o", "x.pdf")
    assert out.exit_code == 2 and "--output must end in .png or .svg" in out.output
