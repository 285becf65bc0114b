"""`request --gpu` repeats (issue 28): a row per GPU, each equal to that GPU's single run."""

from __future__ import annotations

import pytest

from tests.helpers import rows_of, run


def test_request_gpu_repeats_a_row_each():
    both = rows_of("request", "--gpu", "h100-sxm", "--gpu", "a100-80gb", "--batch", "2", "--batch", "8")
    assert [(r["gpu"], r["batch"]) for r in both] == [("h100-sxm", 2), ("h100-sxm", 8),
                                                      ("a100-80gb", 2), ("a100-80gb", 8)]
    single = rows_of("request", "--gpu", "a100-80gb", "--batch", "2", "--batch", "8")
    for a, b in zip(both[2:], single):
        assert a["e2e_s"] == pytest.approx(b["e2e_s"], rel=1e-12) and a["watts"] == pytest.approx(b["watts"])


def test_request_gpu_table_has_a_gpu_column():
    out = run("request", "--gpu", "h100-sxm", "--gpu", "l4")
    assert out.exit_code == 0, out.output
    assert "gpu" in out.output and "L4" in out.output and "H100" in out.output
