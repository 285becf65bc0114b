"""The time model's coefficients and its one formula: T of a pass over token rows.

    T = max((W + E(rows) x expert_bytes + kv_tokens x kv_token_bytes) / (BW eta_bw),
            (rows x row_flops + pairs x pair_flops) / (F eta_f)) + t_fixed

On a deployment (`llm_cost.parallel.deployed_cost`) the coefficients are one GPU's share of one
pipeline stage, and the pass crosses `stages` of them and the collectives:

    T = stages x max(memory, compute) + collectives(rows) + handoffs(rows) + t_fixed,
    collectives(rows) = comm_fixed_s + rows x comm_row_s,  handoffs(rows) = handoff_fixed_s + rows x handoff_row_s

(`overlap_comm`: max(stages x max(memory, compute), collectives(rows)) + handoffs(rows) + t_fixed: a
stage hand-off waits for its stage). One GPU: stages 1, no communication, and T is the formula
above bit for bit.

GEMMs of few rows reach less of the peak than a prefill's (`Profile.small_gemm_factor` r and
`gemm_half_rows` h; neutral by default, and then skipped), narrow ones too (`gemm_half_width`: a GEMM
w columns wide per GPU at w / (w + w_h), `gemm_rows`): a GEMM of m rows runs at
eta_f ramp(m), ramp(m) = r + (1 - r) m / (m + h), so rows x row_flops becomes
rows / ramp(rows) x row_flops in the compute time. A routed expert's GEMMs see only its own rows,
m_e = rows x k / E(rows) (E the experts those rows touch), so the experts' share s of row_flops
runs at ramp(m_e): (1 - s) rows / ramp(rows) + s rows / ramp(m_e). Attention pairs stay at eta_f
(measured kernels: the prefill table's (pairs + rows x0) / eta, `timed_pairs`); `flops` still counts
the FLOPs done.

(symbols in `llm_cost.roofline`). Windowed layers (sliding, Llama 4's chunks) keep at most their
window of K/V and a new row attends to at most that many keys: a uniform pass over such a model
(`windowed_pass`) counts kv_tokens and pairs in all-layer units, the windowed layers' share
capped, so the formula and its coefficients stay as they are. `PassCost` holds the coefficients for a model, accelerator,
profile and weight format; `step_time` (a uniform pass), the speculative formulas and the
batching simulator's mixed iterations all evaluate it. Every method takes numbers or numpy
arrays (broadcast) and checks nothing: validation belongs to the callers' entry points.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from llm_cost.counts import BF16_BYTES
from llm_cost.specs import BF16, Accelerator, ModelSpec, Profile, WeightFormat
from llm_cost.roofline.inplace import into
from llm_cost.roofline.inline_terms import INLINE, InlineTerms
from llm_cost.roofline.expert_load import busiest_gpu_experts, largest_normal_z
from llm_cost.roofline.gemm_rows import gemm_rows_parts, width_factor
from llm_cost.roofline.timing import StepTime
from llm_cost.roofline.pass_terms import (deployed_sum, expected_experts_touched, roofline_total,
                                          uniform_pass, windowed_pass)
from llm_cost.specs.deployment import attention_batch_for
from llm_cost.specs.validate import check_fields
from llm_cost.catalog.arguments import check_arguments
from llm_cost.errors import check_number

# Far beyond any deployment, and far from float overflow in FLOPs and bytes.
MAX_BATCH = 1e12
MAX_ROWS = 1e18
MAX_CONTEXT = 1e12


# the methods `time` calls: a subclass overriding one times a pass its own way (no inline coefficients)
_TIMING_METHODS = ("time", "deployed_total", "memory_s", "compute_s", "flops", "weight_bytes_read",
                   "collectives_s", "handoff_s", "comm_time_s")


@dataclass(frozen=True)
class PassCost:
    """The time model as coefficients: the one place T is evaluated (formula in the module doc).

    Examples
    --------
    A pass's coefficients from the specs, then T of a decode pass of 8 sequences with 1,024 cached
    tokens each (rows, K/V tokens read, attention pairs: `pass_terms.decode_pairs`):

    >>> import llm_cost as lc
    >>> cost = lc.PassCost.from_specs(lc.load_model("llama-3-8b"), lc.load_accelerator("h100-sxm"), "lecture")
    >>> cost.kernel_source, round(cost.weight_bytes / 1e9, 2), cost.kv_token_bytes
    ('datasheet', 15.01, 131072)
    >>> round(cost.time(8, 8 * 1024, 8 * 1024 + 8) * 1e3, 3)
    7.001

    Arrays give an array, element by element (batch 1, 8 and 64 at the same context):

    >>> import numpy as np
    >>> (cost.time(np.array([1, 8, 64]), np.array([1, 8, 64]) * 1024, np.array([1, 8, 64]) * 1025) * 1e3).round(3)
    array([6.651, 7.001, 9.806])
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
    # Windowed layers as ((window tokens, layers), ...) (`counts.layer_windows`) and the model's
    # layer count: uniform passes (`step`, `step_total`, `uniform_terms`) cap those layers' K/V
    # and pairs. () for a model without windows or a profile that ignores KV.
    kv_windows: tuple[tuple[int, int], ...] = ()
    num_layers: int = 0
    # A deployment (`llm_cost.parallel.deployed_cost`): a routed expert's rows come from
    # expert_rows_scale replicas (ep > tp); the pass crosses `stages` pipeline stages and collectives
    # of comm_fixed_s + rows x comm_row_s seconds, added (or hidden behind the rest: overlap_comm).
    expert_rows_scale: float = 1.0
    stages: int = 1
    comm_fixed_s: float = 0.0
    comm_row_s: float = 0.0
    handoff_fixed_s: float = 0.0
    handoff_row_s: float = 0.0
    overlap_comm: bool = False
    # The profile's GEMM ramp (r, h: module doc; r = 1 is none) and the routed experts' share of row_flops.
    small_gemm_factor: float = 1.0
    gemm_half_rows: float = 0.0
    expert_flops_share: float = 0.0
    # A GEMM's width (`gemm_rows`): the profile's half width w_h (0: none), the GEMMs' outside the routed
    # experts (their FLOP-weighted harmonic mean) and a routed expert's on one GPU (0: none or not known).
    gemm_half_width: float = 0.0
    dense_width: float = 0.0
    expert_width: float = 0.0
    # A hybrid's recurrent state, read and written once per sequence and pass, in all-layer K/V
    # tokens (`pass_terms.state_tokens_per_sequence`): uniform passes add batch x this to kv_tokens.
    state_tokens: float = 0.0
    # Expert parallelism: routed experts spread whole over `expert_parallel` GPUs (ep; 1 when each
    # expert is sharded over tp). The step waits for the busiest of them (`expert_load`): its experts
    # read and its (token, expert) pairs, not the average GPU's.
    expert_parallel: int = 1
    # Attention data parallel (`Deployment.dp_attention`): the coefficients are dp ranks' average, and
    # a uniform pass waits for the busiest rank's ceil(batch / dp) sequences (`rank_scale`).
    attention_dp: int = 1
    # Where the efficiencies come from: "datasheet" (the profile's figures) or the measured kernel
    # table's source (`kernels`, under Profile.kernels "measured" for a GPU that has one).
    kernel_source: str = "datasheet"
    # Measured operator tables beyond the GEMM's (`kernels`, under Profile.kernels "measured"): the routed
    # experts' grouped GEMMs as (flops_per_s over F eta_max of the MoE table, its r, its h in rows per
    # touched expert), () for none; the K/V bytes' time over the weights' (the GEMM table's bandwidth
    # over decode attention's); attention pairs timed as (pairs + rows x row_pairs) x pair_time_factor
    # (the prefill table's t = f (P + T x0) / (F eta): pair_time_factor = flops_per_s / (F_bf16 eta));
    # and the tables' names for the operator breakdown (`parallel.breakdown`; kv_source: the attention row's).
    expert_curve: tuple[float, float, float] = ()
    kv_time_factor: float = 1.0
    expert_source: str = ""
    kv_source: str = ""
    pair_time_factor: float = 1.0
    row_pairs: float = 0.0
    kv_curve: tuple[float, float] = ()  # decode attention's (bw_efficiency, eta): `kernels.kv_time_factor`

    def __post_init__(self) -> None:
        check_fields(self)
        for name in ("bytes_per_s", "flops_per_s"):  # a division by each follows
            check_number(name, getattr(self, name), low=0, low_open=True)
        # Seconds per K/V token and per attention pair, the slopes of memory_s and compute_s:
        # memory_s(rows, k + 1) = memory_s(rows, k) + kv_token_s and compute_s(rows, p + 1) =
        # compute_s(rows, p) + pair_s, up to rounding (what a cached token costs, as the kernel tables'
        # tests read it; no loop advances T by them: each pass is `time`'s). Derived attributes, not fields.
        object.__setattr__(self, "kv_token_s", self.kv_token_bytes * self.kv_time_factor / self.bytes_per_s)
        object.__setattr__(self, "pair_s", self.pair_flops * self.pair_time_factor / self.flops_per_s)
        # Measured prefill attention (`timed_pairs`): attention's seconds are not pairs x pair_flops / F eta_f.
        object.__setattr__(self, "attention_timed", self.pair_time_factor != 1.0 or self.row_pairs != 0.0)
        # GEMMs of few rows run below flops_per_s (a profile's small_gemm_factor < 1 and h > 0): an
        # attribute, not a property, read on every pass of the simulator's loops.
        gemm_ramped = self.small_gemm_factor != 1.0 and self.gemm_half_rows > 0.0
        object.__setattr__(self, "gemm_ramped", gemm_ramped)
        # narrow GEMMs (`gemm_rows.width_factor`): their time multipliers, 1 without a half width
        object.__setattr__(self, "dense_width_factor", width_factor(self.gemm_half_width, self.dense_width))
        object.__setattr__(self, "expert_width_factor", width_factor(self.gemm_half_width, self.expert_width)
                           if self.expert_flops_share else 1.0)
        narrow = self.dense_width_factor != 1.0 or self.expert_width_factor != 1.0
        object.__setattr__(self, "ramped", gemm_ramped or bool(self.expert_curve) or narrow)  # off the GEMMs' rows
        # The busiest GPU of an expert-parallel MoE layer sets the time (`expert_load`).
        busiest = self.expert_parallel > 1 and bool(self.num_experts) and bool(self.expert_flops_share)
        object.__setattr__(self, "busiest", busiest)
        object.__setattr__(self, "busiest_z", largest_normal_z(self.expert_parallel) if busiest else 0.0)
        # Pipeline stages or communication: T is more than max(memory, compute) + fixed (an attribute
        # for the same reason: `time` reads it on every pass).
        object.__setattr__(self, "deployed", self.stages != 1 or bool(self.comm_fixed_s) or bool(self.comm_row_s)
                           or bool(self.handoff_fixed_s) or bool(self.handoff_row_s))

    @classmethod
    @check_arguments()  # each spec, or its catalog name
    def from_specs(cls, model: ModelSpec, gpu: Accelerator, profile: Profile, weights: WeightFormat = BF16,
                   kv_bytes_per_element: float = BF16_BYTES) -> "PassCost":
        """The coefficients for this model, accelerator, profile and weight format (`pass_build`)."""
        from llm_cost.roofline.pass_build import coefficients

        return cls(**coefficients(model, gpu, profile, weights, kv_bytes_per_element))

    def inline_coefficients(self) -> InlineTerms | None:
        """The coefficients with which a hot loop evaluates `time` in one call, operation for operation
        (`InlineTerms.evaluator`, `memory_evaluator`, `decode_stretch`: `time`'s chain of methods per iteration
        costs a fifth of a fast path), or None where T is more than `inline_terms`' formula: a field not in
        `inline_terms.INLINE` or not in the state it supports (routed experts, a GEMM ramp, measured kernels,
        data-parallel attention, collectives overlapping compute, a field added since), or a subclass that
        times a pass its own way. The one source of T outside `time` (serving's fast paths ask it for them)."""
        known = self.__dict__.get("_inline")  # once per cost (frozen): a decode stretch asks every time
        if known is None:
            known = (self._inline_terms(),)
            object.__setattr__(self, "_inline", known)
        return known[0]

    def times_as_defined(self) -> bool:
        """Whether this cost times a pass by `PassCost`'s own methods (`time` and the terms it calls): False
        for a subclass that overrides one, which no fast path of the engine may evaluate in its stead."""
        cls = type(self)
        return all(getattr(cls, method) is getattr(PassCost, method) for method in _TIMING_METHODS)

    def _inline_terms(self) -> InlineTerms | None:
        """`inline_coefficients`, computed."""
        if not self.times_as_defined():
            return None
        if not all(field.name in INLINE and INLINE[field.name](getattr(self, field.name), self)
                   for field in fields(self)):  # an allow-list: a field it does not declare, no inline T
            return None
        return InlineTerms(self.weight_bytes, self.kv_token_bytes, self.bytes_per_s, self.row_flops,
                           self.pair_flops, self.flops_per_s, self.fixed_s, self.stages, self.comm_fixed_s,
                           self.comm_row_s, self.handoff_fixed_s, self.handoff_row_s)

    def rank_scale(self, batch):
        """The busiest attention rank's share of a uniform pass over its average share:
        ceil(batch / dp) x dp / batch (1 without data-parallel attention; numbers or arrays)."""
        if self.attention_dp == 1:
            return 1.0
        return attention_batch_for(batch, self.attention_dp) / batch

    def gemm_rows(self, rows, dense_scale=1.0):
        """Rows at full efficiency that take as long as the pass's `rows` on the ramp (module doc):
        rows / ramp(rows) = rows (rows + h) / (rows + r h), a MoE's expert share at ramp(m_e); under
        expert parallelism the expert share x the busiest GPU's pairs over the average's
        (`expert_load.busiest_gpu_pairs_factor`); `rows` itself without either. `dense_scale`: the busiest
        attention rank's (`rank_scale`) under data-parallel attention; `s` the experts' share of
        row_flops."""
        if not (self.ramped or self.busiest):
            return rows * dense_scale if self.attention_dp != 1 else rows
        dense, experts = self.gemm_rows_parts(rows, dense_scale)
        s = self.expert_flops_share
        return (1.0 - s) * dense + s * experts if s else dense

    def gemm_rows_parts(self, rows, dense_scale=1.0):
        """(dense, routed): `gemm_rows` of the GEMMs outside the routed experts and of the routed experts,
        on the ramp and at their width per GPU (`gemm_rows.gemm_rows_parts`, whose doc has the formula)."""
        return gemm_rows_parts(self, rows, dense_scale)

    def uniform_terms(self, rows, batch, context):
        """(kv_tokens, pairs) of a uniform pass: `uniform_pass`, or `windowed_pass` for windowed layers
        (data-parallel attention: x `rank_scale(batch)`, the busiest rank's)."""
        if not self.kv_windows:
            kv_tokens, pairs = uniform_pass(rows, batch, context)
        else:
            kv_tokens, pairs = windowed_pass(rows, batch, context, self.kv_windows, self.num_layers)
        if self.state_tokens:
            kv_tokens = kv_tokens + batch * self.state_tokens
        if self.attention_dp != 1:
            scale = self.rank_scale(batch)
            return kv_tokens * scale, pairs * scale
        return kv_tokens, pairs

    def weight_bytes_read(self, rows):
        """Weight bytes a pass over `rows` rows reads (MoE: the experts those rows touch)."""
        if not self.num_experts:
            return self.weight_bytes
        if self.expert_rows_scale != 1.0:
            rows = rows * self.expert_rows_scale
        if self.busiest:  # the busiest GPU's experts, x ep in units of expert_bytes (one GPU's 1/ep share)
            return self.weight_bytes + self.expert_bytes * self.expert_parallel * busiest_gpu_experts(
                self.num_experts, self.experts_per_token, rows, self.expert_parallel)
        return self.weight_bytes + self.expert_bytes * expected_experts_touched(
            self.num_experts, self.experts_per_token, rows)

    def collectives_s(self, rows):
        """Seconds of the tp all-reduces and ep all-to-alls in a pass over `rows` rows (0 on one GPU)."""
        if not (self.comm_fixed_s or self.comm_row_s):
            return 0.0
        return self.comm_fixed_s + rows * self.comm_row_s

    def handoff_s(self, rows):
        """Seconds of the pipeline's stage hand-offs in a pass over `rows` rows (0 without stages)."""
        if not (self.handoff_fixed_s or self.handoff_row_s):
            return 0.0
        return self.handoff_fixed_s + rows * self.handoff_row_s

    def comm_time_s(self, rows):
        """All communication of a pass over `rows` rows: collectives and hand-offs."""
        return self.collectives_s(rows) + self.handoff_s(rows)

    def deployed_total(self, longer, rows):
        """stages x longer + collectives + hand-offs + fixed, `longer` = max(memory, compute) of one stage
        (overlap_comm: max(stages x longer, collectives) + hand-offs + fixed)."""
        return deployed_sum(longer, self.stages, self.collectives_s(rows), self.handoff_s(rows), self.fixed_s,
                            self.overlap_comm)

    def flops(self, rows, pairs):
        """GEMM rows plus attention pairs."""
        flops = rows * self.row_flops
        return flops + pairs * self.pair_flops if self.pair_flops else flops

    def timed_pairs(self, rows, pairs):
        """The pairs at the GEMMs' rate that take as long as `pairs` attention pairs of `rows` rows:
        (pairs + rows x row_pairs) x pair_time_factor (`pairs` itself without measured attention)."""
        if not self.attention_timed:
            return pairs
        return (pairs + rows * self.row_pairs) * self.pair_time_factor

    def memory_s(self, rows, kv_tokens):
        """Seconds to read the weights and move `kv_tokens` tokens' K/V (at `kv_time_factor`)."""
        kv = kv_tokens * self.kv_token_bytes
        return (self.weight_bytes_read(rows) + (kv * self.kv_time_factor if self.kv_time_factor != 1.0 else kv)) / self.bytes_per_s

    def compute_s(self, rows, pairs, dense_scale=1.0):
        """Seconds of arithmetic for `rows` rows and `pairs` attention pairs (GEMMs on the ramp:
        `gemm_rows`; `dense_scale`: the busiest attention rank's, `rank_scale`)."""
        gemm = self.ramped or self.busiest or self.attention_dp != 1
        if self.attention_timed:
            pairs = self.timed_pairs(rows, pairs)
        seconds = self.flops(self.gemm_rows(rows, dense_scale) if gemm else rows, pairs)  # a fresh number or array
        try:
            seconds /= self.flops_per_s  # a float array in place: no second 10^6-element temporary
        except TypeError:  # an integer array
            seconds = seconds / self.flops_per_s
        return seconds

    def time(self, rows, kv_tokens, pairs):
        """T in seconds; a float for numbers, an array for arrays."""
        if self.deployed:
            return self.deployed_total(roofline_total(self.memory_s(rows, kv_tokens),
                                                      self.compute_s(rows, pairs), 0.0), rows)
        return roofline_total(self.memory_s(rows, kv_tokens), self.compute_s(rows, pairs), self.fixed_s)

    def step(self, rows, batch, context, *, count_kv: bool = True):
        """The uniform pass of `step_time`, unchecked: `batch` sequences, `context` cached tokens each.

        `count_kv` False moves no K/V and computes no attention pairs (the article's convention).
        Windowed layers hold and attend to at most their window (`uniform_terms`).
        """
        kv_tokens, pairs = self.uniform_terms(rows, batch, context) if count_kv else (0.0, 0.0)
        read = self.weight_bytes_read(rows)  # once: the MoE term is a power per element
        flops = self.flops(rows, pairs)
        kv_bytes = kv_tokens * self.kv_token_bytes
        if self.attention_dp != 1:  # the busiest attention rank (`rank_scale`)
            compute_s = self.compute_s(rows, pairs, self.rank_scale(batch))
        else:
            plain = not (self.ramped or self.busiest or self.attention_timed)
            compute_s = flops / self.flops_per_s if plain else self.compute_s(rows, pairs)
        return StepTime(rows=rows, batch=batch, context=context, weight_bytes_read=read,
                        kv_bytes=kv_bytes, flops=flops,
                        memory_time_s=(read + kv_bytes * self.kv_time_factor) / self.bytes_per_s,
                        compute_time_s=compute_s, fixed_time_s=self.fixed_s,
                        comm_time_s=self.comm_time_s(rows), handoff_s=self.handoff_s(rows), stages=self.stages,
                        overlap_comm=self.overlap_comm)

    def step_total(self, rows, batch, context, *, count_kv: bool = True, with_bound: bool = False,
                   rows_scratch: bool = False):
        """`step(rows, batch, context).step_time_s`, equal bit for bit, without the StepTime and with
        the fewest temporaries (million-point sweeps: `speculative.roofline_speedup`).

        Each operation of `step` in the same order, written into an array it has just made where
        the shapes allow. `with_bound`: return (step_time_s, compute_time_s > memory_time_s) (step's bound is
        "compute"). `rows_scratch`: `rows` is a float temporary the caller gives up, used as the
        result's storage; otherwise no input is modified.
        """
        if self.deployed or self.ramped or self.busiest or self.attention_dp != 1 or self.attention_timed:  # the plain path (not the hot loop)
            time = self.step(rows, batch, context, count_kv=count_kv)
            return (time.step_time_s, time.compute_time_s > time.memory_time_s) if with_bound else time.step_time_s
        kv_tokens, pairs = self.uniform_terms(rows, batch, context) if count_kv else (0.0, 0.0)
        memory = self.memory_s(rows, kv_tokens)  # a number, except for MoE or K/V
        del kv_tokens
        compute = into(rows, "multiply", self.row_flops) if rows_scratch else rows * self.row_flops
        del rows
        if self.pair_flops:
            compute = into(compute, "add", pairs * self.pair_flops)
        del pairs
        compute = into(compute, "true_divide", self.flops_per_s)
        bound = compute > memory if with_bound else None
        if isinstance(memory, float) and isinstance(compute, float):
            total = roofline_total(memory, compute, self.fixed_s)
        else:
            total = into(compute, "maximum", memory)  # max(memory, compute): no NaN, same bits
            if self.fixed_s:
                total = into(total, "add", self.fixed_s)
        return (total, bound) if with_bound else total

