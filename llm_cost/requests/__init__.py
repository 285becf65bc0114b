"""Whole requests: a prefill, then the output tokens at a growing context; TTFT, TPOT, e2e,
throughput and dollars on a deployment (`request`), and the phases they are made of (`phases`)."""

from llm_cost._exports import lazy_exports, names_from

_EXPORTS = {
    **names_from(".phases", "Phases", "phases"),
    **names_from(".request", "RequestCost", "Speculation", "gpu_seconds", "request_cost", "request_fit"),
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
