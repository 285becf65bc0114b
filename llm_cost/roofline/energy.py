"""Power and energy of one forward pass: an estimate from the datasheet's board power.

Per GPU, over a step of T seconds:

    P(t)   = P_idle + (P_max - P_idle) x activity(t)
    E_gpu  = P_idle x T + (P_max - P_idle) x (a_body x t_busy + A_COMM x t_comm)
    E      = gpus x E_gpu          (J);   W = E / T          (W)

- t_busy = max(memory_s, compute_s) (the StepTime's memory_time_s, compute_time_s): the GPU's own
  stage of the roofline (under pp a GPU is busy for its stage and waits for the others: that wait
  and the fixed launch time draw idle power);
- a_body = A_MEMORY + (A_COMPUTE - A_MEMORY) x min(1, compute_s / memory_s): a pass at or past the
  ridge point runs the tensor cores flat out (A_COMPUTE), a purely memory-bound one mostly streams
  HBM (A_MEMORY); in between, by the share of the compute units the pass keeps busy;
- t_comm = the collectives' time not hidden behind the roofline (T - stages x t_busy - fixed).

`gpu_joules` is that formula, the one every estimate calls: a pass (`step_energy`), a phase of a
request (`phase_joules`), a served run (`serving.energy`).

Weights (assumptions, stated): A_COMPUTE = 1.0 (prefill draws about the board's TDP: Splitwise,
Patel et al., ISCA 2024, §III "power": the prompt phase runs near the power limit, the token
phase well below it and loses little when power-capped); A_MEMORY = 0.6 and A_COMM = 0.3 are
this project's choices, not measurements: decode at 60% of the idle-to-max range and a GPU
waiting on NVLink at 30%. The figures are estimates; a datasheet without power gives none.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.errors import InvalidValueError, check_number

A_COMPUTE = 1.0
A_MEMORY = 0.6
A_COMM = 0.3
J_PER_KWH = 3.6e6
MAX_USD_PER_KWH = 1e3  # an electricity price ($ per kWh) far past any tariff


@dataclass(frozen=True)
class StepEnergy:
    """A step's energy over all its GPUs (J), its duration (s) and the mean power it draws (W)."""

    joules: float
    seconds: float
    gpus: int

    @property
    def watts(self) -> float:
        return self.joules / self.seconds if self.seconds else 0.0


def has_power(gpu) -> bool:
    """The datasheet gives a max board power (an energy estimate is possible)."""
    return bool(getattr(gpu, "max_power_w", 0.0))


def body_activity(memory_s: float, compute_s: float) -> float:
    """a_body in [A_MEMORY, A_COMPUTE]: A_MEMORY + (A_COMPUTE - A_MEMORY) x min(1, compute_s / memory_s)."""
    share = 1.0 if memory_s <= 0 else min(1.0, compute_s / memory_s)
    return A_MEMORY + (A_COMPUTE - A_MEMORY) * share


def step_energy(step, gpu, gpus: int = 1) -> StepEnergy:
    """Energy (J) and mean power (W) of one StepTime on `gpus` GPUs of `gpu`, by the model above.

    Raises InvalidValueError when the datasheet has no `max_power_w` (no silent zero).
    """
    if not has_power(gpu):
        raise InvalidValueError(f"gpu.max_power_w of {gpu.name} is not given: no energy estimate "
                                f"(add max_power_w and idle_power_w to its datasheet)", params=("gpu",))
    check_number("gpus", gpus, low=1, integer=True)
    memory_s, compute_s = float(step.memory_time_s), float(step.compute_time_s)
    total_s = float(step.step_time_s)
    busy_s = max(memory_s, compute_s)
    comm_s = max(0.0, total_s - step.stages * busy_s - float(step.fixed_time_s))
    per_gpu = gpu_joules(gpu, total_s, busy_s * body_activity(memory_s, compute_s), comm_s)
    return StepEnergy(joules=per_gpu * gpus, seconds=total_s, gpus=int(gpus))


def gpu_joules(gpu, seconds: float, active_s: float, comm_s: float = 0.0) -> float:
    """One GPU's energy (J) over `seconds` of which it computes for `active_s` activity-weighted seconds
    (sum of a x t over its busy stretches) and waits on collectives for `comm_s`; the rest, pipeline
    waits and gaps included, at idle power:

        E = P_idle x seconds + (P_max - P_idle) x (active_s + A_COMM x comm_s)

    the one power formula every energy estimate calls (`step_energy`, `phase_joules`, `serving.energy`)."""
    return gpu.idle_power_w * seconds + (gpu.max_power_w - gpu.idle_power_w) * (active_s + A_COMM * comm_s)


def energy_usd(joules: float, usd_per_kwh: float) -> float:
    """Cost of `joules` at `usd_per_kwh`: J / 3.6e6 x $/kWh."""
    check_number("usd_per_kwh", usd_per_kwh, low=0, high=MAX_USD_PER_KWH)
    return joules / J_PER_KWH * usd_per_kwh


BOUND_ACTIVITY = {"compute": A_COMPUTE, "memory": A_MEMORY, "communication": A_COMM}


def phase_joules(gpu_seconds: float, comm_fraction: float, bound: str, gpu, stages: int = 1) -> float:
    """Energy (J) of a phase that holds `gpu_seconds` GPU-seconds (seconds x GPUs), `bound` by one side,
    its passes crossing `stages` pipeline stages one after another:

        E = gpu_seconds x (P_idle + (P_max - P_idle) x (a_bound x (1 - c) / stages + A_COMM x c))

    c = comm_fraction, the share of the phase spent in collectives; a_bound = BOUND_ACTIVITY[bound];
    a GPU computes its own stage, 1 / stages of the rest, and waits at idle power for the others
    (`gpu_joules`; a coarser form of `step_energy` for a phase of many steps known only by its total
    and bound: the fixed launch time is counted as busy, so it errs high).
    """
    if not has_power(gpu):
        raise InvalidValueError(f"gpu.max_power_w of {gpu.name} is not given: no energy estimate", params=("gpu",))
    check_number("comm_fraction", comm_fraction, low=0, high=1)
    check_number("stages", stages, low=1, integer=True)
    active_s = gpu_seconds * (1 - comm_fraction) / stages * BOUND_ACTIVITY.get(bound, A_MEMORY)
    return gpu_joules(gpu, gpu_seconds, active_s, gpu_seconds * comm_fraction)


def add_energy_usd(rows: list, usd_per_kwh: float) -> None:
    """Set each row's usd_per_million_tokens_energy from its joules_per_token (None stays None)."""
    check_number("usd_per_kwh", usd_per_kwh, low=0, high=MAX_USD_PER_KWH)
    for row in rows:
        joules = row.get("joules_per_token")
        row["usd_per_million_tokens_energy"] = None if joules is None else energy_usd(joules * 1e6, usd_per_kwh)
