r"""Recurrent mixers (linear attention, Mamba): their parameters, their state per sequence, their FLOPs.

A hybrid model's "recurrent" layers (`ModelSpec.layer_types`) keep a fixed-size state per sequence
in place of a growing K/V cache (`RecurrentSpec`: recurrent state + the short convolution's window).
Parameters per layer, following each family's modeling code (H the model's hidden size, nk / nv key
and value heads of dk / dv, K the conv kernel, d = nh x hd the inner width, ds the SSM state, g the
groups):

- gated_deltanet (Qwen3NextGatedDeltaNet; Qwen3.5's splits the same matrices): in_proj_qkvz
  H (2 nk dk + 2 nv dv), in_proj_ba H 2 nv, conv1d (2 nk dk + nv dv) K without bias, dt_bias and
  A_log nv each, a gated RMSNorm of dv, out_proj nv dv H.
- lightning (MiniMax-M1's lightning attention): qkv_proj H 3 d, output_gate H d, norm d, out_proj d H.
- mamba2 (Mamba2Mixer: Bamba, Granite 4.0-H, Nemotron-H, Falcon-H1): in_proj H (2 d + 2 g ds + nh),
  conv1d (d + 2 g ds) K (+ a bias), dt_bias, A_log, D of nh each, a gated RMSNorm of d (unless
  `gated_norm` is off: Falcon-H1 without mamba_rms_norm), out_proj d H (biases on both projections
  when `proj_bias`).
- mamba1 (JambaMambaMixer): in_proj H 2 d, conv1d d K (+ d), x_proj d (dt_rank + 2 ds),
  dt_proj dt_rank d + d, A_log d ds, D d, out_proj d H, and Jamba's dt / B / C layernorms
  dt_rank + 2 ds.

FLOPs per token and recurrent layer beyond those projections (`recurrent_flops_per_token`): the
state update and readout, 2 x m x (state elements), m multiply-adds per element (Gated DeltaNet 3:
S k, the delta update, q S; lightning 2: k^T v and q S; Mamba 2: the decayed update and C h), the
chunked scan's within-chunk products 2 x C x heads x (state_dim + head_dim) for chunks of C tokens
(64 for Gated DeltaNet's chunk_gated_delta_rule, 256 for lightning's BLOCK and Mamba-2's
chunk_size; a decode row is charged them too: an upper bound, under 10% of the state term), and the
convolution's 2 conv_dim K.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llm_cost.catalog import as_model
from llm_cost.errors import check_number
from llm_cost.specs import ModelSpec

if TYPE_CHECKING:  # annotations only
    from llm_cost.specs.model_towers import RecurrentSpec

# multiply-adds per state element per token, and the chunk of the chunked (prefill) form
MACS_PER_STATE_ELEMENT = {"gated_deltanet": 3, "lightning": 2, "mamba2": 2, "mamba1": 2}
SCAN_CHUNK = {"gated_deltanet": 64, "lightning": 256, "mamba2": 256, "mamba1": 0}


def recurrent_layer_params(mixer: RecurrentSpec, hidden: int) -> int:
    """Parameters of one recurrent mixer of `mixer`'s kind in a model of width `hidden` (module doc):
    `h` the hidden size (H there), `d` the inner width."""
    d, h = mixer.inner_dim, hidden
    conv = mixer.conv_dim * mixer.conv_kernel + (mixer.conv_dim if mixer.conv_bias else 0)
    if mixer.kind == "gated_deltanet":
        key = mixer.num_groups * mixer.state_dim
        return h * (2 * key + 2 * d) + h * 2 * mixer.num_heads + conv + 2 * mixer.num_heads + mixer.head_dim + d * h
    if mixer.kind == "lightning":
        return h * 3 * d + h * d + d + d * h
    bias = mixer.proj_bias
    if mixer.kind == "mamba2":
        in_width = 2 * d + 2 * mixer.num_groups * mixer.state_dim + mixer.num_heads
        return (h * in_width + (in_width if bias else 0) + conv + 3 * mixer.num_heads + (d if mixer.gated_norm else 0)
                + d * h + (h if bias else 0))
    # mamba1
    return (h * 2 * d + (2 * d if bias else 0) + conv + d * (mixer.dt_rank + 2 * mixer.state_dim)
            + mixer.dt_rank * d + d + d * mixer.state_dim + d + d * h + (h if bias else 0)
            + mixer.dt_rank + 2 * mixer.state_dim)


def state_bytes_per_sequence(model: ModelSpec, bytes_per_element: float = 2.0) -> float:
    r"""Bytes of recurrent state ONE sequence holds, all recurrent layers, whatever its length.

    .. math:: B_{state} = L_{rec}\,\big(n_h\,d_h\,d_s + c\,(K - 1)\big)\,b

    The state is kept at the K/V cache's width `bytes_per_element` (vLLM's mamba_ssm_cache_dtype
    "auto": the model's dtype). 0 for a model without recurrent layers.

    Parameters
    ----------
    model : ModelSpec
        The model (a spec).
    bytes_per_element : float, optional
        Bytes of one state element, in (0, inf) (default 2, BF16).

    Returns
    -------
    float
        Bytes per sequence.

    Examples
    --------
    Qwen3-Next-80B-A3B: 36 Gated DeltaNet layers of 32 x 128 x 128 + 8192 x 3 elements:
    36 x 548,864 x 2 = 39,518,208 bytes per sequence.

    >>> from llm_cost.catalog import load_model
    >>> state_bytes_per_sequence(load_model("llama-3-8b"))
    0
    """
    model = as_model(model)
    check_number("state bytes per element", bytes_per_element, low=0, low_open=True)
    if model.recurrent is None:
        return 0
    return model.num_recurrent_layers * model.recurrent.state_elements * bytes_per_element


def recurrent_flops_per_token(model: ModelSpec) -> int:
    r"""FLOPs one token spends in the recurrent layers beyond their projections (module doc).

    .. math:: F_{rec} = L_{rec}\,\big(2 m\,n_h d_h d_s + 2 C n_h (d_s + d_h) + 2 c K\big)

    Parameters
    ----------
    model : ModelSpec
        The model (a spec).

    Returns
    -------
    int
        FLOPs per token (0 without recurrent layers).
    """
    model = as_model(model)
    recurrent = model.recurrent
    if recurrent is None:
        return 0
    per_layer = (2 * MACS_PER_STATE_ELEMENT[recurrent.kind] * recurrent.recurrent_elements
                 + 2 * SCAN_CHUNK[recurrent.kind] * recurrent.num_heads * (recurrent.state_dim + recurrent.head_dim)
                 + 2 * recurrent.conv_dim * recurrent.conv_kernel)
    return model.num_recurrent_layers * per_layer
