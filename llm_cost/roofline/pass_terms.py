"""The terms of one pass the time model sums: the roofline's max + fixed, the attention pairs of
causal rows (a decode batch's, windows capped), the routed experts rows touch, the weight bytes a
pass reads, and which GEMM peak a format runs at. `pass_cost.PassCost` evaluates T from them (its
module doc has the formula); each takes numbers or numpy arrays and checks nothing.
"""

from __future__ import annotations

import numbers

from llm_cost.counts import WeightBytes, param_counts
from llm_cost.specs import ModelSpec, Profile, WeightFormat

DATASHEET = "datasheet"  # `PassCost.kernel_source` when no measured table times the pass


def roofline_total(memory_s, compute_s, fixed_s):
    """max(memory_s, compute_s) + fixed_s: the roofline, for numbers or numpy arrays."""
    if isinstance(memory_s, float) and isinstance(compute_s, float):
        return (memory_s if memory_s > compute_s else compute_s) + fixed_s
    import numpy as np

    longer = np.maximum(memory_s, compute_s)
    return longer + fixed_s if fixed_s else longer


def deployed_sum(longer, stages, collectives_s, handoffs_s, fixed_s, overlap: bool):
    """A deployed pass's T from one stage's `longer` = max(memory, compute): stages x longer + collectives
    + hand-offs + fixed (`overlap`: max(stages x longer, collectives) + hand-offs + fixed; numbers or arrays).
    The one composition `PassCost.deployed_total` and `StepTime.step_time_s` both evaluate."""
    body = longer * stages if stages != 1 else longer
    if overlap:
        body = roofline_total(body, collectives_s, 0.0) if isinstance(body, float) else elementwise_max(body, collectives_s)
    else:
        body = body + collectives_s
    body = body + handoffs_s
    return body + fixed_s if fixed_s else body


def causal_pairs(new_rows, context=0):
    """(query, key) pairs of one sequence's `new_rows` rows after `context` cached tokens.

    Each new row attends to the context and to the new rows before it and itself:
    r ctx + r (r + 1) / 2. A prompt of P tokens alone: P (P + 1) / 2.
    """
    return new_rows * context + new_rows * (new_rows + 1) / 2


def decode_pairs(rows_each, sequences, cached_tokens):
    """(query, key) pairs of a decode batch: `sequences` sequences feeding `rows_each` rows each after
    `cached_tokens` cached tokens in all (the sum of their contexts).

    Every row attends to its own sequence's cache and to the rows before it and itself:
    r S + n `causal_pairs`(r) = r S + n r (r + 1) / 2 (one row each, a plain decode step: S + n).
    The engines' hot loops write this expression inline, each beside a comment naming it
    (tests/test_decode_pairs.py checks the inline forms against it).
    """
    return rows_each * cached_tokens + sequences * causal_pairs(rows_each)


def uniform_pass(rows, batch, context):
    """(K/V tokens moved, attention pairs) of a pass over `batch` sequences of `context` cached tokens.

    Each sequence reads its `context` cached tokens and writes its r = rows / batch new ones.
    """
    return batch * context + rows, batch * causal_pairs(rows / batch, context)


def gemm_precision(model: ModelSpec, weights: WeightFormat) -> str:
    """The precision the GEMMs run at: the format's (`WeightFormat.compute`), or for the model's own
    checkpoint format, fp8 when its config says FP8 (DeepSeek-V3's blocks are W8A8), else bf16."""
    if weights.checkpoint:
        quantization = model.quantization
        return "fp8" if quantization is not None and quantization.method == "fp8" else "bf16"
    return weights.compute


def weight_only(weights: WeightFormat) -> bool:
    """Weights stored below 16 bits and dequantized to BF16 for the GEMMs (INT4/INT8 W4A16, W8A16)."""
    return not weights.checkpoint and weights.compute == "bf16" and weights.bits < 16


def elementwise_max(x, y):
    """numpy.maximum(`x`, `y`) (arrays)."""
    import numpy as np

    return np.maximum(x, y)


def _minimum(x, cap):
    """min(`x`, cap): a number for numbers, numpy.minimum for arrays."""
    if isinstance(x, (int, float)):
        return x if x < cap else cap
    import numpy as np

    return np.minimum(x, cap)


def clip_to(x, low, high):
    """low <= `x` <= high, `x` clipped: numbers or numpy arrays (broadcast)."""
    if isinstance(x, (int, float)) and isinstance(high, (int, float)):
        return low if x < low else (high if x > high else x)
    import numpy as np

    return np.clip(x, low, high)


def windowed_pairs(new_rows, context, window):
    """(query, key) pairs of one sequence's `new_rows` rows after `context` cached tokens in a layer
    whose rows attend to at most `window` keys (themselves included).

    Row i (1..r) sees min(window, context + i) keys: the k = clip(window - context, 0, r) rows still
    inside the window (`k`) see context + i, the others `window`:
    k ctx + k (k + 1) / 2 + (r - k) window. A window >= context + r gives `causal_pairs`.
    """
    k = clip_to(window - context, 0, new_rows)
    return k * context + k * (k + 1) / 2 + (new_rows - k) * window


def windowed_pass(rows, batch, context, windows, num_layers):
    """`uniform_pass` for a model whose `windows` ((window, layers), ...) keep at most their window.

    In all-layer units, as `PassCost` multiplies them (kv_token_bytes and pair_flops are all-layer
    figures): kv_tokens = batch x (held layer-tokens of one sequence) / L + rows, the held ones
    being the full layers' context and each windowed layer's min(context, window) (so
    kv_tokens x kv_token_bytes = batch x `kv_bytes(model, context)` + rows x kv_bytes_per_token:
    every layer writes the new rows' K/V); pairs = batch x sum over layers of the layer's pairs / L
    (`causal_pairs` for full layers, `windowed_pairs` for the others). Chunked layers (Llama 4) are
    counted as a window of the chunk size: an upper bound of their current chunk. `r`: rows per
    sequence.
    """
    r = rows / batch
    full = num_layers - sum(layer_count for _, layer_count in windows)
    held = full * context
    pairs = full * causal_pairs(r, context)
    for window, layers in windows:
        held = held + layers * _minimum(context, window)
        pairs = pairs + layers * windowed_pairs(r, context, window)
    return batch * held / num_layers + rows, batch * pairs / num_layers


def expected_experts_touched(num_experts: int, experts_per_token: int, rows):
    """Distinct experts `rows` tokens touch in one MoE layer under uniform top-k routing.

    E = N (1 - (1 - k/N)^m): each row picks k of N experts; an expert is missed by all m rows
    with probability (1 - k/N)^m. N >= 0 and 0 <= k <= N whole numbers, rows >= 0 (a number or an
    array); k > N made E negative (issue 29).

    Parameters
    ----------
    num_experts, experts_per_token : int
        N routed experts per MoE layer and the k each token is routed to (`MoESpec`).
    rows : float or array_like
        m token rows in the pass.

    Returns
    -------
    float or numpy.ndarray
        E, at most min(k m, N): how many experts' weights a pass over m rows reads per layer.

    Examples
    --------
    Mixtral-8x7B (8 experts, top 2): a decode row reads 2 experts a layer, a verification pass
    of 5 rows (gamma 4) 6.1 of them, a batch of 64 rows all 8.

    >>> import llm_cost as lc
    >>> moe = lc.load_model("mixtral-8x7b").moe
    >>> lc.expected_experts_touched(moe.num_experts, moe.experts_per_token, 1)
    2.0
    >>> lc.expected_experts_touched(moe.num_experts, moe.experts_per_token, [5, 64]).round(1).tolist()
    [6.1, 8.0]
    """
    from llm_cost.errors import InvalidValueError, check_number
    from llm_cost.grids import checked

    check_number("num_experts", num_experts, low=0, integer=True)
    check_number("experts_per_token", experts_per_token, low=0, integer=True)
    if experts_per_token > num_experts:
        raise InvalidValueError(f"experts_per_token must be at most num_experts ({num_experts}), got "
                                f"{experts_per_token}", params=("experts_per_token", "num_experts"))
    if isinstance(rows, numbers.Real):
        check_number("rows", rows, low=0)
    else:
        checked("rows", rows, low=0)
    if num_experts == 0:
        return 0.0
    return num_experts * (1.0 - (1.0 - experts_per_token / num_experts) ** rows)


def shared_bytes_read(wb: WeightBytes, profile: Profile) -> float:
    """The weight bytes every pass reads (routed experts excluded).

    Every shared weight once; the input embedding (and a learned position table) only when the
    profile reads lookups; a tied table is the LM head and is always read.
    """
    read = wb.always + wb.lm_head
    if profile.read_input_embedding:
        read += wb.embedding + wb.position_embedding
    elif not wb.lm_head:  # tied: the table is read as the LM head
        read += wb.embedding
    return read


def expert_share(model: ModelSpec) -> float:
    """Share of a row's GEMM FLOPs in its routed experts: L_moe k N_expert / gemm_active."""
    pc = param_counts(model)
    return pc.num_moe_layers * pc.experts_per_token * pc.expert_params / pc.gemm_active


STATE_MOVES_PER_PASS = 2.0  # a pass reads every recurrent layer's state and writes it back


def state_tokens_per_sequence(model: ModelSpec, kv_bytes_per_element: float) -> float:
    """A hybrid's recurrent state moved per sequence and pass, in all-layer K/V tokens: each pass reads
    every recurrent layer's state and writes it back, 2 x `counts.per_token.state_in_kv_tokens`
    (0 without recurrent layers), so that `PassCost` moves it as kv_tokens."""
    from llm_cost.counts.per_token import state_in_kv_tokens

    return STATE_MOVES_PER_PASS * state_in_kv_tokens(model, kv_bytes_per_element)


def recurrent_row_flops(model: ModelSpec) -> float:
    """FLOPs one row spends in a hybrid's recurrent layers beyond their projections: the state
    update, the chunked scan's within-chunk products and the short convolution
    (`counts.recurrent.recurrent_flops_per_token`; 0 without recurrent layers)."""
    from llm_cost.counts.recurrent import recurrent_flops_per_token

    return float(recurrent_flops_per_token(model)) if model.recurrent is not None else 0.0
