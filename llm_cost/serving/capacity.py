"""KV memory: token capacity, requests that fit under a reservation policy, padding waste,
per-request attention launches.

Sources: the lecture §2.3 (capacity, reservation by maximum length), §3.2 and
exercise 2 (reservation by declared prompt + max_gen), §2.2 and exercise 1 (request-level
padding), §4.4 (one attention kernel per request and layer: 40 x 32 = 1280 launches).

Conventions:
- The reserve is a fraction of the accelerator's memory held back for activations and
  fragmentation: KV bytes = memory x (1 - reserve) - weight bytes.
- KV tokens that fit are whole tokens: floor(KV bytes / KV bytes per token).
- A request that prefills P tokens and generates O writes P + O - 1 KV tokens (the last token
  is returned, never fed back). Reservations follow the lecture and Orca and count P + max_gen.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from llm_cost.counts import kv_bytes_per_token, weight_bytes
from llm_cost.errors import InvalidValueError, check_number
from llm_cost.roofline import step_time
from llm_cost.specs import BF16, Accelerator, ModelSpec, Profile, WeightFormat

DEFAULT_RESERVE = 0.1  # the lecture's code holds back 10% (§2.3)


@dataclass(frozen=True)
class KvCapacity:
    r"""How many KV tokens fit beside the weights; a model that does not fit has a shortfall.

    .. math:: \mathit{kv\_tokens} = \lfloor \max(0, M (1 - r) - W) / b_{KV} \rfloor

    Attributes
    ----------
    model, gpu
        Names of the model and the accelerator.
    memory_bytes, reserve_fraction
        The accelerator's memory (bytes) and the fraction of it held back, in [0, 1).
    weight_bytes, kv_bytes_per_token
        Weight bytes in the chosen format and KV bytes one token adds.
    kv_bytes_available
        max(0, usable - weights), bytes.
    shortfall_bytes
        max(0, weights - usable): what is missing to hold the weights, bytes.
    kv_tokens
        Whole KV tokens that fit (>= 0).

    Examples
    --------
    See `kv_capacity`.
    """

    model: str
    gpu: str
    memory_bytes: float
    reserve_fraction: float
    weight_bytes: float
    kv_bytes_per_token: float
    kv_bytes_available: float  # max(0, usable - weights)
    shortfall_bytes: float  # max(0, weights - usable): what is missing to hold the weights
    kv_tokens: int

    @property
    def usable_bytes(self) -> float:
        """memory x (1 - reserve)."""
        return self.memory_bytes * (1.0 - self.reserve_fraction)

    @property
    def fits(self) -> bool:
        """True when the weights fit in the usable memory (possibly leaving no KV room).

        Examples
        --------
        GPT-3 175B in BF16 (349 GB) on one A100 40GB does not fit; the result says by how much.

        >>> from llm_cost.catalog import load_model, load_accelerator
        >>> cap = kv_capacity(load_model("gpt-3-175b"), load_accelerator("a100-40gb"))
        >>> cap.fits, cap.kv_tokens, round(cap.shortfall_bytes / 1e9)
        (False, 0, 313)
        """
        return self.shortfall_bytes == 0


def kv_capacity(model: ModelSpec, gpu: Accelerator, *, reserve: float = DEFAULT_RESERVE,
                fmt: WeightFormat = BF16, kv_bytes_per_element: float = 2.0) -> KvCapacity:
    r"""KV tokens = floor((memory x (1 - reserve) - weight bytes) / KV bytes per token), at least 0.

    Lecture §2.3: GPT-3 13B on an A100 40GB, 10% held back: "约 12,596 个 token". Our count
    of GPT-3 13B includes the learned position table and the biases and gives 12,564.

    .. math:: \mathit{kv\_tokens} = \left\lfloor \frac{\max(0,\ M\,(1 - r) - W)}{b_{KV}} \right\rfloor

    Parameters
    ----------
    model : ModelSpec
        The model (a spec).
    gpu : Accelerator
        The accelerator (a spec); M = its memory in bytes.
    reserve : float, optional
        Fraction r of memory held back for activations and fragmentation, in [0, 1)
        (default 0.1, the lecture's code).
    fmt : WeightFormat, optional
        Weight format (default BF16).
    kv_bytes_per_element : float, optional
        Bytes of one cached K or V element, in (0, inf) (default 2.0, BF16).

    Returns
    -------
    KvCapacity
        Memory, weight and KV bytes, the shortfall (bytes) and the whole KV tokens that fit.

    Examples
    --------
    >>> from llm_cost.catalog import load_model, load_accelerator
    >>> cap = kv_capacity(load_model("gpt-3-13b"), load_accelerator("a100-40gb"), reserve=0.1)
    >>> int(cap.weight_bytes), int(cap.kv_bytes_per_token), cap.kv_tokens
    (25706772480, 819200, 12564)
    """
    check_number("reserve", reserve, low=0, high=1, high_open=True)
    weights = weight_bytes(model, fmt).total
    per_token = kv_bytes_per_token(model, kv_bytes_per_element)
    spare = gpu.memory_bytes * (1.0 - reserve) - weights
    available = max(0.0, spare)
    return KvCapacity(
        model=model.name, gpu=gpu.name, memory_bytes=gpu.memory_bytes, reserve_fraction=reserve,
        weight_bytes=weights, kv_bytes_per_token=per_token, kv_bytes_available=available,
        shortfall_bytes=max(0.0, -spare), kv_tokens=int(available // per_token))


def requests_that_fit(kv_tokens: float, tokens_per_request: float) -> int:
    r"""floor(kv_tokens / tokens_per_request): requests whose reservations fit side by side.

    .. math:: n = \lfloor \mathit{kv\_tokens} / \mathit{tokens\_per\_request} \rfloor

    Parameters
    ----------
    kv_tokens : float
        KV tokens available, in [0, inf).
    tokens_per_request : float
        Tokens each request reserves, in (0, inf) (a mean is allowed).

    Returns
    -------
    int
        Requests that fit (>= 0).

    Examples
    --------
    The lecture exercise 2 (a): 12,596 tokens, a 2048-token reservation each.

    >>> requests_that_fit(12_596, 2048)
    6
    """
    check_number("KV tokens", kv_tokens, low=0)
    check_number("tokens per request", tokens_per_request, low=0, low_open=True)
    return int(kv_tokens // tokens_per_request)


@dataclass(frozen=True)
class RequestsFit:
    r"""Requests that fit in `kv_tokens` under the three reservation policies (lecture §2.3, §3.5).

    .. math:: n_{max\,len} = \lfloor kv / L_{max} \rfloor,\quad
              n_{declared} = \lfloor kv / (P + G_{max}) \rfloor,\quad
              n_{none} = \lfloor kv / (P + G) \rfloor

    Attributes
    ----------
    kv_tokens, max_len, prompt, max_gen, gen
        The inputs (tokens; lengths may be means).
    requests_max_len
        Reserve the model's maximum length per request (FasterTransformer).
    requests_declared
        Reserve the declared prompt + max_gen (Orca, Algorithm 1).
    requests_none
        Reserve nothing: requests as large as they end up (prompt + gen).

    Examples
    --------
    See `requests_by_policy`.
    """

    kv_tokens: int
    max_len: int
    prompt: float
    max_gen: float
    gen: float
    requests_max_len: int  # reserve the model's maximum length per request (FasterTransformer)
    requests_declared: int  # reserve the declared prompt + max_gen (Orca, Algorithm 1)
    requests_none: int  # reserve nothing: requests as large as they end up (prompt + gen)


def requests_by_policy(kv_tokens: int, *, max_len: int, prompt: float, max_gen: float,
                       gen: float | None = None) -> RequestsFit:
    r"""Requests that fit under max-length, declared-max and no reservation.

    max length: floor(kv / max_len); declared: floor(kv / (prompt + max_gen)); none:
    floor(kv / (prompt + gen)), gen the tokens actually generated (default max_gen).
    Lengths may be means (exercise 2: 272 + 64.5). Exercise 2 with 12,596 tokens: 6, 37, 16.

    .. math:: n_{max\,len} = \lfloor kv / L_{max} \rfloor,\quad
              n_{declared} = \lfloor kv / (P + G_{max}) \rfloor,\quad
              n_{none} = \lfloor kv / (P + G) \rfloor

    Parameters
    ----------
    kv_tokens : int
        KV tokens available (e.g. `kv_capacity(...).kv_tokens`).
    max_len : int
        The model's maximum sequence length, a whole number >= 1 (tokens).
    prompt : float
        Prompt tokens per request, >= 1 (a mean is allowed).
    max_gen : float
        Declared generation limit per request, >= 1; prompt + max_gen <= max_len.
    gen : float or None, optional
        Tokens actually generated, in [1, max_gen] (default max_gen).

    Returns
    -------
    RequestsFit
        Requests that fit under each policy.

    Examples
    --------
    The lecture exercise 2: (a) 6 at 2048 each; (b) 37 at 272 + 64.5; (c) 16 when max_gen 512 is
    declared, "只有按需分配时的一小半" of the 37 that fit without a reservation.

    >>> r = requests_by_policy(12_596, max_len=2048, prompt=272, max_gen=64.5)
    >>> r.requests_max_len, r.requests_declared
    (6, 37)
    >>> big = requests_by_policy(12_596, max_len=2048, prompt=272, max_gen=512, gen=64.5)
    >>> big.requests_declared, big.requests_none
    (16, 37)
    """
    check_number("max_len", max_len, low=1, integer=True)
    check_number("prompt", prompt, low=1)
    check_number("max_gen", max_gen, low=1)
    gen = max_gen if gen is None else gen
    check_number("gen", gen, low=1, high=int(max_gen) if max_gen == int(max_gen) else max_gen)
    if prompt + max_gen > max_len:
        raise InvalidValueError(
            f"prompt + max_gen must be at most max_len ({max_len}), got {prompt + max_gen:g}",
            params=("prompt", "max_gen", "max_len"))
    return RequestsFit(
        kv_tokens=kv_tokens, max_len=max_len, prompt=prompt, max_gen=max_gen, gen=gen,
        requests_max_len=requests_that_fit(kv_tokens, max_len),
        requests_declared=requests_that_fit(kv_tokens, prompt + max_gen),
        requests_none=requests_that_fit(kv_tokens, prompt + gen))


def model_max_len(model: ModelSpec, max_len: int | None = None) -> int:
    """The maximum sequence length to reserve: `max_len`, else the model's configured context.

        L_max = max_len if given, else max_position_embeddings

    Parameters
    ----------
    model : ModelSpec
        The model (a spec); its `max_position_embeddings` is the default.
    max_len : int or None, optional
        An explicit length, a whole number >= 1 (tokens).

    Returns
    -------
    int
        Tokens.

    Examples
    --------
    GPT-3 13B's context (the lecture §2.3: 2048 tokens reserved per request).

    >>> from llm_cost.catalog import load_model
    >>> model_max_len(load_model("gpt-3-13b")), model_max_len(load_model("gpt-3-13b"), 4096)
    (2048, 4096)
    """
    if max_len is not None:
        check_number("max_len", max_len, low=1, integer=True)
        return int(max_len)
    if not model.max_position_embeddings:
        raise InvalidValueError(
            f"{model.name} does not state its maximum length (max_position_embeddings); pass max_len",
            params=("max_len",))
    return model.max_position_embeddings


@dataclass(frozen=True)
class PaddingWaste:
    r"""Token positions a request-level batch computes vs the positions its requests need.

    .. math:: \mathit{waste} = 1 - \mathit{needed} / \mathit{computed}

    Attributes
    ----------
    batch, prompt_max, output_max
        Requests in the batch and their longest prompt and output (tokens).
    positions_computed
        B x L_max + B x (O_max - 1) positions.
    positions_needed
        sum(P_i + O_i - 1) positions.

    Examples
    --------
    See `padding_waste`.
    """

    batch: int
    prompt_max: int
    output_max: int
    positions_computed: int
    positions_needed: int

    @property
    def positions_wasted(self) -> int:
        """Padded positions: computed - needed."""
        return self.positions_computed - self.positions_needed

    @property
    def waste_fraction(self) -> float:
        """1 - needed / computed (exercise 1: 34.4%)."""
        return self.positions_wasted / self.positions_computed


def padded_positions(batch: int, prompt_max: int, output_max: int) -> int:
    r"""Token positions a request-level batch computes (and KV tokens it ends up holding), unchecked.

    B x L_max + B x (O_max - 1): every prompt padded to the longest, every row run to the longest
    output (the prefill makes the first output token). `padding_waste` and the simulator's
    request-level scheduler both count with this.

    .. math:: \mathit{computed} = B\,L_{max} + B\,(O_{max} - 1)

    Parameters
    ----------
    batch : int
        Requests B in the batch (>= 1).
    prompt_max : int
        The longest prompt L_max (tokens, >= 1).
    output_max : int
        The longest output O_max (tokens, >= 1).

    Returns
    -------
    int
        Positions (tokens).

    Examples
    --------
    The lecture exercise 1: 3 x 300 + 3 x 49.

    >>> padded_positions(3, 300, 50)
    1047
    """
    return batch * prompt_max + batch * (output_max - 1)


def padding_waste(prompts: Sequence[int], outputs: Sequence[int]) -> PaddingWaste:
    r"""Request-level batching pads prompts to the longest and runs every row to the longest output.

    computed = B x L_max + B x (O_max - 1) (the prefill makes the first output token);
    needed = sum(P_i + O_i - 1). Exercise 1: prompts 100, 300, 200, outputs 10, 50, 30 ->
    1047 computed, 687 needed, 34.4% wasted. The lecture §2.2.

    .. math:: \mathit{waste} = 1 - \frac{\sum_i (P_i + O_i - 1)}{B\,L_{max} + B\,(O_{max} - 1)}

    Parameters
    ----------
    prompts : sequence of int
        Prompt tokens per request, each a whole number >= 1 (at least one request).
    outputs : sequence of int
        Generated tokens per request, each >= 1, as many as prompts.

    Returns
    -------
    PaddingWaste
        Positions computed, needed and wasted, and the waste fraction in [0, 1).

    Examples
    --------
    >>> w = padding_waste([100, 300, 200], [10, 50, 30])
    >>> w.positions_computed, w.positions_needed, w.positions_wasted, f"{w.waste_fraction:.1%}"
    (1047, 687, 360, '34.4%')
    """
    if len(prompts) != len(outputs):
        raise InvalidValueError(
            f"prompts and outputs must be given the same number of times, got {len(prompts)} and {len(outputs)}",
            params=("prompts", "outputs"))
    if not prompts:
        raise InvalidValueError("prompts and outputs need at least one request", params=("prompts", "outputs"))
    for p in prompts:
        check_number("prompt", p, low=1, integer=True)
    for o in outputs:
        check_number("output", o, low=1, integer=True)
    b, lmax, omax = len(prompts), int(max(prompts)), int(max(outputs))
    return PaddingWaste(batch=b, prompt_max=lmax, output_max=omax,
                        positions_computed=padded_positions(b, lmax, omax),
                        positions_needed=int(sum(prompts) + sum(outputs)) - b)


@dataclass(frozen=True)
class AttentionLaunches:
    r"""Attention kernels launched one per request and layer, and what they cost in an iteration.

    .. math:: t_{launch} = L \cdot n_{req} \cdot t_{kernel},\quad
              \mathit{share} = t_{launch} / T_{step}

    Attributes
    ----------
    launches
        Kernel launches: layers x requests.
    launch_cost_s
        Seconds per launch.
    step_time_s
        The iteration's roofline time, launches excluded (seconds).

    Examples
    --------
    See `attention_launches`.
    """

    launches: int
    launch_cost_s: float
    step_time_s: float  # the iteration's roofline time, launches excluded

    @property
    def overhead_s(self) -> float:
        """Seconds the launches take: launches x launch cost."""
        return self.launches * self.launch_cost_s

    @property
    def share_of_step(self) -> float:
        """Launch time / the iteration's roofline time (lecture §4.4: 13% to 44%)."""
        return self.overhead_s / self.step_time_s

    @property
    def share_of_iteration(self) -> float:
        """Launch time / (roofline time + launch time): the part of the longer iteration."""
        return self.overhead_s / (self.step_time_s + self.overhead_s)


def attention_launches(model: ModelSpec, gpu: Accelerator, profile: Profile, *, requests: int,
                       context: float, launch_cost_s: float,
                       fmt: WeightFormat = BF16) -> AttentionLaunches:
    r"""Per-request attention in a pure decode iteration: layers x requests kernel launches.

    Lecture §4.4 (demo 02.4): GPT-3 13B, A100, 40 layers x 32 requests = 1280 launches, "每次
    几微秒，加起来是这次迭代的 13%-44%". The lecture states no per-launch cost; against a
    32-request decode step at the workload's mean length of 336 tokens (28.7 ms, lecture preset)
    its 13% and 44% are about 2.9 and 9.9 us per launch.

    .. math:: n = L \cdot n_{req},\quad \mathit{share} = n\,t_{kernel} / T(n_{req}, ctx)

    Parameters
    ----------
    model : ModelSpec
        The model (a spec).
    gpu : Accelerator
        The accelerator (a spec).
    profile : Profile
        The time model's preset (a spec, e.g. `llm_cost.specs.PRESETS["lecture"]`).
    requests : int
        Decoding requests in the iteration, a whole number >= 1.
    context : float
        Cached tokens per request, in [0, inf).
    launch_cost_s : float
        Seconds per kernel launch, in [0, inf).
    fmt : WeightFormat, optional
        Weight format (default BF16).

    Returns
    -------
    AttentionLaunches
        Launch count, launch time and the step's roofline time (seconds), with their shares.

    Examples
    --------
    >>> from llm_cost.catalog import load_model, load_accelerator
    >>> from llm_cost.specs import PRESETS
    >>> a = attention_launches(load_model("gpt-3-13b"), load_accelerator("a100-40gb"), PRESETS["lecture"],
    ...                        requests=32, context=336, launch_cost_s=3e-6)
    >>> a.launches, round(a.step_time_s * 1e3, 1), f"{a.share_of_step:.1%}"
    (1280, 28.7, '13.4%')
    """
    check_number("requests", requests, low=1, integer=True)
    check_number("launch cost (s)", launch_cost_s, low=0)
    check_number("context", context, low=0)
    t = step_time(model, gpu, profile, rows=requests, batch=requests, context=context, fmt=fmt)
    return AttentionLaunches(launches=model.num_layers * int(requests), launch_cost_s=launch_cost_s,
                             step_time_s=t.total_s)
