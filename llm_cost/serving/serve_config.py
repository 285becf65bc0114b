"""What the serving engine is told: KV policy, preemption, chunked prefill, speculation, pipeline.

`ServeConfig` is the engine's one input beside the workload and the replica; `SpecConfig` says how
each decoding sequence speculates inside the batch (the lecture §11) and how gamma is chosen per
iteration (§9.3). The host link for swapping is `host_link_bytes_per_s`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llm_cost.errors import InvalidValueError, check_choice, check_number
from llm_cost.catalog.arguments import check_arguments
from llm_cost.specs.validate import check_fields, check_value
from llm_cost.speculative.inputs import GAMMA_MAX  # the closed forms' range: one bound of --spec-gamma

RESERVATION_POLICIES = ("declared", "max_len", "none", "paged")
PREEMPTIONS = ("recompute", "swap")
SPEC_POLICIES = ("fixed", "off-above-batch", "adaptive")
PIPELINES = ("orca", "microbatch", "serial")
SCHEDULERS = ("iteration", "request")
# PCIe Gen5 x16: 32 GT/s x 16 lanes, 128b/130b: about 63 GB/s per direction, quoted as 64 GB/s
# (NVIDIA's H100 datasheet: "PCIe Gen5: 128GB/s" bidirectional). The host link of a GPU whose
# datasheet interconnect is not PCIe (NVLink, Infinity Fabric, ICI are GPU-to-GPU links).
PCIE_GEN5_X16_BYTES_PER_S = 64e9


@check_arguments()
def host_link_bytes_per_s(gpu) -> float:
    """Bytes per second one GPU moves to or from host memory, one direction (swap preemption).

    The datasheet's `interconnect_bytes_per_s` when its interconnect is PCIe (per direction
    already); otherwise the assumption `PCIE_GEN5_X16_BYTES_PER_S` (64e9 B/s).

    >>> from llm_cost.catalog import load_accelerator
    >>> host_link_bytes_per_s(load_accelerator("l4")), host_link_bytes_per_s(load_accelerator("h100-sxm"))
    (32000000000.0, 64000000000.0)
    """
    if gpu is not None and "pcie" in (gpu.interconnect or "").lower() and gpu.interconnect_bytes_per_s:
        return float(gpu.interconnect_bytes_per_s)
    return PCIE_GEN5_X16_BYTES_PER_S


@dataclass(frozen=True)
class SpecConfig:
    r"""Speculative decoding inside the batch: gamma drafts per sequence, acceptance, the policy.

    Each decoding sequence feeds gamma + 1 rows to the verification; it accepts n drafts with
    P(n >= k) = alpha^k (k <= gamma, Eq. 1's independent positions) and gains n + 1 tokens; the
    rejected positions' K/V roll back. The draft runs gamma steps over the decoding sequences,
    each costing `c` x the target's plain decode step (Leviathan's c), or a draft model's own step.

    .. math:: E[\mathit{tokens}] = \frac{1 - \alpha^{\gamma + 1}}{1 - \alpha},\quad
              T_{round} = \gamma\,T_{draft} + T_{verify}(B(\gamma + 1))

    policy: `fixed` (gamma always), `off-above-batch` (0 when more than `off_above` sequences
    decode), `adaptive` (each iteration the gamma in 0..gamma maximising expected tokens per second
    at that iteration's batch: the lecture §9.3). `bursty`: a `rounds.BurstyAcceptance` instead.

    Attributes
    ----------
    gamma, alpha
        Drafts per sequence and round, in [0, 64], and the acceptance rate of each, in [0, 1].
    c, draft_cost
        A draft step over the target's plain decode step (Leviathan's c), or the draft model's
        own `IterationCost` (None: `c`).
    policy, off_above
        `fixed`, `off-above-batch` (with `off_above` >= 1 sequences) or `adaptive`.
    bursty, seed
        Correlated acceptance (a `rounds.BurstyAcceptance`, or None) and the acceptance draws' seed.

    Examples
    --------
    Four drafts a sequence at alpha 0.8, a draft step 5% of a decode step: eight requests of
    512 prompt and 128 output tokens of Llama-3.1-8B on an H100 (lecture preset) finish in
    0.45 s instead of 0.97 s, at 3.23 tokens a round from seed 0's draws (E = 3.36 on average):

    >>> import llm_cost as lc
    >>> server, wl = lc.Replica.from_specs("llama-3.1-8b", "h100-sxm"), lc.fixed_workload([(512, 128)] * 8)
    >>> spec = lc.SpecConfig(gamma=4, alpha=0.8, c=0.05)
    >>> spec.policy, spec.seed
    ('fixed', 0)
    >>> plain, fast = lc.serve(wl, server), lc.serve(wl, server, lc.ServeConfig(spec=spec))
    >>> round(plain.finish_s[-1], 2), round(fast.finish_s[-1], 2), round(fast.tokens_per_round, 2), fast.mean_gamma
    (0.97, 0.45, 3.23, 4.0)

    `off-above-batch` stops drafting while more than `off_above` sequences decode (here all 8):

    >>> off = lc.SpecConfig(gamma=4, alpha=0.8, c=0.05, policy="off-above-batch", off_above=4)
    >>> lc.serve(wl, server, lc.ServeConfig(spec=off)).mean_gamma
    0.0
    >>> lc.SpecConfig(gamma=4, alpha=1.2)
    Traceback (most recent call last):
    ...
    llm_cost.errors.InvalidValueError: spec_alpha must be in [0, 1], got 1.2
    """

    gamma: int
    alpha: float
    c: float = 0.0
    draft_cost: object = field(default=None, repr=False)  # an IterationCost of the draft model, or None
    policy: str = "fixed"
    off_above: int = 0
    bursty: object = None  # a speculative.rounds.BurstyAcceptance, or None: independent positions
    seed: int = 0

    def __post_init__(self) -> None:
        check_fields(self)
        check_value("draft_cost", self.draft_cost, "PassCost | None", field="draft_cost")
        check_value("bursty", self.bursty, "BurstyAcceptance | None", field="bursty")
        check_number("spec_gamma", self.gamma, low=0, high=GAMMA_MAX, integer=True)
        check_number("spec_alpha", self.alpha, low=0, high=1)
        check_number("c", self.c, low=0)
        object.__setattr__(self, "policy", check_choice("spec_policy", self.policy, SPEC_POLICIES))  # as spelled in the list
        if self.policy == "off-above-batch":
            check_number("spec_off_above", self.off_above, low=1, integer=True)


@dataclass(frozen=True)
class ServeConfig:
    """The engine's settings (`engine.serve`).

    Attributes
    ----------
    max_batch
        Most sequences in an iteration.
    reservation
        `declared` (Orca), `max_len`, `none` (no reservation, no preemption: may deadlock) or `paged`
        (blocks of `block_size` tokens on demand, preemption when the next step would not fit).
    block_size, watermark
        Paged: tokens per block; fraction of blocks admission leaves free (vLLM's 0.01).
    preemption
        Paged: `recompute` (the victim's prompt and generated tokens prefilled again) or `swap`
        (its K/V moved to host memory and back over `host_bytes_per_s`, one direction).
    prefill_chunk
        Tokens per iteration (decode rows first, then prompt chunks: Sarathi-Serve); None: whole prompts.
    spec
        A `SpecConfig`, or None.
    pipeline
        With pipeline stages: `orca` (up to `stages` batches in flight, a request's next iteration
        waits for its previous one), `microbatch` (one batch split into `stages` microbatches) or
        `serial` (one batch in flight: an iteration crosses the stages one after another).
    scheduler
        `iteration` (Orca's iteration-level scheduling, every policy above) or `request`
        (FasterTransformer's request-level batches: max-length reservations, rows padded to the
        longest prompt and output; `request_level` runs it, no other feature applies).
    prefix_caching
        Paged with recompute: full K/V blocks of known prefixes (and a chat's answers) stay cached
        after their sequence ends (LRU eviction) and a request's cached prefix is not prefilled again
        (`prefix_cache`; the workload's `prefix` says which prompts share which tokens).
    kv_offload_bytes
        Paged with recompute: bytes of a host-memory tier (0: none). Prefix blocks the cache evicts
        go there (LRU) and come back over `host_bytes_per_s` (each way's transfer added to an
        iteration) instead of being prefilled again; without prefix caching, preempted
        sequences go there as `swap` moves them, while it has room, and are recomputed otherwise
        (`host_tier`).

    Examples
    --------
    vLLM's settings (paged blocks of 16, 1% of them kept free, recompute) with 4 drafts a sequence:

    >>> cfg = ServeConfig(max_batch=64, reservation="paged", spec=SpecConfig(gamma=4, alpha=0.8, c=0.05))
    >>> cfg.block_size, cfg.watermark, cfg.preemption, cfg.spec.gamma
    (16, 0.01, 'recompute', 4)
    >>> ServeConfig(reservation="lru")
    Traceback (most recent call last):
    ...
    llm_cost.errors.UnknownNameError: reservation must be one of declared, max_len, none, paged, got 'lru'
    """

    max_batch: int = 32
    reservation: str = "declared"
    block_size: int = 16
    watermark: float = 0.01
    preemption: str = "recompute"
    prefill_chunk: int | None = None
    spec: SpecConfig | None = None
    pipeline: str = "orca"
    host_bytes_per_s: float = PCIE_GEN5_X16_BYTES_PER_S
    scheduler: str = "iteration"
    prefix_caching: bool = False
    kv_offload_bytes: float = 0.0

    def __post_init__(self) -> None:
        # the ranges first, so that a value out of range is told its field's own range ([0, 1) for a
        # watermark of -0.1 as of 2), not the generic non-negative one of `check_fields`
        check_number("max_batch", self.max_batch, low=1, integer=True)
        check_number("block_size", self.block_size, low=1, high=1 << 20, integer=True)
        check_number("watermark", self.watermark, low=0, high=1, high_open=True)
        if self.prefill_chunk is not None:
            check_number("prefill_chunk", self.prefill_chunk, low=1, integer=True)
        check_fields(self)
        object.__setattr__(self, "reservation", check_choice("reservation", self.reservation, RESERVATION_POLICIES))  # as spelled in the list
        object.__setattr__(self, "preemption", check_choice("preemption", self.preemption, PREEMPTIONS))  # as spelled in the list
        object.__setattr__(self, "pipeline", check_choice("pipeline", self.pipeline, PIPELINES))  # as spelled in the list
        check_number("host_bytes_per_s", self.host_bytes_per_s, low=0, low_open=True)
        check_choice("scheduler", self.scheduler, SCHEDULERS)
        if self.scheduler == "request" and self.reservation != "max_len":
            raise InvalidValueError(f"reservation must be max_len with scheduler request (whole batches reserve the "
                                    f"maximum length), got {self.reservation!r}", params=("reservation", "scheduler"))
        if self.scheduler == "request" and (self.spec is not None or self.prefill_chunk is not None):
            raise InvalidValueError("scheduler request runs whole batches: no speculation or prefill chunks; give "
                                    "scheduler iteration", params=("scheduler",))
        if self.prefix_caching and (self.reservation != "paged" or self.preemption != "recompute"):
            raise InvalidValueError("prefix_caching needs reservation paged with preemption recompute (cached "
                                    f"blocks are paged blocks), got {self.reservation}, {self.preemption}",
                                    params=("prefix_caching",))
        check_number("kv_offload_bytes", self.kv_offload_bytes, low=0)
        if self.kv_offload_bytes > 0 and (self.reservation != "paged" or self.preemption != "recompute"):
            raise InvalidValueError("kv_offload_bytes needs reservation paged with preemption recompute (swap "
                                    f"already moves every victim to host memory), got {self.reservation}, "
                                    f"{self.preemption}", params=("kv_offload_bytes",))
        if self.spec is not None and self.reservation == "none":
            raise InvalidValueError("speculation needs a reservation policy that can hold gamma + 1 rows: "
                                    "use declared, max_len or paged", params=("reservation",))


LECTURE_SCHEDULERS = ("request", "iteration", "none")


def config_for(scheduler: str, max_batch: int = 32, reservation: str | None = None) -> ServeConfig:
    """The `ServeConfig` of one of the lecture's schedulers (§2-§3.5, Orca §3).

    `request`: FasterTransformer's request-level batches (reservation `max_len`); `iteration`: Orca's
    iteration-level scheduling (reservation `declared`, prompt + max_gen, or `max_len`); `none`:
    iteration-level without a reservation or preemption (it may deadlock). Default reservation: the
    scheduler's first. Pipeline stages run one batch at a time (`serial`), as these schedulers do.

    >>> config_for("request", 8).reservation, config_for("none").reservation, config_for("iteration").scheduler
    ('max_len', 'none', 'iteration')
    """
    scheduler = check_choice("scheduler", scheduler, LECTURE_SCHEDULERS)  # names ignore case
    allowed = {"request": ("max_len",), "iteration": ("declared", "max_len"), "none": ("none",)}[scheduler]
    reservation = allowed[0] if reservation is None else reservation
    if reservation not in allowed:
        raise InvalidValueError(f"reservation must be one of {', '.join(allowed)} with scheduler {scheduler}, "
                                f"got {reservation!r}", params=("reservation", "scheduler"))
    return ServeConfig(max_batch=max_batch, reservation=reservation, pipeline="serial",
                       scheduler="request" if scheduler == "request" else "iteration")
