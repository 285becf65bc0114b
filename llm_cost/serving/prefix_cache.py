"""Block-level prefix caching of K/V (vLLM's automatic prefix caching), the engine's cache part.

A request's prompt may start with a known prefix, written compactly as segments
`((prefix_key, tokens), ...)` (`Workload.prefix`): a system prompt, a group's few-shot examples, a
chat's earlier turns. Block `k` of the prompt (tokens [kB, (k+1)B), `B` the block size) has the key
"the segments clipped at (k+1)B tokens", so two prompts share block k exactly when their first (k+1)B
tokens are the same segments. Only full blocks are keyed, and at most (prompt - 1) // B of them (vLLM
recomputes the last token of a fully cached prompt to produce its logits).

The segments may run past the prompt into the answer (a chat's turn: the next turn's prompt repeats
it, `prefixes.with_sessions`), as vLLM's automatic prefix caching hashes every full block, prompt or
generated: when a sequence finishes, its full blocks of prompt and generated tokens inside its segments
join the cache too (`release(request, tokens)`), so the next turn hits them. Only at the finish: a running
sequence's generated blocks are its own (a turn that arrives before the previous answer is done, which
a chat's user could not send, prefills them).

The cache holds each keyed block once:

- `ref`: blocks that running sequences hold (key -> sequences holding it), charged once in the K/V
  ledger however many sequences share them;
- `lru`: blocks no sequence holds any more. They count as free blocks (an allocation may take them),
  and when the free blocks fall below their number, the least recently released are evicted
  (`trim`): the cache never holds more unreferenced blocks than there are free blocks.

With a host tier (`host`, a `host_tier.HostTier`; `ServeConfig.kv_offload_bytes`) the evicted blocks
go there instead of being lost, over the host link (`HostTier.put` counts the bytes, the engine adds
their time to the next iteration: `HostTier.sent`); `hosted` counts the blocks there that continue a
request's cached prefix and `take_hosted` brings them back (the engine charges the transfer).
"""

from __future__ import annotations

from collections import OrderedDict

from llm_cost.errors import InvalidValueError


def block_keys(segments: tuple, prompt: int, block_size: int) -> tuple:
    """The keys of a prompt's cacheable blocks: one per full block inside its known prefix, at most
    (prompt - 1) // block_size of them (tokens; vLLM's rule).

    >>> block_keys((("sys", 40),), 100, 16)
    ((('sys', 16),), (('sys', 32),))
    >>> block_keys((("sys", 16), ("g1", 16)), 32, 16)  # the last token is always prefilled
    ((('sys', 16),),)
    """
    known = sum(tokens for _, tokens in segments)
    full = min(known, prompt - 1) // block_size
    keys, seg, used = [], 0, 0  # used: tokens of the segments before `seg`
    for block in range(1, full + 1):
        end = block * block_size
        while used + segments[seg][1] < end:
            used += segments[seg][1]
            seg += 1
        keys.append(segments[:seg] + ((segments[seg][0], end - used),))
    return tuple(keys)


class PrefixCache:
    """The cache's two tables and its counts (module doc); `keys_of(request)` the request's block keys."""

    def __init__(self, workload, block_size: int) -> None:
        if workload.prefix is None:
            raise InvalidValueError("prefix_caching needs a workload with prefixes: give shared_prefix, "
                                    "prefix_groups, sessions or a trace with a prefix_id column",
                                    params=("prefix_caching", "shared_prefix", "prefix_groups", "sessions"))
        self.prefix, self.prompt, self.B = workload.prefix, workload.prompt, block_size
        self.ref: dict = {}
        self.lru: OrderedDict = OrderedDict()
        self.held = [0] * len(workload)  # leading blocks request i holds through the cache
        self._mine: list = [None] * len(workload)  # request i's block ids, once asked for
        self._whole: list = [None] * len(workload)  # request i's segments' (known tokens, every full block's id)
        self._keys: dict = {}  # (segments, full blocks) -> block ids: 10^6 requests share a few prefixes
        self._longest: dict = {}  # segments -> (known tokens, the ids of every full block inside them)
        self._ids: dict = {}  # block key -> its id (an int: hashed fast in the tables below)
        self.evictions = 0
        self.host = None  # a HostTier the evicted blocks spill to (K/V offload), or None

    def keys_of(self, request: int) -> tuple:
        """The cacheable blocks of `request` (`block_keys`), each as the id of its key (one int per
        distinct key: the tables hash ints, not nested tuples), computed once per request and once per
        distinct (prefix, full blocks)."""
        keys = self._mine[request]
        if keys is None:
            seg = self.prefix[request]
            longest = self._longest.get(seg)
            if longest is None:
                known = sum(tokens for _, tokens in seg)
                ids = self._ids
                longest = self._longest[seg] = (known, tuple(ids.setdefault(key, len(ids))
                                                             for key in block_keys(seg, known + 1, self.B)))
            full = min(longest[0], self.prompt[request] - 1) // self.B
            group = (seg, full)
            keys = self._keys.get(group)
            if keys is None:
                keys = self._keys[group] = longest[1][:full]
            self._mine[request], self._whole[request] = keys, longest
        return keys

    def share_keys(self, other: "PrefixCache") -> None:
        """Take `other`'s block ids (a cache of the same workload and block size: a fleet's replicas), so
        one request's `keys_of` is the same tuple in each and is computed once."""
        self._mine, self._whole, self._keys = other._mine, other._whole, other._keys
        self._longest, self._ids = other._longest, other._ids

    def hits(self, keys: tuple) -> int:
        """Leading blocks of `keys` (a `keys_of`) found in the cache, referenced or not."""
        ref, lru, found = self.ref, self.lru, 0
        for key in keys:
            if key in ref or key in lru:
                found += 1
            else:
                break
        return found

    def lookup(self, request: int) -> tuple[int, int]:
        """(leading blocks of `request` found in the cache, how many of them are unreferenced)."""
        hits = unref = 0
        ref, lru = self.ref, self.lru
        for key in self.keys_of(request):
            if key in ref:
                hits += 1
            elif key in lru:
                hits += 1
                unref += 1
            else:
                break
        return hits, unref

    def take(self, request: int, hits: int) -> None:
        """`request` holds its first `hits` keyed blocks (found by `lookup`)."""
        ref, lru = self.ref, self.lru
        for key in self.keys_of(request)[:hits]:
            if key in lru:
                del lru[key]
                ref[key] = 1
            else:
                ref[key] += 1
        self.held[request] = hits

    def register(self, request: int, prefilled: int) -> int:
        """`request` has prefilled `prefilled` prompt tokens: its newly full keyed blocks join the cache.
        Returns how many of them another sequence had cached meanwhile (duplicates the ledger frees)."""
        keys = self.keys_of(request)
        upto = min(len(keys), prefilled // self.B)
        dup = 0
        ref, lru = self.ref, self.lru
        for key in keys[self.held[request]:upto]:
            if key in ref:
                ref[key] += 1
                dup += 1
            elif key in lru:
                del lru[key]  # its own copy freed, the cached one taken: the free blocks unchanged
                ref[key] = 1
            else:
                ref[key] = 1
                if self.host is not None:  # prefilled again: a stale host copy goes
                    self.host.discard(key)
        if upto > self.held[request]:
            self.held[request] = upto
        return dup

    def release(self, request: int, tokens: int = 0) -> int:
        """`request` lets go of its cached blocks; returns how many became unreferenced (now free, kept
        in the LRU table, the request's last block the first to go). A finished request gives `tokens`,
        the K/V tokens it holds: its full blocks after its prompt's keyed ones and inside its segments
        (a chat's answer, `sequence_keys`) join the LRU table too, free blocks already; a block another
        sequence cached meanwhile stays a duplicate, freed uncached."""
        ref, lru = self.ref, self.lru
        held = self.held[request]
        more = self.sequence_keys(request, tokens) if tokens else ()
        # its prompt's keyed blocks held: the answer's follow
        if len(more) > held and held == len(self.keys_of(request)):
            host = self.host
            for key in reversed(more[held:]):
                if key not in ref and key not in lru:
                    lru[key] = None
                    if host is not None:  # computed again: a stale host copy goes
                        host.discard(key)
        freed = 0
        for key in reversed(self.keys_of(request)[:held]):
            holders = ref[key] - 1
            if holders:
                ref[key] = holders
            else:
                del ref[key]
                lru[key] = None
                freed += 1
        self.held[request] = 0
        return freed

    def sequence_keys(self, request: int, tokens: int) -> tuple:
        """The ids of `request`'s full blocks among its first `tokens` K/V tokens inside its segments,
        prompt and answer (`keys_of` is their first (prompt - 1) // B)."""
        whole = self._whole[request]
        if whole is None:
            self.keys_of(request)  # interns its segments' blocks
            whole = self._whole[request]
        return whole[1][:min(whole[0], tokens) // self.B]

    def trim(self, free_blocks: int) -> None:
        """Evict the least recently released blocks beyond `free_blocks` (an allocation took them)."""
        lru, host = self.lru, self.host
        while len(lru) > free_blocks:
            key, _ = lru.popitem(last=False)
            self.evictions += 1
            if host is not None:
                host.put(key)

    def hosted(self, request: int, hits: int) -> int:
        """How many of `request`'s keyed blocks after its first `hits` (found on the GPU) are in the host
        tier, one after another (0 without a host tier)."""
        host = self.host
        if host is None:
            return 0
        found = 0
        for key in self.keys_of(request)[hits:]:
            if key not in host.blocks:
                break
            found += 1
        return found

    def take_hosted(self, request: int, hits: int, n: int) -> None:
        """`request` (holding its first `hits` blocks, `take`) takes the next `n` back from the host tier:
        they leave it and are held on the GPU as cached blocks."""
        ref, host = self.ref, self.host
        for key in self.keys_of(request)[hits:hits + n]:
            host.discard(key)
            ref[key] = ref.get(key, 0) + 1
        self.held[request] = hits + n
