"""The issue 25 review's CLI defects (Part M): `batching --disaggregate` reports the pools' GPUs, options
that do nothing are refused, bad input names its flag, and the per-replica and fleet rows read as the
others do. Each test failed before its fix."""

from __future__ import annotations

import pytest

from helpers import error_line, rows_of, run

FAST = ("batching", "--rate", "5", "-n", "40")


# 5. --disaggregate: the pools' GPUs, not --gpus


def test_disaggregate_rows_and_title_say_the_pools_gpus():
    # 2:2 at tp 1: 2 x 1 + 2 x 1 = 4 GPUs in 4 replicas (before: the row said --gpus, or 1 without it)
    row = rows_of(*FAST, "--disaggregate", "2:2")[0]
    assert (row["gpus"], row["replicas"], row["prefill_gpus"], row["decode_gpus"]) == (4, 4, 2, 2)
    assert row["tokens_per_s_per_gpu"] == pytest.approx(row["tokens_per_s"] / 4)
    # --decode-tp 2: 2 x 1 + 2 x 2 = 6
    row = rows_of(*FAST, "--disaggregate", "2:2", "--decode-tp", "2")[0]
    assert (row["gpus"], row["replicas"]) == (6, 4)
    out = run(*FAST, "--disaggregate", "2:2", "--gpus", "4")
    assert out.exit_code == 0, out.output
    title = out.stdout.splitlines()[0]
    assert "4 GPUs" in title and "2 prefill + 2 decode replicas" in title and "(4 replicas)" not in title


def test_disaggregate_refuses_a_gpus_the_pools_do_not_use():
    # before: --gpus 2 and --gpus 8 served the same 4 GPUs and reported 2 or 8
    for gpus in ("2", "8"):
        line = error_line(*FAST, "--disaggregate", "2:2", "--gpus", gpus)
        assert f"--gpus {gpus}" in line and "--disaggregate 2:2" in line and "4 GPUs" in line
    assert rows_of(*FAST, "--disaggregate", "2:2", "--gpus", "4")[0]["gpus"] == 4  # agreeing: served


# 6. options that do nothing without their parent option


@pytest.mark.parametrize("args, parent", [
    (["--group-prefix", "64"], "--prefix-groups"),
    (["--prefix-dist", "uniform"], "--prefix-groups"),
    (["--turns", "3"], "--sessions"),
])
def test_child_prefix_options_need_their_parent(args, parent):
    line = error_line(*FAST, *args)
    assert args[0] in line and f"give {parent}" in line


def test_child_prefix_options_with_their_parent_and_defaults_unchanged():
    # the defaults (256 tokens, zipf, 4 turns) are the same run given or not
    base = rows_of(*FAST, "--prefix-groups", "4")[0]
    given = rows_of(*FAST, "--prefix-groups", "4", "--group-prefix", "256", "--prefix-dist", "zipf")[0]
    assert base["ttft_p50_s"] == given["ttft_p50_s"] and base["workload"] == given["workload"]
    chats = rows_of(*FAST, "--sessions", "4")[0]
    assert chats["ttft_p50_s"] == rows_of(*FAST, "--sessions", "4", "--turns", "4")[0]["ttft_p50_s"]


# 7. bad input names its flag; the trace's prefix columns


def test_prefix_dist_and_group_prefix_errors_name_their_flags():
    line = error_line(*FAST, "--prefix-groups", "2", "--prefix-dist", "foo")
    assert line.startswith("Error: --prefix-dist must be one of zipf, uniform"), line
    line = error_line(*FAST, "--prefix-groups", "2", "--group-prefix", "0")
    assert line.startswith("Error: --group-prefix must be in [1, inf)"), line


def test_prefix_caching_refusal_lists_sessions():
    line = error_line(*FAST, "--prefix-caching")
    assert "--sessions" in line and "--shared-prefix" in line and "--prefix-groups" in line


@pytest.mark.parametrize("header, row, words", [
    ("arrival_s,prompt_tokens,output_tokens,prefix_id,prefix_tokens", "0.5,64,8,,32",
     "line 3: prefix_tokens '32' needs a prefix_id"),
    ("arrival_s,prompt_tokens,output_tokens,prefix_tokens", "0.5,64,8,32", "prefix_tokens column needs a prefix_id"),
])
def test_trace_prefix_tokens_without_an_id_refused(tmp_path, header, row, words):
    # before: the row's (or the column's) prefix_tokens ignored silently, its prompt served uncached
    first = "0.0,64,8,a,32" if "prefix_id" in header else "0.0,64,8,32"
    path = tmp_path / "t.csv"
    path.write_text(f"{header}\n{first}\n{row}\n")
    line = error_line("batching", "--trace", str(path), "--prefix-caching")
    assert words in line, line


def test_trace_row_without_a_prefix_still_served(tmp_path):
    # both empty: a request with no prefix, as the module doc says
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,prompt_tokens,output_tokens,prefix_id,prefix_tokens\n0.0,64,8,a,32\n0.5,64,8,,\n")
    assert rows_of("batching", "--trace", str(path), "--prefix-caching")[0]["finished"] == 2


# 8. cosmetic


def test_replica_requests_column_right_aligned_with_separators():
    from llm_cost.commands.serving_fleet import REPLICA_COLUMNS
    from llm_cost.report.render import Column

    col = next(c for c in REPLICA_COLUMNS if c.key == "requests")
    assert col.text is not Column("x", "x").text  # a formatter: right-aligned (render._numeric)
    assert col.text(12345) == "12,345"


def test_prefix_group_label_names_groups_and_distribution():
    from llm_cost.serving.prefixes import prefix_segments
    from llm_cost.serving.workload import fixed_workload

    wl = fixed_workload([(4, 5)] * 4)
    assert prefix_segments(wl, groups=8, group_tokens=256, distribution="uniform").description == \
        "fixed, 8 prefix groups of 256 tok (uniform)"
    both = prefix_segments(wl, shared=64, groups=8, group_tokens=256).description
    assert both == "fixed, 8 prefix groups of 256 tok (zipf), shared prefix 64 tok", both


def test_fleet_row_hit_rate_null_without_caching():
    rows = rows_of(*FAST, "--gpus", "2", "--router", "round-robin")
    assert [r["prefix_token_hit_rate"] for r in rows] == [None, None, None]
    cached = rows_of(*FAST, "--gpus", "2", "--router", "round-robin", "--shared-prefix", "64", "--prefix-caching")
    assert all(r["prefix_token_hit_rate"] > 0 for r in cached)
