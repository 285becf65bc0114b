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


@pytest.mark.parametrize("command", ["request", "roofline", "capacity"])
def test_the_gpu_column_holds_what_gpu_takes(command):
    """Issue 28.8: one name for one thing. A table's `gpu` column holds the catalog key, as the JSON's
    `gpu` does and as `--gpu` takes it (plan's GPU column did; request, roofline and capacity showed the
    display name "H100 SXM")."""
    out = run(command, "--gpu", "h100-sxm", "--gpu", "l4")
    assert out.exit_code == 0, out.output
    keys = {r["gpu"] for r in rows_of(command, "--gpu", "h100-sxm", "--gpu", "l4")}
    rows = [{c.strip() for c in ln.split("│")[1:-1]} for ln in out.stdout.splitlines() if ln.startswith("│")]
    assert keys == {"h100-sxm", "l4"} and rows and all(len(r & keys) == 1 for r in rows), out.stdout
    assert keys <= set().union(*rows) and not set().union(*rows) & {"H100 SXM", "L4"}


def test_roofline_takes_a_value_given_twice_once():
    """Issue 28.6 review: `roofline --batch 1 --batch 1` printed two identical rows where `request` merges
    repeated values: one row per distinct model, GPU and batch, in the order given."""
    import json

    from tests.helpers import run

    out = run("roofline", "--batch", "8", "--batch", "1", "--batch", "8", "--gpu", "h100-sxm", "--gpu", "h100-sxm",
              "--format", "json")
    assert out.exit_code == 0, out.output
    assert [(r["gpu"], r["batch"]) for r in json.loads(out.stdout)] == [("h100-sxm", 8), ("h100-sxm", 1)]
