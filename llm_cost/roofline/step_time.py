"""The time model: one forward pass over `rows` token rows (SPEC.md, "The time model").

    T(m) = max(bytes_read / (BW * eta_bw), flops(m) / (F * eta_f)) + t_fixed

- bytes_read = weight bytes read + KV bytes (batch x context cached tokens read, the m new
  tokens' K/V written), the KV term only when the profile counts KV.
- flops(m) = m x 2 x (active GEMM params) + attention: each of a sequence's r = m / batch new
  rows attends to the context and to the new rows before it and itself (r*ctx + r(r+1)/2 pairs).
- MoE: a pass over m rows reads the experts those rows touch; under uniform top-k routing a
  layer touches N (1 - (1 - k/N)^m) distinct experts in expectation, so T(m) of a MoE model grows
  with m even below the ridge.

`PassCost` is the one implementation of T; everything that times a pass (this module's
`step_time`, `roofline_array.step_times`, the batching simulator's `server.IterationCost`)
evaluates it.

Seed 002 (article preset): Llama-3-8B on H100, decode bound 4.79 ms, m* ~ 316.
Seed 000 demo 05 (lecture preset): Llama-3.1-8B, H100, ctx 1024: 6.65 ms for 1..129 rows, 7.76 ms
for 257; batch 512, ctx 512: 19.45 ms, 66.92 ms to verify 5 tokens per sequence.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.counts import (WeightBytes, attention_flops_per_context_token, kv_bytes_per_token,
                             param_counts, weight_bytes)
from llm_cost.errors import check_number

# Far beyond any deployment, and far from float overflow in FLOPs and bytes.
MAX_BATCH = 1e12
MAX_ROWS = 1e18
MAX_CONTEXT = 1e12
from llm_cost.specs.model import BF16, Accelerator, ModelSpec, Profile, WeightFormat


@dataclass(frozen=True)
class StepTime:
    """One forward pass: its inputs, what it reads and computes, and how long it takes."""

    rows: float
    batch: float
    context: float
    weight_bytes_read: float
    kv_bytes: float
    flops: float
    memory_s: float
    compute_s: float
    fixed_s: float

    @property
    def total_s(self) -> float:
        return max(self.memory_s, self.compute_s) + self.fixed_s

    @property
    def bound(self) -> str:
        """'memory' or 'compute': which side of the roofline sets the time."""
        return "compute" if self.compute_s > self.memory_s else "memory"

    @property
    def bytes_read(self) -> float:
        return self.weight_bytes_read + self.kv_bytes


def expected_experts_touched(num_experts: int, experts_per_token: int, rows: float) -> float:
    """Distinct experts `rows` tokens touch in one MoE layer under uniform top-k routing.

    E = N (1 - (1 - k/N)^m): each row picks k of N experts; an expert is missed by all m rows
    with probability (1 - k/N)^m.
    """
    if num_experts == 0:
        return 0.0
    return num_experts * (1.0 - (1.0 - experts_per_token / num_experts) ** rows)


def weight_bytes_read(model: ModelSpec, profile: Profile, rows: float,
                      fmt: WeightFormat = BF16) -> float:
    """Weight bytes one forward pass over `rows` rows reads.

    Every shared weight once; the input embedding (and a learned position table) only when the
    profile reads lookups (a tied table is the LM head and is always read); routed experts as
    many as the rows touch.
    """
    wb = weight_bytes(model, fmt)
    read = _shared_bytes_read(wb, profile)
    if wb.num_moe_layers:
        moe = model.moe
        touched = expected_experts_touched(moe.num_experts, moe.experts_per_token, rows)
        read += wb.num_moe_layers * wb.expert * touched  # as PassCost: expert_bytes x touched
    return read


def _shared_bytes_read(wb: WeightBytes, profile: Profile) -> float:
    """The weight bytes every pass reads (routed experts excluded); see `weight_bytes_read`."""
    read = wb.always + wb.lm_head
    if profile.read_input_embedding:
        read += wb.embedding + wb.position_embedding
    elif not wb.lm_head:  # tied: the table is read as the LM head
        read += wb.embedding
    return read


@dataclass(frozen=True)
class PassCost:
    """The time model as coefficients: the one place T is evaluated.

    A pass over `rows` token rows that moves `kv_tokens` tokens' K/V (cached ones read, new ones
    written) and computes `pairs` (query, key) attention pairs takes

        T = max((W + E(rows) x expert_bytes + kv_tokens x kv_token_bytes) / bytes_per_s,
                (rows x row_flops + pairs x pair_flops) / flops_per_s) + fixed_s

    with W the weights every pass reads and E(rows) the routed experts the rows touch per MoE
    layer. `step_time` (a uniform pass: `batch` sequences with `context` cached tokens each),
    `roofline_array.step_times` (arrays), `server.IterationCost` (a batching simulator's mixed
    iterations, a subclass) all evaluate this class. Every method takes numbers or numpy
    arrays (broadcast); inputs are unchecked.
    """

    weight_bytes: float  # read by every pass (routed experts excluded)
    kv_token_bytes: float  # one token's K/V, all layers (0 when the profile ignores KV)
    row_flops: float  # GEMM FLOPs of one row: 2 x active GEMM parameters
    pair_flops: float  # attention FLOPs of one (query, key) pair, all layers (0 without KV)
    bytes_per_s: float  # effective bandwidth: BW x eta_bw
    flops_per_s: float  # effective compute: F x eta_f
    fixed_s: float  # per pass: launches, scheduling, sampling
    expert_bytes: float = 0.0  # one routed expert in every MoE layer
    num_experts: int = 0
    experts_per_token: int = 0

    def __post_init__(self) -> None:
        # Seconds per K/V token and per attention pair, for loops that advance T by increments
        # (the simulator's decode stretches): memory_s(rows, k + 1) = memory_s(rows, k) +
        # kv_token_s and compute_s(rows, p + 1) = compute_s(rows, p) + pair_s, up to rounding.
        # Derived attributes, not fields, so that a hot loop reads them at attribute speed.
        object.__setattr__(self, "kv_token_s", self.kv_token_bytes / self.bytes_per_s)
        object.__setattr__(self, "pair_s", self.pair_flops / self.flops_per_s)

    @classmethod
    def from_specs(cls, model: ModelSpec, gpu: Accelerator, profile: Profile, fmt: WeightFormat = BF16,
                   kv_bytes_per_element: float = 2.0):
        """The coefficients for this model, accelerator, profile and weight format."""
        kv = profile.count_kv
        wb = weight_bytes(model, fmt)
        moe = model.moe
        return cls(
            weight_bytes=_shared_bytes_read(wb, profile),
            kv_token_bytes=kv_bytes_per_token(model, kv_bytes_per_element) if kv else 0.0,
            row_flops=2 * param_counts(model).gemm_active,
            pair_flops=attention_flops_per_context_token(model) if kv else 0.0,
            bytes_per_s=gpu.bandwidth_bytes_per_s * profile.bw_efficiency,
            flops_per_s=gpu.bf16_flops_per_s * profile.compute_efficiency,
            fixed_s=profile.fixed_time_s,
            expert_bytes=wb.num_moe_layers * wb.expert if moe else 0.0,
            num_experts=moe.num_experts if moe else 0,
            experts_per_token=moe.experts_per_token if moe else 0)

    def weight_bytes_read(self, rows):
        """Weight bytes a pass over `rows` rows reads (MoE: the experts those rows touch)."""
        if not self.num_experts:
            return self.weight_bytes
        return self.weight_bytes + self.expert_bytes * expected_experts_touched(
            self.num_experts, self.experts_per_token, rows)

    def flops(self, rows, pairs):
        """GEMM rows plus attention pairs."""
        flops = rows * self.row_flops
        return flops + pairs * self.pair_flops if self.pair_flops else flops

    def memory_s(self, rows, kv_tokens):
        """Seconds to read the weights and move `kv_tokens` tokens' K/V."""
        return (self.weight_bytes_read(rows) + kv_tokens * self.kv_token_bytes) / self.bytes_per_s

    def compute_s(self, rows, pairs):
        """Seconds of arithmetic for `rows` rows and `pairs` attention pairs."""
        seconds = self.flops(rows, pairs)  # a fresh number or array
        try:
            seconds /= self.flops_per_s  # a float array in place: no second 10^6-element temporary
        except TypeError:  # an integer array
            seconds = seconds / self.flops_per_s
        return seconds

    def time(self, rows, kv_tokens, pairs):
        """T in seconds; a float for numbers, an array for arrays."""
        memory, compute = self.memory_s(rows, kv_tokens), self.compute_s(rows, pairs)
        if isinstance(memory, float) and isinstance(compute, float):
            return (memory if memory > compute else compute) + self.fixed_s
        import numpy as np

        return np.maximum(memory, compute) + self.fixed_s

def uniform_pass(rows, batch, context):
    """(K/V tokens moved, attention pairs) of a pass over `batch` sequences of `context` cached tokens.

    Each sequence reads its `context` cached tokens and writes its r = rows / batch new ones; each
    new row attends to the context and to the new rows before it and itself: r*ctx + r(r+1)/2.
    """
    per_seq = rows / batch
    return batch * context + rows, batch * (per_seq * context + per_seq * (per_seq + 1) / 2)


def step_time(model: ModelSpec, gpu: Accelerator, profile: Profile, *, rows: float = 1,
              batch: float = 1, context: float = 0, fmt: WeightFormat = BF16,
              kv_bytes_per_element: float = 2) -> StepTime:
    """T(m) for one forward pass over `rows` rows from `batch` sequences with `context` cached tokens.

    rows >= batch; rows / batch new rows per sequence (1 for plain decode, gamma + 1 to verify
    a chain of gamma drafts). See the module docstring for the formula and its sources.
    """
    check_number("--batch", batch, low=1, high=MAX_BATCH)
    check_number("--rows (at least one per sequence of the batch)", rows, low=batch, high=MAX_ROWS)
    check_number("--context", context, low=0, high=MAX_CONTEXT)
    weights, kv, flops, memory_s, compute_s = pass_costs(
        model, gpu, profile, rows=rows, batch=batch, context=context, fmt=fmt,
        kv_bytes_per_element=kv_bytes_per_element)
    return StepTime(rows=rows, batch=batch, context=context, weight_bytes_read=weights, kv_bytes=kv,
                    flops=flops, memory_s=memory_s, compute_s=compute_s, fixed_s=profile.fixed_time_s)


def pass_costs(model: ModelSpec, gpu: Accelerator, profile: Profile, *, rows, batch, context,
               fmt: WeightFormat = BF16, kv_bytes_per_element: float = 2):
    """(weight bytes read, KV bytes, FLOPs, memory s, compute s) of one uniform pass; inputs unchecked.

    `PassCost` evaluated at `uniform_pass(rows, batch, context)`; rows, batch and context may be
    numbers or numpy arrays (broadcast). `step_time` validates, then calls this.
    """
    return uniform_costs(PassCost.from_specs(model, gpu, profile, fmt, kv_bytes_per_element),
                         rows=rows, batch=batch, context=context, count_kv=profile.count_kv)


def uniform_costs(cost: "PassCost", *, rows, batch, context, count_kv: bool):
    """(weight bytes read, KV bytes, FLOPs, memory s, compute s) of `cost` over a uniform pass."""
    kv_tokens, pairs = uniform_pass(rows, batch, context) if count_kv else (0.0, 0.0)
    return (cost.weight_bytes_read(rows), kv_tokens * cost.kv_token_bytes, cost.flops(rows, pairs),
            cost.memory_s(rows, kv_tokens), cost.compute_s(rows, pairs))


def ridge_point(gpu: Accelerator, profile: Profile) -> float:
    """Effective ridge (FLOP/byte): F * eta_f / (BW * eta_bw). H100 peak: 989e12 / 3.35e12 = 295."""
    return gpu.ridge_flops_per_byte * profile.compute_efficiency / profile.bw_efficiency


def first_crossing(f, low: float, high: float) -> float:
    """Smallest x in [low, high] with f(x) >= 0 (f may dip before it rises): scan, then bisect."""
    if f(low) >= 0:
        return low
    x_prev, x = low, low
    while x < high:
        x = min(high, x * 1.25 + 1)
        if f(x) >= 0:
            break
        x_prev = x
    else:
        return float("inf")
    lo, hi = x_prev, x
    for _ in range(100):
        mid = (lo + hi) / 2
        if f(mid) >= 0:
            hi = mid
        else:
            lo = mid
        if hi - lo < 1e-9 * hi:
            break
    return hi


def critical_rows(model: ModelSpec, gpu: Accelerator, profile: Profile, *, batch: float = 1,
                  context: float = 0, fmt: WeightFormat = BF16) -> float:
    """Rows per pass (from `batch` sequences) where compute time reaches memory time.

    Below it extra rows are free. Dense, no KV: bytes / (2 N) x ridge (article: ~316 for
    Llama-3-8B on H100; lecture preset: ridge x 0.6 / 0.8 ~ 221, "about 220").
    """

    def gap(m: float) -> float:
        t = step_time(model, gpu, profile, rows=m, batch=batch, context=context, fmt=fmt)
        return t.compute_s - t.memory_s

    return first_crossing(gap, float(batch), 1e12)


def critical_batch(model: ModelSpec, gpu: Accelerator, profile: Profile, *,
                   rows_per_sequence: float = 1, context: float = 0,
                   fmt: WeightFormat = BF16) -> float:
    """Batch at which a pass of `rows_per_sequence` rows per sequence becomes compute-bound.

    Decode (1 row): about the ridge for BF16 weights; verifying gamma drafts (gamma + 1 rows):
    about ridge / (gamma + 1) (seed 002, chapter 2.4).
    """
    check_number("rows per sequence", rows_per_sequence, low=1)

    def gap(b: float) -> float:
        t = step_time(model, gpu, profile, rows=b * rows_per_sequence, batch=b,
                      context=context, fmt=fmt)
        return t.compute_s - t.memory_s

    return first_crossing(gap, 1.0, 1e12)
