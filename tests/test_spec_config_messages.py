"""SpecConfig's refusals name the field at fault (issue 24.4: library errors name parameters)."""

import pytest

import llm_cost as lc


def test_off_above_batch_without_its_threshold_names_the_threshold():
    with pytest.raises(lc.InvalidValueError, match=r"^spec_off_above must be in \[1, inf\), got 0$"):
        lc.SpecConfig(gamma=4, alpha=0.8, c=0.05, policy="off-above-batch")
