"""Issue 29: hostile inputs and faults. Each test reproduces one defect the fuzzing pass found (the
command of the issue) and fails before its fix: a wrong number at exit 0, a lost file, a traceback,
a hang, or a refusal that hurt a real file."""

from __future__ import annotations

import json
import math
import os
import time

import pytest

from helpers import error_line, rows_of, run

HEADER = "id,source,metric,value,config,gpu_name,weights,group_size,kv,tp,pp,gpu_count,batch,batch_kind,isl,osl"
GOOD = "m1,s1,decode_tok_per_s_per_user,100,llama-3.1-8b,a100-80gb,bf16,0,bf16,1,1,1,1,static,5,200"


def points_file(tmp_path, *rows, header=HEADER, name="p.csv"):
    path = tmp_path / name
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


def trace_file(tmp_path, text: str, data: bytes | None = None):
    path = tmp_path / "t.csv"
    path.write_bytes(data if data is not None else text.encode())
    return path


# ---- wrong numbers, exit 0 ----------------------------------------------------------------

def test_pipeline_tokens_per_s_is_one_static_batch():
    """`request --pp 4` reported 593.5 tok/s where one request's e2e of 1.725 s allows 148.4."""
    (row,) = rows_of("request", "--model", "llama-3-8b", "--pp", "4")
    assert row["output_tokens_per_s"] == pytest.approx(1 * row["osl"] / row["e2e_s"], rel=1e-12)
    assert row["output_tokens_per_s_per_gpu"] == pytest.approx(row["output_tokens_per_s"] / 4, rel=1e-12)


@pytest.mark.parametrize("command", [["roofline"], ["spec"], ["tree", "--batch", "1"]])
def test_pipeline_tokens_per_s_everywhere(command):
    """roofline, spec and tree read the same one-batch-in-flight rule: pp 4 on 8 GPUs is 2 replicas."""
    one = rows_of(*command, "--model", "llama-3-8b")
    four = rows_of(*command, "--model", "llama-3-8b", "--pp", "4", "--gpus", "8")
    for a, b in zip(one, four):
        assert b["replicas"] == 2
        step = b.get("step_time_s") or b.get("round_s") or b.get("verify_s")
        if step is not None and "step_time_s" in b:
            assert b["tokens_per_s"] == pytest.approx(2 * b["batch"] / b["step_time_s"], rel=1e-9)
        # a pipeline never produces more per GPU than one GPU serving its own batch
        assert b["tokens_per_s_per_gpu"] <= a["tokens_per_s_per_gpu"] * (1 + 1e-9)


def test_plan_per_gpu_throughput_is_not_inflated_by_pp():
    """plan credited a pp-8 pipeline serving one request 16.2 tok/s per GPU (really 2.0)."""
    from llm_cost.catalog import load_accelerator, load_model
    from llm_cost.requests import request_cost
    from llm_cost.requests.request import gpu_seconds
    from llm_cost.specs.deployment import Deployment

    dep = Deployment(pp=8)
    r = request_cost(load_model("llama-3-8b"), load_accelerator("h100-sxm"), "article", isl=128, osl=64,
                     deployment=dep)
    assert gpu_seconds(1.0, dep) == 8.0  # a static batch holds its whole replica
    per_gpu = r.batch * r.osl / gpu_seconds(r.e2e_s, dep)
    assert per_gpu == pytest.approx(r.output_tokens_per_s / 8, rel=1e-12)


def test_kv_tokens_past_the_memory_and_max_len_past_the_context_are_refused():
    assert "--kv-tokens must be in [1, " in error_line("batching", "--kv-tokens", "1000000000", "--rate", "2", "-n", "10")
    assert "--max-len must be in [1, 2048]" in error_line("capacity", "--max-len", "100000", "--model", "gpt-3-13b")


def test_unit_column_is_honoured_or_refused(tmp_path):
    """A TTFT written 0.0077 with unit s was read as 0.0077 ms."""
    from llm_cost.calibrate.points import PointsError, read_points

    header = HEADER + ",unit"
    row = "m1,s1,ttft_ms,0.0077,llama-3.1-8b,a100-80gb,bf16,0,bf16,1,1,1,1,static,128,2,s"
    (p,) = read_points(points_file(tmp_path, row, header=header))
    assert p.value == pytest.approx(7.7, rel=1e-12)
    with pytest.raises(PointsError, match="ttft_ms is a time: the unit must be one of ms"):
        read_points(points_file(tmp_path, row[:-1] + "tok/s", header=header))
    per_gpu = "m2,s1,output_tok_per_s_per_gpu,3000,llama-3.1-8b,h100-sxm,bf16,0,bf16,1,1,1,8,static,128,128,tok/s/GPU"
    assert read_points(points_file(tmp_path, per_gpu, header=header))[0].value == 3000


def test_duplicated_csv_column_and_json_key_are_refused(tmp_path):
    from llm_cost.calibrate.points import PointsError, read_points
    from llm_cost.catalog import load_model
    from llm_cost.errors import ConfigError

    with pytest.raises(PointsError, match="column value is given 2 times"):
        read_points(points_file(tmp_path, GOOD + ",5", header=HEADER + ",value"))
    text = (tmp_path / "c.json")
    cfg = json.loads(open(os.path.join(os.path.dirname(__file__), "..", "models", "llama-3-8b", "config.json")).read())
    text.write_text(json.dumps(cfg)[:-1] + ', "num_hidden_layers": 1}')
    with pytest.raises(ConfigError, match="key 'num_hidden_layers' is given twice"):
        load_model(str(text))


def test_tiny_rates_and_huge_gaps_are_refused_not_absorbed(tmp_path):
    """`batching --rate 1e-16` printed latencies of 0.0; a 1e-300 rate predicted TTFT 0 ms."""
    assert "--rate must be in [1e-06, inf)" in error_line("batching", "--rate", "1e-16", "-n", "10")
    path = trace_file(tmp_path, "arrival_s,prompt_tokens,output_tokens\n0,10,10\n1e300,20,5\n")
    assert "arrival_s must be in [0, 1e+09] s" in error_line("batching", "--trace", path)
    row = "m3,s1,ttft_ms,20,llama-3.1-8b,a100-80gb,bf16,0,bf16,1,1,1,1e-300,request rate,128,128"
    assert "must be a rate >= 1e-06" in error_line("validate", points_file(tmp_path, row))


def test_a_trace_without_gaps_cannot_be_rescaled(tmp_path):
    path = trace_file(tmp_path, "arrival_s,prompt_tokens,output_tokens\n0,10,10\n0,20,5\n")
    assert "all arrive at 0 s" in error_line("batching", "--trace", path, "--rate", "2")


def test_library_functions_refuse_what_made_them_negative():
    from llm_cost.catalog import load_model
    from llm_cost.counts import kv_bytes
    from llm_cost.errors import InvalidValueError
    from llm_cost.roofline.pass_terms import expected_experts_touched
    from llm_cost.speculative import implied_c, leviathan

    m = load_model("llama-3-8b")
    for call, needle in ((lambda: kv_bytes(m, -5), "context must be in [0, inf), got -5"),
                         (lambda: kv_bytes(m, float("nan")), "context must be a finite number"),
                         (lambda: expected_experts_touched(8, 20, 4), "experts_per_token must be at most num_experts (8), got 20"),
                         (lambda: implied_c(0.8, 4, 5.0), "measured_speedup must be at most E = 3.362"),
                         (lambda: leviathan(0.8, 2**63), "gamma must be at most 1e+09")):
        with pytest.raises(InvalidValueError) as err:
            call()
        assert needle in str(err.value)
    assert implied_c(0.75, 7, 3.4) == pytest.approx(0.008, abs=5e-4)  # the lecture exercise 5, unchanged


@pytest.mark.parametrize("change,hint", [
    ({"bandwidth_bytes_per_s": 33.5e12}, "a bandwidth 10x off"),  # 10x bandwidth
    ({"bf16_flops_per_s": 1979e12}, "sparse FLOP/s"),  # the sparse figure for dense
    ({"fp8_flops_per_s": 3958e12}, "sparse FP8"),
    ({"interconnect_bytes_per_s": 900e9, "interconnect_latency_s": 1e-6}, "bidirectional"),  # NVLink both ways
    ({"memory_bytes": 640e9}, "memory in bits"),  # 80 GB written in bits
    ({"interconnect_bytes_per_s": 3.6e12, "interconnect_latency_s": 1e-6}, "bits for bytes"),
])
def test_datasheet_unit_slips_inside_each_range_are_refused(change, hint):
    """An H100's figures with one slip each (issue 29: 9 of 27 slips passed the per-key ranges)."""
    from llm_cost.catalog.datasheet import accelerator_from_datasheet
    from llm_cost.errors import ConfigError

    sheet = {"name": "H", "memory_bytes": 80e9, "bandwidth_bytes_per_s": 3.35e12, "bf16_flops_per_s": 989e12,
             "fp8_flops_per_s": 1979e12}
    accelerator_from_datasheet(sheet)  # the real figures pass
    with pytest.raises(ConfigError, match=hint):
        accelerator_from_datasheet({**sheet, **change})


# ---- data loss ----------------------------------------------------------------------------

def test_calibrate_never_overwrites_its_input(tmp_path):
    victim = points_file(tmp_path, GOOD)
    before = victim.read_bytes()
    assert "is an input of this command" in error_line("calibrate", victim, "-o", victim)
    assert "is an input of this command" in error_line("calibrate", victim, "-o", victim, "--force")
    assert victim.read_bytes() == before


def test_an_existing_output_needs_force(tmp_path):
    out = tmp_path / "f.png"
    out.write_bytes(b"keep me")
    assert "exists: give --force to replace it" in error_line("plot", "roofline", "-o", out)
    assert out.read_bytes() == b"keep me"
    assert run("plot", "roofline", "-o", out, "--force").exit_code == 0
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_output_path_is_checked_before_the_work(tmp_path):
    """`calibrate ... -o /nonexistent/p.json` fitted for minutes, then failed."""
    points = points_file(tmp_path, GOOD)
    started = time.monotonic()
    assert "the folder does not exist" in error_line("calibrate", points, "-o", tmp_path / "no" / "p.json")
    assert "the folder does not exist" in error_line("validate", points, "--plot", tmp_path / "no" / "v.png")
    assert time.monotonic() - started < 20


def test_an_interrupted_write_leaves_the_old_file(tmp_path, monkeypatch):
    """An interrupt during `plot -o x.png` left a truncated PNG in 8 of 100 trials."""
    from matplotlib.figure import Figure

    out = tmp_path / "x.png"
    out.write_bytes(b"old figure")

    def interrupted(self, path, **kw):
        with open(path, "wb") as f:
            f.write(b"\x89PNG half")
        raise KeyboardInterrupt

    monkeypatch.setattr(Figure, "savefig", interrupted)
    from llm_cost.report import figures

    fig, _ = figures.new_figure()
    with pytest.raises(KeyboardInterrupt):
        figures.save(fig, out)
    assert out.read_bytes() == b"old figure"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.png"]  # no temporary file left behind


# ---- tracebacks ---------------------------------------------------------------------------

@pytest.mark.parametrize("args,needle", [
    (["batching", "--scheduler", "REQUEST", "--rate", "2", "-n", "20"], None),  # KeyError; names ignore case
    (["waste", "--isl", "100"], "--isl and --osl must be given the same number of times"),  # TypeError
    (["model", "a" * 300], "unknown model 'aaaaaaaaaaa... (302 characters)"),  # OSError, path printed
    (["batching", "--prompt-len", "1e300", "--rate", "2", "-n", "10"], "--prompt-len must be in [1, 10000000]"),
    (["capacity", "--kv-bytes", "4.9e-324"], "--kv-bytes must be in [0.0625, 16]"),  # OverflowError
    (["plot", "roofline", "--mfu", "4.9e-324", "-o", "/tmp/never-written.png"], "--mfu must be in [0.0001, 1]"),
    (["batching", "--rate", "2", "-n", "100000000"], "GB of memory"),  # MemoryError after 15-44 s
])
def test_no_traceback(args, needle):
    out = run(*args)
    assert "Traceback" not in out.output and not isinstance(out.exception, (KeyError, TypeError, OSError,
                                                                             OverflowError, MemoryError))
    if needle is None:
        assert out.exit_code == 0, out.output
    else:
        assert needle in error_line(*args)


def test_encodings_are_detected_and_named(tmp_path):
    latin = tmp_path / "p.csv"
    latin.write_bytes((HEADER + "\n" + GOOD.replace("s1", "caf\xe9") + "\n").encode("latin-1"))
    assert "not UTF-8 text (byte 0xe9" in error_line("validate", latin)
    assert "Latin-1" in error_line("validate", latin)
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + (HEADER + "\n" + GOOD + "\n").encode())
    assert run("validate", bom).exit_code == 0
    profile = tmp_path / "prof.json"
    profile.write_bytes(b'{"bw_efficiency": 0.5, "name": "caf\xe9"}')
    assert "not UTF-8 text" in error_line("roofline", "--profile", profile)
    trace = trace_file(tmp_path, "", b"\xef\xbb\xbfarrival_s,prompt_tokens,output_tokens\n0,10,10\n")
    assert run("batching", "--trace", trace).exit_code == 0  # a BOM is handled as everywhere, not "missing column"
    utf16 = trace_file(tmp_path, "", "arrival_s,prompt_tokens,output_tokens\n0,10,10\n".encode("utf-16"))
    assert run("batching", "--trace", utf16).exit_code == 0


@pytest.mark.parametrize("body,needle", [
    ("0,inf,10", "prompt_tokens must be a whole number in [1, 1e+07]"),  # OverflowError
    ("0,10,10,5,6", "5 fields, the header has 3"),  # AttributeError
    ("0,QPS=2,10", "prompt_tokens is not a number: 'QPS=2'"),
])
def test_bad_trace_rows(tmp_path, body, needle):
    path = trace_file(tmp_path, f"arrival_s,prompt_tokens,output_tokens\n{body}\n")
    assert needle in error_line("batching", "--trace", path)


@pytest.mark.parametrize("text,needle", [
    ('{"a":' + "[" * 10_000 + "]" * 10_000 + "}", "nested deeper than 64 levels"),  # RecursionError
    ('{"quantization_config": ' + '{"x": ' * 500 + "1" + "}" * 500 + "}", "nested deeper than 64 levels"),
    ('{"vocab_size": ' + "9" * 5000 + "}", "an integer of 5000 digits"),  # ValueError: int string limit
])
def test_hostile_json(tmp_path, text, needle):
    path = tmp_path / "config.json"
    path.write_text(text)
    assert needle in error_line("model", path)


# ---- hangs --------------------------------------------------------------------------------

@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("option", [["batching", "--trace"], ["validate"], ["model"], ["roofline", "--profile"]])
def test_a_fifo_is_refused_at_once(tmp_path, option):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    started = time.monotonic()
    assert "is a FIFO (named pipe), not a regular file" in error_line(*option, fifo)
    assert time.monotonic() - started < 10


def test_a_served_row_past_the_budget_is_not_covered_and_the_file_goes_on(tmp_path):
    """One validate row of concurrency 1e6 ran past 300 s and stalled the whole file."""
    huge = "m3,s1,ttft_ms,20,llama-3.1-8b,a100-80gb,bf16,0,bf16,1,1,1,1000000,concurrency,2048,128"
    long = "m4,s1,decode_tok_per_s,20,llama-3.1-8b,a100-80gb,bf16,0,bf16,1,1,1,1,static,0,1000000000000"
    started = time.monotonic()
    rows = rows_of("validate", points_file(tmp_path, GOOD, huge, long))
    assert time.monotonic() - started < 30
    assert rows[0]["covered"]
    assert not rows[1]["covered"] and "past the budget" in rows[1]["reason"]
    assert not rows[2]["covered"] and "is not modelled" in rows[2]["reason"]


# ---- refusals that hurt real files --------------------------------------------------------

def test_every_bad_row_in_one_run_and_skip_bad(tmp_path):
    """Five bad rows of 500 took six runs: one refusal names them all; --skip-bad predicts the rest."""
    bad = [GOOD.replace(",1,1,1,1,static", ",x,1,1,1,static"), GOOD.replace("static", "QPS=2"),
           GOOD.replace(",1,static", ",-1,static"), GOOD.replace("a100-80gb", "nope"),
           GOOD.replace(",5,200", ",5," + "9" * 4000)]
    path = points_file(tmp_path, GOOD, *bad, GOOD.replace("m1", "m2"))
    line = error_line("validate", path)
    assert "5 bad rows of 7" in line and "--skip-bad" in line and len(line) < 2000
    for needle in ("row 2, column tp: must be a number, got 'x'", "row 3, column batch_kind",
                   "row 4, column batch", "row 5, column gpu_name", "row 6, column osl"):
        assert needle in line
    out = run("validate", path, "--skip-bad", "--format", "json")
    assert out.exit_code == 0 and [r["id"] for r in json.loads(out.stdout)] == ["m1", "m2"]
    assert "Warning: skipped" in out.stderr and "5 bad rows of 7" in out.stderr


def test_llama_bench_prefill_rows_have_osl_zero(tmp_path):
    pp512 = "lb1,s1,prefill_tok_per_s,5000,llama-3.1-8b,h100-sxm,bf16,0,bf16,1,1,1,1,static,512,0"
    (row,) = rows_of("validate", points_file(tmp_path, pp512))
    assert row["covered"] and row["predicted"] > 0


def test_numbers_written_with_their_kind_get_a_hint(tmp_path):
    row = GOOD.replace(",1,static", ",QPS=2,static")
    assert "column batch: must be a number, got 'QPS=2'; write the number alone" in error_line(
        "validate", points_file(tmp_path, row))


def test_errors_never_echo_a_4kb_input(tmp_path):
    long = "x" * 4096
    for args in (["roofline", "--model", long], ["roofline", "--gpu", long], ["batching", "--prompt-len", long],
                 ["validate", points_file(tmp_path, GOOD.replace("llama-3.1-8b", long + ".json"))]):
        line = error_line(*args)
        assert len(line) < 1500 and long not in line, (args[0], len(line))


def test_no_zero_latency_from_a_floor_rate():
    rows = rows_of("batching", "--rate", "1e-6", "-n", "20")
    assert all(r[k] > 0 for r in rows for k in r if k.startswith("latency") and isinstance(r[k], float)
               and math.isfinite(r[k]))


def test_at_a_terminal_an_existing_output_is_replaced_after_a_yes(tmp_path, monkeypatch):
    from llm_cost.cli import app
    from llm_cost.commands import outputs

    from helpers import runner

    out = tmp_path / "f.png"
    out.write_bytes(b"keep me")
    monkeypatch.setattr(outputs, "_interactive", lambda: True)
    no = runner.invoke(app, ["plot", "roofline", "-o", str(out)], input="n\n")
    assert no.exit_code == 1 and out.read_bytes() == b"keep me" and "exists. Replace it?" in no.output
    yes = runner.invoke(app, ["plot", "roofline", "-o", str(out)], input="y\n")
    assert yes.exit_code == 0 and out.read_bytes()[:4] == b"\x89PNG"


def test_the_row_budget_is_stated_and_raised_by_an_option(tmp_path):
    """A served row past the budget says its estimate and the option; the option lowers or raises it."""
    row = "m3,s1,ttft_ms,20,llama-3.1-8b,a100-80gb,bf16,0,bf16,1,1,1,64,concurrency,128,128"
    path = points_file(tmp_path, row)
    (tight,) = rows_of("validate", path, "--row-budget-s", "0.01")
    assert not tight["covered"] and "about 0 s; validate --row-budget-s raises it" in tight["reason"]
    (default,) = rows_of("validate", path)
    assert default["covered"]
    assert "--row-budget-s must be in [0, 86400]" in error_line("validate", path, "--row-budget-s", "-1")
