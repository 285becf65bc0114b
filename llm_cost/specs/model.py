"""The model spec: a decoder-only transformer in the Hugging Face config's terms.

Frozen dataclasses; every `__post_init__` rejects a bad value naming the field
(`model.hidden_size must be in [1, inf), got 0`). Nothing here computes costs: that is
`llm_cost.counts` (parameters, bytes, FLOPs) and `llm_cost.roofline` (time).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from llm_cost.errors import InvalidValueError, check_number
# the part classes (MoESpec, MLASpec, QuantizationConfig, RecurrentSpec, VisionSpec) are only named in annotations
# (text) and checked by class name (`check_fields`): a dense model's start creates none of them (`specs.model_parts`)
from llm_cost.specs.validate import check_fields, layer_indices, positive_int

if TYPE_CHECKING:  # annotations only
    from llm_cost.specs.model_parts import MLASpec, MoESpec, QuantizationConfig
    from llm_cost.specs.model_towers import RecurrentSpec, VisionSpec

MLP_KINDS = ("gated", "plain")  # gated: SwiGLU/GeGLU gate/up/down; plain: GELU up/down (GPT-2/3)
MLP_PROJECTIONS = {"gated": ("gate", "up", "down"), "plain": ("up", "down")}  # by mlp_kind
NORM_KINDS = ("rms", "layer")  # rms: a gain vector; layer: gain and bias
# q_norm / k_norm on the queries and keys: none; "head": one gain of head_dim shared by the heads
# (Qwen3, Gemma 3); "full": gains over all heads, q_dim and kv_dim (OLMo 2); "weightless": an L2
# norm without parameters (Llama 4's use_qk_norm).
QK_NORM_KINDS = ("none", "head", "full", "weightless")
# What one layer's attention keeps of the past: all of it, the last `sliding_window` tokens, the
# tokens of the current `attention_chunk_size` chunk (Llama 4), or a fixed-size state per sequence
# (a "recurrent" layer: the model's `recurrent` mixer, linear attention or Mamba, in place of attention).
ATTENTION_KINDS = ("full", "sliding", "chunked", "recurrent", "mlp")
# "mlp": a block without a mixer, only an MLP (Nemotron-H's "-" blocks; `single_sublayer_blocks`).


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer, in the Hugging Face config's terms.

    `head_dim` is explicit (the Hub's default is hidden_size / num_heads, applied by the
    loader). Attention of width `num_heads * head_dim` need not equal `hidden_size`.

        q_dim  = num_heads * head_dim        (MLA: num_heads * (qk_nope + qk_rope head dims))
        kv_dim = num_kv_heads * head_dim
        MLP matrices = 3 (gated: gate, up, down) or 2 (plain: up, down)

    Parameters
    ----------
    name : str
        Non-empty; the catalog name.
    hidden_size, num_layers, num_heads, num_kv_heads, head_dim, intermediate_size, vocab_size : int
        The config's sizes (elements, layers, heads, tokens), each >= 1; num_kv_heads divides
        num_heads.
    mlp_kind, norm_kind, qk_norm : str, optional
        One of MLP_KINDS ("gated"), NORM_KINDS ("rms"), QK_NORM_KINDS ("none").
    tie_word_embeddings, qkv_bias, o_bias, mlp_bias, attention_sinks : bool, optional
        Shared embedding and LM head; biases; one learned sink logit per head and layer.
    lm_head_bias : bool, optional
        One bias per vocabulary entry on the LM head (GPT-J, Phi-2); needs an untied head
        (default False).
    learned_positions, max_position_embeddings, mtp_layers : int, optional
        Rows of a learned position table, the context limit (tokens; 0 unknown), MTP modules;
        each >= 0.
    moe, mla : MoESpec or MLASpec, optional
        Mixture-of-experts layers and latent attention, None when absent.
    shared_expert_intermediate_size : int, optional
        Hidden width of each shared expert when it differs from the routed experts' (Qwen2-MoE:
        shared_expert_intermediate_size), >= 0; 0 (default) means moe.expert_intermediate_size.
        Needs moe.num_shared_experts > 0 when set.
    shared_expert_gate : bool, optional
        A hidden_size -> 1 linear without bias that gates the shared experts' output (Qwen2-MoE's
        shared_expert_gate): d parameters per MoE layer; needs moe.num_shared_experts > 0
        (default False).
    source, checkpoint_dtype, family : str, optional
        Where the numbers come from, torch_dtype as read, the config's model_type.
    layer_norms : int, optional
        Norm vectors of hidden_size per layer, >= 0 (default 2).
    layer_types : tuple of str, optional
        () or one of ATTENTION_KINDS per layer (num_layers entries).
    sliding_window, attention_chunk_size : int, optional
        Tokens a "sliding" layer sees / per "chunked" chunk, >= 0; > 0 exactly when a layer
        is of that kind.
    nope_layers : tuple of int, optional
        Layers without rotary positions, 0-based, distinct, ascending, < num_layers.
    quantization : QuantizationConfig, optional
        The checkpoint's format, as read.
    vision : VisionSpec, optional
        The vision tower and projector of a multimodal checkpoint, None for a text-only one.
    mtp_stores_tables : bool, optional
        Each MTP module stores its own embedding and LM head copies (DeepSeek-V3, GLM-4.5); False
        (default): it shares the model's (MiMo).
    recurrent : RecurrentSpec, optional
        The mixer of the layers whose `layer_types` entry is "recurrent"; set exactly when one is.
    attention_output_gate : bool, optional
        The attention layers' q_proj also outputs a gate of q_dim (Qwen3-Next; default False).
    single_sublayer_blocks : bool, optional
        Each layer is one sublayer behind one norm: its mixer, or an MLP where layer_types says
        "mlp" (Nemotron-H; default False). Not with experts.

    Raises
    ------
    InvalidValueError
        Naming the field (`model.hidden_size must be in [1, inf), got 0`).

    Examples
    --------
    Llama-3-8B (the article §1.2): 32 query heads and 8 KV heads of 128, a gated MLP, dense.

    >>> from llm_cost.catalog import load_model
    >>> m = load_model("llama-3-8b")
    >>> m.q_dim, m.kv_dim, m.mlp_matrices, m.is_moe, m.num_dense_layers
    (4096, 1024, 3, False, 32)

    DeepSeek-V3: 3 dense layers, then 58 MoE layers.

    >>> ds = load_model("deepseek-v3")
    >>> ds.is_moe, ds.num_dense_layers, ds.num_moe_layers
    (True, 3, 58)
    >>> ModelSpec("x", 4096, 32, 32, 5, 128, 14336, 128256)
    Traceback (most recent call last):
    ...
    llm_cost.errors.InvalidValueError: model.num_kv_heads (5) must divide num_heads (32)
    """

    name: str
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    mlp_kind: str = "gated"
    norm_kind: str = "rms"
    tie_word_embeddings: bool = False
    qkv_bias: bool = False  # biases on q, k, v (Qwen2 has them without saying so)
    o_bias: bool = False
    mlp_bias: bool = False
    learned_positions: int = 0  # rows of a learned position table (GPT-2/3), 0 for RoPE
    max_position_embeddings: int = 0  # context limit as configured; 0 when unknown
    moe: MoESpec | None = None
    mla: MLASpec | None = None
    mtp_layers: int = 0  # multi-token-prediction modules (DeepSeek-V3's num_nextn_predict_layers)
    source: str = ""  # where the numbers come from (a URL or a file path)
    layer_norms: int = 2  # norm vectors of hidden_size per layer: 2 (Llama, OLMo 2), 4 (Gemma 2/3)
    qk_norm: str = "none"  # one of QK_NORM_KINDS
    attention_sinks: bool = False  # one learned logit per head and layer (gpt-oss)
    # Per-layer attention, recorded for windowed KV (not used by any count yet): () = every
    # layer "full"; else one of ATTENTION_KINDS per layer.
    layer_types: tuple[str, ...] = ()
    sliding_window: int = 0  # tokens a "sliding" layer attends to; 0 when no layer slides
    attention_chunk_size: int = 0  # tokens per chunk of a "chunked" layer; 0 when none
    nope_layers: tuple[int, ...] = ()  # layers without rotary positions (Llama 4), 0-based
    quantization: QuantizationConfig | None = None  # the checkpoint's format, as read
    checkpoint_dtype: str = ""  # torch_dtype as read ("bfloat16", "float32"); "" when not given
    family: str = ""  # the architecture family the loader read the config as (its model_type)
    # Added last, so positional construction keeps its order:
    lm_head_bias: bool = False  # one per vocabulary entry on an untied LM head (GPT-J, Phi-2)
    # Qwen2-MoE's shared expert: its own width (0: the routed experts') and its sigmoid gate
    shared_expert_intermediate_size: int = 0
    shared_expert_gate: bool = False
    # The checkpoint's other parts: its vision tower and projector (counted by `counts.vision`), and
    # whether each MTP module stores its own copies of the embedding and LM head (DeepSeek-V3's
    # layout, GLM-4.5's) or shares the model's (MiMo).
    vision: VisionSpec | None = None
    mtp_stores_tables: bool = False
    # Hybrid models: the mixer of the "recurrent" layers, and Qwen3-Next's gated attention (q_proj
    # doubled: a sigmoid gate of q_dim on the attention output, attn_output_gate).
    recurrent: RecurrentSpec | None = None
    attention_output_gate: bool = False
    # Each layer holds ONE sublayer, its mixer (attention or recurrent) or its MLP ("mlp" blocks),
    # never both, behind one norm (Nemotron-H); False: every layer has a mixer and an MLP.
    single_sublayer_blocks: bool = False
    # Every layer runs attention AND the recurrent mixer side by side on the same input (Falcon-H1):
    # each layer keeps K/V and a state; layer_types then names attention kinds only.
    parallel_mixers: bool = False

    def __post_init__(self) -> None:
        check_fields(self, "model.")
        if not isinstance(self.name, str) or not self.name:
            raise InvalidValueError("model.name must be a non-empty string")
        for name in ("hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_dim",
                     "intermediate_size", "vocab_size"):
            positive_int("model", name, getattr(self, name))
        for name in ("learned_positions", "max_position_embeddings", "mtp_layers", "sliding_window",
                     "attention_chunk_size", "shared_expert_intermediate_size"):
            check_number(f"model.{name}", getattr(self, name), low=0, integer=True)
        check_number("model.layer_norms", self.layer_norms, low=0, integer=True)
        if self.qk_norm not in QK_NORM_KINDS:
            raise InvalidValueError(f"model.qk_norm must be one of {', '.join(QK_NORM_KINDS)}, got {self.qk_norm!r}")
        if self.mlp_kind not in MLP_KINDS:
            raise InvalidValueError(f"model.mlp_kind must be one of {', '.join(MLP_KINDS)}, got {self.mlp_kind!r}")
        if self.norm_kind not in NORM_KINDS:
            raise InvalidValueError(f"model.norm_kind must be one of {', '.join(NORM_KINDS)}, got {self.norm_kind!r}")
        if self.num_heads % self.num_kv_heads:
            raise InvalidValueError(
                f"model.num_kv_heads ({self.num_kv_heads}) must divide num_heads ({self.num_heads})")
        if self.moe is not None and self.moe.first_dense_layers > self.num_layers:
            raise InvalidValueError(
                f"moe.first_dense_layers must be in [0, {self.num_layers}] (num_layers), "
                f"got {self.moe.first_dense_layers}")
        if self.moe is not None:
            layer_indices("moe.dense_layers", self.moe.dense_layers, high=self.num_layers)
        layer_indices("model.nope_layers", self.nope_layers, high=self.num_layers)
        self._check_heads()
        self._check_layer_types()

    def _check_heads(self) -> None:
        """An LM-head bias needs an untied head; a shared expert's width and gate need one."""
        if self.lm_head_bias and self.tie_word_embeddings:
            raise InvalidValueError("model.lm_head_bias needs an untied LM head (tie_word_embeddings is True)")
        shared = self.moe.num_shared_experts if self.moe is not None else 0
        for name in ("shared_expert_intermediate_size", "shared_expert_gate"):
            if getattr(self, name) and not shared:
                raise InvalidValueError(f"model.{name} needs a shared expert (moe.num_shared_experts > 0)")

    def _check_layer_types(self) -> None:
        """layer_types: empty or one known kind per layer; a window iff a layer uses it."""
        kinds = self.layer_types
        if not isinstance(kinds, tuple) or any(entry not in ATTENTION_KINDS for entry in kinds):
            raise InvalidValueError(f"model.layer_types must be a tuple of {', '.join(ATTENTION_KINDS)}")
        if kinds and len(kinds) != self.num_layers:
            raise InvalidValueError(f"model.layer_types must have {self.num_layers} entries (num_layers), "
                                    f"got {len(kinds)}")
        if ("mlp" in kinds) and not self.single_sublayer_blocks:
            raise InvalidValueError("model.layer_types has 'mlp' blocks, which need single_sublayer_blocks")
        if self.single_sublayer_blocks and self.moe is not None:
            raise InvalidValueError("model.single_sublayer_blocks with experts is not counted")
        if self.parallel_mixers and ("recurrent" in kinds or "mlp" in kinds or self.recurrent is None):
            raise InvalidValueError("model.parallel_mixers needs model.recurrent and attention in every layer "
                                    "(no 'recurrent' or 'mlp' layer_types)")
        if not self.parallel_mixers and ("recurrent" in kinds) != (self.recurrent is not None):
            raise InvalidValueError("model.recurrent must be set exactly when a layer is 'recurrent'")
        for kind, size, field in (("sliding", self.sliding_window, "sliding_window"),
                                  ("chunked", self.attention_chunk_size, "attention_chunk_size")):
            if (kind in kinds) != (size > 0):
                raise InvalidValueError(f"model.{field} ({size}) must be > 0 exactly when a layer is {kind!r}")

    @property
    def q_dim(self) -> int:
        """Width of the concatenated query heads (elements)."""
        if self.mla is not None:
            return self.num_heads * self.mla.qk_head_dim
        return self.num_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        """Width of the concatenated key (or value) heads of a GQA/MHA layer (elements)."""
        return self.num_kv_heads * self.head_dim

    @property
    def mlp_projections(self) -> tuple[str, ...]:
        """The MLP's weight matrices by name: gate, up, down (gated, SwiGLU) or up, down (plain GELU)."""
        return MLP_PROJECTIONS[self.mlp_kind]

    @property
    def mlp_matrices(self) -> int:
        """Weight matrices of one MLP: 3 for a gated MLP, 2 for a plain one."""
        return len(self.mlp_projections)

    @property
    def is_moe(self) -> bool:
        """True when the model has mixture-of-experts layers (`moe` is set)."""
        return self.moe is not None

    @property
    def shared_expert_width(self) -> int:
        """Hidden width of one shared expert (elements): shared_expert_intermediate_size where set
        (Qwen2-MoE), else the routed experts' expert_intermediate_size; 0 for a dense model."""
        if self.moe is None:
            return 0
        return self.shared_expert_intermediate_size or self.moe.expert_intermediate_size

    @property
    def num_moe_layers(self) -> int:
        """MoE layers: num_layers - first_dense_layers - len(dense_layers); 0 for a dense model."""
        if self.moe is None:
            return 0
        return self.num_layers - self.moe.first_dense_layers - len(self.moe.dense_layers)

    @property
    def num_dense_layers(self) -> int:
        """Layers with a plain (dense) MLP: num_layers - num_moe_layers."""
        return self.num_layers - self.num_moe_layers

    @property
    def num_recurrent_layers(self) -> int:
        """Layers with the recurrent mixer (0 for a pure-attention model; all with parallel_mixers)."""
        return self.num_layers if self.parallel_mixers else self.layer_types.count("recurrent")

    @property
    def num_mlp_blocks(self) -> int:
        """Blocks with an MLP and no mixer (Nemotron-H's "-"; 0 unless single_sublayer_blocks)."""
        return self.layer_types.count("mlp")

    @property
    def num_attention_layers(self) -> int:
        """Layers with attention (and a K/V cache): num_layers - recurrent layers - MLP blocks
        (every layer with parallel_mixers)."""
        if self.parallel_mixers:
            return self.num_layers
        return self.num_layers - self.num_recurrent_layers - self.num_mlp_blocks

    @property
    def attention_layer_types(self) -> tuple[str, ...]:
        """Each layer's attention kind ("full", "sliding", "chunked"), all layers spelled out.

        Examples
        --------
        >>> from llm_cost.catalog import load_model
        >>> load_model("llama-3-8b").attention_layer_types[:2]
        ('full', 'full')
        """
        return self.layer_types or ("full",) * self.num_layers
