"""Requests that fit under a reservation policy, from a KV token capacity (`capacity.kv_capacity`).

Sources: the lecture §2.3 (reservation by maximum length), §3.2 and exercise 2 (reservation by
declared prompt + max_gen). A request that prefills P tokens and generates O writes P + O - 1 KV
tokens (the last token is returned, never fed back); reservations follow the lecture and Orca and
count P + max_gen.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.errors import InvalidValueError, check_number
from llm_cost.specs import ModelSpec
from llm_cost.catalog.arguments import check_arguments


@check_arguments()
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
    check_number("kv_tokens", kv_tokens, low=0)
    check_number("tokens_per_request", tokens_per_request, low=1e-6)  # a subnormal made the count infinite
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


@check_arguments()
def requests_by_policy(kv_tokens: int, *, max_len: int, prompt: float, max_gen: float,
                       gen: float | None = None, state_tokens: float = 0.0) -> RequestsFit:
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
    state_tokens : float, optional
        A hybrid's recurrent state per request, in K/V tokens (`counts.per_token.state_in_kv_tokens`),
        >= 0, held whatever the policy (default 0).

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
    check_number("state_tokens", state_tokens, low=0)
    gen = max_gen if gen is None else gen
    check_number("gen", gen, low=1, high=int(max_gen) if max_gen == int(max_gen) else max_gen)
    if prompt + max_gen > max_len:
        raise InvalidValueError(
            f"prompt + max_gen must be at most max_len ({max_len}), got {prompt + max_gen:g}",
            params=("prompt", "max_gen", "max_len"))
    return RequestsFit(
        kv_tokens=kv_tokens, max_len=max_len, prompt=prompt, max_gen=max_gen, gen=gen,
        requests_max_len=requests_that_fit(kv_tokens, max_len + state_tokens),
        requests_declared=requests_that_fit(kv_tokens, prompt + max_gen + state_tokens),
        requests_none=requests_that_fit(kv_tokens, prompt + gen + state_tokens))


MAX_LEN_TOKENS = 10**8  # a reservation past any context window and any KV capacity


def context_max_len(model: ModelSpec, max_len: int | None = None) -> int:
    """`model_max_len`, refusing a `max_len` past the model's context (`max_position_embeddings`, when
    stated): a request cannot hold more tokens than the model reads (issue 29: 100,000 on GPT-3's 2,048).

    >>> from llm_cost.catalog import load_model
    >>> context_max_len(load_model("gpt-3-13b"), 1024)
    1024
    """
    length = model_max_len(model, max_len)
    limit = model.max_position_embeddings
    if max_len is not None and limit:
        check_number("max_len", length, low=1, high=limit, integer=True)
    return length


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
        check_number("max_len", max_len, low=1, high=MAX_LEN_TOKENS, integer=True)
        return int(max_len)
    if not model.max_position_embeddings:
        raise InvalidValueError(
            f"{model.name} does not state its maximum length (max_position_embeddings); pass max_len",
            params=("max_len",))
    return model.max_position_embeddings
