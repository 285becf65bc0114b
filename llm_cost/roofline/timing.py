"""`StepTime`: one forward pass's inputs, what it reads and computes, and how long it takes (SI).

    step_time_s = stages x max(memory_time_s, compute_time_s) + comm_time_s + fixed_time_s

`PassCost.step` builds it (`roofline.step_time` on one GPU, `parallel.deployed_step_time` on a
deployment); on one GPU stages = 1 and comm_time_s = 0, so it is the roofline's T(m).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llm_cost.roofline.pass_terms import deployed_sum, roofline_total


@dataclass(frozen=True)
class StepTime:
    """One forward pass: its inputs, what it reads and computes, and how long it takes (SI).

    Each field is a float, or a numpy array when an input was one (broadcast shapes).

    Attributes
    ----------
    rows, batch, context
        The pass's token rows, the sequences they come from and the tokens each has cached.
    weight_bytes_read, kv_bytes, flops
        Weight bytes read, K/V bytes moved (read and written; 0 when the profile counts no K/V)
        and FLOPs; `bytes_read` is the two bytes together.
    memory_time_s, compute_time_s, fixed_time_s, comm_time_s
        bytes / (BW eta_bw), FLOPs / (F eta_f) of one stage, the profile's fixed time and the
        collectives, in seconds; `step_time_s` is the pass's and `bound` which side sets it.
    stages, overlap_comm, handoff_s
        Pipeline stages, whether the collectives hide behind them, the hand-offs' seconds.
    fits, fit_note
        Whether the GPU's memory and the context hold one pass (None: not checked) and why not.

    Examples
    --------
    `lc.step_time` gives it. A decode step of 8 sequences with 1,024 cached tokens each of
    Llama-3.1-8B on an H100 (lecture preset): the weights and 8 x 1,025 tokens of K/V read,
    memory-bound, plus the preset's 1 ms fixed time:

    >>> import llm_cost as lc
    >>> t = lc.step_time("llama-3.1-8b", "h100-sxm", "lecture", batch=8, context=1024)
    >>> round(t.weight_bytes_read / 1e9, 2), int(t.kv_bytes), round(t.flops / 1e9, 1)
    (15.01, 1074790400, 124.4)
    >>> round(t.memory_time_s * 1e3, 2), round(t.compute_time_s * 1e3, 2), t.fixed_time_s
    (6.0, 0.21, 0.001)
    >>> round(t.step_time_s * 1e3, 2), t.bound, t.fits
    (7.0, 'memory', True)

    Arrays in, arrays out: one decode row against the prefill of a 512-token prompt.

    >>> grid = lc.step_time("llama-3.1-8b", "h100-sxm", "lecture", rows=[1, 512])
    >>> (grid.step_time_s * 1e3).round(2).tolist(), grid.bound.tolist()
    ([6.6, 14.07], ['memory', 'compute'])
    """

    rows: Any
    batch: Any
    context: Any
    weight_bytes_read: Any
    kv_bytes: Any
    flops: Any
    memory_time_s: Any
    compute_time_s: Any
    fixed_time_s: float
    comm_time_s: Any = 0.0  # all communication (tp all-reduces, ep all-to-alls, pp hand-offs); 0 on one GPU
    stages: int = 1  # pipeline stages the pass crosses; memory_time_s and compute_time_s are one stage's
    overlap_comm: bool = False  # the collectives hide behind the stages' roofline (hand-offs never do)
    handoff_s: Any = 0.0  # of comm_time_s, the pipeline's stage hand-offs
    fits: Any = None  # the GPU's memory and the context hold the pass (one pass: `lc.step_time`, `deployed_step_time`); None: not checked (a grid, `roofline.step_time`)
    fit_note: str = ""  # why it does not fit, in one line ("" when it fits or was not checked)

    @property
    def step_time_s(self):
        """max(memory_time_s, compute_time_s) + fixed_time_s; on a deployment stages x max(...) +
        comm_time_s + fixed_time_s (`overlap_comm`: max(stages x max(...), comm_time_s - handoff_s) +
        handoff_s + fixed_time_s). The CLI's names: every command's JSON says the same."""
        if self.stages == 1 and not _any(self.comm_time_s):
            return roofline_total(self.memory_time_s, self.compute_time_s, self.fixed_time_s)
        import numpy as np

        longer = roofline_total(self.memory_time_s, self.compute_time_s, 0.0)
        total = deployed_sum(longer, self.stages, np.subtract(self.comm_time_s, self.handoff_s), self.handoff_s,
                             self.fixed_time_s, self.overlap_comm)  # PassCost.deployed_total's composition
        return float(total) if np.ndim(total) == 0 else total

    @property
    def bound(self):
        """'memory', 'compute' or 'communication' (an array of them for arrays): which side sets
        the time (communication: the collectives take longer than the stages' roofline)."""
        scalar = isinstance(self.memory_time_s, float) and isinstance(self.compute_time_s, float)
        if scalar and not _any(self.comm_time_s):
            return "compute" if self.compute_time_s > self.memory_time_s else "memory"
        import numpy as np

        side = np.where(np.asarray(self.compute_time_s) > self.memory_time_s, "compute", "memory")
        longer = np.maximum(self.memory_time_s, self.compute_time_s) * self.stages
        side = np.where(np.asarray(self.comm_time_s) > longer, "communication", side)
        return str(side) if scalar and np.ndim(side) == 0 else side

    @property
    def bytes_read(self):
        return self.weight_bytes_read + self.kv_bytes


def _any(value) -> bool:
    """`value` is not 0 (a number) or has a non-zero element (an array)."""
    if isinstance(value, (int, float)):
        return bool(value)
    import numpy as np

    return bool(np.any(value))
