"""The draft model's memory: its weights and its K/V per token come out of what the target can hold.

The lecture §9.3: "草稿模型占显存：它的权重和它自己的 KV cache 都要放在 GPU 上，减少了目标模型能放的
序列数（本讲的模拟没有计入）". A speculating sequence keeps K/V in both models, so one token costs
the target's and the draft's K/V bytes and the token capacity is

    kv_tokens = floor((M (1 - r) - W_target - W_draft) / (b_KV,target + b_KV,draft))

per GPU on a deployment (the draft on the target's GPUs, `speculative.fit.draft_deployment_for`:
its share of weights and K/V per token as the target's, `capacity.kv_capacity`).
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.serving.capacity import kv_capacity
from llm_cost.serving.policies import requests_that_fit
from llm_cost.specs import BF16


@dataclass(frozen=True)
class DraftMemory:
    """Target K/V capacity with and without the draft beside it (one replica; bytes per GPU).

    Attributes
    ----------
    draft_weight_bytes, draft_kv_bytes_per_token
        The draft's weights and K/V per token on one GPU.
    kv_tokens_without_draft, kv_tokens
        Tokens (target + draft K/V each) that fit without and with the draft loaded.
    """

    draft: str
    draft_weight_bytes: float
    draft_kv_bytes_per_token: float
    kv_tokens_without_draft: int
    kv_tokens: int

    def sequences_lost(self, tokens_per_sequence: float) -> int:
        """Sequences of that many tokens that fit without the draft less those that fit with it."""
        return (requests_that_fit(self.kv_tokens_without_draft, tokens_per_sequence)
                - requests_that_fit(self.kv_tokens, tokens_per_sequence))


def draft_memory(target, draft, gpu, *, reserve=None, weights=BF16, draft_weights=BF16,
                 kv_bytes_per_element=None, deployment=None) -> DraftMemory:
    """The target's capacity with the draft's weights and K/V subtracted (module doc).

    Examples
    --------
    Llama-3.1-8B with a Llama-3.2-1B draft on an H100 (the lecture §9.1's pair): the draft's 2.47 GB
    and 32 KiB a token beside 128 KiB leave about 3/4 of the tokens.

    >>> from llm_cost.catalog import load_model, load_accelerator
    >>> m = draft_memory(load_model("llama-3.1-8b"), load_model("llama-3.2-1b"), load_accelerator("h100-sxm"))
    >>> round(m.draft_weight_bytes / 1e9, 2), int(m.draft_kv_bytes_per_token), m.kv_tokens_without_draft, m.kv_tokens
    (2.47, 32768, 464692, 356668)
    """
    from llm_cost.catalog import as_model
    from llm_cost.speculative.fit import draft_deployment_for

    target, draft = as_model(target), as_model(draft)
    base = kv_capacity(target, gpu, reserve=reserve, weights=weights, kv_bytes_per_element=kv_bytes_per_element,
                       deployment=deployment)
    d_dep = None if deployment is None else draft_deployment_for(draft, deployment)
    beside = kv_capacity(draft, gpu, reserve=reserve, weights=draft_weights,
                         kv_bytes_per_element=kv_bytes_per_element, deployment=d_dep)
    spare = base.kv_bytes_available - beside.weight_bytes_per_gpu
    per_token = base.kv_bytes_per_token_per_gpu + beside.kv_bytes_per_token_per_gpu
    tokens = int(max(0.0, spare) // per_token)
    return DraftMemory(draft.name, beside.weight_bytes_per_gpu, beside.kv_bytes_per_token_per_gpu, base.kv_tokens,
                       tokens)
