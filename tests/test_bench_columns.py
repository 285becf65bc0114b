"""Benchmarks as they run: the optional point columns (`llm_cost.calibrate.bench_columns`), parsed,
refused when malformed, and used by the prediction."""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

import pytest

from llm_cost.calibrate.bench_columns import BenchConditions, drawn_lengths
from llm_cost.calibrate.points import PointsError, read_points
from llm_cost.calibrate.prediction import predict
from llm_cost.specs.profiles import PRESETS

DATA = Path(__file__).parent / "data" / "measured"
BASE = {"id": "x", "config": "llama-3.1-8b", "gpu_name": "h100-sxm", "weights": "bf16", "group_size": "0",
        "kv": "bf16", "tp": "1", "pp": "1", "gpu_count": "1", "batch": "1", "batch_kind": "static", "isl": "512",
        "osl": "128", "metric": "decode_tok_per_s_per_user", "value": "100", "engine": "vLLM"}


def _file(tmp_path, *rows) -> Path:
    path = tmp_path / "points.csv"
    fields = list(dict.fromkeys(k for r in rows for k in {**BASE, **r}))
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for i, r in enumerate(rows):
            w.writerow({**BASE, "id": f"row{i}", **r})
    return path


def test_inferencex_rows_carry_their_benchmark():
    """train_inferencex.csv: lengths on [0.8 L, L], 10 x concurrency prompts after 2 x concurrency warm-up."""
    p = next(p for p in read_points(DATA / "train_inferencex.csv") if p.id.endswith("tp2-1k1k-c64-ttft_ms"))
    assert p.bench == BenchConditions(0.8, 0.8, 640, 128)
    assert all(q.bench == BenchConditions() for q in read_points(DATA / "train.csv"))  # no such columns


@pytest.mark.parametrize("column, text, says", [
    ("isl_range_ratio", "1.5", "must be a ratio in (0, 1]"),
    ("osl_range_ratio", "abc", "could not convert"),
    ("num_prompts", "2.5", "whole number >= 0"),
    ("warmup_prompts", "-1", "whole number >= 0"),
    ("spec_method", "medusa2", "must be one of none, eagle"),
    ("spec_accept_len", "6", "must be in [1, gamma + 1 = 5]"),
])
def test_malformed_columns_are_refused_naming_row_and_column(tmp_path, column, text, says):
    extra = {"spec_method": "eagle3", "spec_gamma": "4", "spec_accept_len": "3"} if column.startswith("spec") else {}
    path = _file(tmp_path, {**extra, column: text})
    with pytest.raises(PointsError, match=rf"row 1, column {column}: ") as err:
        read_points(path)
    assert says in str(err.value)


def test_speculation_columns_need_each_other(tmp_path):
    with pytest.raises(PointsError, match="column spec_gamma: a speculative row needs gamma >= 1"):
        read_points(_file(tmp_path, {"spec_method": "mtp"}))
    with pytest.raises(PointsError, match="column spec_method: spec_gamma and spec_accept_len need a method"):
        read_points(_file(tmp_path, {"spec_gamma": "3"}))


def test_a_static_row_measured_with_speculation_is_predicted_with_it(tmp_path):
    """EAGLE-3 at gamma 4 accepting 3 tokens a round (alpha solved from the accepted length): a batch-1
    decode goes faster than without speculation."""
    plain, spec = read_points(_file(tmp_path, {}, {"spec_method": "eagle3", "spec_gamma": "4",
                                                   "spec_accept_len": "3"}))
    a, b = predict(plain, PRESETS["measured"]), predict(spec, PRESETS["measured"])
    assert b.predicted > 1.8 * a.predicted


def test_osl_0_is_a_prefill_row(tmp_path):
    """llama-bench's pp512: osl 0 is read; its prefill metric is predicted, a decode metric is not covered."""
    pre, dec = read_points(_file(tmp_path, {"osl": "0", "metric": "prefill_tok_per_s", "value": "9000"},
                                 {"osl": "0"}))
    assert predict(pre, PRESETS["measured"]).covered
    why = predict(dec, PRESETS["measured"])
    assert not why.covered and "osl 0 is a prefill-only row" in why.reason


def test_lengths_are_uniform_on_the_range():
    drawn = drawn_lengths(1024, 0.8, 4000, 7)
    assert min(drawn) >= 819 and max(drawn) == 1024
    assert statistics.mean(drawn) == pytest.approx((819 + 1024) / 2, rel=0.01)
    assert drawn == drawn_lengths(1024, 0.8, 4000, 7)  # seeded


def test_a_stated_run_starts_empty_and_ranged_lengths_are_served(tmp_path):
    """A closed loop of 32 clients of 2,048-token prompts: measured as the benchmark runs it (320 prompts
    from an empty engine, all counted) its mean TTFT carries the first round's queue of 32 prefills, above
    the steady window's; lengths drawn on [0.8 L, L] are about 0.9 L, so TTFT drops below the fixed length's."""
    row = {"batch": "32", "batch_kind": "concurrency", "isl": "2048", "osl": "64", "metric": "ttft_ms"}
    steady, stated, ranged = read_points(_file(tmp_path, row, {**row, "num_prompts": "320"},
                                               {**row, "num_prompts": "320", "isl_range_ratio": "0.8",
                                                "osl_range_ratio": "0.8"}))
    prof = PRESETS["measured"]
    t_steady, t_stated, t_ranged = (predict(p, prof).predicted for p in (steady, stated, ranged))
    assert t_stated > t_steady
    assert t_ranged < t_stated
