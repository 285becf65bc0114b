"""Checkpoint formats: the bytes of a model's weights as its checkpoint ships them, by component.

A config's `quantization_config` says how the checkpoint stores its weights; without one, every
tensor is the config's `torch_dtype`. The formats counted, with their sources:

- **FP8 blocks** (`quant_method: fp8`, `fmt: e4m3`, `weight_block_size: [128, 128]`: DeepSeek-V3,
  Kimi-K2). Every linear layer inside the decoder layers (attention projections, dense MLPs, shared
  and routed experts) is F8_E4M3, one byte a weight, with an F32 `weight_scale_inv` per 128 x 128
  block: ceil(out / 128) x ceil(in / 128) scales (a partial block is padded for its scale only). The
  embedding, the LM head, every norm and the router's weight stay at torch_dtype (BF16); the
  router's `e_score_correction_bias` is F32.
  Sources: deepseek-ai/DeepSeek-V3 `README_WEIGHTS.md`, "FP8 Weight Documentation" (128x128 block
  scaling; `weight_scale_inv` a float32 tensor; blocks not aligned to 128 zero-padded for the
  scale, the padding removed); its `inference/model.py` (`Linear` holds a float32 scale of
  ceil(out/128) x ceil(in/128) when its weight is one byte; `Gate.bias` is float32; the head is a
  linear of the default BF16 dtype); the shipped tensor list (simpx/model-inspect `README.md` on
  deepseek-ai/DeepSeek-V3: F8_E4M3 projections with F32 scales such as q_a_proj (1536, 7168) ->
  (12, 56), BF16 embeddings, norms, `eh_proj` and `shared_head.head`).
- **MXFP4 experts** (`quant_method: mxfp4`: gpt-oss). The routed experts' weight matrices are
  `*_blocks` (uint8, two FP4 E2M1 values a byte: 16 bytes per 32 weights) and `*_scales` (uint8,
  one E8M0 exponent per 32 weights along the input): 4 + 8 / 32 = 4.25 bits a weight. The experts'
  biases, the norms and the `modules_to_not_convert` (attention with its sinks, router, embedding,
  LM head) stay BF16. Sources: the gpt-oss model card (https://huggingface.co/openai/gpt-oss-20b:
  "quantization of the mixture-of-experts (MoE) weights to MXFP4 format, where the weights are
  quantized to 4.25 bits per parameter"); the OCP Microscaling (MX) v1.0 spec (blocks of 32 FP4
  E2M1 elements sharing one E8M0 scale); the checkpoint's index, whose tensors per layer are
  `mlp.experts.{gate_up,down}_proj_{blocks,scales,bias}` beside BF16 `self_attn.*` (sinks included),
  `mlp.router.*` and the norms.
- **Plain** (no `quantization_config`): every tensor at torch_dtype: bfloat16 and float16 2 bytes,
  float32 4 (OLMo 2 ships F32). A config without torch_dtype is taken as BF16, the library's
  default (gpt-oss's config has none: its unconverted tensors are BF16).

Anything else (GPTQ, AWQ, per-tensor FP8, an FP8 config that keeps modules unconverted) is refused
in one line rather than counted as something it is not.

The golden tests (`tests/test_checkpoint_formats.py`) match each published checkpoint size:
gpt-oss-20b and -120b and DeepSeek-V3 to the byte, Kimi-K2 to 6,832 bytes of 1.03 TB.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.catalog import as_model
from llm_cost.counts.params import param_counts
from llm_cost.counts.weight_parts import WeightBytes
from llm_cost.errors import InvalidValueError
from llm_cost.specs import ModelSpec
from llm_cost.catalog.arguments import check_arguments

# torch_dtype -> (bytes per element, the format's name)
DTYPES = {"bfloat16": (2, "bf16"), "float16": (2, "fp16"), "float32": (4, "fp32")}
DEFAULT_DTYPE = "bfloat16"  # a config that states none (gpt-oss): the library's BF16
FP8_ELEMENTS = ("e4m3", "e5m2")  # `fmt`: one byte either way
FP32_BYTES = 4  # weight_scale_inv and DeepSeek's e_score_correction_bias
MXFP4_BLOCK = 32  # weights per E8M0 scale (OCP MX v1.0)
SUPPORTED = "fp8 (with weight_block_size) and mxfp4"
# The weight matrices a format may convert, by where they sit in a layer.
GROUPS = ("attention", "dense_mlp", "shared_experts", "experts")


@dataclass(frozen=True)
class CheckpointFormat:
    r"""How a checkpoint stores its tensors: the converted weight matrices and all the rest.

    A converted (rows x cols) matrix, rows = outputs, takes
    rows x cols' x element_bits / 8 + ceil(rows / block_rows) x ceil(cols / block_cols) x scale_bytes
    bytes, cols' = cols, or cols rounded up to whole blocks when `pad_cols` (MXFP4's `_blocks`);
    every other parameter takes `dtype_bytes`.

    .. math:: B_W = r\,c'\,b_e / 8 + \lceil r / b_r \rceil \lceil c / b_c \rceil\, b_s

    Attributes
    ----------
    name
        The format ("bf16", "fp32", "fp8 e4m3 128x128", "mxfp4 experts").
    dtype_bytes
        Bytes of each tensor element the format does not convert (torch_dtype: 2 or 4).
    converted
        The groups (`GROUPS`) whose weight matrices are converted; () for a plain checkpoint.
    element_bits, block_rows, block_cols, scale_bytes, pad_cols
        A converted weight's bits, the (rows x cols) block one scale covers, a scale's bytes, and
        whether the elements are stored in whole blocks along the input.
    router_bias_bytes
        Bytes of each router bias element (DeepSeek's F32 correction bias: 4; else dtype_bytes).

    Examples
    --------
    `checkpoint_format` reads it from a model's config. DeepSeek-V3's FP8 stores q_a_proj
    (1536 x 7168) in one byte a weight plus 12 x 56 F32 block scales; gpt-oss's MXFP4 an
    expert's (5760 x 2880) gate_up_proj in half a byte a weight plus one byte per 32 of them:

    >>> import llm_cost as lc
    >>> fp8 = lc.checkpoint_format("deepseek-v3")
    >>> fp8.name, fp8.element_bits, (fp8.block_rows, fp8.block_cols), fp8.converted
    ('fp8 e4m3 128x128', 8, (128, 128), ('attention', 'dense_mlp', 'shared_experts', 'experts'))
    >>> fp8.matrix_bytes(1536, 7168) == 1536 * 7168 + 12 * 56 * 4
    True
    >>> mxfp4 = lc.checkpoint_format("gpt-oss-20b")
    >>> mxfp4.name, mxfp4.converted, mxfp4.matrix_bytes(5760, 2880) == 5760 * 2880 // 2 + 5760 * 90
    ('mxfp4 experts', ('experts',), True)

    A config without `quantization_config` stores every tensor at its torch_dtype:

    >>> plain = lc.checkpoint_format("llama-3-8b")
    >>> plain.name, plain.dtype_bytes, plain.converted
    ('bf16', 2, ())
    """

    name: str
    dtype_bytes: int
    converted: tuple[str, ...] = ()
    element_bits: int = 16
    block_rows: int = 1
    block_cols: int = 1
    scale_bytes: int = 0
    pad_cols: bool = False
    router_bias_bytes: int = 0  # 0: dtype_bytes

    def matrix_bytes(self, rows: int, cols: int) -> int:
        """Bytes of one converted (rows x cols) weight matrix: its elements and its scales."""
        col_blocks = -(-cols // self.block_cols)
        stored_cols = col_blocks * self.block_cols if self.pad_cols else cols
        scales = -(-rows // self.block_rows) * col_blocks * self.scale_bytes
        return rows * stored_cols * self.element_bits // 8 + scales


@dataclass(frozen=True)
class CheckpointBytes:
    """A model's weights as its checkpoint ships them.

    Attributes
    ----------
    format
        The checkpoint's format (`CheckpointFormat.name`).
    weights
        The main model by component (what `counts.weight_bytes(model, CHECKPOINT)` gives the time
        model), in bytes.
    mtp
        The multi-token-prediction modules as the checkpoint stores them, with their own copies of
        the embedding and the head where it stores them (DeepSeek-V3's layer 61; not MiMo's or
        Qwen3-Next's, which share the model's), in bytes; 0 without MTP.
    vision
        The vision tower and projector (`counts.vision`), in bytes; 0 for a text-only model.

    Examples
    --------
    `checkpoint_bytes` gives it. DeepSeek-V3 ships 688.6 GB: 673.2 GB of main model in FP8 with
    its block scales and 15.4 GB of MTP module (layer 61); Llama-3-8B two bytes for each of its
    8,030,261,248 parameters:

    >>> import llm_cost as lc
    >>> v3 = lc.checkpoint_bytes("deepseek-v3")
    >>> v3.format, v3.total, v3.weights.total, v3.mtp, v3.vision
    ('fp8 e4m3 128x128', 688574839360, 673150611808, 15424227552, 0)
    >>> llama = lc.checkpoint_bytes("llama-3-8b")
    >>> llama.format, llama.total, round(llama.weights.effective_bits, 1)
    ('bf16', 16060522496, 16.0)
    """

    format: str
    weights: WeightBytes
    mtp: int = 0
    vision: int = 0  # the vision tower and projector, at torch_dtype

    @property
    def total(self) -> float:
        """Every byte of weights the checkpoint ships (its index's `total_size`)."""
        return self.weights.total + self.mtp + self.vision


@check_arguments()
def checkpoint_format(model: ModelSpec) -> CheckpointFormat:
    """The format `model`'s checkpoint stores its weights in, from its config (rules: module doc).

    Raises InvalidValueError (one line, naming `weights`) for a quantization or a torch_dtype it
    cannot count.

    >>> from llm_cost.catalog import load_model
    >>> checkpoint_format(load_model("gpt-oss-20b")).name, checkpoint_format(load_model("kimi-k2")).name
    ('mxfp4 experts', 'fp8 e4m3 128x128')
    """
    dtype = model.checkpoint_dtype or DEFAULT_DTYPE
    if dtype not in DTYPES:
        raise _refused(model, f"torch_dtype {dtype!r} has no known width (known: {', '.join(DTYPES)})")
    width, name = DTYPES[dtype]
    quant = model.quantization
    if quant is None:
        return CheckpointFormat(name, width)
    if quant.method == "fp8":
        return _fp8_blocks(model, width)
    if quant.method == "mxfp4":
        if any("experts" in str(module) for module in quant.get("modules_to_not_convert", ()) or ()):
            raise _refused(model, "quantization_config mxfp4 keeps its experts unconverted: not counted")
        # Without routed experts (the dense twin `speculative.moe.dense_twin` of gpt-oss, whose
        # MLP stands for the experts a token uses) the MLPs take the experts' format.
        return CheckpointFormat("mxfp4 experts", width, converted=("experts",) if model.moe else ("dense_mlp",),
                                element_bits=4, block_cols=MXFP4_BLOCK, scale_bytes=1, pad_cols=True)
    raise _refused(model, f"quantization_config quant_method {quant.method!r} is not counted "
                          f"(supported: {SUPPORTED})")


def _fp8_blocks(model: ModelSpec, width: int) -> CheckpointFormat:
    """DeepSeek-V3's FP8: one byte a weight of every decoder linear, an F32 scale per block."""
    quant = model.quantization
    block = quant.get("weight_block_size")
    if not (isinstance(block, tuple) and len(block) == 2
            and all(isinstance(size, int) and not isinstance(size, bool) and size >= 1 for size in block)):
        raise _refused(model, f"quantization_config fp8 needs weight_block_size [rows, cols], got {block!r} "
                              "(per-tensor FP8 is not counted)")
    element = quant.get("fmt", "e4m3")
    if element not in FP8_ELEMENTS:
        raise _refused(model, f"quantization_config fp8 fmt must be one of {', '.join(FP8_ELEMENTS)}, got {element!r}")
    if quant.get("modules_to_not_convert"):
        raise _refused(model, "quantization_config fp8 with modules_to_not_convert is not counted "
                              "(DeepSeek-V3's layout converts every decoder linear)")
    return CheckpointFormat(f"fp8 {element} {block[0]}x{block[1]}", width,
                            converted=("attention", "dense_mlp", "shared_experts", "experts"),
                            element_bits=8, block_rows=block[0], block_cols=block[1], scale_bytes=FP32_BYTES,
                            router_bias_bytes=FP32_BYTES)


def _refused(model: ModelSpec, why: str) -> InvalidValueError:
    return InvalidValueError(f"weights 'checkpoint': {model.name}: {why}", params=("weights",))


def _matrices(model: ModelSpec) -> dict[str, list[tuple[int, int]]]:
    """Each group's weight matrices in one layer (one expert for "experts"), as (rows, cols) = (out, in).

    Shared experts are one MLP of num_shared x expert width (the Hub's DeepSeek-V3 modeling).
    `d` is the hidden size, `h` the number of attention heads.
    """
    d, moe, mla = model.hidden_size, model.moe, model.mla

    def mlp(ff: int) -> list[tuple[int, int]]:
        shapes = {"gate": (ff, d), "up": (ff, d), "down": (d, ff)}
        return [shapes[name] for name in model.mlp_projections]

    if mla is None:
        attention = [(model.q_dim, d), (model.kv_dim, d), (model.kv_dim, d), (d, model.q_dim)]
    else:
        h = model.num_heads
        q_out = h * mla.qk_head_dim
        query = [(mla.q_lora_rank, d), (q_out, mla.q_lora_rank)] if mla.q_lora_rank else [(q_out, d)]
        attention = query + [(mla.kv_lora_rank + mla.qk_rope_head_dim, d),
                         (h * (mla.qk_nope_head_dim + mla.v_head_dim), mla.kv_lora_rank), (d, h * mla.v_head_dim)]
    shared = moe.num_shared_experts * model.shared_expert_width if moe else 0  # Qwen2-MoE's is wider
    return {"attention": attention, "dense_mlp": mlp(model.intermediate_size),
            "shared_experts": mlp(shared) if shared else [],
            "experts": mlp(moe.expert_intermediate_size) if moe else []}


def checkpoint_weight_bytes(model: ModelSpec) -> WeightBytes:
    r"""Bytes of the main model's weights, by component, as its checkpoint stores them.

    Each component: its converted matrices at `CheckpointFormat.matrix_bytes`, every other
    parameter (norms, biases, sinks, router, tables) at torch_dtype.

    .. math:: B = \sum_{W\ converted} B_W + (N - \sum_{W\ converted} |W|)\, b_{dtype}

    Parameters
    ----------
    model : ModelSpec
        The model (a spec), with the `quantization` and `checkpoint_dtype` its config gave.

    Returns
    -------
    WeightBytes
        Bytes by component; `effective_bits` is the mean, 8 x bytes / parameters.

    Examples
    --------
    gpt-oss-20b: 19,110,297,600 expert weights at 4.25 bits and 1,804,459,584 BF16 parameters,
    13,761,264,768 bytes (the index's total_size).

    >>> from llm_cost.catalog import load_model
    >>> w = checkpoint_weight_bytes(load_model("gpt-oss-20b"))
    >>> w.total, round(w.effective_bits, 3)
    (13761264768, 5.264)
    """
    shipped = checkpoint_format(model)
    counts, mats, dtype_bytes = param_counts(model), _matrices(model), shipped.dtype_bytes

    def group(name: str, params: int) -> int:
        """Bytes of `params` parameters holding the weight matrices of group `name`."""
        if name not in shipped.converted:
            return params * dtype_bytes
        converted = sum(rows * cols for rows, cols in mats[name])
        return (params - converted) * dtype_bytes + sum(shipped.matrix_bytes(rows, cols)
                                                        for rows, cols in mats[name])

    attention = group("attention", counts.attention_block_per_layer)
    norms = counts.norms_per_layer * dtype_bytes
    router = counts.router_per_layer * dtype_bytes
    if model.moe is not None and model.moe.router_bias and shipped.router_bias_bytes:
        router += counts.num_experts * (shipped.router_bias_bytes - dtype_bytes)
    dense_layer = attention + group("dense_mlp", counts.dense_mlp_per_layer) + norms
    moe_shared = attention + norms + group("shared_experts", counts.shared_experts_per_layer) + router
    if counts.mixer_correction and "attention" in shipped.converted:
        raise _refused(model, f"{shipped.name} over recurrent (linear attention or Mamba) layers is not counted")
    always = (counts.num_dense_layers * dense_layer + counts.num_moe_layers * moe_shared
              + counts.final_norm * dtype_bytes
              + counts.mixer_correction * dtype_bytes)  # a hybrid's recurrent mixers in place of its attention
    expert = group("experts", counts.expert_params)
    tables = (counts.embedding + counts.position_embedding + counts.lm_head) * dtype_bytes
    total = tables + always + counts.num_moe_layers * counts.num_experts * expert
    return WeightBytes(embedding=counts.embedding * dtype_bytes,
                       position_embedding=counts.position_embedding * dtype_bytes,
                       lm_head=counts.lm_head * dtype_bytes, always=always, expert=expert,
                       num_moe_layers=counts.num_moe_layers, num_experts=counts.num_experts,
                       effective_bits=8 * total / counts.total)


def checkpoint_bytes(model: ModelSpec) -> CheckpointBytes:
    """The model's weights as its checkpoint ships them: the main model and its MTP modules.

    MTP (DeepSeek-V3's layer 61): the block as `counts.mtp.mtp_module` (FP8 like any layer),
    its copies of the embedding and the head, and `eh_proj` with the enorm / hnorm gains at
    torch_dtype (the shipped list has `eh_proj` in BF16).

    Parameters
    ----------
    model : ModelSpec
        The model (a spec).

    Returns
    -------
    CheckpointBytes
        Its format, the main model by component, the MTP modules, and `total`.

    Examples
    --------
    DeepSeek-V3: 688,574,839,360 bytes, the sum of its 91,991 tensors (module doc's sources).

    >>> from llm_cost.catalog import load_model
    >>> c = checkpoint_bytes(load_model("deepseek-v3"))
    >>> c.format, c.total
    ('fp8 e4m3 128x128', 688574839360)
    """


    model = as_model(model)
    shipped = checkpoint_format(model)
    mtp = 0
    if model.mtp_layers:
        from llm_cost.counts.mtp import mtp_module, mtp_params

        module = checkpoint_weight_bytes(mtp_module(model))
        own = module.total - (0 if model.mtp_stores_tables else module.embedding + module.lm_head)
        mtp = model.mtp_layers * (own + mtp_params(model).projection * shipped.dtype_bytes)
    vision = None
    if model.vision is not None:  # text only: the towers' counts not imported (the CLI's startup)
        from llm_cost.counts.vision import vision_params

        vision = vision_params(model)  # the tower and projector at torch_dtype
    return CheckpointBytes(format=shipped.name, weights=checkpoint_weight_bytes(model), mtp=mtp,
                           vision=vision.total * shipped.dtype_bytes if vision else 0)
