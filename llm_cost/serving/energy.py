"""Energy of a served run (an estimate), from a ServeResult without touching the engine.

One replica of `gpus_per_replica` GPUs over the run's time T = max(span_s, busy_s), each GPU by the
one power formula, `roofline.energy.gpu_joules`:

    E = gpus_per_replica x (P_idle x T + (P_max - P_idle) x (a_busy x (busy_s - comm_s) / stages + A_COMM x comm_s))
    a_busy = A_MEMORY + (A_COMPUTE - A_MEMORY) x compute_bound_s / busy_s
    J/token = E / output_tokens;  W = E / T

`compute_bound_s` is the engine's tally of the busy seconds of its compute-bound iterations
(`ServeResult.compute_bound_s`): a prefill of long prompts runs at A_COMPUTE, a decode of few rows at
A_MEMORY, as a request's phases do by their bound (`roofline.energy.phase_joules`). `stages`: the
pipeline stages an iteration crosses one after another with one batch in flight (`pipeline="serial"`):
a GPU computes its own stage and waits at idle power for the others, as `roofline`'s pass does; under
`orca` and `microbatch` the stages are kept busy (the engine's busy_s is already one stage's time), 1.
Idle gaps between arrivals draw P_idle. Replicas serve alike: the fleet's J/token is one replica's,
its watts replicas x one replica's.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.errors import InvalidValueError, check_number
from llm_cost.roofline.energy import A_COMPUTE, A_MEMORY, gpu_joules, has_power


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


def served_energy(result, gpu, gpus_per_replica: int = 1, *, stages: int = 1) -> ServedEnergy:
    """Energy of one replica's served run `result` (a ServeResult) on `gpus_per_replica` GPUs of `gpu`,
    an iteration crossing `stages` pipeline stages one after another (module doc)."""
    if not has_power(gpu):
        raise InvalidValueError(f"gpu.max_power_w of {gpu.name} is not given: no energy estimate", params=("gpu",))
    check_number("gpus_per_replica", gpus_per_replica, low=1, integer=True)
    check_number("stages", stages, low=1, integer=True)
    busy = result.busy_s
    share = min(1.0, result.compute_bound_s / busy) if busy > 0 else 0.0
    a_busy = A_MEMORY + (A_COMPUTE - A_MEMORY) * share
    seconds = max(result.span_s, busy)
    comm_s = min(result.comm_total_s, busy)
    per_gpu = gpu_joules(gpu, seconds, a_busy * (busy - comm_s) / stages, comm_s)
    return ServedEnergy(joules=per_gpu * gpus_per_replica, seconds=seconds, output_tokens=result.output_tokens)


def fleet_energy(fleet, gpu, gpus_per_replica: int = 1, *, span_s: float = 0.0, stages: int = 1) -> ServedEnergy:
    """Energy of a fleet's run (`fleet.FleetResult`): each replica's `served_energy`, plus its idle
    power over the rest of the fleet's span (a replica that finished early, or was handed nothing,
    still draws idle power until the last request is done); `span_s` a longer span to idle through
    (a disaggregated run's pools, powered for the whole run); `stages` as `served_energy`'s.

    .. math:: E = \\sum_r E_r + P_{idle}\\,g \\Big(\\sum_r (T - T_r) + (R - R_{used})\\,T\\Big)

    with T the fleet's span, T_r replica r's, R the replicas and g the GPUs per replica.
    """
    parts = [served_energy(replica, gpu, gpus_per_replica, stages=stages) for replica in fleet.replicas]
    seconds = max([span_s, fleet.fleet.span_s, *(part.seconds for part in parts)])
    idle_s = sum(seconds - part.seconds for part in parts) + (fleet.replica_count - len(parts)) * seconds
    joules = sum(part.joules for part in parts) + gpu.idle_power_w * gpus_per_replica * idle_s
    return ServedEnergy(joules=joules, seconds=seconds, output_tokens=fleet.fleet.output_tokens)
