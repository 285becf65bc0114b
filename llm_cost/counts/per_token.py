"""What one token costs: forward FLOPs with context, and the KV bytes it adds (MHA, GQA, MLA).

The article: `forward_flops_per_token`, `kv_bytes_per_token`.
"""

from __future__ import annotations

import numbers

from llm_cost.catalog import as_model
from llm_cost.errors import InvalidValueError, check_number
from llm_cost.counts.params import BF16_BYTES, param_counts
from llm_cost.counts.recurrent import recurrent_flops_per_token, state_bytes_per_sequence
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


    model = as_model(model)
    if model.mla is None:
        per_layer = 4 * model.num_heads * model.head_dim
    else:
        per_layer = 2 * model.num_heads * (model.mla.qk_head_dim + model.mla.v_head_dim)
    return per_layer * model.num_attention_layers  # a hybrid's recurrent layers keep no K/V


def flops_per_token(model: ModelSpec, context: float = 0) -> float:
    r"""Forward FLOPs for one token that attends to `context` cached tokens.

    2 * (active params less lookups) + attention term (the article, `forward_flops_per_token`:
    the input embedding is a lookup; a tied table doubles as the LM head and counts).
    Sliding and chunked layers attend to at most their window: min(context, window) keys there
    (`layer_windows`); a model without windows gives the all-layer term x context exactly.

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


    model = as_model(model)
    check_number("context", context, low=0)
    windows = layer_windows(model)
    weights = 2 * param_counts(model).gemm_active + recurrent_flops_per_token(model)
    if not windows:
        return weights + attention_flops_per_context_token(model) * context
    per_layer = attention_flops_per_context_token(model) // model.num_attention_layers
    keys = (model.num_attention_layers - sum(count for _, count in windows)) * context
    for window, layers in windows:
        keys += layers * min(context, window)
    return weights + per_layer * keys


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


    model = as_model(model)
    check_number("bytes_per_element", bytes_per_element, low=0, low_open=True)
    if model.mla is not None:
        width = model.mla.kv_lora_rank + model.mla.qk_rope_head_dim
        return model.num_layers * width * bytes_per_element
    # a hybrid's recurrent layers keep a state per sequence instead (`recurrent.state_bytes_per_sequence`)
    return 2 * model.num_attention_layers * model.num_kv_heads * model.head_dim * bytes_per_element


def layer_windows(model: ModelSpec) -> tuple[tuple[int, int], ...]:
    """The model's windowed layers as (window tokens, layers) pairs, ascending by window; () for none.

    A "sliding" layer keeps its last `sliding_window` tokens; a "chunked" layer (Llama 4) keeps the
    tokens of its current `attention_chunk_size` chunk, which are at most min(context, chunk): that
    bound is what we count (the cache a server allocates for it). Full layers are not listed; they
    are num_layers less the listed layers.

    Examples
    --------
    gpt-oss-20b alternates a 128-token window with full attention over 24 layers.

    >>> from llm_cost.catalog import load_model
    >>> layer_windows(load_model("gpt-oss-20b")), layer_windows(load_model("llama-3-8b"))
    (((128, 12),), ())
    """


    model = as_model(model)
    if not model.layer_types:
        return ()
    counts: dict[int, int] = {}
    for kind in model.layer_types:
        if kind in ("sliding", "chunked"):
            window = model.sliding_window if kind == "sliding" else model.attention_chunk_size
            counts[window] = counts.get(window, 0) + 1
    return tuple(sorted(counts.items()))


def kv_layer_bytes_per_token(model: ModelSpec, bytes_per_element: float = BF16_BYTES) -> float:
    """KV cache bytes one token adds in ONE layer: 2 x kv_heads x head_dim x bytes (MLA: (r_kv + d_rope) x bytes)."""
    check_number("bytes_per_element", bytes_per_element, low=0, low_open=True)
    if model.mla is not None:
        return (model.mla.kv_lora_rank + model.mla.qk_rope_head_dim) * bytes_per_element
    return 2 * model.num_kv_heads * model.head_dim * bytes_per_element


def _minimum(value, window: int):
    """min(value, window) for a number, numpy.minimum for an array."""
    if isinstance(value, (int, float)):
        return value if value < window else window
    import numpy as np

    return np.minimum(value, window)


def _check_context(context) -> None:
    """InvalidValueError unless `context` (a number or an array) is finite and >= 0 (kv_bytes(m, -5) was
    negative: issue 29)."""
    if isinstance(context, numbers.Real):
        check_number("context", context, low=0)
    else:
        from llm_cost.grids import checked

        checked("context", context, low=0)


def kv_bytes(model: ModelSpec, context, bytes_per_element: float = BF16_BYTES):
    r"""KV cache bytes ONE sequence of `context` tokens holds, each layer keeping at most its window,
    plus a hybrid's recurrent state (`state_bytes_per_sequence`: a per-sequence term beside the
    per-token one, 0 for a model without recurrent layers).

    Full layers hold `context` tokens, sliding ones min(context, sliding_window), chunked ones
    (Llama 4) min(context, attention_chunk_size): an upper bound, the current chunk holds
    context mod chunk tokens (chunk when that is 0) and a server allocates the whole chunk.
    A model without windows holds context x `kv_bytes_per_token`, exactly.

    .. math:: B_{KV}(n) = b_{layer} \sum_{l=1}^{L} \min(n, w_l) \quad (w_l = \infty \text{ for full layers})

    Parameters
    ----------
    model : ModelSpec
        The model (a spec).
    context : float or numpy array
        Tokens in the sequence, in [0, inf).
    bytes_per_element : float, optional
        Bytes of one cached element, in (0, inf): 2 for BF16 (default), 1 for FP8.

    Returns
    -------
    float or numpy array
        Bytes (kv_bytes(model, 1) = kv_bytes_per_token(model)).

    Examples
    --------
    gpt-oss-20b at 8192 tokens: 12 full layers x 8192 + 12 sliding layers x 128, at 2 x 8 x 64 x 2
    = 2048 bytes per token and layer: (98,304 + 1,536) x 2048 = 204,472,320 bytes, against
    8192 x 49,152 = 402,653,184 if every layer were full.

    >>> from llm_cost.catalog import load_model
    >>> kv_bytes(load_model("gpt-oss-20b"), 8192), kv_bytes(load_model("llama-3-8b"), 1024)
    (204472320, 134217728)
    """


    _check_context(context)
    check_number("bytes_per_element", bytes_per_element, low=0, low_open=True)
    model = as_model(model)
    windows = layer_windows(model)
    state = state_bytes_per_sequence(model, bytes_per_element)  # 0 without recurrent layers
    if not windows:
        held = context * kv_bytes_per_token(model, bytes_per_element)
        return held + state if state else held
    full = model.num_attention_layers - sum(count for _, count in windows)
    layer_tokens = full * context
    for window, layers in windows:
        layer_tokens = layer_tokens + layers * _minimum(context, window)
    held = layer_tokens * kv_layer_bytes_per_token(model, bytes_per_element)
    return held + state if state else held


def state_in_kv_tokens(model: ModelSpec, bytes_per_element: float = 2.0) -> float:
    """A sequence's recurrent state in K/V tokens: state_bytes_per_sequence / kv_bytes_per_token, the
    unit in which capacity and the time model count it (0 without recurrent layers).

    Raises InvalidValueError for a model whose every layer is recurrent (no K/V token to count in).
    """
    model = as_model(model)
    state = state_bytes_per_sequence(model, bytes_per_element)
    if not state:
        return 0.0
    per_token = kv_bytes_per_token(model, bytes_per_element)
    if not per_token:
        raise InvalidValueError(f"{model.name}: every layer is recurrent; capacity and the time model need "
                                f"one attention layer to count its state in K/V tokens", params=("model",))
    return state / per_token
