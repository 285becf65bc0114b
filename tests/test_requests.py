"""Whole requests (issue 12): TTFT, TPOT, e2e, throughput, dollars; selective batching (the lecture §4)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_cost.catalog import load_accelerator, load_model
from llm_cost.counts import attention_flops_per_context_token, param_counts, weight_bytes
from llm_cost.requests import Speculation, request_cost
from llm_cost.roofline import step_time
from llm_cost.serving.selective import FIGURE5, selective_ledger
from llm_cost.specs import Profile
from llm_cost.specs.deployment import Deployment
from helpers import error_line, run, rows_of

H100 = load_accelerator("h100-sxm")
L8 = load_model("llama-3-8b")
# Peak bandwidth and FLOP/s, K/V read and attention counted, no fixed cost: every term by hand
PEAK_KV = Profile("peak-kv", count_kv=True)


def test_prefill_by_hand_is_compute_bound():
    """Llama-3-8B, one 4096-token prompt, peak H100: 4096 rows x 2 x GEMM params plus 4096 x 4097 / 2
    causal pairs x the attention FLOPs of a pair, over 989e12 FLOP/s."""
    r = request_cost(L8, H100, PEAK_KV, isl=4096, osl=1)
    flops = 4096 * 2 * param_counts(L8).gemm_active + 4096 * 4097 / 2 * attention_flops_per_context_token(L8)
    assert r.phases.prefill_bound == "compute"
    assert r.ttft_s == pytest.approx(flops / 989e12, rel=1e-12)
    assert r.e2e_s == r.ttft_s and r.tpot_s == 0.0


def test_decode_by_hand_is_memory_bound_and_the_sum_is_exact():
    """The article preset (no K/V): every decode step reads the 16.06 GB once, 4.79 ms (the article §1.2);
    255 of them after a prefill of 128 rows."""
    r = request_cost(L8, H100, "article", isl=128, osl=256)
    step = weight_bytes(L8).total / 3.35e12
    assert round(step * 1e3, 2) == 4.79  # the article's decode bound
    assert r.phases.decode_bound == "memory"
    assert r.phases.decode_s == pytest.approx(255 * step, rel=1e-12)
    assert r.ttft_s == pytest.approx(step_time(L8, H100, "article", rows=128).step_time_s, rel=1e-12)
    assert r.e2e_s == pytest.approx(r.ttft_s + 255 * step, rel=1e-12)


def test_decode_sums_each_step_at_its_context():
    """The numpy sum equals a loop of step_time at contexts ISL .. ISL + OSL - 2 (no quadrature)."""
    r = request_cost(L8, H100, "lecture", batch=4, isl=1000, osl=40)
    loop = [step_time(L8, H100, "lecture", batch=4, context=1000 + j).step_time_s for j in range(39)]
    assert r.phases.decode_s == pytest.approx(sum(loop), rel=1e-12)
    assert r.phases.tpot_first_s == pytest.approx(loop[0], rel=1e-12)
    assert r.phases.tpot_last_s == pytest.approx(loop[-1], rel=1e-12)


def test_identities_and_dollars():
    (row,) = rows_of("request", "--model", "llama-3-70b", "--tp", "4", "--batch", "8", "--isl", "2048", "--osl", "128",
                     "--usd-per-gpu-hour", "2.5")
    assert row["e2e_s"] == pytest.approx(row["ttft_s"] + 127 * row["tpot_s"], rel=1e-12)
    assert row["output_tokens_per_s_per_user"] == pytest.approx(128 / row["e2e_s"], rel=1e-12)
    assert row["output_tokens_per_s"] == pytest.approx(8 * 128 / row["e2e_s"], rel=1e-12)
    assert row["output_tokens_per_s_per_gpu"] == pytest.approx(row["output_tokens_per_s"] / 4, rel=1e-12)
    # dollars = GPU-seconds x price: the prefill's 4 GPUs over 8 x 2048 input tokens, the decode's over 8 x 127
    # the prefill pass's time: TTFT less the profile's engine first-token overhead (no GPU work in it)
    from llm_cost.specs.profiles import PRESETS

    prefill_s = row["ttft_s"] - PRESETS[row["preset"]].ttft_overhead_s
    assert row["gpu_seconds_prefill"] == pytest.approx(4 * prefill_s, rel=1e-12)
    assert row["usd_per_million_input_tokens"] == pytest.approx(4 * prefill_s * 2.5 / 3600 / (8 * 2048) * 1e6)
    assert row["usd_per_million_output_tokens"] == pytest.approx(4 * 127 * row["tpot_s"] * 2.5 / 3600 / (8 * 127) * 1e6)
    assert row["usd_per_request"] == pytest.approx(4 * (row["e2e_s"] - row["ttft_s"] + prefill_s) * 2.5 / 3600 / 8)
    assert row["fits"] is True and row["tp"] == 4


def test_chunked_prefill_sums_its_chunks():
    whole = request_cost(L8, H100, "lecture", isl=4096, osl=1)
    chunks = request_cost(L8, H100, "lecture", isl=4096, osl=1, prefill_chunk=1024)
    by_hand = sum(step_time(L8, H100, "lecture", rows=1024, context=1024 * k).step_time_s for k in range(4))
    assert chunks.phases.prefill_passes == 4 and chunks.ttft_s == pytest.approx(by_hand, rel=1e-12)
    assert chunks.ttft_s > whole.ttft_s  # four fixed costs and four weight reads
    assert request_cost(L8, H100, "lecture", isl=4096, osl=1, prefill_chunk=8192).ttft_s == whole.ttft_s


def test_speculative_decode_at_gamma_zero_is_plain_decode():
    plain = request_cost(L8, H100, "lecture", batch=2, isl=512, osl=64)
    spec = request_cost(L8, H100, "lecture", batch=2, isl=512, osl=64, speculation=Speculation(alpha=0.8, gamma=0, c=0.1))
    assert spec.phases.decode_s == pytest.approx(plain.phases.decode_s, rel=1e-12)
    faster = request_cost(L8, H100, "lecture", batch=2, isl=512, osl=64, speculation=Speculation(alpha=0.8, gamma=4, c=0.1))
    assert faster.tpot_s < plain.tpot_s and faster.expected_tokens == pytest.approx(3.3616)


@settings(max_examples=30, deadline=None)
@given(isl=st.integers(1, 8000), more=st.integers(1, 100), batch=st.integers(1, 64), osl=st.integers(2, 64))
def test_ttft_grows_with_isl_and_batch_and_tpot_with_context(isl, more, batch, osl):
    base = request_cost(L8, H100, "lecture", batch=batch, isl=min(isl, 8000), osl=osl)
    longer = request_cost(L8, H100, "lecture", batch=batch, isl=min(isl + more, 8192 - osl), osl=osl)
    wider = request_cost(L8, H100, "lecture", batch=batch + 1, isl=min(isl, 8000), osl=osl)
    if longer.isl > base.isl:
        assert longer.ttft_s > base.ttft_s and longer.tpot_s >= base.tpot_s
    assert wider.ttft_s > base.ttft_s
    assert base.phases.tpot_last_s >= base.phases.tpot_first_s
    # throughput never beats the ceiling: one token per request from each pass, at the fastest pass
    fastest = min(base.ttft_s, base.phases.tpot_first_s)
    assert base.output_tokens_per_s <= batch / fastest * (1 + 1e-12)


def test_a_request_that_does_not_fit_says_so():
    out = run("request", "--model", "llama-3-70b", "--batch", "32", "--isl", "4096", "--format", "json")
    assert out.exit_code == 0 and "does not fit" in out.stderr
    assert run("request", "--model", "llama-3-70b", "--strict").exit_code == 2
    # a prompt within the limit whose output runs past it
    out = run("request", "--isl", "8000", "--osl", "500")
    assert out.exit_code == 0 and "exceeds the model's limit of 8192 tokens" in out.stderr


@pytest.mark.parametrize("args,needle", [
    (("--osl", "0"), "--osl must be in [1, inf), got 0"),
    (("--isl", "9000"), "--isl must be at most the model's context of 8192 tokens, got 9000"),
    (("--usd-per-gpu-hour", "-1"), "--usd-per-gpu-hour must be in [0, inf), got -1"),
    (("--c", "0.1"), "give --spec-alpha or --tau"),
    (("--spec-alpha", "0.8", "--tau", "3"), "exclude each other"),
    (("--prefill-chunk", "0"), "--prefill-chunk must be"),
])
def test_bad_requests_are_one_line(args, needle):
    assert needle in error_line("request", *args)


def test_selective_ledger_of_the_lectures_figure_5():
    """The lecture §4.2: "硬补齐的话要 4 x 3 = 12 个 token 位置（有用的 7 个），注意力分数要 4 x 3 x 4 = 48 个
    （有用的 19 个）": x1, x2 decoding with 3 and 1 cached tokens, x3, x4 arriving with 2 and 3."""
    x = selective_ledger(FIGURE5)
    assert (x.positions_padded, x.positions_useful, x.scores_padded, x.scores_useful) == (12, 7, 48, 19)
    assert x.scores_causal == 4 + 2 + 3 + 6
    # §4.3: the weights once against once per request; the K/V the same either way
    m = selective_ledger(FIGURE5, model=L8)
    assert m.weight_bytes_per_request == 4 * m.weight_bytes_selective
    assert m.kv_bytes == 131072 * (4 + 2 + 2 + 3)
    rows = rows_of("selective")
    assert [(r["padded"], r["selective"]) for r in rows] == [(12, 7), (48, 19), (48, 15)]
    assert "--request must be cached:new" in error_line("selective", "--request", "3")
    assert "--request entry 3:0: new must be in [1, inf), got 0" in error_line("selective", "--request", "3:0")


def test_tau_on_request_solves_alpha_and_says_so():
    from llm_cost.speculative.tau import alpha_from_tau

    (row,) = rows_of("request", "--tau", "3", "--spec-gamma", "4")
    assert row["spec_tau"] == 3 and row["spec_alpha"] == pytest.approx(float(alpha_from_tau(3, 4)), rel=1e-12)
    assert row["spec_expected_tokens"] == pytest.approx(3, rel=1e-9)
    assert "alpha 0.7" in run("request", "--tau", "3", "--spec-gamma", "4").stdout


def test_the_drafts_memory_costs_target_requests():
    """The lecture §9.3: "草稿模型的权重和 KV cache 也要占显存，能放下的目标序列就少了". Llama-3.2-1B drafting
    for Llama-3-8B on one H100 (81,559 MiB usable, 10% held back), requests of 4096 + 1024 tokens: the
    target's K/V is 131,072 B x 5,120 = 0.671 GB a request, the draft's 32,768 B x 5,120 = 0.168 GB,
    its weights 2.47 GB."""
    from llm_cost.counts import kv_bytes_per_token

    usable = "--usable-memory"  # the lecture preset counts 80e9: the figures here are on the driver's memory
    (row,) = rows_of("request", "--spec-alpha", "0.8", "--draft", "llama-3.2-1b", "--isl", "4096", "--osl", "1024",
                     usable)
    draft = load_model("llama-3.2-1b")
    assert row["draft_kv_bytes_per_request_per_gpu"] == kv_bytes_per_token(draft) * 5120
    assert row["draft_weight_bytes_per_gpu"] == weight_bytes(draft).total
    spare = 81559 * 2**20 * 0.9 - weight_bytes(L8).total  # less a workspace of a few MB
    assert row["max_batch_without_draft"] == int(spare // (131072 * 5120)) == 90
    assert row["max_batch_with_draft"] == int((spare - row["draft_weight_bytes_per_gpu"])
                                              // (131072 * 5120 + 32768 * 5120)) == 69
    assert row["requests_lost_to_draft"] == 21
    # the batch's own fit counts the draft too
    plain = rows_of("request", "--spec-alpha", "0.8", "--isl", "4096", "--osl", "1024", usable)[0]
    assert row["memory_needed_bytes"] - plain["memory_needed_bytes"] == pytest.approx(
        row["draft_weight_bytes_per_gpu"] + row["draft_kv_bytes_per_request_per_gpu"], rel=1e-3)
    assert "cost 21 of 90 requests" in " ".join(run("request", "--spec-alpha", "0.8", "--draft", "llama-3.2-1b",
                                                    "--isl", "4096", "--osl", "1024", usable).stdout.split())


def test_spec_rows_say_how_many_sequences_the_draft_costs():
    """Issue 12 deliverable 4 on `spec`: with --draft, rows carry the draft's weights per GPU and the
    sequences of context + gamma + 1 tokens it displaces (`serving.draft_memory`, usable memory); by hand
    for Llama-3.1-8B + Llama-3.2-1B on an H100: (0.9 x 81,559 MiB - 16.06 GB) / 131,072 B a token alone,
    less the draft's 2.47 GB over 131,072 + 32,768 B a token with it, in sequences of 1,029 tokens."""
    from llm_cost.counts import weight_bytes

    rows = rows_of("spec", "--model", "llama-3.1-8b", "--draft", "llama-3.2-1b", "--preset", "lecture",
                   "--context", "1024", "--usable-memory")
    target, draft = load_model("llama-3.1-8b"), load_model("llama-3.2-1b")
    spare = 0.9 * 81559 * 2**20 - weight_bytes(target).total
    alone = int(spare // 131072) // 1029
    beside = int((spare - weight_bytes(draft).total) // (131072 + 32768)) // 1029
    assert {(r["sequences_lost_to_draft"], r["draft_weight_bytes_per_gpu"]) for r in rows} == {
        (alone - beside, weight_bytes(draft).total)}
    assert rows_of("spec")[0]["sequences_lost_to_draft"] is None


@settings(max_examples=40, deadline=None)
@given(batch=st.integers(1, 600), isl=st.integers(1, 6000), osl=st.integers(1, 2000), tp=st.sampled_from([1, 2, 4]))
def test_a_batch_that_fits_is_one_the_capacity_holds(batch, isl, osl, tp):
    """Per-GPU throughput never comes from more requests than fit: a request batch whose fit passes has at
    most the sequences of isl + osl tokens that `capacity` (usable memory, no workspace) holds, and a
    batch past that never fits."""
    from llm_cost.serving.capacity import sequences_that_fit

    d = Deployment(tp=tp)
    isl = min(isl, 8192 - osl) if osl < 8192 else 1
    r = request_cost(L8, H100, "lecture", batch=batch, isl=isl, osl=osl, deployment=d)
    most = sequences_that_fit(L8, H100, isl + osl, deployment=r.deployment)  # the lecture's memory basis
    if r.fit.fits:
        assert batch <= most
    if batch > most:
        assert not r.fit.fits
