"""The server a batching simulation runs on: the cost of one mixed iteration and the KV capacity.

An iteration of iteration-level scheduling mixes sequences in different states (the lecture
§3.2, StepModel.mixed_time): decoding requests feed 1 row each and read their cached KV; new
requests feed their whole prompt; the weights are read once. Our roofline (`llm_cost.roofline`)
gives, for a pass over `rows` rows that reads `kv_read` cached tokens, writes the rows' K/V and
computes `pairs` (query, key) attention pairs:

    T = max((weights + (kv_read + rows) x kv_bytes) / (BW x eta_bw),
            (rows x 2 x N_gemm + pairs x attn_flops) / (F x eta_f)) + t_fixed

which is `step_time` term by term: a decoding request with c cached tokens adds 1 row and c + 1
pairs; a prompt of P tokens adds P rows and P (P + 1) / 2 pairs. The coefficients are computed
once so that an iteration costs a few float operations.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.counts import attention_flops_per_context_token, kv_bytes_per_token, param_counts, weight_bytes
from llm_cost.errors import InvalidValueError, check_number
from llm_cost.memory import DEFAULT_RESERVE, kv_capacity, model_max_len
from llm_cost.roofline import expected_experts_touched, weight_bytes_read
from llm_cost.specs import BF16, PRESETS, Accelerator, ModelSpec, Profile, WeightFormat


@dataclass(frozen=True)
class IterationCost:
    """Seconds per unit of each term of T (see the module docstring)."""

    weight_s: float  # reading the weights every pass reads (routed experts excluded)
    kv_token_s: float  # reading or writing one token's K/V, all layers
    row_s: float  # GEMM compute of one row
    pair_s: float  # attention compute of one (query, key) pair, all layers
    fixed_s: float  # per pass: launches, scheduling, sampling
    expert_s: float = 0.0  # reading one routed expert in every MoE layer
    num_experts: int = 0
    experts_per_token: int = 0

    @classmethod
    def from_roofline(cls, model: ModelSpec, gpu: Accelerator, profile: Profile,
                      fmt: WeightFormat = BF16, kv_bytes_per_element: float = 2.0) -> "IterationCost":
        """The coefficients of `roofline.step_time` for this model, accelerator and profile."""
        bw = gpu.bandwidth_bytes_per_s * profile.bw_efficiency
        flops = gpu.bf16_flops_per_s * profile.compute_efficiency
        kv = profile.count_kv
        wb = weight_bytes(model, fmt)
        moe = model.moe
        return cls(
            weight_s=weight_bytes_read(model, profile, 0, fmt) / bw,  # 0 rows touch no expert
            kv_token_s=kv_bytes_per_token(model, kv_bytes_per_element) / bw if kv else 0.0,
            row_s=2 * param_counts(model).gemm_active / flops,
            pair_s=attention_flops_per_context_token(model) / flops if kv else 0.0,
            fixed_s=profile.fixed_time_s,
            expert_s=wb.num_moe_layers * wb.expert / bw if moe else 0.0,
            num_experts=moe.num_experts if moe else 0,
            experts_per_token=moe.experts_per_token if moe else 0)

    @classmethod
    def unit(cls) -> "IterationCost":
        """Every iteration takes 1 s: a simulation counted in iterations (exercise 10)."""
        return cls(0.0, 0.0, 0.0, 0.0, 1.0)

    def weights_s(self, rows: float) -> float:
        """Weight read time of a pass over `rows` rows (MoE: the experts those rows touch)."""
        if not self.num_experts:
            return self.weight_s
        return self.weight_s + self.expert_s * expected_experts_touched(
            self.num_experts, self.experts_per_token, rows)

    def time(self, rows: float, kv_tokens: float, pairs: float) -> float:
        """T for `rows` rows moving `kv_tokens` K/V tokens (read + written) and `pairs` pairs."""
        memory = self.weights_s(rows) + kv_tokens * self.kv_token_s
        compute = rows * self.row_s + pairs * self.pair_s
        return (memory if memory > compute else compute) + self.fixed_s

    def prefill_s(self, prompt: int) -> float:
        """One request's prompt alone: P rows, P K/V written, P (P + 1) / 2 pairs."""
        return self.time(prompt, prompt, prompt * (prompt + 1) / 2)

    def decode_s(self, context: float, batch: int = 1) -> float:
        """`batch` requests with `context` cached tokens each generating one token."""
        return self.time(batch, batch * (context + 1), batch * (context + 1))


@dataclass(frozen=True)
class Server:
    """One model replica: iteration cost, KV tokens it can hold, the maximum length to reserve."""

    cost: IterationCost
    kv_capacity_tokens: int
    max_len: int
    description: str = ""

    def __post_init__(self) -> None:
        check_number("KV capacity (tokens)", self.kv_capacity_tokens, low=1, integer=True)
        check_number("--max-len", self.max_len, low=1, integer=True)

    @classmethod
    def from_specs(cls, model: ModelSpec, gpu: Accelerator, profile: Profile = PRESETS["lecture"], *,
                   reserve: float = DEFAULT_RESERVE, fmt: WeightFormat = BF16,
                   kv_bytes_per_element: float = 2.0, kv_tokens: int | None = None,
                   max_len: int | None = None) -> "Server":
        """GPT-3 13B on one A100 40GB with the lecture preset is the lecture's setting (§3.3).

        kv_tokens overrides the capacity computed from memory, weights and reserve.
        """
        if kv_tokens is None:
            cap = kv_capacity(model, gpu, reserve=reserve, fmt=fmt, kv_bytes_per_element=kv_bytes_per_element)
            if cap.kv_tokens < 1:
                raise InvalidValueError(
                    f"{model.name} leaves no KV room on {gpu.name}: weights {cap.weight_bytes / 1e9:.2f} GB, "
                    f"usable {cap.usable_bytes / 1e9:.2f} GB (reserve {reserve:g}), short by "
                    f"{max(cap.shortfall_bytes, cap.kv_bytes_per_token - cap.kv_bytes_available) / 1e9:.3f} GB")
            kv_tokens = cap.kv_tokens
        else:
            check_number("--kv-tokens", kv_tokens, low=1, integer=True)
        return cls(IterationCost.from_roofline(model, gpu, profile, fmt, kv_bytes_per_element),
                   int(kv_tokens), model_max_len(model, max_len),
                   f"{model.name} on {gpu.name}, preset {profile.name}")
