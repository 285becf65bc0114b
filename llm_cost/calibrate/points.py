"""Measured points: rows of a CSV with the columns of `tests/data/measured/train.csv`, parsed and checked.

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

from llm_cost.calibrate.bench_columns import BenchConditions, bench_conditions
from llm_cost.catalog.arguments import MAX_TOKENS
from llm_cost.errors import InvalidValueError, LlmCostError, short_repr
from llm_cost.specs.weights import SHIPPED_FORMATS, WEIGHT_FORMATS

# metric -> unit the value is in (README, "Calibration", says what each measures)
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
WEIGHTS = (*WEIGHT_FORMATS, *SHIPPED_FORMATS)  # the registry (`specs.weights`): formats and shipped ones
REQUIRED = ("id", "config", "gpu_name", "weights", "group_size", "kv", "tp", "pp", "gpu_count", "batch",
            "batch_kind", "isl", "osl", "metric", "value")
# The optional `unit` column: what a value written in it is multiplied by to be in its metric's unit
# (a TTFT of 0.0077 with unit s is 7.7 ms); a unit of the other kind (ms for a tok/s metric) is refused.
TIME_UNITS = {"ms": 1.0, "s": 1e3, "sec": 1e3, "us": 1e-3, "µs": 1e-3, "μs": 1e-3}
RATE_UNITS = {"tok/s": 1.0, "tokens/s": 1.0, "token/s": 1.0, "t/s": 1.0, "tok/sec": 1.0, "tokens/sec": 1.0}
PER = {"output_tok_per_s_per_gpu": "/gpu", "output_tok_per_s_per_user": "/user", "decode_tok_per_s_per_user": "/user"}
MAX_ROW_TOKENS = MAX_TOKENS  # ISL or OSL of one request, as a request takes it: past it, not covered
# A served row (concurrency, request rate) costs the engine one step per request and iteration it is in:
# requests x (OSL + ceil(ISL / 8192)) (a prompt is prefilled in chunks of 8,192 tokens), about 2.3e-6 s
# each on one core (2,048 clients x 10 rounds x (128 + 1): 6 s; 16,384 x 10 x 129: 46 s). Past this
# budget (about a minute) the row is not covered, with the estimate, and the file's other rows go on.
SERVED_STEPS_BUDGET = 3 * 10**7
SECONDS_PER_SERVED_STEP = 2.3e-6
MAX_LISTED = 10  # bad rows a refusal lists before "and N more"


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
    engine: str = "generic"  # the serving engine its `engine` text names (`specs.engines.engine_of`)
    bench: BenchConditions = BenchConditions()  # how the benchmark drew and sent requests (`bench_columns`)


def _batch_kind(text: str) -> str:
    """`concurrency (persistent batch)` -> concurrency; the others as they are."""
    kind = re.sub(r"\s*\(.*\)\s*$", "", text.strip().lower())
    if kind not in BATCH_KINDS:
        raise ValueError(f"must be one of {', '.join(BATCH_KINDS)} (a note may follow in parentheses), "
                         f"got {short_repr(text)}")
    return kind


def _number(text: str) -> float:
    """float(text), or an error that says what a number looks like (not Python's `could not convert`)."""
    try:
        return float(text)
    except ValueError:
        hint = ""
        if "=" in text:  # QPS=2, concurrency=8: the kind goes in batch_kind, the number here
            hint = "; write the number alone (the kind goes in batch_kind)"
        raise ValueError(f"must be a number, got {short_repr(text)}{hint}") from None


def _whole(text: str, low: int) -> int:
    value = _number(text)
    if not math.isfinite(value) or value != int(value) or value < low:
        raise ValueError(f"must be a whole number >= {low}, got {short_repr(text)}")
    return int(value)


def _positive(text: str) -> float:
    value = _number(text)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"must be a finite number > 0, got {short_repr(text)}")
    return value


def _rate(text: str) -> float:
    value = _number(text)
    from llm_cost.serving.workload import MIN_RATE

    if math.isnan(value) or value < MIN_RATE:
        raise ValueError(f"must be a rate >= {MIN_RATE:g} req/s (inf: every request at once), got {short_repr(text)}")
    return value


def _choice(allowed):
    def parse(text: str) -> str:
        value = text.strip().lower()
        if value not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}, got {short_repr(text)}")
        return value
    return parse


def _unit_factor(metric: str):
    """The parser of a row's `unit`: the factor to the metric's unit (TIME_UNITS, RATE_UNITS), or an
    error when the unit is of another kind than the metric's or names another quantity (per GPU)."""
    def parse(text: str) -> float:
        unit = text.strip().lower().replace(" ", "")
        if METRICS[metric] == "ms":
            if unit in TIME_UNITS:
                return TIME_UNITS[unit]
            raise ValueError(f"{metric} is a time: the unit must be one of {', '.join(TIME_UNITS)}, got {short_repr(text)}")
        per = PER.get(metric, "")
        base = unit.removesuffix(per) if per and unit.endswith(per) else unit
        if base in RATE_UNITS:
            return RATE_UNITS[base]
        allowed = ", ".join(list(RATE_UNITS)[:3]) + (f" (or with {per})" if per else "")
        raise ValueError(f"{metric} is a rate: the unit must be one of {allowed}, got {short_repr(text)}")
    return parse


def resolve_model(config: str, folder: Path):
    from llm_cost.catalog import load_model

    path = folder / config
    return load_model(str(path) if (config.endswith(".json") or _is_file(path) or _is_file(path / "config.json"))
                      else config)


def read_points(path, *, skip_bad: bool = False, on_bad=None) -> list[Point]:
    """The rows of the CSV at `path` as Points, every column a prediction needs checked.

    Every row is checked, and every bad one reported in one run: without `skip_bad` a file with bad
    rows is refused, naming each (row, column, the value shortened, what is allowed); with it the
    good rows are returned and `on_bad(message)` is called once with the same list.

    Raises
    ------
    PointsError
        `FILE: N bad rows of M: row 3, column tp: ...; row 5, ...` (row 1 is the first data row), a
        missing or repeated column.
    """
    from llm_cost.files import read_text, shown

    path = Path(path)
    text = read_text(path, "points", PointsError)
    reader = csv.DictReader(text.splitlines())
    header = [column.strip() for column in (reader.fieldnames or [])]
    where = shown(path)
    repeated = sorted({column for column in header if header.count(column) > 1})
    if repeated:  # csv would keep the last column of a name silently
        raise PointsError(f"{where} row 0 (header): column {repeated[0]} is given {header.count(repeated[0])} times")
    missing = [column for column in REQUIRED if column not in header]
    if missing:
        raise PointsError(f"{where} row 0 (header), column {missing[0]}: missing (needs {', '.join(REQUIRED)})")
    reader.fieldnames = header
    points, bad, total = [], [], 0
    for row_number, row in enumerate(reader, start=1):
        total = row_number
        if None in row:  # fields past the header
            bad.append(f"row {row_number}: {len(header) + len(row[None])} fields, the header has {len(header)}")
            continue
        try:
            points.append(_point(path, row_number, row))
        except PointsError as err:
            bad.append(str(err).removeprefix(f"{path} "))
    if bad:
        listed = "; ".join(bad[:MAX_LISTED]) + (f"; and {len(bad) - MAX_LISTED} more" if len(bad) > MAX_LISTED else "")
        message = f"{where}: {len(bad)} bad row{'s' if len(bad) > 1 else ''} of {total}: {listed}"
        if not skip_bad:
            raise PointsError(message + " (give skip_bad to predict the other rows)", params=("skip_bad",))
        if on_bad is not None:
            on_bad(message)
    return points


def read_point_files(paths, *, skip_bad: bool = False, on_bad=None) -> list[Point]:
    """The points of every file in `paths`, in order (`read_points` each, `skip_bad` and `on_bad` as
    there); ids must be unique across the files.

    >>> from pathlib import Path
    >>> import llm_cost
    >>> train = Path(llm_cost.__file__).resolve().parent.parent / "tests/data/measured/train.csv"
    >>> len(read_point_files([train])) == len(read_points(train))
    True
    >>> read_point_files([train, train])
    Traceback (most recent call last):
    ...
    llm_cost.calibrate.points.PointsError: ... ids must be unique across files

    Raises
    ------
    PointsError
        A file's bad rows (`read_points`), or an id two files share.
    """
    pts, seen = [], {}
    for path in paths:
        for point in read_points(path, skip_bad=skip_bad, on_bad=on_bad):
            if point.id in seen:
                raise PointsError(f"{path}: id {point.id!r} is also in {seen[point.id]}: ids must be unique across files")
            seen[point.id] = path
            pts.append(point)
    return pts


def _is_file(path: Path) -> bool:
    """A regular file there (False for a name too long or otherwise impossible)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def _point(path: Path, row_number: int, row: dict) -> Point:
    def get(column: str, parse=str):
        text = (row.get(column) or "").strip()
        try:
            if not text:
                raise ValueError("empty (a value is needed)")
            return parse(text)
        except (ValueError, TypeError) as err:
            raise PointsError(f"{path} row {row_number}, column {column}: {err}") from None

    metric = get("metric", _choice(tuple(METRICS)))
    kind = get("batch_kind", _batch_kind)
    # saturation: the batch is what fits; a request rate may be inf (every request sent at once, the
    # default of vLLM's and SGLang's benchmark clients)
    batch = 0.0 if kind == "saturation" else get("batch", _rate if kind == "request rate" else _positive)
    if kind in ("static", "concurrency") and batch != int(batch):
        raise PointsError(f"{path} row {row_number}, column batch: a {kind} batch must be a whole number, got {batch:g}")
    tp, pp, count = get("tp", lambda cell: _whole(cell, 1)), get("pp", lambda cell: _whole(cell, 1)), get(
        "gpu_count", lambda cell: _whole(cell, 1))
    if count % (tp * pp):
        raise PointsError(f"{path} row {row_number}, column gpu_count: must be a multiple of tp x pp = {tp * pp}, got {count}")
    config = get("config")
    local = _is_file(path.parent / config)
    if config.endswith(".json") and not local:
        from llm_cost.files import shown

        raise PointsError(f"{path} row {row_number}, column config: no such file {shown(config)} next to {path.name}")
    # A config that exists but that the counts cannot read (a model_type without an adapter, a name
    # not in the catalog) is the model's limit, not a malformed file: its row is not covered, with
    # the reason (`prediction.predict`), and the file's other rows are still predicted.
    gpu = get("gpu_name")
    try:
        from llm_cost.catalog import load_accelerator

        load_accelerator(gpu)
    except LlmCostError as err:
        raise PointsError(f"{path} row {row_number}, column gpu_name: {err}") from None
    value = get("value", _positive)
    if (row.get("unit") or "").strip():  # honoured: the value in the metric's unit, or refused
        value *= get("unit", _unit_factor(metric))
    return Point(id=get("id"), source=(row.get("source") or "").strip() or "-",
                 quality=(row.get("quality") or "").strip().upper() or "-",
                 config=str(path.parent / config) if (config.endswith(".json") or local) else config,
                 gpu_name=gpu, weights=get("weights", str.lower),
                 group_size=get("group_size", lambda cell: _whole(cell, 0)), kv=get("kv", str.lower),
                 tp=tp, pp=pp, gpu_count=count, batch=batch, batch_kind=kind,
                 isl=get("isl", lambda cell: _whole(cell, 0)),
                 osl=get("osl", lambda cell: _whole(cell, 0)),  # 0: a prefill-only row (llama-bench pp512); its other metrics are not covered
                 metric=metric, value=value, engine=_engine(row), bench=_bench(path, row_number, row))


def _bench(path: Path, row_number: int, row: dict) -> BenchConditions:
    """The row's optional benchmark columns (`bench_columns`), a malformed one refused as the others are."""
    try:
        return bench_conditions(row, f"{path} row {row_number}")
    except ValueError as err:
        raise PointsError(str(err)) from None


def _engine(row: dict) -> str:
    """The engine the row's `engine` text names at its `engine_version` (`engine_of`: TensorRT-LLM 0.x
    is trtllm-0), else its `source`'s; 'generic' when neither names one."""
    from llm_cost.specs.engines import engine_of

    version = row.get("engine_version") or ""
    named = engine_of(row.get("engine") or "", version)
    return named if named != "generic" else engine_of(row.get("source") or "", version)
