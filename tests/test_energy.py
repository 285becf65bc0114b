"""Energy estimate (issue 25.5): power = idle + (max - idle) x activity, joules = power x time."""

from __future__ import annotations

import pytest

from llm_cost.catalog import load_accelerator
from llm_cost.errors import InvalidValueError
from llm_cost.roofline import step_time
from llm_cost.roofline.energy import A_COMM, A_COMPUTE, A_MEMORY, energy_usd, step_energy
from tests.helpers import error_line, rows_of

H100 = load_accelerator("h100-sxm")


def test_h100_power_fields_from_the_datasheet():
    # NVIDIA H100 datasheet, H100 SXM: "Max Thermal Design Power (TDP) Up to 700W"; idle 10% (stated)
    assert H100.max_power_w == 700.0 and H100.idle_power_w == 70.0


def test_decode_step_energy_by_hand():
    t = step_time("llama-3-8b", H100, "article")  # memory-bound decode, one GPU
    share = t.compute_time_s / t.memory_time_s
    activity = A_MEMORY + (A_COMPUTE - A_MEMORY) * share
    by_hand = 70.0 * t.step_time_s + (700.0 - 70.0) * activity * t.memory_time_s
    e = step_energy(t, H100)
    assert e.joules == pytest.approx(by_hand, rel=1e-12)
    assert e.watts == pytest.approx(by_hand / t.step_time_s, rel=1e-12)
    assert 70.0 < e.watts < 700.0


def test_compute_bound_step_runs_at_max_power_over_its_busy_time():
    t = step_time("llama-3-8b", H100, "article", rows=4096)
    assert t.bound == "compute"
    e = step_energy(t, H100)
    assert e.joules == pytest.approx(70.0 * t.step_time_s + 630.0 * t.compute_time_s, rel=1e-12)


def test_gpus_multiply_energy_and_comm_weight_applies():
    t = step_time("llama-3-8b", H100, "article")
    assert step_energy(t, H100, 8).joules == pytest.approx(8 * step_energy(t, H100).joules)
    from dataclasses import replace

    comm = replace(t, comm_time_s=1e-3)  # 1 ms of collectives after the roofline, on one stage
    extra = step_energy(comm, H100).joules - step_energy(t, H100).joules
    assert extra == pytest.approx(1e-3 * (70.0 + 630.0 * A_COMM), rel=1e-9)


@pytest.mark.parametrize("rows", [1, 16, 128, 512, 2048])
def test_energy_at_least_idle_and_more_work_never_less(rows):
    a = step_time("llama-3-8b", H100, "lecture", rows=rows, batch=1, context=1024)
    b = step_time("llama-3-8b", H100, "lecture", rows=rows * 2, batch=1, context=1024)
    ea, eb = step_energy(a, H100), step_energy(b, H100)
    assert ea.joules >= H100.idle_power_w * a.step_time_s
    assert ea.joules <= H100.max_power_w * a.step_time_s
    assert eb.joules >= ea.joules


def test_no_power_on_the_datasheet_is_refused_not_zero():
    gpu = load_accelerator("mi300x")
    with pytest.raises(InvalidValueError, match="max_power_w"):
        step_energy(step_time("llama-3-8b", gpu, "article"), gpu)


def test_energy_usd():
    assert energy_usd(3.6e6, 0.1) == pytest.approx(0.1)
    with pytest.raises(InvalidValueError, match="usd_per_kwh"):
        energy_usd(1.0, -1)


def test_roofline_cli_columns_and_usd_per_kwh():
    (row,) = rows_of("roofline", "--usd-per-kwh", "0.1")
    t = step_time("llama-3-8b", H100, "article")
    e = step_energy(t, H100)
    assert row["watts"] == pytest.approx(e.watts) and row["joules_per_token"] == pytest.approx(e.joules)
    assert row["usd_per_million_tokens_energy"] == pytest.approx(e.joules * 1e6 / 3.6e6 * 0.1)
    (tp,) = rows_of("roofline", "--tp", "2")
    assert tp["watts"] > row["watts"]  # two GPUs draw more than one


def test_roofline_table_shows_estimate_columns():
    from tests.helpers import run

    out = run("roofline", "--usd-per-kwh", "0.12")
    assert out.exit_code == 0 and "J/token (est.)" in out.output and "W (est.)" in out.output


def test_bad_usd_per_kwh_is_one_line():
    assert "--usd-per-kwh" in error_line("roofline", "--usd-per-kwh", "-1")


def test_request_energy_by_hand_from_its_phases():
    from llm_cost.requests import request_cost

    (row,) = rows_of("request", "--batch", "4", "--isl", "512", "--osl", "64", "--usd-per-kwh", "0.2")
    r = request_cost("llama-3-8b", H100, "measured", batch=4, isl=512, osl=64)
    ph = r.phases
    assert ph.prefill_bound == "compute" and ph.decode_bound == "memory" and not ph.decode_comm_time_s
    by_hand = ph.prefill_s * (70 + 630 * A_COMPUTE) + ph.decode_s * (70 + 630 * A_MEMORY)
    assert row["joules"] == pytest.approx(by_hand, rel=1e-9)
    assert row["joules_per_token"] == pytest.approx(by_hand / (4 * 64), rel=1e-9)
    assert row["watts"] == pytest.approx(by_hand / r.e2e_s, rel=1e-9)
    assert row["usd_per_million_tokens_energy"] == pytest.approx(by_hand / 256 * 1e6 / 3.6e6 * 0.2, rel=1e-9)


def test_request_without_board_power_has_no_energy_and_bad_price_is_one_line():
    (row,) = rows_of("request", "--gpu", "mi300x")
    assert row["watts"] is None and row["joules_per_token"] is None
    assert "--usd-per-kwh" in error_line("request", "--usd-per-kwh", "nan")


def test_served_run_energy_by_hand():
    # exercise 10's two requests (4 + 5 tokens, 1 s per iteration), paged with one-token blocks:
    # they finish at 5 s and 8 s (the engine's doctest); 10 output tokens
    from llm_cost.serving.energy import served_energy
    from llm_cost.serving.engine import serve
    from llm_cost.serving.replica import IterationCost, Replica
    from llm_cost.serving.serve_config import ServeConfig
    from llm_cost.serving.workload import fixed_workload

    r = serve(fixed_workload([(4, 5), (4, 5)]), Replica(IterationCost.unit(), 10, 2048),
              ServeConfig(reservation="paged", block_size=1, watermark=0))
    assert r.finish_s == (5.0, 8.0) and r.output_tokens == 10 and r.comm_total_s == 0
    e = served_energy(r, H100)
    seconds = max(r.span_s, r.busy_s)
    by_hand = 70.0 * seconds + 630.0 * A_MEMORY * r.busy_s
    assert e.joules == pytest.approx(by_hand, rel=1e-12)
    assert e.joules_per_token == pytest.approx(by_hand / 10, rel=1e-12)
    assert e.watts == pytest.approx(by_hand / seconds, rel=1e-12)
    assert e.joules >= 70.0 * seconds
    # more GPUs multiply it; a unit cost does no arithmetic, so no iteration is compute-bound
    assert served_energy(r, H100, 4).joules == pytest.approx(4 * e.joules)
    assert r.compute_bound_s == 0.0
    # two serial pipeline stages: each GPU computes half the busy time and idles through the rest
    by_stage = 2 * (70.0 * seconds + 630.0 * A_MEMORY * r.busy_s / 2)
    assert served_energy(r, H100, 2, stages=2).joules == pytest.approx(by_stage, rel=1e-12)


def test_served_energy_splits_busy_time_by_the_tallied_compute_bound_seconds():
    """Issue 25 review, defect 1: a served run's busy seconds split by the engine's tally of its
    compute-bound iterations (`compute_bound_s`): a_busy = 0.6 + 0.4 x compute_bound_s / busy_s."""
    from dataclasses import replace

    from llm_cost.serving.energy import served_energy
    from llm_cost.serving.engine import serve
    from llm_cost.serving.replica import IterationCost, Replica
    from llm_cost.serving.serve_config import ServeConfig
    from llm_cost.serving.workload import fixed_workload

    r = serve(fixed_workload([(4, 5), (4, 5)]), Replica(IterationCost.unit(), 10, 2048),
              ServeConfig(reservation="paged", block_size=1, watermark=0))
    half = replace(r, compute_bound_s=r.busy_s / 4)
    seconds = max(r.span_s, r.busy_s)
    by_hand = 70.0 * seconds + 630.0 * (A_MEMORY + (A_COMPUTE - A_MEMORY) / 4) * r.busy_s
    assert served_energy(half, H100).joules == pytest.approx(by_hand, rel=1e-12)


def test_prompt_heavy_served_run_draws_the_power_of_its_compute_bound_prefills():
    """Issue 25 review, defect 1: 300 prompts of 4096 tokens, 2 output tokens each, all at once: almost
    all the busy time is prefill past the ridge, so the run draws about `request`'s power for a batch
    of 32 such requests (685 W), not the memory-bound 70 + 630 x 0.6 = 448 W it was given before."""
    (served,) = rows_of("batching", "--rate", "inf", "-n", "300", "--prompt-len", "4096", "--output-len", "2")
    (request,) = rows_of("request", "--isl", "4096", "--osl", "2", "--batch", "32")
    assert served["watts"] > 70 + 630 * A_MEMORY + 200
    assert served["watts"] == pytest.approx(request["watts"], rel=0.05)
    (decode,) = rows_of("batching", "--rate", "inf", "-n", "64", "--prompt-len", "16", "--output-len", "256",
                        "--max-batch", "8")
    assert decode["watts"] < 70 + 630 * (A_MEMORY + 0.05)  # 8 rows an iteration: memory-bound


def test_every_engine_path_tallies_the_same_compute_bound_seconds():
    """The tally (`ServeResult.compute_bound_s`: busy seconds of iterations of `compute_bound_rows` rows or
    more) is the same whichever path runs a config, the general loop's to 1e-9, and lies in (0, busy_s)
    on Orca's workload (prompts of up to 512 tokens past the ridge, decodes below it)."""
    from llm_cost.catalog import load_model
    from llm_cost.serving.engine import serve
    from llm_cost.serving.iteration import compute_bound_rows
    from llm_cost.serving.prefixes import prefix_segments
    from llm_cost.serving.replica import Replica
    from llm_cost.serving.serve_config import ServeConfig
    from llm_cost.serving.workload import poisson_workload
    from llm_cost.specs import PRESETS
    from llm_cost.specs.deployment import Deployment

    a100, model = load_accelerator("a100-40gb"), load_model("gpt-3-13b")
    one = Replica.from_specs(model, a100, PRESETS["lecture"])
    two = Replica.from_specs(model, a100, PRESETS["lecture"], deployment=Deployment(pp=2))
    wl = poisson_workload(150, 8.0, seed=3)
    bound = compute_bound_rows(one.cost)
    assert one.cost.compute_s(bound, 0.0) >= one.cost.memory_s(bound, bound)
    assert one.cost.compute_s(bound * 0.99, 0.0) < one.cost.memory_s(bound * 0.99, bound * 0.99)
    cases = [(wl, one, ServeConfig(reservation="declared"), "fast_reservations"),
             (wl, one, ServeConfig(reservation="paged"), "fast_engine"),
             (wl, two, ServeConfig(reservation="paged", pipeline="orca"), "fast_pipeline"),
             (prefix_segments(wl, seed=1, shared=256), one, ServeConfig(reservation="paged", prefix_caching=True),
              "fast_prefix"),
             (wl, one, ServeConfig(scheduler="request", reservation="max_len"), "request_level")]
    for w, replica, cfg, path in cases:
        fast, general = serve(w, replica, cfg), serve(w, replica, cfg, fast=False)
        assert fast.path == path and general.path in ("general", "request_level"), (path, fast.path)
        assert 0 < general.compute_bound_s < general.busy_s, path
        assert fast.compute_bound_s == pytest.approx(general.compute_bound_s, rel=1e-9), path


def test_pipeline_stages_wait_at_idle_power_in_every_command():
    """Issue 25 review, defect 2: under pp a static batch (`request`, and `plan`'s rows from it) and a
    serial pipeline (`batching`) keep one stage busy at a time; the others wait at idle power, as
    `roofline`'s pass does (`roofline.energy.gpu_joules`, the one formula). By hand from the phases:
    E = sum over phases of s x tp x pp x (70 + 630 x (a_bound x (1 - c) / pp + 0.3 c))."""
    from llm_cost.requests import request_cost
    from llm_cost.specs.deployment import Deployment

    args = ("--isl", "256", "--osl", "128", "--batch", "8")
    (pp2,) = rows_of("request", *args, "--pp", "2", "--gpus", "2")
    (pp1,) = rows_of("request", *args, "--gpus", "2")
    r = request_cost("llama-3-8b", H100, "measured", batch=8, isl=256, osl=128, deployment=Deployment(pp=2))
    ph = r.phases
    activity = {"compute": A_COMPUTE, "memory": A_MEMORY, "communication": A_COMM}

    def joules(s, comm_s, bound):
        c = comm_s / s
        return s * 2 * (70 + 630 * (activity[bound] * (1 - c) / 2 + A_COMM * c))
    by_hand = joules(ph.prefill_s, ph.prefill_comm_time_s, ph.prefill_bound) + joules(
        ph.decode_s, ph.decode_comm_time_s, ph.decode_bound)
    assert pp2["joules"] == pytest.approx(by_hand, rel=1e-9)
    (step,) = rows_of("roofline", "-b", "8", "--context", "256", "--pp", "2", "--gpus", "2")
    # two GPUs, each busy about half the time: well below twice one GPU's power (874 W before)
    assert pp2["watts"] < 1.25 * pp1["watts"] and pp2["watts"] == pytest.approx(step["watts"], rel=0.1)
    (served,) = rows_of("batching", "--rate", "inf", "-n", "200", "--prompt-len", "256", "--output-len", "128",
                        "--max-batch", "8", "--pp", "2", "--gpus", "2")
    assert served["watts"] == pytest.approx(step["watts"], rel=0.1)


def test_batching_served_rows_carry_the_estimate():
    # the engine's rows (paged K/V) carry watts and J/token (`served_energy`): power between idle and
    # board power, and J/token = W / (the replica's tokens per second), energy being power x time;
    # the step-level simulator's rows (the lecture's A100-40GB, no power figure) carry none
    args = ("batching", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--reservation", "paged", "--rate", "4",
            "--requests", "200", "--profile", "measured")
    (row,) = rows_of(*args)
    assert H100.idle_power_w < row["watts"] < H100.max_power_w
    assert row["joules_per_token"] == pytest.approx(row["watts"] / row["tokens_per_s_replica"], rel=1e-9)
    assert "J/token (est.)" in run_table(*args)
    assert "watts" not in rows_of("batching", "--rate", "2", "--model", "gpt-3-13b", "--gpu", "a100-40gb",
                                  "--preset", "lecture")[0]


def run_table(*args):
    from tests.helpers import run

    out = run(*args)
    assert out.exit_code == 0, out.output
    return out.output


def test_table_decode_energy_is_the_roofline_step_energy():
    # the table's decode rows (article preset, H100 SXM, batch 1): J/token = step_energy / batch, the
    # same estimate `roofline` prints for that step; $ = J x 1e6 / 3.6e6 x $/kWh; a GPU without a
    # board power (A100 40GB) has no energy row
    from llm_cost.catalog import load_model
    from llm_cost.specs import preset

    (row,) = rows_of("table", "--model", "llama-3-8b", "--usd-per-kwh", "0.1")
    step = step_time(load_model("llama-3-8b"), H100, preset("article"), rows=1)
    e = step_energy(step, H100)
    assert row["decode_joules_per_token_bf16"] == pytest.approx(e.joules, rel=1e-12)
    assert row["usd_per_million_tokens_energy_bf16"] == pytest.approx(e.joules * 1e6 / 3.6e6 * 0.1, rel=1e-12)
    assert row["decode_joules_per_token_w4a16"] < row["decode_joules_per_token_bf16"]
    (a100,) = rows_of("table", "--model", "llama-3-8b", "--gpu", "a100-40gb")
    assert a100["decode_joules_per_token_bf16"] is None
    assert "decode energy per token" in run_table("table", "--model", "llama-3-8b")


def test_fleet_energy_counts_every_replica_idle_until_the_fleet_is_done():
    # three requests over four unit-cost replicas (round-robin): replica 3 is handed nothing and every
    # replica idles until the fleet's last finish, so E = sum of the three served runs + 70 W x the idle
    # seconds they leave (T - T_r each, and T for the empty one)
    from llm_cost.serving.energy import fleet_energy, served_energy
    from llm_cost.serving.fleet import serve_fleet
    from llm_cost.serving.replica import IterationCost, Replica
    from llm_cost.serving.serve_config import ServeConfig
    from llm_cost.serving.workload import fixed_workload

    wl = fixed_workload([(4, 5), (4, 9), (4, 2)])
    f = serve_fleet(wl, Replica(IterationCost.unit(), 100, 2048), ServeConfig(reservation="paged"), 4)
    assert f.requests_per_replica == (1, 1, 1, 0) and f.replica_count == 4 and len(f.replicas) == 3
    parts = [served_energy(r, H100) for r in f.replicas]
    span = max(p.seconds for p in parts)
    by_hand = sum(p.joules for p in parts) + 70.0 * (sum(span - p.seconds for p in parts) + span)
    e = fleet_energy(f, H100)
    assert e.seconds == span and e.joules == pytest.approx(by_hand, rel=1e-12)
    assert e.joules > sum(p.joules for p in parts)  # the idle replicas are not free
    assert fleet_energy(f, H100, 2).joules == pytest.approx(2 * e.joules, rel=1e-12)


def test_disaggregated_rows_carry_both_pools_energy():
    # --disaggregate 1:1 on H100s: two GPUs powered for the whole run, so the power lies between twice
    # the idle and twice the board power, and J/token = W / the run's output tokens per second
    (row,) = rows_of("batching", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--reservation", "paged",
                     "--disaggregate", "1:1", "--rate", "8", "--requests", "200", "--profile", "measured")
    assert 2 * H100.idle_power_w < row["watts"] < 2 * H100.max_power_w
    assert row["joules_per_token"] == pytest.approx(row["watts"] / row["tokens_per_s"], rel=1e-9)


def test_plan_rows_carry_the_energy_of_their_request_lines():
    """`plan` rows (issue 25.5): watts and J/token of each frontier row are `request`'s with its
    request_args (one energy model: `requests.energy.request_energy`), speculative rows included; with
    --usd-per-kwh the energy's $ per million output tokens is J/token x 1e6 / 3.6e6 x price, beside the
    GPU-hour price's column in the table."""
    import shlex

    from tests.helpers import run

    rows = rows_of("plan", "--spec-alpha", "0.7", "--usd-per-kwh", "0.12", "--usd-per-gpu-hour", "2.5")
    assert rows and any(r["speculation"] != "none" for r in rows)
    picked = rows[:2] + [next(r for r in rows if r["speculation"] != "none")]
    for row in picked:
        (req,) = rows_of("request", *shlex.split(row["request_args"]))
        assert row["joules_per_token"] == pytest.approx(req["joules_per_token"], rel=1e-12)
        assert row["watts"] == pytest.approx(req["watts"], rel=1e-12) and row["watts"] > 0
        assert row["usd_per_million_tokens_energy"] == pytest.approx(row["joules_per_token"] * 1e6 / 3.6e6 * 0.12)
    table = run("plan", "--usd-per-kwh", "0.12", "--usd-per-gpu-hour", "2.5").stdout
    assert "$/M out" in table and "energy $/M tok" in " ".join(table.split())
    assert "usd_per_million_tokens_energy" not in rows_of("plan")[0]  # no price, no column
    assert "--usd-per-kwh" in error_line("plan", "--usd-per-kwh", "-1")


def test_batching_usd_per_kwh_prices_every_kind_of_run():
    """`batching --usd-per-kwh` (issue 25.5): each served row's energy price is its J/token x 1e6 / 3.6e6
    x $/kWh, on one replica, a fleet (`--router`) and a disaggregated run, in the table beside W and
    J/token; a bad price is one line before any simulation."""
    base = ("batching", "--reservation", "paged", "--rate", "4", "-n", "60", "--usd-per-kwh", "0.2")
    for extra in ((), ("--gpus", "2", "--router", "least-loaded"), ("--gpus", "2", "--disaggregate", "1:1")):
        row = rows_of(*base, *extra)[0]
        assert row["joules_per_token"] > 0
        assert row["usd_per_million_tokens_energy"] == pytest.approx(row["joules_per_token"] * 1e6 / 3.6e6 * 0.2,
                                                                     rel=1e-12)
    assert "energy $/M tok" in " ".join(run_table(*base).split())
    assert "usd_per_million_tokens_energy" not in rows_of(*base[:-2])[0]
    assert "--usd-per-kwh" in error_line(*base[:-1], "5000")


def test_spec_round_energy_by_hand():
    """`spec` rows (issue 25.5): a round's energy is the verification pass's plus gamma draft steps, each c
    times the decode step's, by the step model (power x time): article preset, H100 SXM, batch 1, gamma
    4, c 0.1: both passes memory-bound at 4.794 ms (no fixed cost, no collectives), so
    E = (1 + 4 x 0.1) x 4.794 ms x (70 W + 630 W x a_body) with a_body = 0.6 + 0.4 x compute/memory;
    J/token over E[tokens] = 3.36 and W = E / round; with --usd-per-kwh its price."""
    from llm_cost.catalog import load_model
    from llm_cost.roofline.energy import body_activity

    (row,) = rows_of("spec", "--alpha", "0.8", "--gamma", "4", "--batch", "1", "--mfu", "1", "--usd-per-kwh", "0.1")
    model = load_model("llama-3-8b")
    step, verify = (step_time(model, H100, "article", rows=m, batch=1) for m in (1, 5))
    assert row["verify_step_s"] == pytest.approx(float(verify.step_time_s), rel=1e-9) == float(step.step_time_s)

    def power(s):  # the board's power over a pass: its compute share moves a_body off 0.6
        return H100.idle_power_w + (H100.max_power_w - H100.idle_power_w) * body_activity(float(s.memory_time_s),
                                                                                        float(s.compute_time_s))
    by_hand = float(verify.step_time_s) * power(verify) + 4 * 0.1 * float(step.step_time_s) * power(step)
    assert float(step.step_time_s) == pytest.approx(4.79e-3, abs=5e-6)  # the article's decode bound, 4.79 ms
    assert row["joules_per_token"] == pytest.approx(by_hand / row["expected_tokens"], rel=1e-9)
    assert row["expected_tokens"] == pytest.approx(3.36, abs=5e-3)
    assert row["watts"] == pytest.approx(by_hand / row["round_s"], rel=1e-9)
    assert row["usd_per_million_tokens_energy"] == pytest.approx(row["joules_per_token"] / 36)
    assert "--usd-per-kwh" in error_line("spec", "--usd-per-kwh", "-1")


def test_capacity_times_nothing_so_has_no_energy_and_says_so():
    """`capacity` counts memory only (issue 25.5's decision): its rows carry no watts or J/token (no silent
    zero), its --help says why and where the energy is, and --usd-per-kwh is not one of its options."""
    from typer.testing import CliRunner

    from llm_cost.cli import app

    rows = rows_of("capacity", "--model", "gpt-3-13b", "--gpu", "a100-40gb")
    assert not {"watts", "joules_per_token", "usd_per_million_tokens_energy"} & set(rows[0])
    text = " ".join(CliRunner().invoke(app, ["capacity", "--help"], env={"COLUMNS": "200"}).stdout.split())
    assert "nothing is timed, so no energy" in text and "`request` and `batching`" in text
    assert CliRunner().invoke(app, ["capacity", "--usd-per-kwh", "0.1"]).exit_code == 2


def test_tree_round_energy_by_hand():
    """`tree` rows (issue 25.5: every timing row has its energy): a tree's round is its verification pass
    over B (nodes + 1) rows plus depth draft levels, each c times the decode step, by the step model as
    `spec`'s (power x time): article preset, H100 SXM, the 4x2x2x1 tree (44 nodes, depth 4), batch 1,
    c 0.05, context 0: E = T(45) P(45) + 4 x 0.05 x T(1) P(1), P = 70 W + 630 W x a_body; J/token over tau,
    W over the round; at batch 32 (1,440 rows, compute-bound) the round draws more."""
    from llm_cost.catalog import load_model
    from llm_cost.roofline.energy import body_activity

    rows = rows_of("tree", "--widths", "4,2,2,1", "--batch", "1", "--batch", "32", "--c", "0.05", "--context", "0",
                   "--preset", "article")
    row = rows[0]
    model = load_model("llama-3-8b")
    step, verify = (step_time(model, H100, "article", rows=m, batch=1) for m in (1, 45))
    assert (row["nodes"], row["depth"], row["verify_rows"]) == (44, 4, 45)
    assert row["verify_step_s"] == pytest.approx(float(verify.step_time_s), rel=1e-9)

    def power(s):
        return H100.idle_power_w + (H100.max_power_w - H100.idle_power_w) * body_activity(float(s.memory_time_s),
                                                                                        float(s.compute_time_s))
    by_hand = float(verify.step_time_s) * power(verify) + 4 * 0.05 * float(step.step_time_s) * power(step)
    assert row["joules_per_token"] == pytest.approx(by_hand / row["tau"], rel=1e-9)
    assert row["watts"] == pytest.approx(by_hand / row["round_s"], rel=1e-9)
    assert H100.idle_power_w < row["watts"] < rows[1]["watts"] <= H100.max_power_w


def test_waste_simulated_load_carries_the_served_runs_energy():
    """`waste --rate` serves Orca's workload request-level (issue 25.5: every served run has its energy): its
    rows' watts and J/token are `batching --scheduler request`'s on the same run (`serving.energy`, by hand in
    test_served_run_energy_by_hand); a GPU without a board power (A100 40GB) gives none, never zero."""
    (waste,) = rows_of("waste", "--rate", "4", "-n", "300", "--max-batch", "8")
    (batching,) = rows_of("batching", "--scheduler", "request", "--max-batch", "8", "--rate", "4", "-n", "300")
    assert waste["throughput_req_per_s"] == batching["throughput_req_per_s"]  # the same run
    assert waste["watts"] == pytest.approx(batching["watts"], rel=1e-12) and waste["watts"] > H100.idle_power_w
    assert waste["joules_per_token"] == pytest.approx(batching["joules_per_token"], rel=1e-12)
    (bare,) = rows_of("waste", "--rate", "4", "-n", "100", "--gpu", "a100-40gb", "--model", "gpt-3-13b")
    assert bare.get("watts") is None and bare.get("joules_per_token") is None
