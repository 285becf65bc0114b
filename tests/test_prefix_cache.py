"""Prefix caching (issue 25.1, 25.6): block keys, the hand-counted three-request trace, eviction,
the ledger, and properties (caching never raises the prefill tokens)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llm_cost.catalog import load_accelerator, load_model
from llm_cost.errors import InvalidValueError
from llm_cost.serving.engine import serve
from llm_cost.serving.fast_engine import fast_eligible
from llm_cost.serving.prefix_cache import block_keys
from llm_cost.serving.prefixes import with_prefix_groups, with_shared_prefix
from llm_cost.serving.replica import IterationCost, Replica
from llm_cost.serving.serve_config import ServeConfig
from llm_cost.serving.workload import fixed_workload, poisson_workload

UNIT = Replica(IterationCost.unit(), 1000, 2048)  # 1 s per iteration, 1000 K/V tokens
CACHED = ServeConfig(reservation="paged", watermark=0, prefix_caching=True)
PLAIN = ServeConfig(reservation="paged", watermark=0)
SERVER = Replica.from_specs(load_model("gpt-3-13b"), load_accelerator("a100-40gb"))


def test_block_keys_share_exactly_the_common_full_blocks():
    a = block_keys((("sys", 16), ("g1", 20)), 100, 16)
    b = block_keys((("sys", 16), ("g2", 20)), 100, 16)
    assert len(a) == len(b) == 2  # 36 known tokens: 2 full blocks of 16
    assert a[0] == b[0] and a[1] != b[1]  # the system prompt's block is shared, the group's is not
    assert block_keys((("sys", 64),), 33, 16) == block_keys((("sys", 64),), 33, 16)[:2]  # (33 - 1) // 16


def test_three_requests_with_a_shared_prefix_counted_by_hand():
    # A 32-token system prompt (2 blocks of 16) before prompts of 4, 4 and 20 own tokens, each request
    # arriving after the previous one finished (2 output tokens: the prefill iteration, one decode).
    # By hand: request 0 prefills 36 + 1 decode row = 37 rows and leaves 2 cached blocks; requests 1
    # and 2 hit both (32 tokens each) and prefill 4 and 20: 5 and 21 rows. Rows 63 against 127
    # (37 + 37 + 53) without the cache; lookups 3 over 36 + 36 + 52 = 124 prompt tokens.
    wl = with_shared_prefix(fixed_workload([(4, 2), (4, 2), (20, 2)], arrivals_s=[0.0, 10.0, 20.0]), 32)
    on, off = serve(wl, UNIT, CACHED), serve(wl, UNIT, PLAIN)
    assert (on.prefix_lookups, on.prefix_lookup_tokens, on.prefix_hit_requests, on.prefix_hit_tokens) == (3, 124, 2, 64)
    assert on.positions_computed == 63 and off.positions_computed == 127
    assert on.prefill_tokens_saved == 64
    # blocks: each prompt has 2 cacheable blocks (the 32 known tokens; (prompt - 1) // 16 allows 2, 2, 3);
    # request 0 misses both, requests 1 and 2 hit both: 4 block hits = 64 tokens; prefill tokens
    # computed 36 + 4 + 20 = 60 against 124 (rows minus the 3 decode rows)
    assert [len(block_keys(wl.prefix[i], wl.prompt[i], 16)) for i in range(3)] == [2, 2, 2]
    assert on.prefix_hit_tokens // 16 == 4
    assert (on.positions_computed - 3, off.positions_computed - 3) == (60, 124)
    assert on.prefix_request_hit_rate == pytest.approx(2 / 3) and on.prefix_token_hit_rate == pytest.approx(64 / 124)
    assert off.prefix_lookups == 0 and off.prefix_token_hit_rate == 0.0


def test_running_sequences_share_blocks_counted_once():
    # Two requests at once with the same 32-token prefix: the second admitted in the same iteration
    # does not find it (not yet prefilled), a third arriving while both run finds it in `ref`, and the
    # K/V peak counts the shared blocks once: 3 x (own blocks) + 2 shared, not 3 x 2 shared.
    wl = with_shared_prefix(fixed_workload([(16, 8), (16, 8), (16, 8)], arrivals_s=[0.0, 0.0, 1.5]), 32)
    on, off = serve(wl, UNIT, CACHED), serve(wl, UNIT, PLAIN)
    assert on.prefix_hit_requests == 1 and on.prefix_hit_tokens == 32
    assert on.kv_used_peak_tokens < off.kv_used_peak_tokens
    assert on.finished == 3


def test_eviction_lets_an_unreferenced_prefix_go_and_misses_after():
    # Room for 4 blocks of 16, prompts of 40 tokens (3 blocks; 2 full prefix blocks). Request 0 ends:
    # 1 block freed, its 2 prefix blocks cached (released last block first, so that one goes first).
    # Request 1 (prefix "b") takes 3 of the 4 free blocks: one cached block is evicted, request 0's
    # second. Request 2 (prefix "a" again) finds only the first block: 16 tokens, one hit.
    small = Replica(IterationCost.unit(), 64, 2048)
    base = fixed_workload([(8, 2), (40, 2), (8, 2)], arrivals_s=[0.0, 10.0, 20.0])
    segs = ((("a", 32),), (("b", 32),), (("a", 32),))
    wl = base.__class__(**{**base.__dict__, "prompt": (40, 40, 40), "prefix": segs})
    r = serve(wl, small, CACHED)
    assert r.finished == 3 and (r.prefix_hit_requests, r.prefix_hit_tokens) == (1, 16)
    roomy = serve(wl, UNIT, CACHED)
    assert (roomy.prefix_hit_requests, roomy.prefix_hit_tokens) == (1, 32)  # with room: both blocks


def test_prefix_caching_is_refused_where_it_cannot_run():
    with pytest.raises(InvalidValueError, match="prefix_caching needs reservation paged"):
        ServeConfig(prefix_caching=True)
    with pytest.raises(InvalidValueError, match="prefix_caching needs reservation paged"):
        ServeConfig(reservation="paged", preemption="swap", prefix_caching=True)
    with pytest.raises(InvalidValueError, match="workload with prefixes"):
        serve(fixed_workload([(4, 2)]), UNIT, CACHED)


def test_the_fast_path_does_not_take_prefix_caching():
    wl = with_shared_prefix(poisson_workload(20, 4.0, seed=0), 64)
    longest = max(p + o for p, o in zip(wl.prompt, wl.output))
    assert fast_eligible(wl, SERVER, PLAIN, longest)
    assert not fast_eligible(wl, SERVER, CACHED, longest)


def test_a_shared_system_prompt_lowers_ttft_and_raises_throughput_under_load():
    wl = with_shared_prefix(poisson_workload(300, 20.0, seed=1), 1024)
    on = serve(wl, SERVER, ServeConfig(max_batch=32, reservation="paged", prefix_caching=True))
    off = serve(wl, SERVER, ServeConfig(max_batch=32, reservation="paged"))
    assert on.prefix_token_hit_rate > 0.6
    assert on.percentile_s("ttft", "p50") < off.percentile_s("ttft", "p50")
    assert on.throughput_req_per_s >= off.throughput_req_per_s


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), groups=st.integers(1, 6), tokens=st.integers(1, 300),
       rate=st.floats(1.0, 60.0), blocks=st.sampled_from([1, 16, 32]), zipf=st.booleans())
def test_caching_never_raises_the_prefill_tokens(seed, groups, tokens, rate, blocks, zipf):
    wl = with_prefix_groups(poisson_workload(60, rate, seed=seed), groups, tokens,
                            "zipf" if zipf else "uniform", seed=seed)
    on = serve(wl, SERVER, ServeConfig(reservation="paged", block_size=blocks, prefix_caching=True))
    off = serve(wl, SERVER, ServeConfig(reservation="paged", block_size=blocks))
    assert on.finished == off.finished == len(wl)
    assert on.positions_computed <= off.positions_computed
    assert on.prefix_hit_tokens % blocks == 0  # only full blocks hit
    if on.preemptions == off.preemptions == 0:  # nothing recomputed: the cache saves exactly its hits
        assert on.positions_computed == off.positions_computed - on.prefill_tokens_saved


def test_a_trace_prefix_id_shares_blocks_and_a_later_turn_extends_them(tmp_path):
    # A chat: turn 1 (prompt 40, prefix "s1" 40 tokens is the whole prompt so far), turn 2 whose prompt
    # starts with turn 1's 40 + its answer 8 = 48 tokens of "s1", and an unrelated request. Blocks of 16:
    # turn 1 caches (40 - 1) // 16 = 2 blocks, turn 2 finds both (32 tokens); the other has no prefix.
    from llm_cost.serving.workload_spec import read_trace

    f = tmp_path / "chat.csv"
    f.write_text("arrival_s,prompt_tokens,output_tokens,prefix_id,prefix_tokens\n"
                 "0,40,8,s1,40\n20,60,4,s1,48\n30,50,4,,\n")
    wl = read_trace(f)
    assert wl.prefix == (((("trace", "s1"), 40),), ((("trace", "s1"), 48),), ())
    r = serve(wl, UNIT, CACHED)
    assert (r.prefix_lookups, r.prefix_hit_requests, r.prefix_hit_tokens) == (3, 1, 32)
    bad = tmp_path / "bad.csv"
    bad.write_text("arrival_s,prompt_tokens,output_tokens,prefix_id,prefix_tokens\n0,40,8,s1,41\n")
    with pytest.raises(InvalidValueError, match="line 2: prefix_tokens must be a whole number in"):
        read_trace(bad)


def test_cli_prefix_caching_rows_and_one_line_refusal():
    import json

    from typer.testing import CliRunner

    from llm_cost.cli import app

    args = ["batching", "--rate", "8", "-n", "200", "--reservation", "paged", "--prefix-groups", "4",
            "--group-prefix", "512", "--format", "json"]
    on = CliRunner().invoke(app, args + ["--prefix-caching"])
    off = CliRunner().invoke(app, args)
    assert on.exit_code == 0 and off.exit_code == 0, on.output + off.output
    row_on, row_off = json.loads(on.output)[0], json.loads(off.output)[0]
    assert row_on["prefix_caching"] is True and row_on["prefix_token_hit_rate"] > 0.3
    assert row_on["prefill_tokens_saved"] > 0 and row_off["prefill_tokens_saved"] == 0
    assert row_on["ttft_p50_s"] <= row_off["ttft_p50_s"]
    bad = CliRunner().invoke(app, ["batching", "--rate", "1", "-n", "20", "--prefix-caching", "--shared-prefix", "8",
                                   "--reservation", "declared"])  # an explicit non-paged reservation: refused
    assert bad.exit_code == 2 and "Traceback" not in bad.output
    assert len(bad.output.strip().splitlines()) == 1 and "--prefix-caching needs reservation paged" in bad.output


def test_cli_prefix_caching_implies_paged_with_a_note():
    """Prefix caching is block-level: without --reservation it serves paged K/V and says so in one note
    (none with --quiet); the row is the explicit `--reservation paged` run's."""
    import json

    from typer.testing import CliRunner

    from llm_cost.cli import app

    args = ["batching", "--rate", "8", "-n", "60", "--shared-prefix", "256", "--prefix-caching", "--format", "json"]
    implied, given = CliRunner().invoke(app, args), CliRunner().invoke(app, args + ["--reservation", "paged"])
    assert implied.exit_code == 0 and given.exit_code == 0, implied.output
    assert json.loads(implied.stdout) == json.loads(given.stdout)
    assert json.loads(implied.stdout)[0]["reservation"] == "paged"
    assert implied.stderr.count("Note: prefix caching keeps K/V blocks: served with --reservation paged") == 1
    assert "Note" not in given.stderr
    assert "Note" not in CliRunner().invoke(app, args + ["--quiet"]).stderr


COMPARE = ["batching", "--compare-prefix-caching", "--shared-prefix", "1024", "-n", "200", "--rate", "10", "--rate", "30"]


def test_cli_compare_prefix_caching_is_the_two_runs_side_by_side():
    """`--compare-prefix-caching`: per rate, an off row and an on row that are exactly the rows of the two
    separate runs (`--reservation paged` with and without `--prefix-caching`), with the ratios on both;
    caching saves prefill tokens and lowers TTFT on a 1024-token system prompt."""
    from helpers import rows_of

    rows = rows_of(*COMPARE)
    assert [(r["rate_req_per_s"], r["prefix_caching"]) for r in rows] == [(10, False), (10, True), (30, False), (30, True)]
    alone = {c: rows_of("batching", *COMPARE[2:], "--reservation", "paged", *(["--prefix-caching"] if c else [])) for c in (0, 1)}
    skip = {"ttft_p50_over_uncached", "tokens_per_s_over_uncached"}
    for k, row in enumerate(rows):
        assert {a: b for a, b in row.items() if a not in skip} == alone[k % 2][k // 2]
    for off, on in zip(rows[::2], rows[1::2]):
        assert off["prefill_tokens_saved"] == 0 and off["prefix_token_hit_rate"] is None
        assert on["prefill_tokens_saved"] > 0 and on["prefix_token_hit_rate"] > 0.5
        assert on["prefix_request_hit_rate"] > 0.9
        assert on["ttft_p50_s"] < off["ttft_p50_s"]
        assert on["ttft_p50_over_uncached"] == pytest.approx(on["ttft_p50_s"] / off["ttft_p50_s"])
        assert off["ttft_p50_over_uncached"] == 1.0 and off["tokens_per_s_over_uncached"] == 1.0


@pytest.mark.parametrize("width", [80, 120])
def test_cli_compare_prefix_caching_table_at_width(width):
    from typer.testing import CliRunner

    from llm_cost.cli import app

    out = CliRunner().invoke(app, COMPARE, env={"COLUMNS": str(width)})
    assert out.exit_code == 0, out.output
    assert max(len(ln) for ln in out.stdout.splitlines()) <= width
    flat = " ".join(out.stdout.split())
    assert "at 10 req/s without and with prefix caching: TTFT p50 x" in flat and "at 30 req/s" in flat
    cells = [ln.split("│")[1].strip() for ln in out.stdout.splitlines() if ln.startswith("│")]
    # one table per rate, its off and on rows (and a stacked second table where the columns do not fit)
    assert cells.count("off") == cells.count("on") >= 2 and cells[:2] == ["off", "on"]


def test_cli_compare_prefix_caching_refusals():
    from helpers import error_line

    assert "--compare-prefix-caching" in error_line(*COMPARE, "--disaggregate", "1:1")
    assert "--prefix-caching needs reservation paged" in error_line(*COMPARE, "--reservation", "declared")
    assert "workload with prefixes" in error_line("batching", "--compare-prefix-caching", "--rate", "1", "-n", "5")


def test_cli_compare_prefix_caching_behind_a_router_is_the_two_fleets():
    """With --router the two runs are fleets: each row is the separate fleet run's (its router, replicas,
    imbalance), and prefix-affinity's cached run hits where the uncached one cannot."""
    from helpers import rows_of

    args = ["--prefix-groups", "4", "--group-prefix", "512", "-n", "120", "--rate", "16", "--gpus", "2",
            "--router", "least-loaded"]
    off, on = rows_of("batching", "--compare-prefix-caching", *args)
    assert (off["router"], on["router"], off["replicas"]) == ("least-loaded", "least-loaded", 2)
    alone = rows_of("batching", "--prefix-caching", *args)
    assert {k: v for k, v in on.items() if not k.endswith("_over_uncached")} == \
        {k: v for k, v in alone[0].items() if k != "replica" and k != "load_over_mean"}
    assert on["prefill_tokens_saved"] > 0 == off["prefill_tokens_saved"]
