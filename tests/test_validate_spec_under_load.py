"""Rows under load measured with speculative decoding (issue 23.5): served with speculation in the batch.

Two rows of train_inferencex.csv (gpt-oss-120b on two H100s, 1k/1k, a closed loop of 4 clients, 40
prompts: served by the engine, not a static batch) with the spec columns added: EAGLE-3, 3 drafts a
round, 2.5 (or 3.5) tokens accepted a round on average."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from helpers import rows_of
from llm_cost.calibrate import predict, read_points
from llm_cost.calibrate.bench_columns import BenchConditions
from llm_cost.specs.profiles import PRESETS
from llm_cost.speculative.closed_forms import expected_tokens

TRAIN = Path(__file__).resolve().parent / "data" / "measured" / "train_inferencex.csv"
CONDITION = "inferencex-h100-gpt-oss-120b-vllm-fp4-tp2-1k1k-c4-"  # concurrency 4, served (num_prompts 40)
METRICS = ("itl_ms", "output_tok_per_s_per_gpu")
EAGLE3 = {"spec_method": "eagle3", "spec_gamma": "3", "spec_accept_len": "2.5"}
VARIANTS = {"plain": {}, "eagle3": EAGLE3, "eagle3-longer": {**EAGLE3, "spec_accept_len": "3.5"}}
OLD_REFUSAL = "under load is not served yet"


@pytest.fixture(scope="module")
def points_csv(tmp_path_factory) -> Path:
    """The condition's rows, each as measured (plain) and with the spec columns of each variant."""
    with TRAIN.open(newline="") as f:
        rows = [row for row in csv.DictReader(f) if row["id"].startswith(CONDITION) and
                row["metric"] in METRICS]
    assert {row["metric"] for row in rows} == set(METRICS)
    path = tmp_path_factory.mktemp("spec") / "points.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]) + list(EAGLE3))
        writer.writeheader()
        for name, columns in VARIANTS.items():
            for row in rows:
                writer.writerow({**row, "id": f"{name}-{row['metric']}", **columns})
    return path


@pytest.fixture(scope="module")
def predicted(points_csv) -> dict:
    """id -> Prediction under `measured`."""
    return {point.id: predict(point, PRESETS["measured"]) for point in read_points(points_csv)}


def test_a_concurrency_row_with_speculation_is_covered(predicted):
    spec = [predicted[f"eagle3-{metric}"] for metric in METRICS]
    assert all(p.point.batch_kind == "concurrency" and p.point.bench.speculative for p in spec)
    assert all(p.covered for p in spec), [p.reason for p in spec]


def test_speculation_lowers_the_itl_and_raises_the_output(predicted):
    """2.5 tokens a round for 3 drafts at 0.05 of a step each and a verification of 4 rows a client: at
    concurrency 4 the decode is memory-bound, so a round costs little more than a step."""
    assert predicted["eagle3-itl_ms"].predicted < 0.8 * predicted["plain-itl_ms"].predicted
    output = "output_tok_per_s_per_gpu"
    assert predicted[f"eagle3-{output}"].predicted > 1.2 * predicted[f"plain-{output}"].predicted


def test_a_longer_accepted_length_predicts_a_lower_itl(predicted):
    assert predicted["eagle3-longer-itl_ms"].predicted < predicted["eagle3-itl_ms"].predicted
    assert (predicted["eagle3-longer-output_tok_per_s_per_gpu"].predicted
            > predicted["eagle3-output_tok_per_s_per_gpu"].predicted)


def test_the_served_and_the_static_rows_solve_alpha_alike(points_csv, monkeypatch):
    """One solve (`BenchConditions.spec_alpha`) serves a static row and a row under load: each asks it for
    the row's alpha, whose expected tokens a round at gamma 3 are the accepted length 2.5."""
    from llm_cost.calibrate.under_load import load_figures, spec_config

    solve, asked = BenchConditions.spec_alpha.fget, []

    def recorded(bench):
        asked.append(bench)
        return solve(bench)

    monkeypatch.setattr(BenchConditions, "spec_alpha", property(recorded))
    load_figures.cache_clear()  # the served row is served again, not read from another test's run
    point = next(p for p in read_points(points_csv) if p.id == "eagle3-itl_ms")
    static = read_points(_static_copy(points_csv))[0]
    assert predict(point, PRESETS["measured"]).covered and predict(static, PRESETS["measured"]).covered
    assert point.bench in asked and static.bench in asked  # each path asked the one solve
    alpha = spec_config(point.bench).alpha
    assert alpha == solve(point.bench) == solve(static.bench)
    assert float(expected_tokens(alpha, 3)) == pytest.approx(2.5, rel=1e-12)


def test_validate_no_longer_refuses_speculation_under_load(points_csv):
    rows = rows_of("validate", points_csv, "--profile", "measured")
    assert not any(OLD_REFUSAL in (row["reason"] or "") for row in rows)
    assert len(rows) == 2 * len(VARIANTS) and all(row["covered"] for row in rows), rows


def test_a_closed_loop_that_fits_one_iteration_is_served_when_it_speculates(tmp_path):
    """4 clients of 1,024-token prompts fit one iteration: without speculation every round is one static
    batch. With it each sequence accepts its own drafts, a round's requests finish apart and the next
    round's prompts arrive one by one, each prefilling alone: TTFT below the static batch's. With
    16-token prompts (no prefill between the rounds) the served ITL is the static batch's mean round."""
    fixed = {"num_prompts": "", "warmup_prompts": "", "isl_range_ratio": "", "osl_range_ratio": "", **EAGLE3}
    with TRAIN.open(newline="") as f:
        rows = {row["metric"]: row for row in csv.DictReader(f) if row["id"].startswith(CONDITION)}
    cases = {f"{kind}-{metric}-{isl}": {**rows[metric], **fixed, "isl": isl, "batch_kind": kind}
             for kind in ("static", "concurrency") for metric, isl in (("ttft_ms", "1024"), ("itl_ms", "16"))}
    path = tmp_path / "fixed.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows["itl_ms"]) + list(EAGLE3))
        writer.writeheader()
        for name, row in cases.items():
            writer.writerow({**row, "id": name})
    got = {point.id: predict(point, PRESETS["measured"]).predicted for point in read_points(path)}
    assert got["concurrency-ttft_ms-1024"] < 0.5 * got["static-ttft_ms-1024"]
    assert got["concurrency-itl_ms-16"] == pytest.approx(got["static-itl_ms-16"], rel=0.01)


def _static_copy(points_csv: Path) -> Path:
    """The EAGLE-3 ITL row as a static batch of 4 (`prediction`'s own speculation, no serving)."""
    with points_csv.open(newline="") as f:
        row = next(r for r in csv.DictReader(f) if r["id"] == "eagle3-itl_ms")
    path = points_csv.with_name("static.csv")
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(row))
        writer.writeheader()
        writer.writerow({**row, "id": "static", "batch_kind": "static", "num_prompts": "", "warmup_prompts": ""})
    return path
