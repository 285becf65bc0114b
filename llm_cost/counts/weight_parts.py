"""The bytes of a model's weights by how a forward pass reads them (`WeightBytes`), apart from how
they are counted (`weights.weight_bytes` for a format, `checkpoint.checkpoint_weight_bytes` for the
checkpoint's own formats), so both counters build it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WeightBytes:
    r"""Weight bytes by how a forward pass reads them, in a given format.

    .. math:: B_{total} = B_{emb} + B_{pos} + B_{head} + B_{always} + L_{moe}\,E\,B_{expert}

    Attributes
    ----------
    embedding, position_embedding, lm_head
        Bytes of the input table (a lookup unless tied), the learned position table and the LM
        head (0 when tied).
    always
        Bytes every pass reads: all layers' attention, norms, dense MLPs, shared experts and routers,
        and the final norm.
    expert
        Bytes of one routed expert of one MoE layer (0 for a dense model).
    num_moe_layers, num_experts
        MoE layers and routed experts per MoE layer.
    effective_bits
        Bits per weight of the format, scales and zeros included (BF16 16, INT4 g128 4.25).

    Examples
    --------
    >>> from llm_cost.catalog import load_model
    >>> from llm_cost.counts import weight_bytes
    >>> round(weight_bytes(load_model("llama-3-8b")).total / 1e9, 2)
    16.06
    """

    embedding: float  # input table (a lookup unless tied)
    position_embedding: float
    lm_head: float
    always: float  # every layer's shared part: attention, norms, dense MLPs, shared experts, routers
    expert: float  # one routed expert of one MoE layer
    num_moe_layers: int
    num_experts: int
    effective_bits: float

    @property
    def total(self) -> float:
        """All weight bytes: tables, LM head, the always-read part and every routed expert."""
        return (self.embedding + self.position_embedding + self.lm_head + self.always
                + self.num_moe_layers * self.num_experts * self.expert)
