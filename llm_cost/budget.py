"""Budgets: an estimate of the memory a run needs, checked before the allocation.

A simulation holds a few arrays and tuples per request; asked for 10^8 requests it used to allocate
for 15-44 s and die with a MemoryError. `check_memory` refuses such a run at once, with the estimate,
what this machine has available, and the largest count that fits. Long but feasible runs go ahead.
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
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
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
