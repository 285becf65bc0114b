"""Workloads whose prompts share prefixes (prefix caching's inputs): a system prompt, groups.

A request's prefix is written as segments ((prefix_key, tokens), ...) (`Workload.prefix`,
`prefix_cache.block_keys`); the prompt's own tokens follow them, so a prompt grows by its prefix:

- `with_shared_prefix(wl, N)`: every prompt starts with the same N tokens (a system prompt);
- `with_prefix_groups(wl, G, N, distribution)`: G distinct prefixes of N tokens, request i in group
  g with probability proportional to 1 / (g + 1) (`zipf`, exponent 1) or 1 / G (`uniform`), seeded.

- `with_sessions(wl, S, T)`: multi-turn chats: request i is turn (i // S) mod T of session i mod S
  (sessions interleaved, a session's next turn S arrivals later); a turn's prompt is the previous
  turn's prompt and answer, then its own drawn prompt tokens; after T turns the session starts a new
  chat. The whole sequence, prompt and answer, is the session's (one segment, key ("session", s,
  chat), of prompt + output tokens: it runs past the prompt), so a turn hits the full blocks of the
  previous turn's prompt and answer (`prefix_cache`: a finished sequence's generated blocks join the
  cache, as vLLM's automatic prefix caching hashes every full block).

Groups and a shared prefix together: groups first, then the shared prefix before them (a system
prompt, then a group's few-shot examples: `prefix_segments`); sessions take the shared prefix too.
"""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple, Optional

from llm_cost.errors import InvalidValueError, check_choice, check_number

# the choices and the defaults of a child option given its parent alone (`prefix_defaults`)
from llm_cost.serving.prefix_defaults import (DEFAULT_DISTRIBUTION, DEFAULT_GROUP_TOKENS, DEFAULT_TURNS,
                                              PREFIX_DISTRIBUTIONS)


class PromptPrefixes(NamedTuple):
    """How a workload's prompts share prefixes (`prefix_segments`' arguments but the seed): a shared system
    prompt of `shared_prefix` tokens, `prefix_groups` groups of `group_prefix` tokens spread by
    `prefix_dist`, or `sessions` multi-turn chats of `turns` turns; none given, no prefixes. One
    declaration for a `BatchingRequest`, a plan's served check (`WorkloadRecipe`) and their options (a NamedTuple, as
    the deployment's options: it is built at every command's import). `group_prefix`, `prefix_dist` and
    `turns` None take their defaults (`CHILD_DEFAULTS`: 256 tokens, zipf, 4 turns, the module's
    `DEFAULT_GROUP_TOKENS`, `DEFAULT_DISTRIBUTION`, `DEFAULT_TURNS`); one given without its
    parent (`prefix_groups`, `sessions`) would change nothing and is refused.

    >>> from llm_cost.serving.workload import fixed_workload
    >>> PromptPrefixes(shared_prefix=8).applied(fixed_workload([(4, 5)]), seed=0).prefix
    ((('shared', 8),),)
    """

    shared_prefix: Optional[int] = None
    prefix_groups: Optional[int] = None
    group_prefix: Optional[int] = None
    prefix_dist: Optional[str] = None
    sessions: Optional[int] = None
    turns: Optional[int] = None

    def applied(self, wl, seed: int = 0):
        """`wl` with these prefixes (`prefix_segments`; `seed` draws the groups); an option given without
        its parent refused."""
        for child, (parent, _) in CHILD_DEFAULTS.items():
            if getattr(self, child) is not None and getattr(self, parent) is None:
                raise InvalidValueError(f"{child} belongs to {parent} and changes nothing without it: give {parent}",
                                        params=(child, parent))
        given = {option: default if getattr(self, option) is None else getattr(self, option)
                 for option, (_, default) in CHILD_DEFAULTS.items()}
        return prefix_segments(wl, self.shared_prefix, self.prefix_groups, given["group_prefix"],
                               given["prefix_dist"], seed, self.sessions, given["turns"])


# an option of `PromptPrefixes` that sets another's workload: (that option, its default)
CHILD_DEFAULTS = {"group_prefix": ("prefix_groups", DEFAULT_GROUP_TOKENS),
                  "prefix_dist": ("prefix_groups", DEFAULT_DISTRIBUTION), "turns": ("sessions", DEFAULT_TURNS)}


def _grown(wl, segments_per_request, tokens: int, what: str):
    """`wl` with each prompt grown by `tokens` prefix tokens, its segments put before any it had, `what`
    after its description ("8 prefix groups of 256 tok (zipf)")."""
    prompt = tuple(length + tokens for length in wl.prompt)
    if wl.prefix is not None:
        segments_per_request = [new + old for new, old in zip(segments_per_request, wl.prefix)]
    what = f"{wl.description}, {what}" if wl.description else what
    return replace(wl, prompt=prompt, prefix=tuple(segments_per_request), description=what)


def with_shared_prefix(wl, tokens: int):
    """Every prompt of `wl` preceded by the same `tokens`-token system prompt (key "shared").

    >>> from llm_cost.serving.workload import fixed_workload
    >>> w = with_shared_prefix(fixed_workload([(4, 5), (8, 2)]), 32)
    >>> w.prompt, w.prefix
    ((36, 40), ((('shared', 32),), (('shared', 32),)))
    """
    check_number("shared_prefix", tokens, low=1, integer=True)
    seg = (("shared", tokens),)
    return _grown(wl, [seg] * len(wl), tokens, f"shared prefix {tokens} tok")


def with_prefix_groups(wl, groups: int, tokens: int, distribution: str = DEFAULT_DISTRIBUTION, seed: int = 0):
    """Every prompt of `wl` preceded by one of `groups` distinct `tokens`-token prefixes (keys
    ("group", g)), drawn zipf (P(g) proportional to 1 / (g + 1)) or uniform, seeded.

    >>> from llm_cost.serving.workload import fixed_workload
    >>> w = with_prefix_groups(fixed_workload([(4, 5)] * 4), 1, 16)
    >>> w.prefix[0], w.prompt
    (((('group', 0), 16),), (20, 20, 20, 20))
    """
    import numpy as np

    check_number("prefix_groups", groups, low=1, integer=True)
    check_number("prefix_tokens", tokens, low=1, integer=True)
    distribution = check_choice("prefix_distribution", distribution, PREFIX_DISTRIBUTIONS)
    weights = 1.0 / np.arange(1, groups + 1) if distribution == "zipf" else np.ones(groups)
    draws = np.random.default_rng(seed).choice(groups, size=len(wl), p=weights / weights.sum())
    segs = [((("group", group), tokens),) for group in range(groups)]
    return _grown(wl, [segs[group] for group in draws.tolist()], tokens,
                  f"{groups} prefix group{'s' if groups > 1 else ''} of {tokens} tok ({distribution})")


def with_sessions(wl, sessions: int, turns: int):
    """`wl` as multi-turn chats (module doc): request i is turn (i // sessions) mod turns of session
    i mod sessions; its prompt is the session's history (earlier prompts and answers) and its own tokens,
    its segment the prompt and its answer (the next turn's history).

    >>> from llm_cost.serving.workload import fixed_workload
    >>> w = with_sessions(fixed_workload([(4, 5)] * 4), 2, 2)
    >>> w.prompt  # turn 0 of sessions 0 and 1, then turn 1: 4 + 5 history + 4 new
    (4, 4, 13, 13)
    >>> w.prefix[2]  # 13 prompt tokens and the 5 of its answer
    ((('session', 0, 0), 18),)
    """
    check_number("sessions", sessions, low=1, integer=True)
    check_number("turns", turns, low=1, integer=True)
    if wl.prefix is not None:
        raise InvalidValueError("sessions are the whole prompt's prefix: give them alone (or with a shared prefix)",
                                params=("sessions",))
    history = [0] * sessions
    prompts, segments = [], []
    for request, (new, out) in enumerate(zip(wl.prompt, wl.output)):
        session, turn = request % sessions, request // sessions
        if turn % turns == 0:
            history[session] = 0
        prompt = history[session] + new
        prompts.append(prompt)
        history[session] = prompt + out
        segments.append(((("session", session, turn // turns), history[session]),))
    what = f"{sessions} sessions x {turns} turns"
    return replace(wl, prompt=tuple(prompts), prefix=tuple(segments),
                   description=f"{wl.description}, {what}" if wl.description else what)


def prefix_segments(wl, shared: int | None = None, groups: int | None = None,
                    group_tokens: int = DEFAULT_GROUP_TOKENS, distribution: str = DEFAULT_DISTRIBUTION,
                    seed: int = 0, sessions: int | None = None, turns: int = DEFAULT_TURNS):
    """`wl` with the `batching` options' prefixes: sessions of `turns` turns (`with_sessions`) or groups
    (`with_prefix_groups`), then a shared system prompt before them (`with_shared_prefix`); `wl` itself
    when none is given. The defaults are the CLI's (`DEFAULT_TURNS`, `DEFAULT_GROUP_TOKENS`,
    `DEFAULT_DISTRIBUTION`).

    >>> from llm_cost.serving.workload import fixed_workload
    >>> prefix_segments(fixed_workload([(4, 5)]), shared=8, groups=1, group_tokens=16).prefix
    ((('shared', 8), (('group', 0), 16)),)
    """
    if sessions is not None and groups is not None:
        raise InvalidValueError("sessions and prefix_groups: give one (a chat's history is its own prefix)",
                                params=("sessions", "prefix_groups"))
    if sessions is not None:
        wl = with_sessions(wl, sessions, turns)
    if groups is not None:
        wl = with_prefix_groups(wl, groups, group_tokens, distribution, seed)
    if shared is not None:
        wl = with_shared_prefix(wl, shared)
    return wl
