"""Workloads for the batching simulator: Poisson arrivals and request lengths.

Orca's synthetic workload (Yu et al., OSDI 2022, §6; the lecture §2.2): Poisson arrivals,
prompt lengths U(32, 512), output lengths U(1, 128), both inclusive integers. Either length
may instead be fixed (the lecture §3.4: "请求一样长时"). A request may declare a larger
max_gen than it will generate (§3.5: max_gen = 512 declared, U(1, 128) generated).

Draws are deterministic under a seed, and a workload's arrivals are unit-rate arrivals divided
by the rate: the same seed at another rate keeps every length and the pattern of gaps
(common random numbers), so rates can be compared and bisected without extra noise.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
from functools import cached_property

from llm_cost.errors import InvalidValueError, check_number, short_repr
from llm_cost.catalog.arguments import MAX_TOKENS, Either, Many, Number, check_arguments

REQUESTS = Number(1, 1e9, integer=True)
COLUMNS = ("prompt", "output", "declared_gen", "unit_arrivals")  # one entry per request
LENGTH = Number(1, MAX_TOKENS, integer=True)
RANGE = Either(LENGTH, Many(LENGTH, least=2, most=2))  # a request's tokens: N, or uniform in (low, high)
from llm_cost.specs.validate import check_fields

ORCA_PROMPT = (32, 512)  # U(32, 512) prompt tokens (Orca §6)
ORCA_OUTPUT = (1, 128)  # U(1, 128) generated tokens


@dataclass(frozen=True)
class Workload:
    r"""Requests in arrival order: arrival time, prompt tokens, generated tokens, declared max_gen.

    .. math:: t_i = u_i / \lambda,\quad u_i = \sum_{j \le i} e_j,\ e_j \sim \mathrm{Exp}(1)

    Parameters
    ----------
    rate_req_per_s : float
        Arrival rate lambda in (0, inf], requests per second; inf: every request arrives at time 0
        (a saturated server).
    unit_arrivals : tuple of float
        Arrival times at rate 1 (sum of Exp(1) gaps), non-decreasing.
    prompt, output : tuple of int
        Prompt and generated tokens per request, each >= 1.
    declared_gen : tuple of int
        max_gen each request declares (>= its output).
    seed : int or None, optional
        The seed the lengths and gaps were drawn with (None for a hand-written workload).
    description : str, optional
        A one-line description for reports.
    concurrency : int or None, optional
        A closed loop of this many clients: request i >= N is sent when a request finishes
        (`engine.serve`'s general loop runs it). None: open-loop arrivals.
    client_round_trip : bool, optional
        A closed loop's client sends its next request once it has received the last token of the one
        before, and a busy engine does not wait for it: the iteration after that token has begun by
        then, so the request joins the one after it (its TTFT counts that iteration); an idle engine
        starts on it at once. False (default): it joins the very next iteration, as a client with no
        round trip would (vLLM's, SGLang's and TensorRT-LLM's benchmark clients are the former).

    Examples
    --------
    >>> wl = fixed_workload([(4, 5), (100, 10)], arrivals_s=[0.0, 2.0])
    >>> len(wl), wl.kv_tokens_written, wl.at_rate(2.0).arrival_s
    (2, (8, 109), (0.0, 1.0))
    """

    rate_req_per_s: float  # inf: every request arrives at time 0 (a saturated server)
    unit_arrivals: tuple[float, ...]  # arrival times at rate 1 (sum of Exp(1) gaps)
    prompt: tuple[int, ...]
    output: tuple[int, ...]
    declared_gen: tuple[int, ...]  # max_gen each request declares (>= output)
    seed: int | None = None
    description: str = ""
    concurrency: int | None = None  # a closed loop of this many clients (`workload_spec`); None: open
    # per request, its known leading segments ((prefix_key, tokens), ...), prompt and any answer the next
    # turn repeats (`prefixes`); None: none
    prefix: tuple | None = field(default=None, repr=False)
    client_round_trip: bool = False  # a re-sent request misses the iteration a busy engine starts (above)

    def __post_init__(self) -> None:
        """Validate: one entry per request, a rate in (0, inf], lengths >= 1 and max_gen >= output."""
        check_fields(self, skip=COLUMNS, infinite=("rate_req_per_s",))
        count = len(self.prompt) if isinstance(self.prompt, tuple) else 0
        for name in COLUMNS:  # each a tuple of count finite numbers: a sum finds a nan, an inf or a string at C speed
            column = getattr(self, name)
            if not isinstance(column, tuple) or len(column) != count:
                raise InvalidValueError(f"{name} must be a tuple of one entry per request ({count:,}), got "
                                        f"{short_repr(column)}", params=(name,))
            try:
                total = sum(column)
            except TypeError:
                total = math.nan
            if not math.isfinite(total):
                raise InvalidValueError(f"{name} must hold finite numbers", params=(name,))
        if self.prefix is not None and len(self.prefix) != count:
            raise InvalidValueError("workload prefix must have one entry per request", params=("prefix",))
        if not (self.rate_req_per_s > 0):
            raise InvalidValueError(f"rate must be in (0, inf], got {self.rate_req_per_s!r}", params=("rate",))
        if count and min(self.prompt) >= 1 and min(self.output) >= 1 and all(map(operator.ge, self.declared_gen,
                                                                              self.output)):
            return  # valid, in three passes at C speed (a 10^6-request workload is built per rate)
        for prompt, output, declared in zip(self.prompt, self.output, self.declared_gen):
            if not (prompt >= 1 and output >= 1 and declared >= output):
                raise InvalidValueError(
                    f"each request needs prompt >= 1, output >= 1 and max_gen >= output, got {prompt}, {output}, "
                    f"{declared}")

    def __len__(self) -> int:
        """Requests in the workload."""
        return len(self.prompt)

    @cached_property
    def arrival_s(self) -> tuple[float, ...]:
        """Arrival times in seconds: unit arrivals / rate (all 0 at an infinite rate); computed once."""
        if math.isinf(self.rate_req_per_s):
            return (0.0,) * len(self)
        return tuple(map(float(self.rate_req_per_s).__rtruediv__, self.unit_arrivals))  # u / rate each

    def at_rate(self, rate: float) -> "Workload":
        """The same requests arriving at another rate (same lengths, gaps scaled).

        Parameters
        ----------
        rate : float
            Arrival rate in (0, inf], requests per second.

        Returns
        -------
        Workload

        Examples
        --------
        >>> wl = poisson_workload(3, 1.0, seed=0)
        >>> wl.at_rate(2.0).arrival_s == tuple(t / 2 for t in wl.arrival_s), wl.at_rate(float("inf")).arrival_s
        (True, (0.0, 0.0, 0.0))
        """
        check_rate(rate)
        if not math.isinf(rate) and not any(self.unit_arrivals) and len(self) > 1:
            raise InvalidValueError(f"rate {rate:g}: the {len(self)} requests all arrive at 0 s (no gaps to scale), "
                                    f"so they cannot arrive at another rate; give no rate", params=("rate",))
        return Workload(rate, self.unit_arrivals, self.prompt, self.output, self.declared_gen,
                        self.seed, self.description, self.concurrency, self.prefix, self.client_round_trip)

    @property
    def kv_tokens_written(self) -> tuple[int, ...]:
        """KV tokens each request writes by its end: prompt + output - 1."""
        return tuple(prompt + output - 1 for prompt, output in zip(self.prompt, self.output))


# The lowest rate simulated: 2,000 requests at 1e-6 req/s arrive over 2e9 s, where a float still resolves
# 2.4e-7 s; at 1e-16 req/s the arrival times (1e19 s) absorb every millisecond step and the latencies
# print as 0 (issue 29).
MIN_RATE = 1e-6


def check_rate(rate: float) -> None:
    """Raise unless `rate` is in [MIN_RATE, inf]."""
    if isinstance(rate, float) and math.isinf(rate) and rate > 0:
        return
    check_number("rate", rate, low=MIN_RATE)


def _lengths(option: str, spec, low: int) -> tuple[int, int]:
    """(lo, hi) inclusive from a fixed int or a (lo, hi) pair, validated."""
    lo, hi = (spec, spec) if isinstance(spec, (int, float)) else tuple(spec)
    check_number(option, lo, low=low, integer=True)
    check_number(option, hi, low=lo, integer=True)
    return int(lo), int(hi)


def _describe(lo: int, hi: int) -> str:
    """A length range as a report writes it: `128` or `U(32, 512)`."""
    return str(lo) if lo == hi else f"U({lo}, {hi})"


@check_arguments(requests=REQUESTS, rate=Number(None, infinite=True), prompt=RANGE, output=RANGE)
def poisson_workload(requests: int, rate: float, *, seed: int = 0, prompt=ORCA_PROMPT,
                     output=ORCA_OUTPUT, max_gen: int | None = None) -> Workload:
    r"""`requests` Poisson arrivals at `rate` req/s with uniform (or fixed) prompt and output lengths.

    prompt, output: a fixed length or an inclusive (low, high) range (default Orca's U(32, 512)
    and U(1, 128); Yu et al., OSDI 2022, §6; the lecture §2.2). max_gen: the generation limit
    every request declares (default: its own output length, as in Orca's experiments where no
    request stops early); it must cover the longest output (the lecture §3.5 declares 512).

    .. math:: t_i = \frac{1}{\lambda} \sum_{j \le i} e_j,\ e_j \sim \mathrm{Exp}(1),\quad
              P_i \sim U\{p_{lo}, p_{hi}\},\quad O_i \sim U\{o_{lo}, o_{hi}\}

    Parameters
    ----------
    requests : int
        Requests to draw, a whole number >= 1.
    rate : float
        Arrival rate in (0, inf], requests per second.
    seed : int, optional
        Seed of numpy's default generator, a whole number >= 0 (default 0).
    prompt : int or (int, int), optional
        Prompt tokens, fixed or an inclusive range, >= 1 (default (32, 512)).
    output : int or (int, int), optional
        Generated tokens, fixed or an inclusive range, >= 1 (default (1, 128)).
    max_gen : int or None, optional
        Declared generation limit, at least the longest output (default: each request's output).

    Returns
    -------
    Workload
        Deterministic under the seed; the same seed at another rate keeps every length.

    Examples
    --------
    Orca's workload: mean prompt about 272 tokens and mean output about 64.5.

    >>> wl = poisson_workload(5000, 10.0, seed=0)
    >>> wl.description
    'Poisson, prompt U(32, 512), output U(1, 128)'
    >>> min(wl.prompt) >= 32 and max(wl.prompt) <= 512 and min(wl.output) >= 1 and max(wl.output) <= 128
    True
    >>> round(sum(wl.prompt) / len(wl) / 272, 1), round(sum(wl.output) / len(wl) / 64.5, 1)
    (1.0, 1.0)
    """
    import numpy as np

    check_number("requests", requests, low=1, integer=True)
    from llm_cost.budget import BYTES_PER_SIMULATED_REQUEST, check_memory

    check_memory("requests", requests, BYTES_PER_SIMULATED_REQUEST)  # before the arrays: no MemoryError
    check_rate(rate)
    check_number("seed", seed, low=0, integer=True)
    p_lo, p_hi = _lengths("prompt_len", prompt, 1)
    o_lo, o_hi = _lengths("output_len", output, 1)
    if max_gen is not None:
        check_number("max_gen", max_gen, low=o_hi, integer=True)
    rng = np.random.default_rng(int(seed))
    unit = np.cumsum(rng.exponential(1.0, int(requests)))
    prompts = rng.integers(p_lo, p_hi + 1, int(requests))
    outputs = rng.integers(o_lo, o_hi + 1, int(requests))
    declared = outputs if max_gen is None else np.full(int(requests), int(max_gen))
    desc = f"Poisson, prompt {_describe(p_lo, p_hi)}, output {_describe(o_lo, o_hi)}"
    if max_gen is not None:
        desc += f", max_gen {max_gen} declared"
    return Workload(float(rate), tuple(unit.tolist()), tuple(prompts.tolist()),
                    tuple(outputs.tolist()), tuple(declared.tolist()), int(seed), desc)


@check_arguments(requests=Many(Many(least=2, most=2), most=MAX_TOKENS), arrivals_s=Many(Number(0, 1e9)), max_gen=Number(1, MAX_TOKENS, integer=True))
def fixed_workload(requests: list[tuple[int, int]], *, arrivals_s=None,
                   max_gen: int | None = None) -> Workload:
    """A hand-written workload: (prompt, output) per request, arrival times (default all at 0).

        t_i = arrivals_s[i] (rate 1: unit arrivals are seconds);  declared_i = max_gen or O_i

    Parameters
    ----------
    requests : list of (int, int)
        (prompt tokens, generated tokens) per request, at least one.
    arrivals_s : sequence of float or None, optional
        Arrival times in seconds, one per request and non-decreasing (default all 0).
    max_gen : int or None, optional
        Declared generation limit of every request (default: each request's output).

    Returns
    -------
    Workload
        At rate 1, so that its arrivals are the times given.

    Examples
    --------
    The lecture exercise 10: two requests of 4 prompt tokens generating 5 each; each writes
    4 + 5 - 1 = 8 KV tokens by its end.

    >>> wl = fixed_workload([(4, 5), (4, 5)])
    >>> wl.arrival_s, wl.kv_tokens_written
    ((0.0, 0.0), (8, 8))
    """
    if not requests:
        raise InvalidValueError("a workload needs at least one request")
    for index, (prompt, output) in enumerate(requests):  # each length by its name, not the list's
        check_number(f"request {index}'s prompt tokens", prompt, low=1, high=MAX_TOKENS, integer=True)
        check_number(f"request {index}'s generated tokens", output, low=1, high=MAX_TOKENS, integer=True)
    arrivals = [0.0] * len(requests) if arrivals_s is None else [float(arrival) for arrival in arrivals_s]
    if len(arrivals) != len(requests) or any(later < earlier for earlier, later in zip(arrivals, arrivals[1:])):
        raise InvalidValueError("arrivals_s must hold one arrival time per request, non-decreasing",
                                params=("arrivals_s",))
    prompts = tuple(int(prompt) for prompt, _ in requests)
    outputs = tuple(int(output) for _, output in requests)
    declared = outputs if max_gen is None else (int(max_gen),) * len(requests)
    return Workload(1.0, tuple(arrivals), prompts, outputs, declared, None, "fixed")
