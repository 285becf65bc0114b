"""Multi-turn chats as a prefix workload (issue 25.1: `--sessions S --turns T`), counted by hand."""

from __future__ import annotations

from dataclasses import replace

import pytest

from llm_cost.errors import InvalidValueError
from llm_cost.serving.engine import serve
from llm_cost.serving.prefixes import prefix_segments, with_sessions
from llm_cost.serving.replica import IterationCost, Replica
from llm_cost.serving.serve_config import ServeConfig
from llm_cost.serving.workload import fixed_workload
from tests.helpers import error_line, rows_of

UNIT = Replica(IterationCost.unit(), 1000, 2048)  # 1 s per iteration, 1000 K/V tokens
CACHED = ServeConfig(reservation="paged", watermark=0, prefix_caching=True)
PLAIN = ServeConfig(reservation="paged", watermark=0)


def test_one_chat_of_three_turns_counted_by_hand():
    # One session, three turns of 20 own tokens and 14 output tokens, each turn arriving after the
    # previous finished. Prompts: 20, 20 + 14 + 20 = 54, 54 + 14 + 20 = 88. Blocks of 16. Turn 0 looks
    # up (20 - 1) // 16 = 1 block (a miss) and finishes holding 20 + 14 - 1 = 33 K/V tokens: 2 full
    # blocks of its prompt and answer cached. Turn 1 looks up (54 - 1) // 16 = 3 and hits those 2 (32
    # tokens), finishing with 54 + 13 = 67 tokens: 4 blocks cached. Turn 2 looks up (88 - 1) // 16 = 5
    # and hits 4 (64 tokens). Hits 32 + 64 = 96 over 20 + 54 + 88 = 162 prompt tokens. Keyed by the
    # prompts alone (the answers' blocks prefilled again) turn 1 would hit 1 block and turn 2 the 3 of
    # turn 1's prompt: 16 + 48 = 64.
    wl = with_sessions(fixed_workload([(20, 14)] * 3, arrivals_s=[0.0, 100.0, 200.0]), 1, 3)
    assert wl.prompt == (20, 54, 88) and [seg[0][1] for seg in wl.prefix] == [34, 68, 102]
    on, off = serve(wl, UNIT, CACHED), serve(wl, UNIT, PLAIN)
    assert (on.prefix_lookups, on.prefix_lookup_tokens, on.prefix_hit_requests, on.prefix_hit_tokens) == (3, 162, 2, 96)
    assert off.positions_computed - on.positions_computed == 96
    assert on.prefix_token_hit_rate == pytest.approx(96 / 162)
    prompts_only = replace(wl, prefix=tuple(((seg[0][0], p),) for seg, p in zip(wl.prefix, wl.prompt)))
    assert serve(prompts_only, UNIT, CACHED).prefix_hit_tokens == 64


def test_sessions_interleave_and_start_a_new_chat_after_their_turns():
    wl = with_sessions(fixed_workload([(4, 5)] * 6), 2, 2)
    assert wl.prompt == (4, 4, 13, 13, 4, 4)  # turn 0, turn 1 (4 + 5 + 4), then new chats
    assert [seg[0][0] for seg in wl.prefix] == [("session", 0, 0), ("session", 1, 0), ("session", 0, 0),
                                                 ("session", 1, 0), ("session", 0, 1), ("session", 1, 1)]


def test_sessions_with_a_shared_prefix_and_refusals():
    wl = prefix_segments(fixed_workload([(4, 5)] * 2), shared=32, sessions=1, turns=2)
    assert wl.prompt == (36, 45) and wl.prefix[1][0] == ("shared", 32)
    with pytest.raises(InvalidValueError, match="sessions"):
        prefix_segments(fixed_workload([(4, 5)]), groups=2, sessions=1)
    with pytest.raises(InvalidValueError, match="turns"):
        with_sessions(fixed_workload([(4, 5)]), 1, 0)


def test_cli_sessions_hit_the_previous_turns():
    args = ("batching", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--reservation", "paged", "--sessions", "8",
            "--turns", "4", "--rate", "4", "--requests", "200", "--profile", "measured")
    (on,) = rows_of(*args, "--prefix-caching")
    (off,) = rows_of(*args)
    assert on["prefix_token_hit_rate"] > 0.3 and off["prefix_token_hit_rate"] is None  # no cache: no hit rate
    assert on["ttft_p50_s"] < off["ttft_p50_s"]
    assert "--sessions" in error_line(*args, "--prefix-groups", "4")


def test_the_library_and_the_cli_default_to_the_same_turns():
    # one constant (`prefixes.DEFAULT_TURNS`): prefix_segments without turns, PromptPrefixes (the CLI's
    # options) without turns and the --turns help all read it (the library's default was 1, the CLI's 4)
    from llm_cost.commands.options import Turns
    from llm_cost.serving.prefixes import DEFAULT_TURNS, PromptPrefixes

    wl = fixed_workload([(4, 5)] * 12)
    chats = with_sessions(wl, 2, DEFAULT_TURNS)
    assert prefix_segments(wl, sessions=2).prompt == PromptPrefixes(sessions=2).applied(wl).prompt == chats.prompt
    assert chats.prompt != with_sessions(wl, 2, 1).prompt
    assert f"(default {DEFAULT_TURNS})" in Turns.__metadata__[0].help
