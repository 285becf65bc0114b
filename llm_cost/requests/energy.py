"""A request's energy estimates (`request_energy`, `phase_energy`): joules and watts of one static batch
from each phase's GPU-seconds, bound and share in collectives (`roofline.energy`). `request` and `plan`
rows (`report.request_rows`, `planner.rows`) both take theirs from here."""

from __future__ import annotations


def request_energy(r, gpu) -> dict:
    """joules (one batch, all its GPUs), joules_per_token (over its B x OSL output tokens) and watts
    (over e2e) of a `requests.RequestCost` `r` on `gpu`: estimates from `roofline.energy.phase_joules`
    over each phase's GPU-seconds, bound and share in collectives (`phase_energy`); None without the
    datasheet's board power. `request` and `plan` rows (`plan_rows`) both take theirs from here."""
    from llm_cost.roofline.energy import has_power

    if not has_power(gpu):
        return {"joules": None, "joules_per_token": None, "watts": None}
    joules = sum(phase_energy(r, gpu))
    return {"joules": joules, "joules_per_token": joules / (r.batch * r.osl), "watts": joules / r.e2e_s}


def phase_energy(r, gpu) -> tuple[float, float]:
    """(prefill, decode) joules of one batch of a `requests.RequestCost` `r` on `gpu`: each phase's
    GPU-seconds (`r.gpu_seconds`) at its bound and its share in collectives, a GPU busy for its own of the
    deployment's pp stages (`roofline.energy.phase_joules`; raises without the datasheet's board power). A disaggregated
    plan's pools (`planner.disaggregate`) take each its own phase."""
    from llm_cost.roofline.energy import phase_joules

    ph = r.phases

    def share(comm_s, seconds):
        return min(1.0, comm_s / seconds) if seconds else 0.0

    pp = r.deployment.pp  # one static batch in flight: a GPU computes its stage and waits for the others
    return (phase_joules(r.gpu_seconds(ph.prefill_s), share(ph.prefill_comm_time_s, ph.prefill_s), ph.prefill_bound,
                         gpu, pp),
            phase_joules(r.gpu_seconds(ph.decode_s), share(ph.decode_comm_time_s, ph.decode_s), ph.decode_bound,
                         gpu, pp))
