"""Figures: each kind's numbers against the library and the source documents, and each kind renders to a
valid, non-trivial PNG or SVG."""

from __future__ import annotations

import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest



from llm_cost.report import figures as plots
from llm_cost.catalog import load_accelerator, load_model
from llm_cost.report.series import (DEFAULT_TREES, batching_curves, gamma_curves, roofline_series, spec_vs_batch,
                             tree_points)
from llm_cost.errors import InvalidValueError
from llm_cost.roofline import step_time
from llm_cost.serving.replica import Replica
from llm_cost.specs import PRESETS
from llm_cost.speculative import turning_batch
from llm_cost.speculative.trees import WEAK_DRAFT
from llm_cost.serving.workload import poisson_workload

ROOT = Path(__file__).resolve().parent.parent
H100 = load_accelerator("h100-sxm")
LLAMA3_8B = load_model("llama-3-8b")
ARTICLE = PRESETS["article"]
ARTICLE_60 = PRESETS["article"].with_(compute_efficiency=0.6)
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
MIN_BYTES = 20_000  # an empty 7.5 x 5 in axes at 150 dpi is ~10 KB; each figure here is 50-130 KB


def assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > MIN_BYTES, (path, len(data))
    width, height = struct.unpack(">II", data[16:24])  # IHDR
    assert width >= 800 and height >= 500


def assert_svg(path: Path) -> None:
    data = path.read_bytes()
    assert len(data) > MIN_BYTES
    root = ET.fromstring(data)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert len(list(root.iter())) > 100  # paths, text, ticks: a drawn figure, not an empty canvas


# ---- the numbers behind each figure ------------------------------------------------------------

def test_roofline_series_are_step_times():
    bf16, int4 = roofline_series(LLAMA3_8B, H100, ARTICLE, gamma=4, batches=(1, 64))
    # the article output block: decode bound 4.79 ms (BF16) and 1.27 ms (W4A16); knee ~316 rows
    assert bf16.time_s[0] * 1e3 == pytest.approx(4.79, abs=0.005)
    assert int4.time_s[0] * 1e3 == pytest.approx(1.27, abs=0.005)
    assert bf16.knee_rows == pytest.approx(316, abs=1)
    m = int(bf16.rows[100])
    assert bf16.time_s[100] == pytest.approx(step_time(LLAMA3_8B, H100, ARTICLE, rows=m).step_time_s)
    assert [(b, rows) for b, rows, _ in bf16.points] == [(1, 1), (1, 5), (64, 64), (64, 320)]


def test_spec_vs_batch_reproduces_the_article_table():
    # the article §3.1: B = 1, 8, 32, 64, 128, 256 -> peak 2.40 2.40 2.40 2.38 1.39 0.76,
    # 60% MFU 2.40 2.40 2.40 1.61 0.89 0.62
    peak, mfu60 = spec_vs_batch(LLAMA3_8B, H100, [ARTICLE, ARTICLE_60], alphas=[0.8], gammas=[4], cs=[0.1])
    assert [round(s, 2) for _, s in peak.marks] == [2.40, 2.40, 2.40, 2.38, 1.39, 0.76]
    assert [round(s, 2) for _, s in mfu60.marks] == [2.40, 2.40, 2.40, 1.61, 0.89, 0.62]
    assert peak.turning_batch == turning_batch(LLAMA3_8B, H100, ARTICLE, gamma=4).batch
    assert 35 < mfu60.turning_batch < peak.turning_batch < 64  # the article §2.4: "~60", "约 35"
    assert 128 < peak.break_even_batch < 256 and 64 < mfu60.break_even_batch < 128
    assert np.all(np.diff(peak.speedup) <= 1e-12)  # never rises with batch


def test_gamma_curves_optimum():
    # the lecture exercise 6: alpha 0.8, c 0.05 -> gamma 8, 3.09; the article §2.3: gamma 4, c 0.1 -> 2.4
    (curve,) = gamma_curves(alphas=[0.8], cs=[0.05], gamma_max=16)
    assert (curve.gamma_opt, round(curve.speedup_opt, 2), curve.capped) == (8, 3.09, False)
    assert curve.speedup[8] == pytest.approx(curve.speedup_opt) and curve.speedup[0] == 1.0
    (tenth,) = gamma_curves(alphas=[0.8], cs=[0.1])
    assert tenth.speedup[4] == pytest.approx(2.4, abs=0.005)
    (rising,) = gamma_curves(alphas=[0.99], cs=[0.001], gamma_max=8)
    assert rising.capped and rising.gamma_opt == 8


def test_tree_points():
    # the lecture exercise 9: 4x2x2x1 -> 44 nodes, tau 2.76 with the weak draft
    pts = tree_points(load_model("llama-3.1-8b"), H100, PRESETS["lecture"], widths_list=DEFAULT_TREES,
                      hits=WEAK_DRAFT, batches=(1, 32), c=0.05, context=1024)
    by = {p.label: p for p in pts}
    assert (by["4x2x2x1"].nodes, round(by["4x2x2x1"].tau, 2)) == (44, 2.76)
    assert [p.nodes for p in pts] == sorted(p.nodes for p in pts)
    # the lecture §10.3: trees win at batch 1 and lose badly at batch 32
    assert by["8x4x2x1"].speedup[0] > by["1x1x1x1"].speedup[0]
    assert by["8x4x2x1"].speedup[1] < 1.0 < by["1x1x1x1"].speedup[1]


@pytest.fixture(scope="module")
def lecture_server():
    return Replica.from_specs(load_model("gpt-3-13b"), load_accelerator("a100-40gb"), PRESETS["lecture"])


def test_batching_curves(lecture_server):
    wl = poisson_workload(300, 1.0, seed=0)
    curves = batching_curves(wl, lecture_server, max_batches=(8, 32), rates=(0.25, 2, 8))
    # request-level: 12,564 KV tokens // 2048 = 6 per batch whatever the limit -> one curve
    assert [(c.scheduler, c.max_batches, c.effective_batch) for c in curves] == [
        ("request", (8, 32), 6), ("iteration", (8,), 8), ("iteration", (32,), 32)]
    request, _, iteration = curves
    # the lecture §3.3: unloaded per-token latency about 22 ms
    assert iteration.latency_median_s[0] * 1e3 == pytest.approx(22, abs=2)
    # iteration-level bs 32 sustains 8 req/s; request-level saturates near 2
    assert iteration.throughput_req_per_s[2] > 2.5 * request.throughput_req_per_s[2]
    assert request.latency_median_s[2] > 10 * iteration.latency_median_s[2]


def test_figure_sizes_are_bounded(lecture_server):
    wl = poisson_workload(10_000, 1.0, seed=0)
    with pytest.raises(InvalidValueError, match="simulated requests"):
        batching_curves(wl, lecture_server)
    with pytest.raises(InvalidValueError, match="curves"):
        spec_vs_batch(LLAMA3_8B, H100, [ARTICLE, ARTICLE_60], alphas=[0.6, 0.7, 0.8, 0.9], gammas=[2, 4],
                      cs=[0.1])
    with pytest.raises(InvalidValueError, match="^gamma_max "):
        gamma_curves(alphas=[0.8], cs=[0.1], gamma_max=10**6)
    with pytest.raises(InvalidValueError, match="^schedulers "):
        batching_curves(wl, lecture_server, schedulers=["none"])


# ---- rendering -------------------------------------------------------------------------------------

def render_each(tmp_path: Path, suffix: str) -> dict[str, Path]:
    srv = Replica.from_specs(load_model("gpt-3-13b"), load_accelerator("a100-40gb"), PRESETS["lecture"])
    files = {}
    files["roofline"] = plots.roofline(roofline_series(LLAMA3_8B, H100, ARTICLE), tmp_path / f"r{suffix}",
                                       gamma=4, title="T(m)")
    files["spec-vs-batch"] = plots.spec_vs_batch(
        spec_vs_batch(LLAMA3_8B, H100, [ARTICLE, ARTICLE_60], alphas=[0.8], gammas=[4], cs=[0.1]),
        tmp_path / f"s{suffix}", title="speedup")
    files["gamma"] = plots.gamma(gamma_curves(alphas=[0.6, 0.8], cs=[0.05, 0.1]), tmp_path / f"g{suffix}",
                                 title="gamma")
    files["tree"] = plots.tree(tree_points(load_model("llama-3.1-8b"), H100, PRESETS["lecture"], hits=WEAK_DRAFT,
                                           context=1024), tmp_path / f"t{suffix}", title="trees")
    files["batching"] = plots.batching(batching_curves(poisson_workload(150, 1.0), srv, rates=(0.5, 2, 8)),
                                       tmp_path / f"b{suffix}", title="batching", slo_s=0.045)
    return files


def test_each_kind_renders_a_png(tmp_path):
    for kind, path in render_each(tmp_path, ".png").items():
        assert path.exists(), kind
        assert_png(path)


def test_each_kind_renders_an_svg(tmp_path):
    for path in render_each(tmp_path, ".svg").values():
        assert_svg(path)


@pytest.mark.parametrize("name", ["figure.pdf", "figure.txt", "figure", "figure.png.bak"])
def test_bad_extension_is_an_error(tmp_path, name):
    with pytest.raises(InvalidValueError, match="must end in .png or .svg"):
        plots.check_output(tmp_path / name)


def test_missing_folder_is_an_error(tmp_path):
    with pytest.raises(InvalidValueError, match="folder does not exist"):
        plots.check_output(tmp_path / "no" / "figure.png")
    assert plots.check_output(tmp_path / "FIGURE.PNG").name == "FIGURE.PNG"


def test_matplotlib_only_when_drawing():
    # the table, the curves and a rejected plot never import matplotlib; only plots.py draws
    code = ("import sys; from typer.testing import CliRunner; from llm_cost.cli import app; import llm_cost.report.series;"
            "import llm_cost.report.figures; r = CliRunner();"
            "assert r.invoke(app, ['table', '-f', 'json']).exit_code == 0;"
            "assert r.invoke(app, ['plot', 'gamma', '-o', 'x.pdf']).exit_code == 2;"
            "print('matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
    importers = [p.relative_to(ROOT).as_posix() for p in (ROOT / "llm_cost").rglob("*.py")
                 if "import matplotlib" in p.read_text(encoding="utf-8")]
    assert importers == ["llm_cost/report/figures.py"]


@pytest.mark.parametrize("name", ["", "  ", "out.png/", "figures/"])
def test_output_must_name_a_file(name):
    with pytest.raises(InvalidValueError, match="must name a file ending in .png or .svg"):
        plots.check_output(name)


def test_plot_validation_draws_predicted_against_measured(tmp_path):
    """`plot validation --points` (issue 13): the covered rows of a measurement CSV, predicted against
    measured on log axes; without --points one line, exit 2."""
    from helpers import error_line, run

    out = tmp_path / "validation.png"
    result = run("plot", "validation", "--points", ROOT / "tests" / "data" / "measured" / "train.csv", "-o", out)
    assert result.exit_code == 0, result.output
    assert_png(out)
    assert "plot validation needs --points" in error_line("plot", "validation", "-o", tmp_path / "v.png")
    assert "--points does not apply to plot roofline" in error_line("plot", "roofline", "-o", tmp_path / "r.png",
                                                                    "--points", "x.csv")
