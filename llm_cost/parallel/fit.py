"""Does a deployment fit? One GPU's weights + K/V + activation workspace against its memory (the
profile's basis: `Deployment.memory_bytes`) less the reserve, and the context against the model's limit.

    needed    = weight_bytes_per_gpu + batch x kv_bytes(model, context + rows / batch) x kv_share
                  x ceil(L / pp) / L + workspace

(one GPU of the largest pipeline stage: its layers' K/V of the one static batch in flight, as the
throughput counts it: `Deployment.batches_in_flight`)
    available = memory x (1 - reserve)     (memory: `Deployment.memory_bytes`: the marketed figure
                                           by default and under the documents' presets, usable_memory_bytes
                                           under `measured` and calibrated profiles)

The workspace is an estimate (vLLM measures it by profiling a dummy batch; we count it): the live
activations of one layer, reused layer after layer, for `rows` rows:

    rows x 2 x (2 hidden + (q_dim + 2 kv_dim) / tp + 2 intermediate / tp)     (BF16: residual and
                                           normed input; q, k, v; gate and up, the widest MLP)
    + sampling rows x vocab / tp x 4     (FP32 logits; a prefill samples its last row only)

Under data-parallel attention (`Deployment.dp_attention`) the busiest of the dp = tp ranks holds the
K/V of ceil(batch / dp) whole sequences and the workspace of their rows, at attention_tp 1.

A deployment that does not fit keeps its time (the article's "70B on one card, assuming it fits");
`Fit.reason` says by how much it falls short, for the warning and the rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.counts import kv_bytes
from llm_cost.parallel.shard import ACTIVATION_BYTES, kv_bytes_per_token_per_gpu, weight_bytes_per_gpu
from llm_cost.specs import Accelerator, ModelSpec, WeightFormat
from llm_cost.specs.deployment import Deployment
from llm_cost.catalog.arguments import MAX_COUNT, Number, check_arguments

LOGIT_BYTES = 4  # FP32 logits
# A pass with more new rows per sequence than this is a prefill: it samples each sequence's last row
# only (decode samples 1 per sequence, verification gamma + 1)
MAX_SAMPLED_ROWS_PER_SEQUENCE = 64


@dataclass(frozen=True)
class Fit:
    """One GPU's memory on a deployment: what it needs, what it has, and whether the context is allowed."""

    weight_bytes: float  # this GPU's share of the weights
    kv_bytes: float  # this GPU's share of the batch's K/V (windowed layers capped)
    workspace_bytes: float  # activation workspace estimate (module doc)
    available_bytes: float  # the memory (on `memory_basis`) less the reserve
    context: float  # tokens per sequence after the pass: context + rows / batch
    context_limit: int  # the model's max_position_embeddings (0: unknown, not checked)
    memory_basis: str  # what available_bytes counts from: "usable" or "marketed" memory

    def beside(self, other: "Fit") -> "Fit":
        """This fit with `other`'s model on the same GPUs (a draft beside its target): weights and K/V add,
        the workspace is reused (the larger counts)."""
        import dataclasses

        return dataclasses.replace(self, weight_bytes=self.weight_bytes + other.weight_bytes,
                                   kv_bytes=self.kv_bytes + other.kv_bytes,
                                   workspace_bytes=max(self.workspace_bytes, other.workspace_bytes))

    @property
    def needed_bytes(self) -> float:
        return self.weight_bytes + self.kv_bytes + self.workspace_bytes

    @property
    def fits_memory(self) -> bool:
        return self.needed_bytes <= self.available_bytes

    @property
    def fits_context(self) -> bool:
        return not self.context_limit or self.context <= self.context_limit

    @property
    def fits(self) -> bool:
        return self.fits_memory and self.fits_context

    @property
    def reason(self) -> str:
        """Why it does not fit, in one line ('' when it fits)."""
        why = []
        if not self.fits_memory:
            why.append(f"needs {self.needed_bytes / 1e9:.1f} GB per GPU (weights {self.weight_bytes / 1e9:.1f}, "
                       f"KV {self.kv_bytes / 1e9:.1f}, activations {self.workspace_bytes / 1e9:.1f}) of "
                       f"{self.available_bytes / 1e9:.1f} GB ({self.memory_basis}) after the reserve: short by "
                       f"{(self.needed_bytes - self.available_bytes) / 1e9:.1f} GB")
        if not self.fits_context:
            why.append(f"context {self.context:g} exceeds the model's limit of {self.context_limit} tokens")
        return "; ".join(why)


@check_arguments()
def workspace_bytes(model: ModelSpec, rows: float, batch: float, tp: int = 1) -> float:
    """Activation workspace of a pass over `rows` rows of `batch` sequences on one GPU of a tp group
    (the module doc's estimate)."""
    widest = model.intermediate_size
    if model.moe is not None:
        widest = max(widest, model.moe.experts_per_token * model.moe.expert_intermediate_size)
    per_row = 2 * model.hidden_size + (model.q_dim + 2 * model.kv_dim) / tp + 2 * widest / tp
    sampled = rows if rows <= MAX_SAMPLED_ROWS_PER_SEQUENCE * batch else batch
    return rows * ACTIVATION_BYTES * per_row + sampled * model.vocab_size / tp * LOGIT_BYTES


@check_arguments(batch=Number(0, 1e12, low_open=True), arrays=("context",))
def deployment_fit(model: ModelSpec, gpu: Accelerator, deployment: Deployment, *, weights: WeightFormat,
                   rows: float, batch: float, context: float) -> Fit:
    """`Fit` of one GPU of `deployment` for a pass over `rows` rows of `batch` sequences with `context`
    cached tokens each (numbers; the K/V is the cache after the pass: context + rows / batch tokens,
    for the one batch in flight: `Deployment.batches_in_flight`)."""
    after = context + rows / batch
    per_sequence = kv_bytes_per_token_per_gpu(model, kv_bytes(model, after, deployment.kv_bytes_per_element), deployment)
    dp = deployment.attention_dp
    held = deployment.attention_batch(batch)  # batch, or the busiest rank's sequences x dp
    return Fit(weight_bytes=weight_bytes_per_gpu(model, weights, deployment),
               kv_bytes=held * per_sequence,
               workspace_bytes=workspace_bytes(model, rows * held / batch / dp, held / dp, deployment.attention_tp),
               available_bytes=deployment.available_bytes(gpu), memory_basis=deployment.basis,
               context=after, context_limit=model.max_position_embeddings)


@check_arguments(tokens=Number(1, MAX_COUNT, integer=True), rows_per_sequence=Number(1, 1e6, integer=True))
def largest_batch(model: ModelSpec, gpu: Accelerator, deployment: Deployment, *, weights: WeightFormat,
                  tokens: int, rows_per_sequence: int = 1) -> int:
    """The most sequences holding `tokens` tokens each after a pass of `rows_per_sequence` new rows
    (decode: 1) whose weights, K/V and workspace fit one GPU of `deployment` (`Fit.fits_memory` of
    `deployment_fit`, the check every timing row makes); 0 when not even one does. One replica's.

    Examples
    --------
    Llama-3-8B on an H100 at 4,096 tokens (the article's 80 GB): 55.94 GB beside the weights, 0.537 GB
    of K/V and 0.6 MB of activations a sequence; by default on the memory the driver reports (81,559
    MiB), more.

    >>> from llm_cost.catalog import load_accelerator, load_model
    >>> from llm_cost.specs import BF16
    >>> l8, h100 = load_model("llama-3-8b"), load_accelerator("h100-sxm")
    >>> largest_batch(l8, h100, Deployment(memory_basis="marketed"), weights=BF16, tokens=4096)
    104
    >>> largest_batch(l8, h100, Deployment(), weights=BF16, tokens=4096)
    113
    """
    context = tokens - rows_per_sequence
    return most_that_fit(lambda batch: deployment_fit(model, gpu, deployment, weights=weights,
                                                      rows=batch * rows_per_sequence, batch=batch,
                                                      context=context).fits_memory)


def most_that_fit(fits, limit: int = 1 << 40) -> int:
    """The largest n >= 1 with `fits(n)` for a `fits` that holds up to some n and fails past it (a
    batch's memory), 0 when `fits(1)` fails; doubling, then bisection (about 2 log2 n calls).

    >>> most_that_fit(lambda n: n * n <= 1000)
    31
    """
    if not fits(1):
        return 0
    low, high = 1, 2
    while fits(high):
        low, high = high, high * 2
        if high > limit:
            return low
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if fits(mid) else (low, mid)
    return low
