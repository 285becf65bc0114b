"""Workloads whose prompts share prefixes (prefix caching's inputs): a system prompt, groups.

A request's prefix is written as segments ((prefix_key, tokens), ...) (`Workload.prefix`,
`prefix_cache.block_keys`); the prompt's own tokens follow them, so a prompt grows by its prefix:

- `with_shared_prefix(wl, N)`: every prompt starts with the same N tokens (a system prompt);
- `with_prefix_groups(wl, G, N, distribution)`: G distinct prefixes of N tokens, request i in group
  g with probability proportional to 1 / (g + 1) (`zipf`, exponent 1) or 1 / G (`uniform`), seeded.

Both together: groups first, then the shared prefix before them (a system prompt, then a group's
few-shot examples: `prefix_segments`).
"""

from __future__ import annotations

from dataclasses import replace

from llm_cost.errors import check_choice, check_number

PREFIX_DISTRIBUTIONS = ("zipf", "uniform")


def _grown(wl, segments_per_request, tokens: int):
    """`wl` with each prompt grown by `tokens` prefix tokens, its segments put before any it had."""
    prompt = tuple(p + tokens for p in wl.prompt)
    if wl.prefix is not None:
        segments_per_request = [a + b for a, b in zip(segments_per_request, wl.prefix)]
    what = f"{wl.description}, prefix {tokens} tok" if wl.description else f"prefix {tokens} tok"
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
    return _grown(wl, [seg] * len(wl), tokens)


def with_prefix_groups(wl, groups: int, tokens: int, distribution: str = "zipf", seed: int = 0):
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
    segs = [((("group", g), tokens),) for g in range(groups)]
    return _grown(wl, [segs[g] for g in draws.tolist()], tokens)


def prefix_segments(wl, shared: int | None = None, groups: int | None = None, group_tokens: int = 256,
                    distribution: str = "zipf", seed: int = 0):
    """`wl` with the `batching` options' prefixes: groups (`with_prefix_groups`), then a shared system
    prompt before them (`with_shared_prefix`); `wl` itself when neither is given.

    >>> from llm_cost.serving.workload import fixed_workload
    >>> prefix_segments(fixed_workload([(4, 5)]), shared=8, groups=1, group_tokens=16).prefix
    ((('shared', 8), (('group', 0), 16)),)
    """
    if groups is not None:
        wl = with_prefix_groups(wl, groups, group_tokens, distribution, seed)
    if shared is not None:
        wl = with_shared_prefix(wl, shared)
    return wl
