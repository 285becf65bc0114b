"""KV memory: the token capacity beside the weights, and the sequences of a context that fit.

The requests that fit under each reservation policy are `policies`'.

Sources: the lecture §2.3 (capacity, reservation by maximum length), §3.2 and
exercise 2 (reservation by declared prompt + max_gen). Padding and launches: `batch_waste`.

Conventions:
- The reserve is a fraction of the accelerator's memory held back for activations and
  fragmentation: KV bytes = memory x (1 - reserve) - weight bytes.
- KV tokens that fit are whole tokens: floor(KV bytes / KV bytes per token), each token in every
  layer. Models whose sliding or chunked layers keep at most their window hold more: for them
  `sequences_that_fit` counts sequences of a context from `counts.kv_bytes`.
- A request that prefills P tokens and generates O writes P + O - 1 KV tokens (the last token
  is returned, never fed back). Reservations follow the lecture and Orca and count P + max_gen.
- A deployment (`specs.deployment.Deployment`: tp, pp, replicas, kv_dtype) splits both sides over
  one replica's tp x pp GPUs. Every GPU of a replica holds the same share (balanced stages), so

      one replica's KV tokens = floor((M x (1 - r) - W_gpu) / (b_KV x kv_share / pp))

  with W_gpu = `parallel.weight_bytes_per_gpu` (1/(tp pp) of the weights plus the replicated K/V
  projections, and 1/tp of a vision tower), kv_share = `parallel.kv_share` (max(1/tp, 1/kv_heads); 1 for an MLA latent) and
  b_KV at the deployment's kv_dtype. The deployment's replicas each hold that many: in all x replicas.
- Memory basis: M is the deployment's (`Deployment.memory_bytes`): the marketed `memory_bytes`
  ("marketed": 40e9 for an A100 40GB, the lecture's figures; the default, and the documents'
  presets') or `memory_available_bytes` ("usable": what the driver reports; the `measured` preset's
  and a calibrated profile's, `Deployment.following`), the same M `parallel.fit` checks a pass against. The reserve covers activations and
  fragmentation here: no workspace is counted on top of it (`parallel.fit` counts one for a pass).
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.catalog import as_accelerator, as_model
from llm_cost.counts import kv_bytes, kv_bytes_per_token, layer_windows
from llm_cost.counts.weights import resident_weight_bytes
from llm_cost.errors import check_number
from llm_cost.specs import BF16, Accelerator, ModelSpec, WeightFormat
from llm_cost.specs.deployment import DEFAULT_RESERVE, SINGLE_GPU, Deployment  # noqa: F401 (DEFAULT_RESERVE re-exported)
from llm_cost.specs.kv_dtypes import KV_BYTES_RANGE
from llm_cost.serving.policies import requests_that_fit

from llm_cost.catalog.arguments import check_arguments


@dataclass(frozen=True)
class KvCapacity:
    r"""How many KV tokens fit beside the weights; a model that does not fit has a shortfall.

    .. math:: \mathit{kv\_tokens} = \lfloor \max(0, M (1 - r) - W) / b_{KV} \rfloor

    Attributes
    ----------
    model, gpu
        The model's name and the accelerator's catalog key (`Accelerator.label`: "h100-sxm"), as
        rows' `gpu`.
    gpu_name
        The accelerator's display name ("H100 SXM"), as rows' `gpu_name` ("": `gpu`).
    memory_bytes, reserve_fraction
        The accelerator's memory (bytes) and the fraction of it held back, in [0, 1).
    weight_bytes, kv_bytes_per_token
        Weight bytes the engine holds in the chosen format (the text model and a vision tower:
        `counts.weights.resident_weight_bytes`) and KV bytes one token adds.
    kv_bytes_available
        max(0, usable - weights), bytes.
    shortfall_bytes
        max(0, weights - usable): what is missing to hold the weights, bytes.
    kv_tokens
        Whole KV tokens that fit in one replica (>= 0).
    weight_bytes_per_gpu, kv_bytes_per_token_per_gpu
        One GPU's share of the weights and of one token's K/V (the whole model's on one GPU).
    tp, pp, replicas
        The deployment: one replica spans tp x pp GPUs; `kv_tokens_total` is x replicas.
    kv_dtype, memory_basis
        The K/V element type's name ("" when given as bytes per element) and which memory figure
        `memory_bytes` is: "marketed" (`Accelerator.memory_bytes`) or "usable".

    Examples
    --------
    `kv_capacity` gives it. Llama-3.1-8B in BF16 on one H100: 81,559 MiB as the driver reports
    it, 10% held back, 16.06 GB of weights leave 60.9 GB for K/V at 131,072 bytes a token,
    room for 56 sequences of 8,192 tokens:

    >>> import llm_cost as lc
    >>> cap = lc.kv_capacity("llama-3.1-8b", "h100-sxm")
    >>> cap.memory_basis, round(cap.usable_bytes / 1e9, 2), round(cap.weight_bytes / 1e9, 2)
    ('usable', 76.97, 16.06)
    >>> round(cap.kv_bytes_available / 1e9, 2), int(cap.kv_bytes_per_token), cap.kv_tokens, cap.kv_tokens // 8192
    (60.91, 131072, 464692, 56)
    >>> cap.fits, cap.runs, cap.note
    (True, True, '')

    A model that does not fit says by how much (`note`):

    >>> big = lc.kv_capacity("llama-3-70b", "h100-sxm")
    >>> big.fits, big.kv_tokens, round(big.shortfall_bytes / 1e9, 1)
    (False, 0, 64.1)
    >>> print(big.note)
    llama-3-70b weights need 141.1 GB on one GPU of 77.0 GB (usable 85.5 GB x (1 - reserve 0.1))
    on H100 SXM: short by 64.1 GB, no room for K/V
    """

    model: str
    gpu: str
    memory_bytes: float
    reserve_fraction: float
    weight_bytes: float
    kv_bytes_per_token: float
    kv_bytes_available: float  # max(0, usable - weights)
    shortfall_bytes: float  # max(0, weights - usable): what is missing to hold the weights
    kv_tokens: int  # one replica's
    weight_bytes_per_gpu: float = -1.0  # -1: the whole model's (`weight_bytes`), one GPU
    kv_bytes_per_token_per_gpu: float = -1.0  # -1: `kv_bytes_per_token`
    tp: int = 1
    pp: int = 1
    replicas: int = 1
    kv_dtype: str = "bf16"
    memory_basis: str = "marketed"
    gpu_name: str = ""  # "": `gpu`

    def __post_init__(self) -> None:
        if not self.gpu_name:
            object.__setattr__(self, "gpu_name", self.gpu)
        if self.weight_bytes_per_gpu < 0:
            object.__setattr__(self, "weight_bytes_per_gpu", self.weight_bytes)
        if self.kv_bytes_per_token_per_gpu < 0:
            object.__setattr__(self, "kv_bytes_per_token_per_gpu", self.kv_bytes_per_token)

    @property
    def kv_tokens_total(self) -> int:
        """KV tokens of every replica together: kv_tokens x replicas."""
        return self.kv_tokens * self.replicas

    @property
    def runs(self) -> bool:
        """The weights fit and leave room for at least one token's K/V: a replica can serve at all."""
        return self.fits and self.kv_tokens >= 1

    @property
    def note(self) -> str:
        """Why a replica cannot serve at all, in one line ('' when it can)."""
        if self.runs:
            return ""
        where = f"per GPU (tp {self.tp} pp {self.pp})" if self.tp * self.pp > 1 else "on one GPU"
        basis = f"{self.memory_basis} {self.memory_bytes / 1e9:.1f} GB x (1 - reserve {self.reserve_fraction:g})"
        if not self.fits:
            return (f"{self.model} weights need {self.weight_bytes_per_gpu / 1e9:.1f} GB {where} of "
                    f"{self.usable_bytes / 1e9:.1f} GB ({basis}) on {self.gpu_name}: short by "
                    f"{self.shortfall_bytes / 1e9:.1f} GB, no room for K/V")
        return (f"{self.model} weights ({self.weight_bytes_per_gpu / 1e9:.2f} GB {where}) leave "
                f"{self.kv_bytes_available / 1e9:.3f} GB of {self.usable_bytes / 1e9:.2f} GB ({basis}) on "
                f"{self.gpu_name}: less than one token's K/V ({self.kv_bytes_per_token_per_gpu:,.0f} bytes)")

    @property
    def usable_bytes(self) -> float:
        """memory x (1 - reserve), one GPU's."""
        return self.memory_bytes * (1.0 - self.reserve_fraction)

    @property
    def fits(self) -> bool:
        """True when the weights fit in the usable memory (possibly leaving no KV room).

        Examples
        --------
        GPT-3 175B in BF16 (349 GB) on one A100 40GB (40,960 MiB) does not fit; the result says by how much.

        >>> from llm_cost.catalog import load_model, load_accelerator
        >>> cap = kv_capacity(load_model("gpt-3-175b"), load_accelerator("a100-40gb"))
        >>> cap.fits, cap.kv_tokens, round(cap.shortfall_bytes / 1e9)
        (False, 0, 311)
        """
        return self.shortfall_bytes == 0


def _settings(deployment: Deployment | None, reserve: float | None,
              kv_bytes_per_element: float | None) -> tuple[Deployment, float, float, str]:
    """(deployment, reserve, KV bytes per element, kv_dtype name): the explicit values, else the
    deployment's (a default `Deployment()`: reserve 0.1, BF16)."""
    from llm_cost.specs.deployment import KV_DTYPES

    deployment = SINGLE_GPU if deployment is None else deployment
    reserve = deployment.reserve if reserve is None else reserve
    check_number("reserve", reserve, low=0, high=1, high_open=True)
    if kv_bytes_per_element is None:
        return deployment, reserve, deployment.kv_bytes_per_element, deployment.kv_dtype
    check_number("kv_bytes_per_element", kv_bytes_per_element, low=KV_BYTES_RANGE[0], high=KV_BYTES_RANGE[1])
    if kv_bytes_per_element == deployment.kv_bytes_per_element:
        return deployment, reserve, kv_bytes_per_element, deployment.kv_dtype
    name = next((dtype for dtype, size in KV_DTYPES.items() if size == kv_bytes_per_element), "")
    return deployment, reserve, kv_bytes_per_element, name


capacity_settings = _settings  # the public name other modules import (issue 24: no private name across modules)


@check_arguments()
def kv_capacity(model: ModelSpec, gpu: Accelerator, *, reserve: float | None = None,
                weights: WeightFormat = BF16, kv_bytes_per_element: float | None = None,
                deployment: Deployment | None = None) -> KvCapacity:
    r"""KV tokens = floor((memory x (1 - reserve) - weight bytes) / KV bytes per token), at least 0;
    on a deployment one replica's: per GPU, weights and K/V per token its share (module doc).

    Lecture §2.3: GPT-3 13B on an A100 40GB, 10% held back: "约 12,596 个 token". Our count
    of GPT-3 13B includes the learned position table and the biases and gives 12,564.

    Tokens here are all-layer tokens: for a model with sliding or chunked layers (gpt-oss, Gemma,
    Llama 4) a long sequence holds less than context x KV bytes per token, and
    `sequences_that_fit` says how many sequences of a given context fit.

    .. math:: \mathit{kv\_tokens} = \left\lfloor \frac{\max(0,\ M\,(1 - r) - W_{gpu})}
              {b_{KV}\,\mathit{kv\_share} / pp} \right\rfloor

    Parameters
    ----------
    model : ModelSpec
        The model (a spec).
    gpu : Accelerator
        The accelerator (a spec); M = its memory on the deployment's `memory_basis`, bytes.
    reserve : float, optional
        Fraction r of memory held back for activations and fragmentation, in [0, 1)
        (default the deployment's, 0.1: the lecture's code).
    weights : WeightFormat, optional
        Weight format (default BF16).
    kv_bytes_per_element : float, optional
        Bytes of one cached K or V element, in (0, inf) (default the deployment's kv_dtype: BF16, 2.0).
    deployment : Deployment, optional
        tp, pp (and replicas) the model is split over (default one GPU); checked against the model
        (`parallel.check_deployment`: tp divides the heads, ep needs a MoE, ...) and the memory
        basis: usable by default (what the driver reports, as `llm-cost capacity` counts under its
        default preset), `Deployment(memory_basis="marketed")` for the lecture's figures.

    Returns
    -------
    KvCapacity
        Memory, weight and KV bytes, the shortfall (bytes) and the whole KV tokens that fit.

    Examples
    --------
    The lecture's figure counts the marketed 40e9 bytes:

    >>> from llm_cost.catalog import load_model, load_accelerator
    >>> from llm_cost.specs.deployment import Deployment
    >>> a100, lecture = load_accelerator("a100-40gb"), Deployment(memory_basis="marketed")
    >>> cap = kv_capacity(load_model("gpt-3-13b"), a100, reserve=0.1, deployment=lecture)
    >>> int(cap.weight_bytes), int(cap.kv_bytes_per_token), cap.kv_tokens, cap.memory_basis
    (25706772480, 819200, 12564, 'marketed')

    By default, as `llm-cost capacity` counts, the memory the driver reports (40,960 MiB) holds more:

    >>> kv_capacity(load_model("gpt-3-13b"), a100, reserve=0.1).kv_tokens
    15805

    Llama-3-70B in BF16 (141.1 GB) does not fit one H100 (77.0 GB of 81,559 MiB after the reserve);
    over tp = 4 each GPU holds 35.3 GB of weights and 2 of the 8 K/V heads: (77.0 - 35.3) GB / 81,920
    bytes a token.

    >>> kv_capacity(load_model("llama-3-70b"), load_accelerator("h100-sxm")).fits
    False
    >>> four = kv_capacity(load_model("llama-3-70b"), load_accelerator("h100-sxm"), deployment=Deployment(tp=4))
    >>> round(four.weight_bytes_per_gpu / 1e9, 1), int(four.kv_bytes_per_token_per_gpu), four.kv_tokens
    (35.3, 81920, 508934)
    """
    from llm_cost.parallel import check_deployment, deployment_kv_share, weight_bytes_per_gpu

    from llm_cost.specs.weights import as_weights

    model = as_model(model)
    gpu = as_accelerator(gpu)
    weights = as_weights(weights)  # a format or its name ("int4")
    deployment, reserve, kv_el, kv_dtype = _settings(deployment, reserve, kv_bytes_per_element)
    total = resident_weight_bytes(model, weights)  # the text model and a vision tower
    per_token = kv_bytes_per_token(model, kv_el)
    if not per_token:  # every layer recurrent: no K/V token to count capacity in (refused, not divided by 0)
        from llm_cost.counts.per_token import state_in_kv_tokens

        state_in_kv_tokens(model, kv_el)
    memory, basis = deployment.memory_bytes(gpu), deployment.basis
    if deployment.is_single:  # the seeds' arithmetic, bit for bit
        w_gpu, t_gpu = total, per_token
    else:
        check_deployment(model, gpu, deployment)
        w_gpu = weight_bytes_per_gpu(model, weights, deployment)
        t_gpu = per_token * deployment_kv_share(model, deployment) / deployment.pp
    spare = memory * (1.0 - reserve) - w_gpu
    available = max(0.0, spare)
    return KvCapacity(
        model=model.name, gpu=gpu.label, gpu_name=gpu.name, memory_bytes=memory, reserve_fraction=reserve,
        weight_bytes=total, kv_bytes_per_token=per_token, kv_bytes_available=available,
        shortfall_bytes=max(0.0, -spare), kv_tokens=int(available // t_gpu),
        weight_bytes_per_gpu=w_gpu, kv_bytes_per_token_per_gpu=t_gpu, tp=deployment.tp, pp=deployment.pp,
        replicas=deployment.replicas, kv_dtype=kv_dtype, memory_basis=basis)


@check_arguments()
def sequences_that_fit(model: ModelSpec, gpu: Accelerator, context: int, *, reserve: float | None = None,
                       weights: WeightFormat = BF16, kv_bytes_per_element: float | None = None,
                       deployment: Deployment | None = None) -> int:
    r"""Sequences of `context` tokens whose K/V fit beside the weights, windows counted; on a
    deployment, in one replica (x `deployment.replicas` in all).

    .. math:: n = \left\lfloor \frac{\max(0,\ M\,(1 - r) - W)}{B_{KV}(\mathit{context})} \right\rfloor

    B_KV = `counts.kv_bytes`: each sliding layer holds at most its window, each chunked one (Llama 4)
    at most its chunk, and a hybrid's recurrent layers their fixed state per sequence (sequences are
    limited by state plus K/V). A model without windows gives floor(kv_tokens / context) from `kv_capacity`,
    exactly as `requests_that_fit(kv_capacity(...).kv_tokens, context)`. 0 when the weights do not fit.

    Parameters
    ----------
    model : ModelSpec
        The model (a spec).
    gpu : Accelerator
        The accelerator (a spec).
    context : int
        Tokens per sequence, a whole number >= 1.
    reserve, weights, kv_bytes_per_element, deployment
        As in `kv_capacity`.

    Returns
    -------
    int
        Sequences that fit (>= 0).

    Examples
    --------
    gpt-oss-20b in BF16 on an H100 (81,559 MiB, 10% held back): 76.97 GB - 41.83 GB = 35.14 GB of K/V;
    at 8192 tokens a sequence holds 204,472,320 bytes (not 402,653,184): 171 sequences, not 87.

    >>> from llm_cost.catalog import load_model, load_accelerator
    >>> oss, h100 = load_model("gpt-oss-20b"), load_accelerator("h100-sxm")
    >>> sequences_that_fit(oss, h100, 8192), kv_capacity(oss, h100).kv_tokens // 8192
    (171, 87)
    """
    model = as_model(model)
    gpu = as_accelerator(gpu)
    check_number("context", context, low=1, integer=True)
    cap = kv_capacity(model, gpu, reserve=reserve, weights=weights, kv_bytes_per_element=kv_bytes_per_element,
                      deployment=deployment)
    if not cap.fits:
        return 0
    if not layer_windows(model) and model.recurrent is None:
        return requests_that_fit(cap.kv_tokens, context)
    deployment, _, kv_el, _ = _settings(deployment, reserve, kv_bytes_per_element)
    per_sequence = kv_bytes(model, context, kv_el)  # a hybrid's recurrent state included
    if not deployment.is_single:  # one GPU's share: kv_share / pp
        from llm_cost.parallel import kv_share

        per_sequence = per_sequence * kv_share(model, deployment.tp) / deployment.pp
    return int(cap.kv_bytes_available // per_sequence)
