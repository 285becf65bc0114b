"""Measured points: rows of a CSV with the columns of `shared/measured/train.csv`, parsed and checked.

Each row names the conditions of one published figure (model, weights, KV precision, GPU and count,
tp and pp, batch and its kind, input and output lengths) and the metric measured. Parsing checks every
column a prediction needs and refuses a bad one in one line naming the row and the column
(`points.csv row 3, column gpu_name: ...`): a missing column, an unknown metric, batch kind or GPU,
a `.json` config file that is not there. A model the catalog cannot read (a `model_type` without an adapter,
a name not in the catalog) or a weight or KV format the model does not know is not a malformed file:
that row is predicted as not covered, with the reason.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from pathlib import Path

from llm_cost.errors import InvalidValueError, LlmCostError

# metric -> unit the value is in (the README of shared/measured/ defines each)
METRICS: dict[str, str] = {
    "decode_tok_per_s_per_user": "tok/s",  # OSL / wall time of one request, prefill included (batch 1)
    "output_tok_per_s_per_user": "tok/s",  # the same
    "output_tok_per_s": "tok/s",  # B x OSL / wall time of the batch
    "output_tok_per_s_per_gpu": "tok/s",  # B x OSL / total latency / GPUs (TensorRT-LLM)
    "ttft_ms": "ms",  # time to first token
    "itl_ms": "ms",  # mean inter-token latency under load
    "e2e_latency_ms": "ms",  # wall time of one static batch
    "output_tok_per_s_total": "tok/s",  # throughput at saturation (the batch is what fits)
    "decode_tok_per_s": "tok/s",  # llama-bench tg: OSL generated tokens / their time
    "prefill_tok_per_s": "tok/s",  # llama-bench pp: ISL prompt tokens / the prefill's time
}
BATCH_KINDS = ("static", "concurrency", "request rate", "saturation")
# The weight formats a prediction knows (`prediction.weight_format_of`; K/V: `Deployment`'s KV_DTYPES);
# a row naming another is read and is not covered, with the reason (the model's limit, not the file's).
WEIGHTS = ("bf16", "fp16", "fp8", "int8", "int4", "q8_0", "q4_0", "nvfp4", "w8a8", "mxfp4", "checkpoint")
REQUIRED = ("id", "config", "gpu_name", "weights", "group_size", "kv", "tp", "pp", "gpu_count", "batch",
            "batch_kind", "isl", "osl", "metric", "value")


class NotCovered(Exception):
    """A row the model cannot express; its message is the row's reason (`prediction.predict`)."""


class PointsError(InvalidValueError):
    """A points file that cannot be read: one line naming the file, row and column."""


@dataclass(frozen=True)
class Point:
    """One measured figure and its conditions (SI where it has units; `value` in the metric's unit)."""

    id: str
    source: str
    quality: str
    config: str  # a catalog name or a config.json path (resolved against the CSV's folder)
    gpu_name: str
    weights: str
    group_size: int
    kv: str
    tp: int
    pp: int
    gpu_count: int
    batch: float  # requests (static, concurrency), requests per second (request rate), 0 for saturation
    batch_kind: str  # one of BATCH_KINDS
    isl: int
    osl: int
    metric: str
    value: float


def _batch_kind(text: str) -> str:
    """`concurrency (persistent batch)` -> concurrency; the others as they are."""
    kind = re.sub(r"\s*\(.*\)\s*$", "", text.strip().lower())
    if kind not in BATCH_KINDS:
        raise ValueError(f"must be one of {', '.join(BATCH_KINDS)} (a note may follow in parentheses), got {text!r}")
    return kind


def _whole(text: str, low: int) -> int:
    value = float(text)
    if not math.isfinite(value) or value != int(value) or value < low:
        raise ValueError(f"must be a whole number >= {low}, got {text!r}")
    return int(value)


def _positive(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"must be a number > 0, got {text!r}")
    return value


def _rate(text: str) -> float:
    value = float(text)
    if math.isnan(value) or value <= 0:
        raise ValueError(f"must be a rate > 0 (inf: every request at once), got {text!r}")
    return value


def _choice(allowed):
    def parse(text: str) -> str:
        value = text.strip().lower()
        if value not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}, got {text!r}")
        return value
    return parse


def _resolve_model(config: str, folder: Path):
    from llm_cost.catalog import load_model

    path = folder / config
    return load_model(str(path) if (config.endswith(".json") or path.exists()) else config)


def read_points(path) -> list[Point]:
    """The rows of the CSV at `path` as Points, every column a prediction needs checked.

    Raises
    ------
    PointsError
        `FILE row N, column C: what is wrong` (row 1 is the first data row), or a missing column.
    """
    from llm_cost.files import read_text

    path = Path(path)
    text = read_text(path, "points", PointsError)
    reader = csv.DictReader(text.splitlines())
    header = reader.fieldnames or []
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise PointsError(f"{path} row 0 (header), column {missing[0]}: missing (needs {', '.join(REQUIRED)})")
    return [_point(path, n, row) for n, row in enumerate(reader, start=1)]


def _point(path: Path, n: int, row: dict) -> Point:
    def get(column: str, parse=str):
        text = (row.get(column) or "").strip()
        try:
            if not text:
                raise ValueError("empty")
            return parse(text)
        except (ValueError, TypeError) as err:
            raise PointsError(f"{path} row {n}, column {column}: {err}") from None

    metric = get("metric", _choice(tuple(METRICS)))
    kind = get("batch_kind", _batch_kind)
    # saturation: the batch is what fits; a request rate may be inf (every request sent at once, the
    # default of vLLM's and SGLang's benchmark clients)
    batch = 0.0 if kind == "saturation" else get("batch", _rate if kind == "request rate" else _positive)
    if kind in ("static", "concurrency") and batch != int(batch):
        raise PointsError(f"{path} row {n}, column batch: a {kind} batch must be a whole number, got {batch:g}")
    tp, pp, count = get("tp", lambda t: _whole(t, 1)), get("pp", lambda t: _whole(t, 1)), get(
        "gpu_count", lambda t: _whole(t, 1))
    if count % (tp * pp):
        raise PointsError(f"{path} row {n}, column gpu_count: must be a multiple of tp x pp = {tp * pp}, got {count}")
    config = get("config")
    if config.endswith(".json") and not (path.parent / config).is_file():
        raise PointsError(f"{path} row {n}, column config: no such file {config} next to {path.name}")
    # A config that exists but that the counts cannot read (a model_type without an adapter, a name
    # not in the catalog) is the model's limit, not a malformed file: its row is not covered, with
    # the reason (`prediction.predict`), and the file's other rows are still predicted.
    gpu = get("gpu_name")
    try:
        from llm_cost.catalog import load_accelerator

        load_accelerator(gpu)
    except LlmCostError as err:
        raise PointsError(f"{path} row {n}, column gpu_name: {err}") from None
    return Point(id=get("id"), source=(row.get("source") or "").strip() or "-",
                 quality=(row.get("quality") or "").strip().upper() or "-",
                 config=str(path.parent / config) if (config.endswith(".json") or (path.parent / config).is_file()) else config,
                 gpu_name=gpu, weights=get("weights", str.lower),
                 group_size=get("group_size", lambda t: _whole(t, 0)), kv=get("kv", str.lower),
                 tp=tp, pp=pp, gpu_count=count, batch=batch, batch_kind=kind,
                 isl=get("isl", lambda t: _whole(t, 0)), osl=get("osl", lambda t: _whole(t, 1)),
                 metric=metric, value=get("value", _positive))
