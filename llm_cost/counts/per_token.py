"""What one token costs: forward FLOPs with context, and the KV bytes it adds (MHA, GQA, MLA).

The article: `forward_flops_per_token`, `kv_bytes_per_token`.
"""

from __future__ import annotations

from llm_cost.errors import check_number
from llm_cost.counts.params import BF16_BYTES, param_counts
from llm_cost.specs import ModelSpec


def attention_flops_per_context_token(model: ModelSpec) -> int:
    r"""FLOPs one query row spends per cached token, all layers: QK^T and AV, 2 FLOPs per MAC.

    MHA/GQA: 4 * heads * head_dim per layer (the article: 4 * hidden * ctx * layers).
    MLA, computed without weight absorption: 2 * heads * (qk_head_dim + v_head_dim).

    .. math:: F_{attn} = 4\,h\,d_{head}\,L \quad\text{(MLA: } 2\,h\,(d_{qk} + d_v)\,L)

    Parameters
    ----------
    model : ModelSpec
        The model (a spec).

    Returns
    -------
    int
        FLOPs per (query row, cached token) pair, summed over the layers.

    Examples
    --------
    Llama-3-8B: 4 x 32 heads x 128 x 32 layers.

    >>> from llm_cost.catalog import load_model
    >>> attention_flops_per_context_token(load_model("llama-3-8b"))
    524288
    """
    if model.mla is None:
        per_layer = 4 * model.num_heads * model.head_dim
    else:
        per_layer = 2 * model.num_heads * (model.mla.qk_head_dim + model.mla.v_head_dim)
    return per_layer * model.num_layers


def flops_per_token(model: ModelSpec, context: float = 0) -> float:
    r"""Forward FLOPs for one token that attends to `context` cached tokens.

    2 * (active params less lookups) + attention term (the article, `forward_flops_per_token`:
    the input embedding is a lookup; a tied table doubles as the LM head and counts).

    .. math:: F = 2\,N_{gemm\,active} + F_{attn}\,\cdot\,\mathit{context}

    Parameters
    ----------
    model : ModelSpec
        The model (a spec).
    context : float, optional
        Cached tokens the token attends to, in [0, inf) (default 0).

    Returns
    -------
    float
        FLOPs (2 per multiply-accumulate).

    Examples
    --------
    The article, §1.2: Llama-3-8B spends about 15.0 GFLOPs per token on its weights.

    >>> from llm_cost.catalog import load_model
    >>> round(flops_per_token(load_model("llama-3-8b")) / 1e9, 1)
    15.0
    """
    check_number("context", context, low=0)
    return 2 * param_counts(model).gemm_active + attention_flops_per_context_token(model) * context


def kv_bytes_per_token(model: ModelSpec, bytes_per_element: float = BF16_BYTES) -> float:
    r"""KV cache bytes one token adds, all layers.

    MHA/GQA: 2 (K and V) * layers * kv_heads * head_dim * bytes (the article).
    MLA: layers * (kv_lora_rank + qk_rope_head_dim) * bytes (DeepSeek-V3: 576 per layer).

    .. math:: b_{KV} = 2\,L\,h_{kv}\,d_{head}\,b \quad\text{(MLA: } L\,(r_{kv} + d_{rope})\,b)

    Parameters
    ----------
    model : ModelSpec
        The model (a spec).
    bytes_per_element : float, optional
        Bytes of one cached element, in (0, inf): 2 for BF16 (default), 1 for FP8, 0.5 for 4 bits.

    Returns
    -------
    float
        Bytes per token of context.

    Examples
    --------
    GPT-3 13B, the lecture §2.3: 2 x 40 x 40 x 128 x 2 = 819,200 bytes ("819.2 KB"); DeepSeek-V3's
    MLA cache: 61 x 576 x 2 = 70,272 bytes.

    >>> from llm_cost.catalog import load_model
    >>> kv_bytes_per_token(load_model("gpt-3-13b"))
    819200
    >>> kv_bytes_per_token(load_model("deepseek-v3"))
    70272
    """
    check_number("kv bytes per element", bytes_per_element, low=0, low_open=True)
    if model.mla is not None:
        width = model.mla.kv_lora_rank + model.mla.qk_rope_head_dim
        return model.num_layers * width * bytes_per_element
    return 2 * model.num_layers * model.num_kv_heads * model.head_dim * bytes_per_element
