"""Any workload: length distributions, Poisson / bursty / closed-loop arrivals, CSV traces.

Length specs (`parse_length`: a `BatchingRequest`'s `prompt` and `output`), every draw a whole number >= 1 and seeded:

- `N`: every request N tokens.
- `uniform:A:B` (or `A:B`): U{A, ..., B} inclusive (Orca's U(32, 512) and U(1, 128)).
- `lognormal:MEAN:SIGMA`: exp(N(mu, SIGMA^2)) with mu = ln(MEAN) - SIGMA^2 / 2, so that the mean
  is MEAN tokens before rounding (rounded to the nearest integer, at least 1).
- `zipf:S:MAX`: a long tail, P(n) proportional to n^-S for n = 1..MAX (S > 0; S = 1.2 puts most
  requests short and a few near MAX), drawn by inverse CDF over the truncated support.

Arrivals: `poisson` (Exp(1) gaps), `gamma:SHAPE` (Gamma(SHAPE, 1/SHAPE) gaps, mean 1, coefficient
of variation 1/sqrt(SHAPE): SHAPE < 1 is bursty, 1 is Poisson), or a closed loop of N clients
(`concurrency`): each sends its next request when its previous one finishes (no think time).
Unit-rate gaps are divided by the rate, as in `workload.poisson_workload` (common random numbers).

Trace CSV: a header with `arrival_s,prompt_tokens,output_tokens` and optionally `max_tokens` (the
declared max_gen, >= output_tokens) and `prefix_id,prefix_tokens` (the prompt's first prefix_tokens
tokens are that prefix's, for prefix caching; a longer one of the same id extends it, as a chat's next
turn does; a row with both empty has no prefix, one with prefix_tokens and no prefix_id is refused, as
is a prefix_tokens column without a prefix_id column); arrivals non-negative and non-decreasing. Its rate is the trace's mean rate (requests / last arrival), so `at_rate(r)` replays its pattern at mean rate r.
"""

from __future__ import annotations

import math

from llm_cost.errors import InvalidValueError, check_number, short_repr
from llm_cost.serving.workload import Workload
from llm_cost.catalog.arguments import Number, Text, check_arguments

MAX_REQUEST_TOKENS = 10**7  # tokens of one request: far past any context window (`requests.request.MAX_TOKENS`)


@check_arguments(option=Text(identifier=True))
def parse_length(option: str, text) -> tuple:
    """('fixed', n) | ('uniform', a, b) | ('lognormal', mean, sigma) | ('zipf', s, max) from a spec string.

    Examples
    --------
    >>> parse_length("prompt_len", "uniform:32:512"), parse_length("output_len", "128")
    (('uniform', 32, 512), ('fixed', 128))
    >>> parse_length("output_len", "lognormal:200:0.8"), parse_length("output_len", "zipf:1.2:2048")
    (('lognormal', 200.0, 0.8), ('zipf', 1.2, 2048))
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        check_number(option, text, low=1, high=MAX_REQUEST_TOKENS, integer=True)
        return ("fixed", int(text))
    lowered = str(text).strip().lower()
    parts = lowered.split(":")
    bad = InvalidValueError(f"{option} must be N, uniform:A:B, lognormal:MEAN:SIGMA or zipf:S:MAX, got {text!r}",
                            params=(option,))
    try:
        if len(parts) == 1:
            length = float(parts[0])
            check_number(option, length, low=1, high=MAX_REQUEST_TOKENS, integer=True)
            return ("fixed", int(length))
        if len(parts) == 2 or parts[0] == "uniform":
            low, high = (parts[1], parts[2]) if parts[0] == "uniform" and len(parts) == 3 else parts[-2:]
            if len(parts) == 3 and parts[0] != "uniform":
                raise bad
            low, high = float(low), float(high)
            check_number(option, low, low=1, integer=True)
            check_number(option, high, low=low, high=MAX_REQUEST_TOKENS, integer=True)
            return ("uniform", int(low), int(high))
        if len(parts) == 3 and parts[0] == "lognormal":
            mean, sigma = float(parts[1]), float(parts[2])
            check_number(option, mean, low=1, high=MAX_REQUEST_TOKENS)
            check_number(option, sigma, low=0, high=5)
            return ("lognormal", mean, sigma)
        if len(parts) == 3 and parts[0] == "zipf":
            exp, top = float(parts[1]), float(parts[2])
            check_number(option, exp, low=0, low_open=True, high=10)
            check_number(option, top, low=1, high=10_000_000, integer=True)
            return ("zipf", exp, int(top))
    except ValueError as err:
        if isinstance(err, InvalidValueError):
            raise
        raise bad from None
    raise bad


def describe_length(spec: tuple) -> str:
    """`128`, `U(32, 512)`, `lognormal(200, 0.8)`, `zipf(1.2, 2048)`."""
    kind = spec[0]
    if kind == "fixed":
        return str(spec[1])
    if kind == "uniform":
        return str(spec[1]) if spec[1] == spec[2] else f"U({spec[1]}, {spec[2]})"
    return f"{kind}({spec[1]:g}, {spec[2]:g})"


def draw_lengths(rng, spec: tuple, n: int):
    """`n` whole lengths >= 1 from a spec (numpy int64 array); zipf draws each length k in 1..max with
    probability proportional to k^-`s`."""
    import numpy as np

    kind = spec[0]
    if kind == "fixed":
        return np.full(n, spec[1], dtype=np.int64)
    if kind == "uniform":
        return rng.integers(spec[1], spec[2] + 1, n)
    if kind == "lognormal":
        mean, sigma = spec[1], spec[2]
        mu = math.log(mean) - sigma * sigma / 2
        return np.clip(np.rint(rng.lognormal(mu, sigma, n)), 1, MAX_REQUEST_TOKENS).astype(np.int64)
    s, top = spec[1], spec[2]
    support = np.arange(1, top + 1, dtype=float)
    cdf = np.cumsum(support ** -s)
    cdf /= cdf[-1]
    return (np.searchsorted(cdf, rng.random(n), side="right") + 1).clip(1, top).astype(np.int64)


def parse_arrivals(text: str) -> tuple:
    """('poisson',) or ('gamma', shape) from `poisson` or `gamma:SHAPE`.

    >>> parse_arrivals("poisson"), parse_arrivals("gamma:0.25")
    (('poisson',), ('gamma', 0.25))
    """
    lowered = str(text).strip().lower()
    if lowered == "poisson":
        return ("poisson",)
    if lowered.startswith("gamma:"):
        try:
            shape = float(lowered.split(":", 1)[1])
        except ValueError:
            shape = math.nan
        check_number("arrivals", shape, low=1e-3, high=1e3)
        return ("gamma", shape)
    raise InvalidValueError(f"arrivals must be poisson or gamma:SHAPE (SHAPE < 1 bursty), got {text!r}",
                            params=("arrivals",))


@check_arguments(requests=Number(None), rate=Number(None, infinite=True), concurrency=Number(1, 1e9, integer=True))
def synthetic_workload(requests: int, rate: float, *, seed: int = 0, prompt="uniform:32:512",
                       output="uniform:1:128", max_gen: int | None = None, arrivals: str = "poisson",
                       concurrency: int | None = None) -> Workload:
    r"""`requests` requests with drawn lengths and Poisson, gamma-gap or closed-loop arrivals.

    .. math:: t_i = \frac{1}{\lambda}\sum_{j\le i} e_j,\quad e_j \sim \mathrm{Exp}(1)\ \text{or}\
              \Gamma(k, 1/k)

    The draws are in the order of `workload.poisson_workload` (gaps, prompts, outputs), so Poisson
    arrivals with uniform lengths give exactly its workload for the same seed.

    Examples
    --------
    >>> from llm_cost.serving.workload import poisson_workload
    >>> synthetic_workload(50, 3.0, seed=1) == poisson_workload(50, 3.0, seed=1)
    True
    >>> wl = synthetic_workload(4, 1.0, output="zipf:1.2:64", concurrency=2)
    >>> wl.concurrency, min(wl.output) >= 1 and max(wl.output) <= 64
    (2, True)
    """
    import numpy as np

    from llm_cost.serving.workload import check_rate

    check_number("requests", requests, low=1, integer=True)
    from llm_cost.budget import BYTES_PER_SIMULATED_REQUEST, check_memory

    check_memory("requests", requests, BYTES_PER_SIMULATED_REQUEST)  # before the arrays: no MemoryError
    check_rate(rate)
    check_number("seed", seed, low=0, integer=True)
    p_spec, o_spec = parse_length("prompt_len", prompt), parse_length("output_len", output)
    arr = parse_arrivals(arrivals)
    if concurrency is not None:
        check_number("concurrency", concurrency, low=1, integer=True)
    count = int(requests)
    rng = np.random.default_rng(int(seed))
    gaps = rng.exponential(1.0, count) if arr[0] == "poisson" else rng.gamma(arr[1], 1.0 / arr[1], count)
    unit = np.cumsum(gaps)
    prompts = draw_lengths(rng, p_spec, count)
    outputs = draw_lengths(rng, o_spec, count)
    if max_gen is not None:
        check_number("max_gen", max_gen, low=int(outputs.max()), integer=True)
    declared = outputs if max_gen is None else np.full(count, int(max_gen))
    how = "Poisson" if arr[0] == "poisson" else f"gamma gaps (shape {arr[1]:g})"
    if concurrency is not None:
        how = f"closed loop of {int(concurrency)} clients"
    desc = f"{how}, prompt {describe_length(p_spec)}, output {describe_length(o_spec)}"
    if max_gen is not None:
        desc += f", max_gen {max_gen} declared"
    return Workload(float(rate), tuple(unit.tolist()), tuple(prompts.tolist()), tuple(outputs.tolist()),
                    tuple(declared.tolist()), int(seed), desc,
                    None if concurrency is None else int(concurrency))


TRACE_COLUMNS = ("arrival_s", "prompt_tokens", "output_tokens")
MAX_ARRIVAL_S = 1e9  # 31 years: a float there still resolves 1.2e-7 s; past it, steps of ms are absorbed


def _trace_number(row: dict, column: str, line: int, fail) -> float:
    """The number in `column` of a trace row, or `fail`'s error naming the line, column and value."""
    try:
        return float(row[column])
    except ValueError:
        raise fail(f"line {line}: {column} is not a number: {short_repr(row[column])}") from None


@check_arguments()
def read_trace(path) -> Workload:
    """A workload from a CSV trace (module doc); one error line naming the file on bad input.

    Examples
    --------
    >>> import tempfile, os
    >>> f = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False)
    >>> _ = f.write("arrival_s,prompt_tokens,output_tokens\\n0,4,5\\n0.5,4,5\\n"); f.close()
    >>> wl = read_trace(f.name); os.unlink(f.name)
    >>> wl.arrival_s, wl.prompt, wl.rate_req_per_s
    ((0.0, 0.5), (4, 4), 4.0)
    """
    import csv
    from pathlib import Path

    source = Path(path)
    name = source.name

    def fail(msg: str) -> InvalidValueError:
        return InvalidValueError(f"trace {name}: {msg}", params=("trace",))

    from llm_cost.files import read_text, shown

    text = read_text(source, "trace", lambda msg: InvalidValueError(msg, params=("trace",)))
    name = shown(name)
    reader = csv.DictReader(text.splitlines())
    header = [field.strip() for field in (reader.fieldnames or [])]
    missing = [column for column in TRACE_COLUMNS if column not in header]
    if missing:
        raise fail(f"missing column {', '.join(missing)} (needs {','.join(TRACE_COLUMNS)}, optional max_tokens)")
    times, prompts, outputs, declared, prefixes = [], [], [], [], []
    has_prefix = "prefix_id" in header
    if "prefix_tokens" in header and not has_prefix:
        raise fail("the prefix_tokens column needs a prefix_id column (the prefix whose tokens they are)")
    for line, raw in enumerate(reader, start=2):
        if None in raw:  # csv puts the fields past the header under the key None
            raise fail(f"line {line}: {len(header) + len(raw[None])} fields, the header has {len(header)}")
        row = {(key or "").strip(): (value or "").strip() for key, value in raw.items()}
        arrival, pr, out = (_trace_number(row, column, line, fail) for column in TRACE_COLUMNS)
        mx = _trace_number(row, "max_tokens", line, fail) if row.get("max_tokens") else out
        if not 0 <= arrival <= MAX_ARRIVAL_S:
            raise fail(f"line {line}: arrival_s must be in [0, {MAX_ARRIVAL_S:.0e}] s, got {short_repr(row['arrival_s'])}")
        if times and arrival < times[-1]:
            raise fail(f"line {line}: arrival_s must be non-decreasing")
        for col, value in (("prompt_tokens", pr), ("output_tokens", out)):
            if not (1 <= value <= MAX_REQUEST_TOKENS and value == int(value)):
                raise fail(f"line {line}: {col} must be a whole number in [1, {MAX_REQUEST_TOKENS:.0e}], "
                           f"got {short_repr(row[col])}")
        if not (out <= mx <= MAX_REQUEST_TOKENS and mx == int(mx)):
            raise fail(f"line {line}: max_tokens must be a whole number >= output_tokens")
        if has_prefix:
            prefixes.append(_trace_prefix(row, int(pr), line, fail))
        times.append(arrival)
        prompts.append(int(pr))
        outputs.append(int(out))
        declared.append(int(mx))
    if not times:
        raise fail("no requests")
    rate = len(times) / times[-1] if times[-1] > 0 else math.inf
    unit = tuple(arrival * rate for arrival in times) if math.isfinite(rate) else tuple(times)
    return Workload(rate, unit, tuple(prompts), tuple(outputs), tuple(declared), None, f"trace {name}",
                    prefix=tuple(prefixes) if has_prefix else None)


def _trace_prefix(row: dict, prompt: int, line: int, fail) -> tuple:
    """A trace row's prefix segments (`Workload.prefix`): its prompt's first `prefix_tokens` tokens are
    prefix `prefix_id`'s (the same id with more tokens extends it: a chat's later turn); an empty
    prefix_id and prefix_tokens both empty: none."""
    pid = row.get("prefix_id", "")
    if not pid:
        if row.get("prefix_tokens"):
            raise fail(f"line {line}: prefix_tokens {short_repr(row['prefix_tokens'])} needs a prefix_id (the "
                       "prefix whose tokens they are; both empty: no prefix)")
        return ()
    if not row.get("prefix_tokens"):
        raise fail(f"line {line}: prefix_id {short_repr(pid)} needs a prefix_tokens column (its length in tokens)")
    tokens = _trace_number(row, "prefix_tokens", line, fail)
    if not (1 <= tokens <= prompt and tokens == int(tokens)):
        raise fail(f"line {line}: prefix_tokens must be a whole number in [1, prompt_tokens], got "
                   f"{short_repr(row['prefix_tokens'])}")
    return ((("trace", pid), int(tokens)),)
