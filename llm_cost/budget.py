"""Budgets: an estimate of the memory a run needs, checked before the allocation, and of its work.

A simulation holds a few arrays and tuples per request; asked for 10^8 requests it used to allocate
for 15-44 s and die with a MemoryError. `check_memory` refuses such a run at once, with the estimate,
what this machine has available, and the largest count that fits. Long but feasible runs go ahead.

An analytic call runs in milliseconds; one whose loop grows with an input (a request's decode steps
with OSL, its prefill passes with ISL / chunk) is estimated first by `check_work` and refused past
`work_budget_s()`: WORK_BUDGET_S, or the environment's LLM_COST_WORK_BUDGET_S (seconds), which raises it
for the library and the CLI alike.
"""

from __future__ import annotations

import os

from llm_cost.errors import InvalidValueError, check_number

# Measured with /usr/bin/time on `llm-cost batching --rate 2 -n N`: peak RSS 46 MB at N = 20,000 and
# 110 MB at N = 200,000, so 0.36 kB a request; counted at 1 kB for the serving engine's own state
BYTES_PER_SIMULATED_REQUEST = 1000
MEMORY_SHARE = 0.5  # of the memory available: what one run may take


def available_memory_bytes() -> float:
    """The memory this machine has available now (Linux `MemAvailable`), else its physical memory;
    inf when neither is known (no refusal)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return float("inf")


def check_memory(param: str, count, bytes_each: float, what: str = "requests") -> None:
    """Raise InvalidValueError naming `param` unless `count` x `bytes_each` bytes fits MEMORY_SHARE of
    the available memory; the message gives the estimate and the largest count that fits.

    >>> check_memory("requests", 2000, BYTES_PER_SIMULATED_REQUEST)
    """
    check_number(param, count, low=0)
    need = float(count) * bytes_each
    budget = MEMORY_SHARE * available_memory_bytes()
    if need > budget:
        raise InvalidValueError(
            f"{param} {count:,.0f} would need about {need / 1e9:,.1f} GB of memory ({bytes_each:,.0f} B per "
            f"{what[:-1] if what.endswith('s') else what}); this machine has {budget / MEMORY_SHARE / 1e9:,.1f} GB "
            f"available and a run may take {MEMORY_SHARE:.0%}: give at most {int(budget // bytes_each):,}",
            params=(param,))


WORK_BUDGET_S = 5.0  # one analytic call: 1,000 times what a typical one takes
WORK_BUDGET_VARIABLE = "LLM_COST_WORK_BUDGET_S"


def work_budget_s() -> float:
    """The seconds one analytic call may take: $LLM_COST_WORK_BUDGET_S when set (a number > 0), else
    WORK_BUDGET_S."""
    text = os.environ.get(WORK_BUDGET_VARIABLE)
    if text is None:
        return WORK_BUDGET_S
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    check_number(WORK_BUDGET_VARIABLE, value, low=0, low_open=True)
    return value


def check_work(param: str, seconds: float, what) -> None:
    """Raise InvalidValueError naming `param` when the estimated `seconds` of a call pass `work_budget_s()`;
    the message gives the estimate (`what`, or what it returns when callable: how it was counted) and the
    setting that raises the budget.

    >>> check_work("osl", 0.01, "10,000 decode steps at 1 us")
    >>> check_work("osl", 10.0, "9,999,999 decode steps at 1 us")
    Traceback (most recent call last):
    ...
    llm_cost.errors.InvalidValueError: osl would take about 10 s (9,999,999 decode steps at 1 us), past the work budget of 5 s a call; set LLM_COST_WORK_BUDGET_S=20 (seconds) to allow it
    """
    budget = work_budget_s()
    if seconds > budget:
        what = what() if callable(what) else what
        raise InvalidValueError(
            f"{param} would take about {seconds:,.0f} s ({what}), past the work budget of {budget:g} s a call; "
            f"set {WORK_BUDGET_VARIABLE}={max(2 * seconds, budget):.2g} (seconds) to allow it", params=(param,))
