"""A deployment: how many GPUs, how the model is split over them, and the KV cache's precision.

    gpus = replicas x tp x pp        (one replica: tp x pp GPUs; ep spreads a MoE layer's routed
                                      experts over ep of them, or over ep / tp replicas' GPUs)

Attention data parallelism (`dp_attention`, DeepSeek's and SGLang's `--enable-dp-attention` recipe):
the tp GPUs of a stage run attention data parallel, dp = tp ranks, each holding the whole attention
(and every other non-expert weight: dense MLPs, shared experts, embedding and LM head, as SGLang's
`--moe-dense-tp-size 1 --enable-dp-lm-head`) and the K/V of its own 1/dp of the sequences; the MoE
layers run expert parallel over ep (a multiple of tp) GPUs. `attention_tp` is then 1.

Nothing here knows the model: `llm_cost.parallel.check_deployment` checks that tp divides its
heads, that ep needs a MoE, and that the accelerator has an interconnect to split over.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from llm_cost.errors import InvalidValueError, check_choice, check_number
from llm_cost.specs.profiles import MEMORY_BASES
from llm_cost.specs.kv_dtypes import KV_DTYPES
from llm_cost.specs.validate import check_fields

MAX_DEGREE = 1024  # far past any node or pod a single model is served on
DEFAULT_RESERVE = 0.1  # vLLM's gpu_memory_utilization 0.9; the lecture's code also holds back 10% (§2.3)


def busiest_rank_sequences(batch, ranks):
    """Sequences of the busiest of `ranks` data-parallel attention ranks sharing `batch`: ceil(batch / ranks).

    Integers by exact floor division, -(-batch // ranks); other single numbers (floats, numpy scalars,
    0-d arrays) by math.ceil, an int; numpy arrays (`batch`, `ranks` or both, broadcast) by
    numpy.ceil(batch / ranks), floats.

    >>> busiest_rank_sequences(9, 8), busiest_rank_sequences(16, 8), busiest_rank_sequences(3, 1)
    (2, 2, 3)
    >>> import numpy as np
    >>> busiest_rank_sequences(np.int64(9), 8), busiest_rank_sequences(9.0, 8.0)
    (2, 2)
    """
    if isinstance(batch, int) and isinstance(ranks, int):
        return -(-batch // ranks)
    if isinstance(batch, (int, float)) and isinstance(ranks, (int, float)):
        return math.ceil(batch / ranks)
    import numpy as np

    if np.ndim(batch) == 0 and np.ndim(ranks) == 0:  # int(): numpy's float64.__ceil__ may give a float64
        return int(math.ceil(batch / ranks))
    return np.ceil(np.asarray(batch) / ranks)


def attention_batch_for(batch, dp):
    """`batch` rounded up to whole sequences on each of `dp` attention ranks: ceil(batch / dp) x dp, the
    busiest rank's sequences over dp's average share (`batch` itself for one rank, dp 1). Numbers or
    numpy arrays (`busiest_rank_sequences`: a single number's busiest rank is an int, an array's floats);
    `Deployment.attention_batch` is this at its attention_dp.

    >>> attention_batch_for(9, 8), attention_batch_for(9, 1)
    (16, 9)
    """
    if isinstance(dp, (int, float)) and dp == 1:
        return batch
    return busiest_rank_sequences(batch, dp) * dp


@dataclass(frozen=True)
class Deployment:
    """GPUs and their split: tensor (tp), pipeline (pp) and expert (ep) parallel degrees, replicas,
    KV precision, whether collectives overlap compute, and the memory held back.

    Parameters
    ----------
    tp, pp, ep : int, optional
        Tensor-parallel GPUs per stage, pipeline stages, expert-parallel ranks; each in [1, 1024].
    gpus : int, optional
        GPUs in all, a multiple of tp x pp (default tp x pp: one replica).
    kv_dtype : str, optional
        The KV cache's element type: bf16, fp16, fp8, int8 or int4 (`KV_DTYPES`).
    overlap_comm : bool, optional
        Collectives hidden behind compute (max instead of sum; default False: they add).
    dp_attention : bool, optional
        Attention data parallel over the tp GPUs of a stage, the MoE layers expert parallel (module
        doc; default False: attention and every non-expert weight split over tp).
    reserve : float, optional
        Fraction of the GPU's memory held back from weights, KV and activations, in [0, 1).
    memory_basis : str, optional
        What that memory is: "usable" (`usable_memory_bytes`, what the driver reports) or "marketed"
        (`memory_bytes`, the two documents' figure); default None: the profile's
        (`Profile.memory_basis`, see `following`), and where no profile is known (`kv_capacity`)
        "usable", as the CLI's default preset (`measured`) counts; the lecture's 40e9 bytes for an
        A100 40GB need memory_basis="marketed".

    Examples
    --------
    >>> d = Deployment(tp=4, gpus=8, kv_dtype="fp8")
    >>> d.replicas, d.gpus_per_replica, d.kv_bytes_per_element
    (2, 4, 1.0)
    >>> Deployment(tp=4, gpus=6)
    Traceback (most recent call last):
    ...
    llm_cost.errors.InvalidValueError: gpus must be a multiple of tp x pp = 4, got 6
    """

    tp: int = 1
    pp: int = 1
    ep: int = 1
    gpus: int = 0  # 0: tp x pp
    kv_dtype: str = "bf16"
    overlap_comm: bool = False
    reserve: float = DEFAULT_RESERVE
    memory_basis: str | None = None  # None: the profile's (`following`), else usable (`basis`)
    dp_attention: bool = False

    def __post_init__(self) -> None:
        check_fields(self)
        for name in ("tp", "pp", "ep"):
            check_number(name, getattr(self, name), low=1, high=MAX_DEGREE, integer=True)
        check_number("gpus", self.gpus, low=0, high=MAX_DEGREE * MAX_DEGREE, integer=True)
        object.__setattr__(self, "kv_dtype", check_choice("kv_dtype", self.kv_dtype, tuple(KV_DTYPES)))  # as spelled in the list
        check_number("reserve", self.reserve, low=0, high=1, high_open=True)
        if self.memory_basis is not None:
            object.__setattr__(self, "memory_basis", check_choice("memory_basis", self.memory_basis, MEMORY_BASES))  # as spelled in the list
        if not isinstance(self.dp_attention, bool):
            raise InvalidValueError(f"dp_attention must be True or False, got {self.dp_attention!r}",
                                    params=("dp_attention",))
        if self.gpus and self.gpus % self.gpus_per_replica:
            raise InvalidValueError(f"gpus must be a multiple of tp x pp = {self.gpus_per_replica}, got {self.gpus}",
                                    params=("gpus", "tp", "pp"))

    @property
    def gpus_per_replica(self) -> int:
        """tp x pp: the GPUs one copy of the model spans."""
        return self.tp * self.pp

    @property
    def total_gpus(self) -> int:
        """`gpus`, or tp x pp when not given."""
        return self.gpus or self.gpus_per_replica

    @property
    def replicas(self) -> int:
        """Copies of the model: gpus / (tp x pp)."""
        return self.total_gpus // self.gpus_per_replica

    @property
    def batches_in_flight(self) -> int:
        """Static batches served at once: one per replica. A static batch cannot fill pp stages: its
        next token needs the last stage's output, so while one stage works the others idle, and one
        batch's tokens/s on pp stages is B x tokens / its step (issue 29)."""
        return self.replicas

    @property
    def kv_bytes_per_element(self) -> float:
        """Bytes of one cached K or V element (`KV_DTYPES`)."""
        return KV_DTYPES[self.kv_dtype]

    @property
    def expert_group(self) -> int:
        """GPUs one MoE layer's routed experts are spread over: max(tp, ep)."""
        return max(self.tp, self.ep)

    @property
    def attention_tp(self) -> int:
        """GPUs one sequence's attention (and every non-expert weight) is split over: 1 under
        `dp_attention`, else tp."""
        return 1 if self.dp_attention else self.tp

    @property
    def attention_dp(self) -> int:
        """Data-parallel attention ranks of a stage, each with its own sequences: tp under
        `dp_attention`, else 1."""
        return self.tp if self.dp_attention else 1

    def attention_batch(self, batch):
        """The busiest attention rank's sequences x attention_dp: ceil(batch / dp) x dp (`batch` itself
        without `dp_attention`): a rank's K/V and attention are this over dp's average share.

        >>> Deployment(tp=8, ep=8, dp_attention=True).attention_batch(1), Deployment(tp=8).attention_batch(1)
        (8, 1)
        """
        return attention_batch_for(batch, self.attention_dp)

    @property
    def label(self) -> str:
        """', tp 4 pp 2, 16 GPUs (2 replicas)' as titles show it; '' for one GPU."""
        if self.is_single and self.replicas == 1:
            return ""
        parts = [f"{name} {size}" for name, size in (("tp", self.tp), ("pp", self.pp), ("ep", self.ep)) if size > 1]
        if self.dp_attention and self.tp > 1:
            parts.append("dp-attention")
        split = [" ".join(parts)] if parts else []
        if self.replicas > 1:
            split.append(f"{self.total_gpus} GPUs ({self.replicas} replicas)")
        return ", " + ", ".join(split)

    def following(self, profile) -> "Deployment":
        """This deployment with `profile`'s memory basis, unless it names its own.

        >>> from llm_cost.specs.profiles import PRESETS
        >>> Deployment().following(PRESETS["lecture"]).basis, Deployment(memory_basis="usable").following(
        ...     PRESETS["lecture"]).basis
        ('marketed', 'usable')
        """
        if self.memory_basis is not None or profile.memory_basis == self.basis:
            return self
        return replace(self, memory_basis=profile.memory_basis)

    @property
    def basis(self) -> str:
        """The memory basis in force: `memory_basis`, or "usable" when none was set (a profile's default,
        the `measured` preset's and so the CLI's: one default for the library and the commands)."""
        return self.memory_basis or "usable"

    def memory_bytes(self, gpu) -> float:
        """One GPU's memory on this basis: its marketed `memory_bytes` or `memory_available_bytes`."""
        return gpu.memory_bytes if self.basis == "marketed" else gpu.memory_available_bytes

    def available_bytes(self, gpu) -> float:
        """What weights, K/V and activations may take on one GPU: memory x (1 - reserve)."""
        return self.memory_bytes(gpu) * (1.0 - self.reserve)

    @property
    def is_single(self) -> bool:
        """One GPU, no split: the seeds' setting (the time is exactly `step_time`'s)."""
        return self.tp == self.pp == self.ep == 1


SINGLE_GPU = Deployment()
