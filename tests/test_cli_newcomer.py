"""Issue 28 (a second newcomer pass): tables that read at 80 columns, marked unfit figures, catalog
sources on request, a one-row-per-invariant check."""

from __future__ import annotations

import io
import json

import pytest

from typer.testing import CliRunner

from llm_cost.cli import app
from llm_cost.report.render import Column, fixed, render

runner = CliRunner()


def _run(*args, columns=None):
    env = {"COLUMNS": str(columns)} if columns else {}
    out = runner.invoke(app, list(args), env=env)
    return out


def test_wide_table_is_stacked_with_its_key_column(monkeypatch):
    """A table too wide for 80 columns becomes tables each led by the key column, not key/value cards."""
    monkeypatch.setenv("COLUMNS", "80")
    columns = [Column("name", "name")] + [Column(f"c{i}", f"quantity number {i} (ms)", fixed(3)) for i in range(9)]
    rows = [{"name": f"row-{n}", **{f"c{i}": 1000.0 * n + i for i in range(9)}} for n in range(3)]
    buf = io.StringIO()
    render(rows, columns, "table", title="Wide", out=buf)
    text = buf.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 80
    headers = [line for line in text.splitlines() if line.startswith("┃") and "name" in line]
    assert len(headers) >= 2  # stacked: every table has the key column's header
    assert text.count("row-2") == len(headers)
    for i in range(9):
        assert f"2,000.{i:03d}"[:-3] in text  # every figure whole
    assert "2,008.000" in text


def test_stacked_tables_repeat_the_column_that_tells_rows_apart(monkeypatch):
    """Rows that share their leading key (spec: batch 1 at MFU 1 and 0.6) carry the column that tells them
    apart into every stacked table, so that no part prints two identical rows."""
    monkeypatch.setenv("COLUMNS", "80")
    columns = ([Column("name", "name"), Column("same", "same", fixed(1)), Column("mfu", "MFU", fixed(2))]
               + [Column(f"c{i}", f"quantity number {i} (ms)", fixed(3)) for i in range(8)])
    rows = [{"name": "row", "same": 7.0, "mfu": m, **{f"c{i}": 1000.0 + i for i in range(8)}} for m in (1.0, 0.6)]
    buf = io.StringIO()
    render(rows, columns, "table", out=buf)
    lines = buf.getvalue().splitlines()
    headers = [line for line in lines if line.startswith("┃") and "name" in line]
    assert len(headers) >= 2 and all("MFU" in line for line in headers)
    body = [line for line in lines if line.startswith("│")]
    assert sum("0.60" in line for line in body) == len(headers) and len(set(body)) == len(body)


def test_spec_stacked_rows_say_their_mfu():
    out = _run("spec", columns=80)
    assert out.exit_code == 0
    body = [line for line in out.stdout.splitlines() if line.startswith("│")]
    assert body and len(set(body)) == len(body)  # no table repeats a row: each shows the MFU that differs


def test_table_marks_past_the_limit_at_80_columns():
    """A largest batch past the model's context limit is marked (its note says so), not annotated in
    its cell: "13 (past its 8K limit)" folded over two lines at 80 columns."""
    out = _run("table", columns=80)
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert sum(line.startswith("┃") for line in lines) <= 2  # one table, not a card per quantity
    assert "13‡" in out.stdout and "‡ Past the model's context limit (llama-3-8b: 8K tokens" in out.stdout


def test_table_marks_figures_whose_weights_do_not_fit():
    """The article prices Llama-3-70B on one H100 "assuming it fits": the figure stays, marked †;
    the warning names every model with a figure that cannot run, and agrees with the table."""
    out = _run("table", "--model", "llama-3-8b", "--model", "llama-3-70b", "--context", "4096", columns=200)
    assert out.exit_code == 0, out.output
    line = next(ln for ln in out.stdout.splitlines() if "decode step lower bound" in ln and "BF16" in ln)
    assert "4.79 " in line and "42.12†" in line and "4.79†" not in line
    assert "† That format's weights do not fit" in out.stdout
    assert "1 of 2 model columns have figures that cannot run as stated" in out.stderr
    assert "llama-3-70b on H100 SXM: BF16 weights do not fit" in out.stderr


def test_table_of_models_that_fit_warns_nothing():
    out = _run("table", "--model", "llama-3-8b", "--context", "4096", columns=200)
    assert out.exit_code == 0 and "Warning" not in out.stderr and "†" not in out.stdout


def test_catalog_sources_on_request():
    plain, sources = _run("catalog", columns=80), _run("catalog", "--sources", columns=80)
    assert plain.exit_code == sources.exit_code == 0
    assert "https://" not in plain.stdout and "catalog --sources" in plain.stdout
    assert "https://huggingface.co/" in sources.stdout
    assert len(plain.stdout.splitlines()) < 100
    rows = json.loads(_run("catalog", "--format", "json").stdout)
    assert all(r["source"] for r in rows)  # json keeps every source
    # at 80 columns every URL stands whole on one line (wrapped at words, never mid-URL)
    urls = {u for r in rows for u in r["source"].split() if u.startswith("http")}
    lines = sources.stdout.splitlines()
    assert urls and all(any(u in ln for ln in lines) for u in urls)
    assert all(len(ln) <= 80 for ln in lines if not any(u in ln for u in urls))


def test_check_summary_one_row_per_invariant_and_all_for_pairs():
    args = ["check", "--model", "llama-3.2-1b", "--model", "llama-3-8b", "--examples", "1"]
    summary, every = _run(*args, columns=200), _run(*args, "--all", columns=200)
    assert summary.exit_code == every.exit_code == 0, summary.output
    assert summary.stdout.count("t_rows_monotone") == 1
    assert every.stdout.count("t_rows_monotone") == 2
    line = next(ln for ln in summary.stdout.splitlines() if "t_rows_monotone" in ln)
    assert [c.strip() for c in line.split("│")[-4:-1]] == ["2", "2", "0"]
    rows = json.loads(_run(*args, "--format", "json").stdout)
    assert sum(r["invariant"] == "t_rows_monotone" for r in rows) == 2  # json: every pair


def test_capacity_compares_gpus_and_models_in_one_command():
    """Issue 28, deliverable 6: --gpu and --model repeat on `capacity`, one row each, the same figures as
    one command per pair."""
    both = json.loads(_run("capacity", "--model", "gpt-3-13b", "--model", "llama-3-8b", "--gpu", "a100-40gb",
                           "--gpu", "h100-sxm", "--format", "json").stdout)
    assert [(r["model"], r["gpu"]) for r in both] == [("gpt-3-13b", "a100-40gb"), ("gpt-3-13b", "h100-sxm"),
                                                      ("llama-3-8b", "a100-40gb"), ("llama-3-8b", "h100-sxm")]
    one = json.loads(_run("capacity", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--format", "json").stdout)
    assert both[3] == one[0]
    table = _run("capacity", "--model", "gpt-3-13b", "--gpu", "a100-40gb", "--gpu", "h100-sxm", columns=80).stdout
    assert table.count("a100-40gb") >= 2  # every stacked table keeps model and gpu (the catalog key: 28.8)


def test_table_compares_gpus_one_table_each():
    """Issue 28, deliverable 6: `table --gpu A --gpu B` prints one table per GPU (its memory and peaks
    label its rows) and JSON one row per model and GPU: the article's 4.79 ms on the H100, H200's own."""
    out = _run("table", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpu", "h200", columns=120)
    assert out.exit_code == 0, out.output
    assert "Cost table: H100 SXM" in out.stdout and "Cost table: H200" in out.stdout
    rows = json.loads(_run("table", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpu", "h200", "-f", "json").stdout)
    assert [(r["gpu"], r["gpu_name"]) for r in rows] == [("h100-sxm", "H100 SXM"), ("h200", "H200 SXM")]
    assert round(rows[0]["decode_step_s_bf16"] * 1e3, 2) == 4.79  # the article §2.4
    assert rows[1]["decode_step_s_bf16"] == pytest.approx(rows[0]["weight_bytes_bf16"] / 4.8e12)  # H200: 4.8 TB/s


def test_plan_table_shows_gpus_replicas_users_and_a_request_line_that_reproduces_it():
    """Issue 28, deliverable 2: the plan's table says GPUs, replicas, batch per replica and users in flight,
    and its best row as a `request` command, which gives the same TTFT and TPOT."""
    import shlex

    args = ["plan", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--gpus", "8", "--isl", "2048", "--osl", "256",
            "--ttft-ms", "2000", "--tpot-ms", "50"]
    out = _run(*args, columns=200)
    assert out.exit_code == 0, out.output
    for header in ("GPUs", "replicas", "batch per replica", "users in flight"):
        assert header in out.stdout
    lines = out.stdout.splitlines()
    line = lines[lines.index("The best row as one command:") + 1]
    rows = json.loads(_run(*args, "-f", "json").stdout)
    best = rows[0]
    assert best["users_in_flight"] == best["batch"] * best["replicas"]
    request = json.loads(_run("request", *shlex.split(line.split("llm-cost request ", 1)[1]), "-f", "json").stdout)[0]
    assert request["ttft_s"] == pytest.approx(best["ttft_s"]) and request["tpot_s"] == pytest.approx(best["tpot_s"])


def test_roofline_compares_models_gpus_and_batches_in_one_command():
    """Issue 28, deliverable 6: --model, --gpu and --batch repeat on `roofline`, a row each, the same
    figures as one command per case (the article's 4.79 ms and 42.12 ms on the H100, §1.2)."""
    rows = json.loads(_run("roofline", "--model", "llama-3-8b", "--model", "llama-3-70b", "--gpu", "h100-sxm",
                           "--gpu", "h200", "--batch", "1", "--batch", "64", "-f", "json").stdout)
    assert [(r["model"], r["gpu"], r["batch"]) for r in rows][:4] == [
        ("llama-3-8b", "h100-sxm", 1), ("llama-3-8b", "h100-sxm", 64), ("llama-3-8b", "h200", 1),
        ("llama-3-8b", "h200", 64)]
    assert round(rows[0]["step_time_s"] * 1e3, 2) == 4.79 and round(rows[4]["step_time_s"] * 1e3, 2) == 42.12
    one = json.loads(_run("roofline", "--model", "llama-3-70b", "--gpu", "h200", "--batch", "64", "-f", "json").stdout)
    assert rows[7] == one[0]
    table = _run("roofline", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpu", "h200", columns=120).stdout
    assert "H200" in table and "H100" in table


def test_disaggregated_rows_name_their_setting_and_gpu_key():
    """Issue 28.1 and 28.8 for the split rows too: `batching --disaggregate` rows carry model, gpu (the
    catalog key), gpu_name and preset; `plan --disaggregate` rows hold the key in `gpu`."""
    row = json.loads(_run("batching", "--reservation", "paged", "--rate", "4", "--requests", "60",
                          "--disaggregate", "1:1", "-f", "json").stdout)[0]
    assert (row["model"], row["gpu"], row["gpu_name"], row["preset"]) == ("llama-3-8b", "h100-sxm", "H100 SXM", "measured")
    split = json.loads(_run("plan", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpus", "4", "--isl", "2048",
                            "--osl", "128", "--disaggregate", "-f", "json").stdout)[0]
    assert (split["gpu"], split["gpu_name"]) == ("h100-sxm", "H100 SXM")


def test_plan_best_row_command_is_one_line_at_80_columns_and_a_pipeline_says_what_it_holds():
    """Review at 80 columns (issue 28): the best row's `request` line is printed whole on one line (a
    wrapped line pasted runs only its first part) and runs as `request` with the row's TTFT and TPOT;
    with pp > 1 a note says the row holds one static batch per replica (`Deployment.batches_in_flight`)."""
    import shlex

    args = ["plan", "--model", "llama-3-70b", "--tp", "2", "--pp", "2", "--gpus", "8"]
    out = _run(*args, columns=80)
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()
    line = lines[lines.index("The best row as one command:") + 1]
    assert line.startswith("llm-cost request --model llama-3-70b ") and len(line) > 80  # whole, not wrapped
    assert "--pp 2" in line
    assert "one static batch per replica" in " ".join(lines) and "not pp batches" in " ".join(lines)
    best = json.loads(_run(*args, "-f", "json").stdout)[0]
    assert best["pp"] == 2 and best["users_in_flight"] == best["batch"] * best["replicas"]
    request = json.loads(_run("request", *shlex.split(line.split("llm-cost request ", 1)[1]), "-f", "json").stdout)[0]
    assert request["ttft_s"] == pytest.approx(best["ttft_s"]) and request["tpot_s"] == pytest.approx(best["tpot_s"])


def test_table_warning_names_model_and_gpu_in_each_part():
    """Review (issue 28): with two GPUs the warning's parts read "llama-3-8b on H100 SXM: ...; llama-3-8b
    on L4: ...", each naming the GPU it concerns (it read "llama-3-8b: ...; llama-3-8b: ...")."""
    out = _run("table", "--gpu", "h100-sxm", "--gpu", "l4", columns=80)
    assert out.exit_code == 0, out.output
    parts = " ".join(out.stderr.split()).split(": ", 2)[2]
    heads = [p.split(":")[0] for p in parts.split("; ") if ":" in p]
    for model in ("llama-3-8b", "llama-3-70b", "deepseek-v3"):
        assert f"{model} on H100 SXM" in heads and f"{model} on L4" in heads
    rows = json.loads(_run("table", "--gpu", "l4", "-f", "json").stdout)
    assert all(r["fit_note"].startswith(f"{r['model']} on L4: ") for r in rows if not r["fits"])


@pytest.mark.parametrize("command, wanted", [
    ("plot", ["Missing argument KIND: one of ", "roofline", "validation"]),
    ("validate", ["Missing argument POINTS: a CSV of measured points, e.g. tests/data/measured/train.csv"]),
    ("calibrate", ["Missing argument POINTS: a CSV of measured points, e.g. tests/data/measured/train.csv"]),
])
def test_bare_command_says_what_argument_to_give(command, wanted):
    """Review (issue 28): a command left without its argument prints one line that says what to give
    (it printed only "Missing argument 'kind'."), exit 2; the example it names is a file of the checkout."""
    from llm_cost.commands.plot import KINDS
    from tests.helpers import README

    out = _run(command, columns=80)
    assert out.exit_code == 2
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.output
    for text in wanted:
        assert text in out.stderr
    if command == "plot":
        assert all(kind in out.stderr for kind in KINDS)
    else:
        assert (README.parent / "tests/data/measured/train.csv").is_file()


def test_request_with_a_profile_file_names_the_file_in_its_title(tmp_path):
    """Review (issue 28): `request --profile FILE.json` titled itself "preset calibrated"; the title
    names the file (rows' `preset` stays the profile's own name)."""
    from llm_cost.calibrate.profile_file import write_profile
    from llm_cost.specs.profiles import PRESETS

    path = tmp_path / "mine.json"
    write_profile(PRESETS["measured"].with_(name="calibrated"), path)
    for extra in ([], ["--breakdown"]):
        out = _run("request", "--profile", str(path), *extra, columns=80)
        assert out.exit_code == 0, out.output
        assert f"profile calibrated from {path}" in " ".join(out.stdout.split())
        assert "preset calibrated" not in out.stdout
    (row,) = json.loads(_run("request", "--profile", str(path), "-f", "json").stdout)
    assert row["preset"] == "calibrated"
    assert "preset measured" in _run("request", columns=200).stdout


def test_kv_capacity_gpu_is_the_catalog_key_and_gpu_name_the_display_name():
    """Issue 28.8 (one name for one thing): `KvCapacity.gpu` holds the catalog key, as rows' `gpu`, and
    `gpu_name` the display name, as rows' `gpu_name`; its note names the display name."""
    from llm_cost.catalog import load_accelerator, load_model
    from llm_cost.report.serving_rows import capacity_row
    from llm_cost.serving.capacity import kv_capacity

    gpu = load_accelerator("h100-sxm")
    cap = kv_capacity(load_model("llama-3-70b"), gpu)
    assert (cap.gpu, cap.gpu_name) == (gpu.label, gpu.name) == ("h100-sxm", "H100 SXM")
    assert not cap.runs and "on H100 SXM: short by" in cap.note
    row = capacity_row(load_model("llama-3-70b"), gpu, reserve=None, prompt=128, max_gen=128)
    assert (row["gpu"], row["gpu_name"]) == (cap.gpu, cap.gpu_name)


def test_check_result_gpu_is_the_catalog_key_and_gpu_name_the_display_name():
    """Issue 28.8: a per-model invariant's result names its GPU by catalog key (`gpu`) and display name
    (`gpu_name`), as every row does."""
    from llm_cost.catalog import load_accelerator, load_model
    from llm_cost.checks.runner import all_invariants, run

    gpu = load_accelerator("h100-sxm")
    invariant = next(i for i in all_invariants() if i.scope == "model")
    result = run(invariant, load_model("llama-3-8b"), gpu, examples=2)
    assert (result.model, result.gpu, result.gpu_name) == ("llama-3-8b", gpu.label, gpu.name)
    assert result.gpu != result.gpu_name


def test_disaggregated_split_gpu_is_the_catalog_key_and_its_price_found():
    """Issue 28.8: `best_split`'s `Disaggregated.gpu` is the catalog key (rows' gpu), `gpu_name` the
    display name; `plan --disaggregate` prices its rows with the price given by catalog key."""
    rows = json.loads(_run("plan", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpus", "4", "--disaggregate",
                           "--ttft-ms", "2000", "--tpot-ms", "50", "--usd-per-gpu-hour", "h100-sxm=2.5",
                           "-f", "json").stdout)
    assert rows and all((r["gpu"], r["gpu_name"]) == ("h100-sxm", "H100 SXM") for r in rows)
    assert all(r["usd_per_million_output_tokens"] > 0 for r in rows)
    import llm_cost as lc

    space = lc.plan_space(lc.load_model("llama-3-8b"), [lc.load_accelerator("h100-sxm")], 4)
    grid = lc.evaluate(space, lc.PRESETS["measured"], isl=1024, osl=256)
    from llm_cost.planner import best_split

    splits, _ = best_split(grid, lc.Target(ttft_s=2.0, tpot_s=0.05))
    assert [(d.gpu, d.gpu_name) for d in splits] == [("h100-sxm", "H100 SXM")]


def _table_rows(text: str) -> list[list[str]]:
    """The cost table's rows as they print: each a list of lines, each line its cells (stripped)."""
    rows = []
    for line in (ln for ln in text.splitlines() if ln.startswith("│")):
        cells = [c.strip() for c in line.strip("│").split("│")]
        if any(cells[1:]) or not rows:  # a value starts a row (top-aligned); label text alone continues one
            rows.append([cells])
        else:
            rows[-1].append(cells)
    return rows


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("args", [(), ("--tp", "8", "--isl", "4096", "--usd-per-gpu-hour", "2.5", "--usd-per-kwh", "0.1"),
                                  ("--model", "llama-3-8b", "--model", "llama-3-70b", "--context", "100000")])
def test_table_labels_take_two_lines_at_most(args, width):
    """Review (issue 28.4): at 80 columns the cost table's labels ran to four lines and values folded
    ("1.77–1.82" / "(MTP)"). Each quantity now takes one or two lines, each value one line whole."""
    wide, fitted = _run("table", *args, columns=400), _run("table", *args, columns=width)
    assert wide.exit_code == 0 and fitted.exit_code == 0, fitted.output
    full, rows = _table_rows(wide.stdout), _table_rows(fitted.stdout)
    assert len(rows) == len(full) > 12, fitted.stdout  # no value continued on a line of its own
    for row, whole in zip(rows, full):
        assert len(row) <= 2, "\n".join(" | ".join(c) for c in row)
        assert " ".join(line[0] for line in row) == whole[0][0]  # the label, cut only at its spaces
        assert row[0][1:] == whole[0][1:]  # the values, each whole on the row's first line
