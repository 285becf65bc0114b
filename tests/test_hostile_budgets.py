"""Issue 29, deliverable 2, the items left: a request's work grows with OSL (decode steps) and ISL /
chunk (prefill passes); `request --osl 1e7` took 10 s and 1.4 GB unasked. The work is estimated first
and refused past the work budget with the estimate and the setting that raises it, and the decode
steps are evaluated in blocks (bounded memory) with the same sums."""

from __future__ import annotations

import time

import pytest

from helpers import error_line


def test_request_osl_1e7_is_refused_at_once_with_the_estimate_and_the_setting():
    """gemma-2-9b's windowed layers make the decode a sum over every context (`phases.decode_sum`):
    10^7 steps are estimated and refused."""
    start = time.monotonic()
    line = error_line("request", "--model", "gemma-2-9b", "--osl", "10000000")
    assert time.monotonic() - start < 3.0  # refused before the work (it took 10 s)
    assert "--osl would take about 10 s (9,999,999 decode steps at 1 us)" in line
    assert "past the work budget of 5 s a call; set LLM_COST_WORK_BUDGET_S=20 (seconds)" in line


def test_a_closed_form_decode_is_not_budgeted_per_step():
    """Llama-3-8B's pass is linear in its context: the decode of 10^7 tokens is summed in closed form
    (`phases.decode_sum`), O(1), so it runs (it said it does not fit) instead of being refused."""
    from llm_cost.requests import request_cost

    start = time.monotonic()
    r = request_cost("llama-3-8b", "h100-sxm", "lecture", isl=16, osl=10_000_000)
    assert time.monotonic() - start < 2.0 and r.osl == 10_000_000 and r.phases.decode_s > 0


def test_prefill_passes_are_budgeted_naming_the_chunk():
    line = error_line("request", "--model", "llama-4-scout", "--isl", "1000000", "--prefill-chunk", "1")
    assert "--prefill-chunk would take about 250 s (1,000,000 prefill passes of 1 tokens" in line


def test_the_setting_raises_the_budget(monkeypatch):
    from llm_cost.errors import InvalidValueError
    from llm_cost.requests import request_cost

    monkeypatch.setenv("LLM_COST_WORK_BUDGET_S", "0.001")
    with pytest.raises(InvalidValueError, match=r"^osl would take about 0 s \(9,999 decode steps"):
        request_cost("gemma-2-9b", "h100-sxm", "lecture", isl=16, osl=10_000)
    with pytest.raises(InvalidValueError, match=r"^prefill_chunk would take .* \(100 prefill passes of 1 tokens"):
        request_cost("llama-3-8b", "h100-sxm", "lecture", isl=100, osl=2, prefill_chunk=1)
    monkeypatch.setenv("LLM_COST_WORK_BUDGET_S", "1")
    assert request_cost("gemma-2-9b", "h100-sxm", "lecture", isl=16, osl=10_000).osl == 10_000
    monkeypatch.setenv("LLM_COST_WORK_BUDGET_S", "soon")
    with pytest.raises(InvalidValueError, match="LLM_COST_WORK_BUDGET_S must be a finite number"):
        request_cost("llama-3-8b", "h100-sxm", "lecture", isl=16, osl=2)


def test_blocks_give_the_sums_of_one_evaluation(monkeypatch):
    """Blocks of 7 steps against one block: the same decode seconds, first and last steps and bound
    (gemma-2-9b across its 4,096-token window: the decode summed context by context)."""
    import importlib

    from llm_cost.requests import request_cost

    ph = importlib.import_module("llm_cost.requests.phases")
    whole = request_cost("gemma-2-9b", "h100-sxm", "lecture", isl=3900, osl=1000, batch=4).phases
    monkeypatch.setattr(ph, "BLOCK_STEPS", 7)
    blocked = request_cost("gemma-2-9b", "h100-sxm", "lecture", isl=3900, osl=1000, batch=4).phases
    assert blocked.decode_s == pytest.approx(whole.decode_s, rel=1e-12)
    assert (blocked.tpot_first_s, blocked.tpot_last_s, blocked.decode_bound) == (
        whole.tpot_first_s, whole.tpot_last_s, whole.decode_bound)
    assert blocked.decode_comm_time_s == pytest.approx(whole.decode_comm_time_s, rel=1e-12, abs=1e-18)


def test_monte_carlo_rounds_are_budgeted_in_memory():
    from llm_cost.errors import InvalidValueError
    from llm_cost.speculative import IndependentAcceptance, simulate_rounds

    with pytest.raises(InvalidValueError, match=r"^positions 10,000,000,000,000,000 would need about .* GB"):
        simulate_rounds(IndependentAcceptance(0.8), 4, streams=10**7, positions=10**9)


def test_speculative_decode_is_blocked_and_budgeted(monkeypatch):
    from llm_cost.errors import InvalidValueError
    from llm_cost.requests import Speculation, request
    from llm_cost.requests import request_cost

    spec = Speculation(alpha=0.8, gamma=4, c=0.1)
    whole = request_cost("llama-3-8b", "h100-sxm", "lecture", isl=100, osl=500, speculation=spec).phases
    monkeypatch.setattr(request, "BLOCK_STEPS", 7)
    blocked = request_cost("llama-3-8b", "h100-sxm", "lecture", isl=100, osl=500, speculation=spec).phases
    assert blocked.decode_s == pytest.approx(whole.decode_s, rel=1e-12)
    assert (blocked.tpot_first_s, blocked.tpot_last_s) == (whole.tpot_first_s, whole.tpot_last_s)
    with pytest.raises(InvalidValueError, match=r"^osl would take about 25 s \(9,999,999 speculative decode steps"):
        request_cost("llama-3-8b", "h100-sxm", "lecture", isl=100, osl=10**7, speculation=spec)
