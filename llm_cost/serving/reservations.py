"""What both schedulers share: the reservation policies, and the report of a deadlock.

A request reserves KV tokens when it is admitted: its declared prompt + max_gen (Orca,
Algorithm 1), the model's maximum length (FasterTransformer), or nothing. Without a
reservation and without preemption running requests can fill the cache and stall each other
for good (the lecture §3.5, exercise 10): `Deadlock` says when, and who holds the KV.
"""

from __future__ import annotations

import operator

from dataclasses import dataclass

RESERVATIONS = ("declared", "max_len", "none")


@dataclass(frozen=True)
class Holder:
    r"""A request stuck in a deadlock and the KV it holds.

    .. math:: \mathit{kv\_tokens} = \mathit{prompt} + \mathit{generated} - 1

    Attributes
    ----------
    request
        Index in arrival order.
    prompt, generated
        Prompt tokens and tokens generated so far.
    kv_tokens
        KV tokens it holds: prompt + generated - 1.
    remaining
        Tokens it still has to generate.

    Examples
    --------
    >>> from llm_cost.serving.engine import serve
    >>> from llm_cost.serving.replica import IterationCost, Replica
    >>> from llm_cost.serving.serve_config import ServeConfig
    >>> from llm_cost.serving.workload import fixed_workload
    >>> run = serve(fixed_workload([(4, 5), (4, 5)]), Replica(IterationCost.unit(), 10, 2048),
    ...             ServeConfig(reservation="none"))
    >>> run.deadlock.holders[0]
    Holder(request=0, prompt=4, generated=2, kv_tokens=5, remaining=3)
    """

    request: int  # index in arrival order
    prompt: int
    generated: int
    kv_tokens: int  # prompt + generated - 1
    remaining: int  # tokens it still has to generate


@dataclass(frozen=True)
class Deadlock:
    """When a no-reservation run stopped, and who holds the KV cache.

        kv_held_tokens = sum of the holders' prompt + generated - 1 = kv_capacity_tokens

    Attributes
    ----------
    iterations_done
        Iterations run (idle time excluded); the next one cannot run.
    time_s
        Clock in seconds at that point (None for a step-level run: no clock).
    kv_capacity_tokens
        The cache's size, tokens.
    holders
        The running requests and what they hold.
    waiting
        Requests arrived but not admitted.

    Examples
    --------
    See `Holder`.
    """

    iterations_done: int  # iterations run (idle time excluded); the next one cannot run
    time_s: float | None  # clock at that point (None for a step-level run: no clock)
    kv_capacity_tokens: int
    holders: tuple[Holder, ...]
    waiting: int  # requests arrived but not admitted

    @property
    def kv_held_tokens(self) -> int:
        """KV tokens the holders hold together (the whole cache in a deadlock)."""
        return sum(holder.kv_tokens for holder in self.holders)

    def describe(self, limit: int = 8) -> str:
        """One line: when, how much is held, and by whom (the first `limit` holders).

        Parameters
        ----------
        limit : int, optional
            Holders named (default 8); the rest are counted.

        Returns
        -------
        str

        Examples
        --------
        The lecture exercise 10 without a reservation:

        >>> from llm_cost.serving.engine import serve
        >>> from llm_cost.serving.replica import IterationCost, Replica
        >>> from llm_cost.serving.serve_config import ServeConfig
        >>> from llm_cost.serving.workload import fixed_workload
        >>> run = serve(fixed_workload([(4, 5), (4, 5)]), Replica(IterationCost.unit(), 10, 2048),
        ...             ServeConfig(reservation="none"))
        >>> print(run.deadlock.describe())
        deadlock: iteration 3 cannot run (t = 2 s); 2 requests hold 10 of 10 KV tokens: #0 holds 5 (3 to go), #1 holds 5 (3 to go); 0 waiting
        """
        shown = ", ".join(f"#{holder.request} holds {holder.kv_tokens} ({holder.remaining} to go)"
                          for holder in self.holders[:limit])
        more = f", and {len(self.holders) - limit} more" if len(self.holders) > limit else ""
        when = "" if self.time_s is None else f" (t = {self.time_s:.4g} s)"
        return (f"deadlock: iteration {self.iterations_done + 1} cannot run{when}; "
                f"{len(self.holders)} requests hold {self.kv_held_tokens} of "
                f"{self.kv_capacity_tokens} KV tokens: {shown}{more}; {self.waiting} waiting")


def reservation_tokens(reservation: str, prompt: int, declared: int, max_len: int | None) -> int:
    r"""KV tokens a request reserves when admitted: prompt + max_gen, max_len, or 0.

    .. math:: R = \begin{cases} P + G_{max} & \text{declared (Orca)} \\
              L_{max} & \text{max\_len} \\ 0 & \text{none} \end{cases}

    Parameters
    ----------
    reservation : str
        "declared", "max_len" or "none".
    prompt : int
        Prompt tokens.
    declared : int
        The declared max_gen.
    max_len : int or None
        The maximum length (used by "max_len").

    Returns
    -------
    int
        Tokens.

    Examples
    --------
    The lecture exercise 10: Orca reserves 4 + 5 = 9.

    >>> reservation_tokens("declared", 4, 5, None), reservation_tokens("max_len", 4, 5, 2048)
    (9, 2048)
    """
    if reservation == "declared":
        return prompt + declared
    if reservation == "max_len":
        return int(max_len)
    return 0


def reservations_of(reservation: str, prompts, declared, max_len: int | None) -> list[int]:
    """`reservation_tokens` of every request (prompts and declared max_gen in request order), as a list:
    the same formula, without a call per request (a run of 10^6 requests computes it once).

    >>> reservations_of("declared", [4, 4], [5, 9], None), reservations_of("max_len", [4], [5], 2048)
    ([9, 13], [2048])
    """
    if reservation == "declared":
        return list(map(operator.add, prompts, declared))
    if reservation == "max_len":
        return [int(max_len)] * len(prompts)
    return [0] * len(prompts)
