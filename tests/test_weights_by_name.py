"""Issue 28: roofline.step_time, request_cost and roofline_speedup take a weight format's name, as
public.step_time does (`as_weights`), and give the same result as the format itself."""

from __future__ import annotations

import pytest

from llm_cost.errors import LlmCostError
from llm_cost.requests import request_cost
from llm_cost.roofline import step_time
from llm_cost.specs.weights import INT4_G128
from llm_cost.speculative.batched import roofline_speedup


def test_step_time_takes_a_name():
    by_name = step_time("llama-3-8b", "h100-sxm", "article", weights="int4")
    assert by_name.total_s == step_time("llama-3-8b", "h100-sxm", "article", weights=INT4_G128).total_s
    assert by_name.total_s < step_time("llama-3-8b", "h100-sxm", "article").total_s


def test_request_cost_takes_a_name():
    a = request_cost("llama-3-8b", "h100-sxm", "measured", isl=512, osl=32, weights="int4")
    b = request_cost("llama-3-8b", "h100-sxm", "measured", isl=512, osl=32, weights=INT4_G128)
    assert a.e2e_s == b.e2e_s


def test_roofline_speedup_takes_names():
    a = roofline_speedup("llama-3-8b", "h100-sxm", "article", alpha=0.8, gamma=4, c=0.1, weights="int4")
    b = roofline_speedup("llama-3-8b", "h100-sxm", "article", alpha=0.8, gamma=4, c=0.1, weights=INT4_G128)
    assert a.speedup == pytest.approx(b.speedup, rel=1e-12)


def test_an_unknown_name_is_refused():
    with pytest.raises(LlmCostError, match="weights|format"):
        step_time("llama-3-8b", "h100-sxm", "article", weights="int3")
