"""Energy of a served run (an estimate), from a ServeResult without touching the engine.

One replica of `gpus_per_replica` GPUs over the run's time T = max(span_s, busy_s):

    E = gpus_per_replica x (P_idle x T + (P_max - P_idle) x (a_busy x (busy_s - comm_s) + A_COMM x comm_s))
    a_busy = A_MEMORY + (A_COMPUTE - A_MEMORY) x min(1, (rows / iteration) / critical_rows)
    J/token = E / output_tokens;  W = E / T

the weights and board power of `roofline.energy`; `critical_rows` is the row count where a pass turns
compute-bound (`roofline.critical_rows`): an engine that mostly decodes few rows an iteration runs
near A_MEMORY, one that prefills long prompts near A_COMPUTE. Idle gaps between arrivals draw P_idle.
Replicas serve alike: the fleet's J/token is one replica's, its watts replicas x one replica's.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.errors import InvalidValueError, check_number
from llm_cost.roofline.energy import A_COMM, A_COMPUTE, A_MEMORY, has_power


@dataclass(frozen=True)
class ServedEnergy:
    """One replica's energy over a run (J), the run's time (s), and the tokens it generated."""

    joules: float
    seconds: float
    output_tokens: int

    @property
    def watts(self) -> float:
        return self.joules / self.seconds if self.seconds else 0.0

    @property
    def joules_per_token(self) -> float:
        return self.joules / self.output_tokens if self.output_tokens else float("nan")


def served_energy(result, gpu, gpus_per_replica: int = 1, *, critical_rows: float | None = None) -> ServedEnergy:
    """Energy of one replica's served run `result` (a ServeResult) on `gpus_per_replica` GPUs of `gpu`.

    critical_rows None: the busy time is taken as memory-bound (a_busy = A_MEMORY).
    """
    if not has_power(gpu):
        raise InvalidValueError(f"gpu.max_power_w of {gpu.name} is not given: no energy estimate", params=("gpu",))
    check_number("gpus_per_replica", gpus_per_replica, low=1, integer=True)
    share = 0.0
    if critical_rows is not None:
        check_number("critical_rows", critical_rows, low=0, low_open=True)
        rows_per_iteration = result.positions_computed / result.iterations if result.iterations else 0.0
        share = min(1.0, rows_per_iteration / critical_rows)
    a_busy = A_MEMORY + (A_COMPUTE - A_MEMORY) * share
    seconds = max(result.span_s, result.busy_s)
    comm_s = min(result.comm_total_s, result.busy_s)
    span_w = gpu.max_power_w - gpu.idle_power_w
    per_gpu = gpu.idle_power_w * seconds + span_w * (a_busy * (result.busy_s - comm_s) + A_COMM * comm_s)
    return ServedEnergy(joules=per_gpu * gpus_per_replica, seconds=seconds, output_tokens=result.output_tokens)


def fleet_energy(fleet, gpu, gpus_per_replica: int = 1, *, span_s: float = 0.0) -> ServedEnergy:
    """Energy of a fleet's run (`fleet.FleetResult`): each replica's `served_energy`, plus its idle
    power over the rest of the fleet's span (a replica that finished early, or was handed nothing,
    still draws idle power until the last request is done); `span_s` a longer span to idle through
    (a disaggregated run's pools, powered for the whole run).

    .. math:: E = \\sum_r E_r + P_{idle}\\,g \\Big(\\sum_r (T - T_r) + (R - R_{used})\\,T\\Big)

    with T the fleet's span, T_r replica r's, R the replicas and g the GPUs per replica.
    """
    parts = [served_energy(r, gpu, gpus_per_replica) for r in fleet.replicas]
    seconds = max([span_s, fleet.fleet.span_s, *(p.seconds for p in parts)])
    idle_s = sum(seconds - p.seconds for p in parts) + (fleet.replica_count - len(parts)) * seconds
    joules = sum(p.joules for p in parts) + gpu.idle_power_w * gpus_per_replica * idle_s
    return ServedEnergy(joules=joules, seconds=seconds, output_tokens=fleet.fleet.output_tokens)
