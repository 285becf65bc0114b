"""Two interconnect tiers (issue 11): a collective group wider than one scale-up domain (8 GPUs of an
HGX board) crosses the network, timed as NCCL's tuning model times a ring over several nodes
(src/graph/tuning.cc: `(nsteps - nInterSteps) * intraLat + nInterSteps * interLat`, the inter-node
speed for the bandwidth). Each figure below is worked by hand from the H100 datasheet: NVLink 4
450e9 B/s and 0.47 us a step inside the board, 50e9 B/s (a 400 Gb/s NIC per GPU) and 2.7 us a step
between boards.
"""

from __future__ import annotations

import pytest

from llm_cost.catalog import load_accelerator
from llm_cost.catalog.datasheet import accelerator_from_datasheet
from llm_cost.errors import ConfigError
from llm_cost.parallel import deployed_step_time
from llm_cost.parallel.comm import all_reduce_s, all_to_all_s, handoffs_across, send_s
from llm_cost.specs.deployment import Deployment

H100, L4 = load_accelerator("h100-sxm"), load_accelerator("l4")
UP_BW, UP_LAT, OUT_BW, OUT_LAT = 450e9, 0.47e-6, 50e9, 2.7e-6
V = 8192 * 2 * 64  # 64 rows of a hidden size of 8192 in BF16


def test_the_h100_datasheet_has_both_tiers():
    assert (H100.scale_up_gpus, H100.scale_out_bytes_per_s, H100.scale_out_latency_s) == (8, OUT_BW, OUT_LAT)
    assert (H100.interconnect_bytes_per_s, H100.interconnect_latency_s) == (UP_BW, UP_LAT)
    assert [H100.domains(n) for n in (1, 8, 9, 16, 64)] == [1, 1, 2, 2, 8]


def test_inside_one_board_nothing_changes():
    assert all_reduce_s(V, 8, H100) == pytest.approx(2 * 7 * UP_LAT + 2 * 7 / 8 * V / UP_BW, rel=1e-12)
    assert all_to_all_s(V, 8, H100) == pytest.approx(7 * UP_LAT + 7 / 8 * V / UP_BW, rel=1e-12)
    assert send_s(V, H100) == pytest.approx(UP_LAT + V / UP_BW, rel=1e-12)


def test_an_all_reduce_over_two_boards_by_hand():
    # 16 GPUs, 2 nodes: 2 x 15 ring steps, 2 x 1 of them between the boards; the NIC is the bottleneck
    by_hand = 2 * (16 - 2) * UP_LAT + 2 * (2 - 1) * OUT_LAT + 2 * 15 / 16 * V / OUT_BW
    assert all_reduce_s(V, 16, H100) == pytest.approx(by_hand, rel=1e-12)
    assert all_reduce_s(V, 16, H100) > 5 * all_reduce_s(V, 8, H100)  # the network is 9x narrower


def test_an_all_to_all_over_four_boards_by_hand():
    # 32 GPUs in 4 boards of 8: each GPU keeps 1/32, sends 7/32 over NVLink and 24/32 over the NIC at once
    inside, across = 7 / 32 * V / UP_BW, 24 / 32 * V / OUT_BW
    by_hand = (32 - 4) * UP_LAT + (4 - 1) * OUT_LAT + max(inside, across)
    assert all_to_all_s(V, 32, H100) == pytest.approx(by_hand, rel=1e-12)


def test_a_chip_without_a_network_keeps_one_tier():
    # the L4's datasheet gives PCIe only: 16 GPUs are timed on it, an optimistic bound (README)
    n = 16
    assert L4.domains(n) == 1
    assert all_reduce_s(V, n, L4) == pytest.approx(
        2 * (n - 1) * L4.interconnect_latency_s + 2 * (n - 1) / n * V / L4.interconnect_bytes_per_s, rel=1e-12)


@pytest.mark.parametrize("tp,pp,crossing", [(8, 2, 1), (4, 4, 1), (2, 4, 0), (8, 4, 3), (16, 2, 1), (1, 16, 1)])
def test_pipeline_hand_offs_that_cross_boards(tp, pp, crossing):
    assert handoffs_across(tp, pp, H100) == crossing


def test_a_pipeline_over_two_boards_pays_one_network_hand_off():
    rows = 4
    two = deployed_step_time("llama-3-70b", H100, "article", Deployment(tp=8, pp=2), rows=rows)
    assert two.handoff_s == pytest.approx(OUT_LAT + rows * 8192 * 2 / OUT_BW, rel=1e-9)
    inside = deployed_step_time("llama-3-70b", H100, "article", Deployment(tp=4, pp=2), rows=rows)
    assert inside.handoff_s == pytest.approx(UP_LAT + rows * 8192 * 2 / UP_BW, rel=1e-9)


def test_a_pipeline_on_a_chip_without_a_network():
    # pp over the L4's PCIe only: every hand-off on the one link, none over a network it does not have
    t = deployed_step_time("llama-3-8b", L4, "article", Deployment(tp=2, pp=8), rows=1)
    assert t.handoff_s == pytest.approx(7 * (L4.interconnect_latency_s + 4096 * 2 / L4.interconnect_bytes_per_s))


def test_tp_16_costs_more_communication_than_tp_8_on_h100s():
    t8 = deployed_step_time("llama-3-70b", H100, "article", Deployment(tp=8), rows=1)
    t16 = deployed_step_time("llama-3-70b", H100, "article", Deployment(tp=16), rows=1)
    assert t16.comm_time_s > 2 * t8.comm_time_s
    # 160 all-reduces of one row (8192 x 2 bytes) over 16 GPUs in two boards
    assert t16.comm_time_s == pytest.approx(160 * all_reduce_s(8192 * 2, 16, H100), rel=1e-9)


def _sheet(**extra) -> dict:
    base = {"name": "X", "memory_bytes": 80e9, "bandwidth_bytes_per_s": 3.35e12, "bf16_flops_per_s": 989e12,
            "interconnect_bytes_per_s": 450e9, "interconnect_latency_s": 4.7e-7}
    return {**base, **extra}


@pytest.mark.parametrize("extra,needle", [
    ({"scale_up_gpus": 8}, "go together"),
    ({"scale_up_gpus": 8, "scale_out_bytes_per_s": 50e9}, "go together"),
    ({"scale_up_gpus": 8.5, "scale_out_bytes_per_s": 50e9, "scale_out_latency_s": 2.7e-6}, "whole number"),
    ({"scale_up_gpus": 8, "scale_out_bytes_per_s": 50e12, "scale_out_latency_s": 2.7e-6}, "scale_out_bytes_per_s"),
])
def test_bad_scale_out_figures_are_refused_naming_the_key(extra, needle):
    with pytest.raises(ConfigError, match=needle):
        accelerator_from_datasheet(_sheet(**extra))


def test_scale_out_needs_the_link_inside_a_domain():
    sheet = _sheet(scale_up_gpus=8, scale_out_bytes_per_s=50e9, scale_out_latency_s=2.7e-6)
    del sheet["interconnect_bytes_per_s"], sheet["interconnect_latency_s"]
    with pytest.raises(ConfigError, match="interconnect_bytes_per_s"):
        accelerator_from_datasheet(sheet)
    ok = accelerator_from_datasheet(_sheet(scale_up_gpus=8, scale_out_bytes_per_s=50e9, scale_out_latency_s=2.7e-6))
    assert ok.domains(16) == 2 and isinstance(ok.scale_up_gpus, int)
