"""`batching`'s energy columns (estimates, `serving.energy`): a served run's, a fleet's, a disaggregated
run's pools'; apart from `serving_engine` so that module stays readable."""

from __future__ import annotations


def serial_stages(dep, pipeline: str = "serial") -> int:
    """The pipeline stages a served iteration crosses one after another, the other GPUs idle (`serving.energy`):
    the deployment's pp under `serial`, 1 under `orca` and `microbatch` (the stages kept busy)."""
    return dep.pp if pipeline == "serial" else 1


def served_energy_columns(rows, results, acc, dep, fleets=None, pipeline: str = "serial") -> list:
    """Watts and J/token (estimates, `serving.energy`) on each served row where the datasheet gives a board
    power, a fleet's over all its replicas (`fleet_energy`), the engine's `pipeline` (`serial_stages`); the
    columns to show (none without a run or for a GPU without power). Every run is a `ServeResult`
    (`serve`, a fleet's `FleetResult.fleet`)."""
    from llm_cost.roofline.energy import has_power
    from llm_cost.serving.energy import fleet_energy, served_energy

    if not has_power(acc) or not results:
        return []
    from llm_cost.commands.options import ENERGY_COLUMNS

    stages = serial_stages(dep, pipeline)
    for index, (row, result) in enumerate(zip(rows, results)):
        energy = (fleet_energy(fleets[index], acc, dep.gpus_per_replica, stages=stages) if fleets
                  else served_energy(result, acc, dep.gpus_per_replica, stages=stages))
        row.update({"watts": energy.watts,  # no tokens generated: no J/token (None, not nan)
                    "joules_per_token": energy.joules_per_token if energy.output_tokens else None})
    return ENERGY_COLUMNS


def pools_energy_columns(rows, runs, acc, gpus: tuple[int, int], usd_per_kwh: float | None = None,
                         stages: tuple[int, int] = (1, 1), usd_per_gpu_hour: float | None = None) -> list:
    """A disaggregated run's watts and J/token (estimates): both pools' `fleet_energy` (`gpus` per replica
    of the prefill and the decode pool, `stages` each's `serial_stages`), each powered for the whole run; the
    columns to show (none without a board power; with `usd_per_kwh` the energy's price too, `priced`)."""
    from llm_cost.roofline.energy import has_power
    from llm_cost.serving.energy import fleet_energy

    if not has_power(acc):
        return []
    from llm_cost.commands.options import ENERGY_COLUMNS

    for row, run in zip(rows, runs):
        span = run.served.span_s
        joules = sum(fleet_energy(pool, acc, per_replica, span_s=span, stages=pool_stages).joules
                     for pool, per_replica, pool_stages in zip((run.prefill, run.decode), gpus, stages)
                     if pool is not None)
        tokens = run.served.output_tokens
        row.update({"watts": joules / span if span else 0.0,
                    "joules_per_token": joules / tokens if tokens else None})
    return ENERGY_COLUMNS + priced(rows, usd_per_kwh, usd_per_gpu_hour)


def check_price(usd_per_kwh: float | None, usd_per_gpu_hour: float | None = None) -> None:
    """`--usd-per-kwh` in [0, 1000] $/kWh and `--usd-per-gpu-hour` in [0, 1e4] $, or not given: checked
    before a simulation runs."""
    from llm_cost.errors import check_number

    if usd_per_kwh is not None:
        check_number("--usd-per-kwh", usd_per_kwh, low=0, high=1e3)
    if usd_per_gpu_hour is not None:
        check_number("--usd-per-gpu-hour", usd_per_gpu_hour, low=0, high=1e4)


def priced(rows, usd_per_kwh: float | None, usd_per_gpu_hour: float | None = None) -> list:
    """The prices of each row's output tokens and their columns: with `usd_per_gpu_hour`, the GPU-hours'
    (every GPU of the deployment for the whole run, prefills included, over the output tokens:
    price / 3600 / tokens_per_s_per_gpu x 1e6, `usd_per_million_tokens_gpu`); with `usd_per_kwh`, beside it
    the energy's (`roofline.energy.add_energy_usd`, from its J/token); [] without either (or without the
    figures they need: no tokens, no energy estimate)."""
    from llm_cost.commands.options import ENERGY_PRICE_COLUMN, GPU_PRICE_COLUMN
    from llm_cost.requests.request import usd_per_million_tokens  # a GPU-second per second of one GPU

    columns = []
    if usd_per_gpu_hour is not None and any(row.get("tokens_per_s_per_gpu") for row in rows):
        for row in rows:
            per_gpu = row.get("tokens_per_s_per_gpu")
            row["usd_per_million_tokens_gpu"] = (usd_per_million_tokens(1, per_gpu, usd_per_gpu_hour) if per_gpu
                                                 else None)
        columns.append(GPU_PRICE_COLUMN)
    if usd_per_kwh is not None and any(row.get("joules_per_token") is not None for row in rows):
        from llm_cost.roofline.energy import add_energy_usd

        add_energy_usd(rows, usd_per_kwh)
        columns.append(ENERGY_PRICE_COLUMN)
    return columns
