"""`batching --usd-per-gpu-hour` (issue 25.5: `--usd-per-kwh` adds the energy's cost beside the GPU-hour
cost): a served run's GPU-hours over its output tokens, every GPU for the whole run,
price / 3600 / (output tokens per second per GPU) x 1e6, beside the energy's price."""

from __future__ import annotations

import pytest

from tests.helpers import error_line, rows_of

RUN = ("batching", "--rate", "5", "-n", "200")


def test_a_served_runs_gpu_price_is_its_gpu_hours_over_its_tokens_by_hand():
    row, = rows_of(*RUN, "--usd-per-gpu-hour", "2.5", "--usd-per-kwh", "0.1")
    tokens_per_gpu_hour = row["tokens_per_s_per_gpu"] * 3600
    assert row["usd_per_million_tokens_gpu"] == pytest.approx(2.5 / tokens_per_gpu_hour * 1e6, rel=1e-12)
    assert row["usd_per_million_tokens_energy"] == pytest.approx(row["joules_per_token"] * 1e6 / 3.6e6 * 0.1,
                                                                 rel=1e-12)
    assert "usd_per_million_tokens_gpu" not in rows_of(*RUN)[0]  # no price, no column


def test_two_replicas_pay_for_both_gpus():
    one, = rows_of(*RUN, "--usd-per-gpu-hour", "2")
    fleet = rows_of("batching", "--rate", "10", "-n", "400", "--gpus", "2", "--router", "round-robin",
                    "--usd-per-gpu-hour", "2")[0]
    assert fleet["gpus"] == 2 and fleet["tokens_per_s_per_gpu"] == pytest.approx(fleet["tokens_per_s"] / 2)
    assert fleet["usd_per_million_tokens_gpu"] == pytest.approx(2 / 3600 / fleet["tokens_per_s_per_gpu"] * 1e6)
    assert one["usd_per_million_tokens_gpu"] > 0


def test_disaggregated_pools_price_both_pools_gpus():
    row, = rows_of(*RUN, "--disaggregate", "1:1", "--usd-per-gpu-hour", "2.5")
    assert row["gpus"] == 2 and row["tokens_per_s_per_gpu"] == pytest.approx(row["tokens_per_s"] / 2)
    assert row["usd_per_million_tokens_gpu"] == pytest.approx(2.5 / 3600 / row["tokens_per_s_per_gpu"] * 1e6)


@pytest.mark.parametrize("price", ["-1", "1e5"])
def test_a_price_out_of_range_is_one_line(price):
    assert error_line(*RUN, "--usd-per-gpu-hour", price) == (
        f"Error: --usd-per-gpu-hour must be in [0, 10000], got {float(price)}")
