"""DeepSeek-V3's multi-token-prediction (MTP) module, counted: one transformer block, its projection.

The MTP module (DeepSeek-V3 Technical Report §2.2, Figure 3) is one transformer block (a MoE
layer for DeepSeek-V3), RMSNorms on its two inputs, a projection M in R^{d x 2d} of [h; emb]
back to d, and the embedding and output head shared with the main model. Its use as a draft
(step time, speedup) is `llm_cost.speculative.mtp`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from llm_cost.catalog import as_model
from llm_cost.counts.params import param_counts
from llm_cost.specs import ModelSpec


def mtp_module(model: ModelSpec) -> ModelSpec:
    r"""One MTP module as a one-layer model: a block like the model's last (MoE) layer, the
    shared embedding and LM head, and its own output norm (`shared_head.norm`).

    The input norms and the 2d x d projection are not a ModelSpec part: see `mtp_params`.
    DeepSeek-V3 Technical Report §2.2, Figure 3.

    .. math:: h'_k = \mathrm{Block}(M\,[\mathrm{RMSNorm}(h_{k-1});\ \mathrm{RMSNorm}(\mathrm{Emb}(t_{k}))]),
              \quad M \in \mathbb{R}^{d \times 2d}

    Parameters
    ----------
    model : ModelSpec
        The main model (a spec); its MoE, if any, keeps its experts and loses its dense layers.

    Returns
    -------
    ModelSpec
        A one-layer model named "<model> MTP module".

    Examples
    --------
    >>> from llm_cost.catalog import load_model
    >>> m = mtp_module(load_model("deepseek-v3"))
    >>> m.name, m.num_layers, m.num_moe_layers
    ('deepseek-v3 MTP module', 1, 1)
    """
    moe = replace(model.moe, first_dense_layers=0, dense_layers=()) if model.moe is not None else None
    last = model.attention_layer_types[-1]  # the block is like the last layer, its attention too
    return replace(model, name=f"{model.name} MTP module", num_layers=1, moe=moe,
                   layer_types=(last,) if last != "full" else (),
                   sliding_window=model.sliding_window if last == "sliding" else 0,
                   attention_chunk_size=model.attention_chunk_size if last == "chunked" else 0,
                   nope_layers=(0,) if model.num_layers - 1 in model.nope_layers else (),
                   recurrent=model.recurrent if last == "recurrent" else None,
                   vision=None)  # a text block: no tower


@dataclass(frozen=True)
class MtpParams:
    r"""Parameters of one MTP module (counts). DeepSeek-V3: 11.6B of its own, 13.5B stored.

    .. math:: N_{own} = N_{block} + N_{proj},\quad N_{stored} = N_{own} + N_{emb} + N_{head}

    Attributes
    ----------
    block
        The transformer block and the output norm.
    block_active
        The block as one token uses it (shared + top-k routed experts).
    projection
        eh_proj (d x 2d, no bias) and the enorm / hnorm gains: 2 d^2 + 2 d.
    shared
        Embedding and LM head, the main model's.

    Examples
    --------
    See `mtp_params`.
    """

    block: int  # the transformer block and the output norm
    block_active: int  # the block as one token uses it (shared + top-k routed experts)
    projection: int  # eh_proj (d x 2d, no bias) and the enorm / hnorm gains
    shared: int  # embedding and LM head, the main model's

    @property
    def own(self) -> int:
        """What the module adds to the model's memory."""
        return self.block + self.projection

    @property
    def stored(self) -> int:
        """As the Hub checkpoint stores it, with its copies of the shared tables.

        DeepSeek-V3 README: "685B, which includes 671B of the Main Model weights and 14B of the
        Multi-Token Prediction (MTP) Module weights".
        """
        return self.own + self.shared


def mtp_params(model: ModelSpec) -> MtpParams:
    """Count one MTP module: block = one layer + output norm; projection = 2 d^2 + 2 d.

    .. math:: N_{proj} = 2 d^2 + 2 d

    with `d` the hidden size.

    Parameters
    ----------
    model : ModelSpec
        The main model (a spec).

    Returns
    -------
    MtpParams
        Counts of the block (all and active), the projection and the shared tables.

    Examples
    --------
    DeepSeek-V3: 11.6B of its own, 13.5B as the Hub checkpoint stores it (the README's "14B of
    the Multi-Token Prediction (MTP) Module weights").

    >>> from llm_cost.catalog import load_model
    >>> n = mtp_params(load_model("deepseek-v3"))
    >>> n.projection == 2 * 7168 ** 2 + 2 * 7168, round(n.own / 1e9, 1), round(n.stored / 1e9, 1)
    (True, 11.6, 13.5)
    """


    model = as_model(model)
    counts = param_counts(mtp_module(model))
    d = model.hidden_size
    shared = counts.embedding + counts.lm_head
    return MtpParams(block=counts.total - shared, block_active=counts.active - shared,
                     projection=2 * d * d + 2 * d, shared=shared)
