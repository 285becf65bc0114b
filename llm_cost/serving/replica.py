"""The server a batching simulation runs on: the cost of one mixed iteration and the KV capacity.

An iteration of iteration-level scheduling mixes sequences in different states (the lecture
§3.2, StepModel.mixed_time): decoding requests feed 1 row each and read their cached KV; new
requests feed their whole prompt; the weights are read once. Our roofline's `PassCost`
(`llm_cost.roofline.step`) times a pass over `rows` rows that moves `kv_tokens` K/V tokens (the
`kv_read` cached ones read, the rows' written) and computes `pairs` (query, key) attention pairs:

    T = max((weights + (kv_read + rows) x kv_bytes) / (BW x eta_bw),
            (rows x 2 x N_gemm + pairs x attn_flops) / (F x eta_f)) + t_fixed

which is `step_time` term by term: a decoding request with c cached tokens adds 1 row and c + 1
pairs; a prompt of P tokens adds P rows and P (P + 1) / 2 pairs. `IterationCost` is that
`PassCost` (the coefficients are computed once, so an iteration costs a few float operations)
with the shapes a batching simulation asks for.

On a deployment (`Replica.from_specs(..., deployment=...)`) the cost is `parallel.deployed_cost`
of it: one GPU's share of one pipeline stage, the pass crossing pp stages and the collectives,

    T = pp x max(memory, compute) + comm(rows) + t_fixed

and the KV capacity is one replica's (`capacity.kv_capacity`). A replica runs one batch at a time:
an iteration crosses its stages one after another, no microbatches in flight (`pipeline="serial"`,
the module doc of `fast_reservations`; `engine.serve` also runs `orca` and `microbatch`); the deployment's other replicas serve as many requests again.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.counts import BF16_BYTES
from llm_cost.catalog import as_accelerator, as_model, as_profile
from llm_cost.errors import InvalidValueError, check_number
from llm_cost.serving.capacity import KvCapacity, capacity_settings, kv_capacity  # noqa: F401
from llm_cost.serving.policies import model_max_len
from llm_cost.roofline import PassCost
from llm_cost.roofline.pass_terms import causal_pairs, decode_pairs  # unchecked: a hot loop (roofline.terms)
from llm_cost.specs import BF16, PRESETS, Accelerator, ModelSpec, Profile, WeightFormat
from llm_cost.specs.deployment import SINGLE_GPU, Deployment
from llm_cost.specs.profiles import LECTURE_SERVING
from llm_cost.specs.validate import check_fields
from llm_cost.specs.weights import as_weights


@dataclass(frozen=True)
class IterationCost(PassCost):
    r"""`roofline.PassCost` for batching: T(rows, kv_tokens, pairs) of one mixed iteration.

    `time` takes numbers or numpy arrays; `prefill_s` and `decode_s` the common shapes.

    .. math:: T = \max\left(\frac{W + kv\,b_{KV}}{BW\,\eta_{bw}},
              \frac{\mathit{rows}\cdot 2 N_{gemm} + \mathit{pairs}\cdot F_{pair}}{F\,\eta_f}\right)
              + t_{fixed}

    Examples
    --------
    GPT-3 13B on an A100 40GB, lecture preset: one decode step at batch 1 takes 21.6 ms (the
    lecture §3.3's unloaded per-token latency is about 22 ms).

    >>> from llm_cost.catalog import load_model, load_accelerator
    >>> from llm_cost.specs import PRESETS
    >>> cost = IterationCost.from_roofline(load_model("gpt-3-13b"), load_accelerator("a100-40gb"),
    ...                                    PRESETS["lecture"])
    >>> round(cost.decode_s(0) * 1e3, 1)
    21.6
    """

    @classmethod
    def from_roofline(cls, model: ModelSpec, gpu: Accelerator, profile: Profile,
                      weights: WeightFormat = BF16, kv_bytes_per_element: float = BF16_BYTES) -> "IterationCost":
        """The coefficients of `roofline.step_time` for this model, accelerator and profile.

        Parameters
        ----------
        model : ModelSpec
            The model (a spec).
        gpu : Accelerator
            The accelerator (a spec).
        profile : Profile
            The time model's preset (a spec).
        weights : WeightFormat, optional
            Weight format (default BF16).
        kv_bytes_per_element : float, optional
            Bytes of one cached K or V element (default 2.0, BF16).

        Returns
        -------
        IterationCost
        """
        return cls.from_specs(model, gpu, profile, weights, kv_bytes_per_element)

    @classmethod
    def unit(cls) -> "IterationCost":
        """Every iteration takes 1 s: a simulation counted in iterations (exercise 10).

        Returns
        -------
        IterationCost
            Zero bytes and FLOPs, a fixed time of 1 second.

        Examples
        --------
        >>> IterationCost.unit().decode_s(1000, batch=32), IterationCost.unit().prefill_s(512)
        (1.0, 1.0)
        """
        return cls(weight_bytes=0.0, kv_token_bytes=0.0, row_flops=0.0, pair_flops=0.0,
                   bytes_per_s=1.0, flops_per_s=1.0, fixed_s=1.0)

    def prefill_s(self, prompt):
        r"""One request's prompt alone: P rows, P K/V written, P (P + 1) / 2 pairs.

        .. math:: T_{prefill}(P) = T(\mathit{rows}=P,\ kv=P,\ \mathit{pairs}=P(P+1)/2)

        Parameters
        ----------
        prompt : float or array
            Prompt tokens P, >= 1.

        Returns
        -------
        float or numpy.ndarray
            Seconds.
        """
        if self.kv_windows:  # sliding / chunked layers: each row sees at most its window
            return self.time(prompt, *self.uniform_terms(prompt, 1, 0))
        return self.time(prompt, prompt, causal_pairs(prompt))

    def decode_s(self, context, batch: int = 1):
        r"""`batch` requests with `context` cached tokens each generating one token.

        .. math:: T_{decode} = T(\mathit{rows}=B,\ kv=B\,(c + 1),\ \mathit{pairs}=B\,(c + 1))

        Parameters
        ----------
        context : float or array
            Cached tokens c per request, >= 0.
        batch : int, optional
            Requests B decoding together, >= 1 (default 1).

        Returns
        -------
        float or numpy.ndarray
            Seconds.

        Examples
        --------
        The lecture §4.4's 32-request decode step at the mean length of 336 tokens: 28.7 ms.

        >>> from llm_cost.catalog import load_model, load_accelerator
        >>> from llm_cost.specs import PRESETS
        >>> cost = IterationCost.from_roofline(load_model("gpt-3-13b"), load_accelerator("a100-40gb"),
        ...                                    PRESETS["lecture"])
        >>> round(cost.decode_s(336, batch=32) * 1e3, 1)
        28.7
        """
        if self.kv_windows:  # sliding / chunked layers hold and attend to at most their window
            return self.time(batch, *self.uniform_terms(batch, batch, context))
        return self.time(batch, batch * (context + 1), decode_pairs(1, batch, batch * context))


@dataclass(frozen=True)
class Replica:
    """One model replica: iteration cost, KV tokens it can hold, the maximum length to reserve.

        T_iter = cost.time(rows, kv_tokens, pairs);  a request fits while reserved + R_i <= kv_capacity_tokens

    Parameters
    ----------
    cost : IterationCost
        What one iteration costs.
    kv_capacity_tokens : int
        KV tokens the replica holds, a whole number >= 1.
    max_len : int
        The maximum sequence length a `max_len` reservation takes, tokens >= 1.
    description : str, optional
        A one-line description for reports.
    deployment : Deployment, optional
        The GPUs the replica spans and how many replicas serve (default one GPU, one replica).
    capacity : KvCapacity or None, optional
        The memory arithmetic the capacity came from (per-GPU weights, basis; `from_specs`).
    compute_dtype : str, optional
        The precision its GEMMs run at ("" when unknown).

    Examples
    --------
    The lecture exercise 10's server: 10 KV tokens, every iteration 1 s.

    >>> Replica(IterationCost.unit(), 10, 2048).kv_capacity_tokens
    10
    """

    cost: IterationCost
    kv_capacity_tokens: int
    max_len: int
    description: str = ""
    deployment: Deployment = SINGLE_GPU
    capacity: KvCapacity | None = None
    compute_dtype: str = ""
    context_limit: int = 0  # the model's max_position_embeddings (0: unknown, not checked)

    def __post_init__(self) -> None:
        """Validate the capacity and the maximum length: whole numbers >= 1."""
        check_fields(self, skip=("cost",))  # the cost is duck-typed (serving.retime times a counting one)
        if not callable(getattr(self.cost, "time", None)):
            raise InvalidValueError(f"cost must be an IterationCost (a pass cost with .time), got "
                                    f"{type(self.cost).__name__}", params=("cost",))
        check_number("kv_capacity_tokens", self.kv_capacity_tokens, low=1, integer=True)
        check_number("max_len", self.max_len, low=1, integer=True)

    @classmethod
    def from_specs(cls, model: ModelSpec, gpu: Accelerator, profile: Profile = PRESETS[LECTURE_SERVING.preset], *,
                   reserve: float | None = None, weights: WeightFormat = BF16,
                   kv_bytes_per_element: float | None = None, kv_tokens: int | None = None,
                   max_len: int | None = None, deployment: Deployment | None = None) -> "Replica":
        r"""GPT-3 13B on one A100 40GB with the lecture preset is the lecture's setting (§3.3).

        kv_tokens overrides the capacity computed from memory, weights and reserve. On a
        `deployment` the cost is `parallel.deployed_cost` of the one-GPU cost and the capacity one
        replica's (per GPU: its share of the weights and of each token's K/V).

        .. math:: \mathit{kv\_tokens} = \lfloor (M\,(1 - r) - W_{gpu}) / (b_{KV}\,\mathit{kv\_share} / pp) \rfloor

        Parameters
        ----------
        model : ModelSpec
            The model (a spec).
        gpu : Accelerator
            The accelerator (a spec).
        profile : Profile, optional
            The time model's preset (default the lecture's).
        reserve : float, optional
            Fraction of memory held back, in [0, 1) (default the deployment's, 0.1).
        weights : WeightFormat or str, optional
            Weight format or its name (default BF16).
        kv_bytes_per_element : float, optional
            Bytes of one cached K or V element (default the deployment's kv_dtype, BF16: 2.0).
        kv_tokens : int or None, optional
            KV capacity in tokens, >= 1 (default: from `kv_capacity`).
        max_len : int or None, optional
            Maximum length to reserve, tokens >= 1 (default the model's context).
        deployment : Deployment, optional
            tp, pp, ep, replicas, kv_dtype, overlap_comm, memory basis (default one GPU; a basis
            not named is the profile's: the lecture's 40e9 bytes under its preset).

        Returns
        -------
        Replica

        Raises
        ------
        InvalidValueError
            When the model leaves no KV room on the accelerator.

        Notes
        -----
        A model with sliding or chunked layers, or with recurrent layers, is taken: `engine.serve`
        caps each layer's K/V at its window and holds a state per sequence, in its general loop
        (the fast paths' allow-lists, `eligibility`, hand such a cost to it; the `request`
        scheduler refuses it).

        Examples
        --------
        >>> from llm_cost.catalog import load_model, load_accelerator
        >>> r = Replica.from_specs(load_model("gpt-3-13b"), load_accelerator("a100-40gb"))
        >>> r.kv_capacity_tokens, r.max_len, r.description
        (12564, 2048, 'gpt-3-13b on A100 40GB, preset lecture')

        Llama-3-70B over 4 H100s: each GPU a quarter of the weights and 2 of the 8 K/V heads.

        >>> from llm_cost.specs.deployment import Deployment
        >>> r = Replica.from_specs(load_model("llama-3-70b"), load_accelerator("h100-sxm"), deployment=Deployment(tp=4))
        >>> r.kv_capacity_tokens, r.cost.stages, r.cost.comm_time_s(1) > 0, r.description
        (448280, 1, True, 'llama-3-70b on H100 SXM, tp 4, preset lecture')
        """
        from llm_cost.parallel import deployed_cost
        from llm_cost.roofline.pass_terms import gemm_precision

        model = as_model(model)
        gpu = as_accelerator(gpu)
        profile = as_profile(profile)
        weights = as_weights(weights)  # a format or its name ("int4"), as every function that takes a spec
        deployment = (SINGLE_GPU if deployment is None else deployment).following(profile)
        cap = kv_capacity(model, gpu, reserve=reserve, weights=weights, kv_bytes_per_element=kv_bytes_per_element,
                          deployment=deployment)  # checks the deployment
        if kv_tokens is None:
            if cap.kv_tokens < 1:
                more = "; split it over more GPUs (tp, pp)" if gpu.interconnect_bytes_per_s else ""
                split = ("" if deployment.is_single
                         else f" with tp {deployment.tp} pp {deployment.pp} ep {deployment.ep}")
                raise InvalidValueError(
                    f"{model.name} leaves no KV room on {gpu.name}{split}: weights "
                    f"{cap.weight_bytes_per_gpu / 1e9:.2f} GB per GPU of {cap.usable_bytes / 1e9:.2f} GB "
                    f"({cap.memory_basis} memory less the reserve {cap.reserve_fraction:g}), short by "
                    f"{max(cap.shortfall_bytes, cap.kv_bytes_per_token_per_gpu - cap.kv_bytes_available) / 1e9:.3f} GB"
                    f"{more}", params=("tp", "pp", "ep") if more or split else ())
            kv_tokens = cap.kv_tokens
        else:
            check_number("kv_tokens", kv_tokens, low=1, high=_most_kv_tokens(cap, gpu), integer=True)
        _, _, kv_el, _ = capacity_settings(deployment, reserve, kv_bytes_per_element)
        cost = deployed_cost(IterationCost.from_roofline(model, gpu, profile, weights, kv_el),
                             model, gpu, weights, deployment)
        return cls(cost, int(kv_tokens), model_max_len(model, max_len),
                   f"{model.name} on {gpu.name}{deployment_label(deployment)}, preset {profile.name}",
                   deployment=deployment, capacity=cap,
                   compute_dtype=gpu.compute_precision(gemm_precision(model, weights)),
                   context_limit=model.max_position_embeddings or 0)


def _most_kv_tokens(cap, gpu) -> int:
    """The most K/V tokens a replica's GPUs could hold with nothing else on them: each GPU's whole
    marketed memory over its K/V bytes a token. A `kv_tokens` override past it is a typo, not a
    measurement (issue 29: 10^9 tokens, 819 TB, said to fit a 40 GB A100); below it the override is
    taken as measured (an engine's reported capacity)."""
    per_token = cap.kv_bytes_per_token_per_gpu
    return max(1, int(gpu.memory_bytes // per_token)) if per_token > 0 else 1 << 62


def deployment_label(deployment: Deployment) -> str:
    """', tp 4 pp 2, 16 GPUs (2 replicas)' for a deployment, '' for one GPU."""
    if deployment.is_single and deployment.replicas == 1:
        return ""
    parts = [f"{name} {ways}" for name, ways in (("tp", deployment.tp), ("pp", deployment.pp), ("ep", deployment.ep))
             if ways > 1]
    split = [" ".join(parts)] if parts else []
    if deployment.replicas > 1:
        split.append(f"{deployment.total_gpus} GPUs ({deployment.replicas} replicas)")
    return ", " + ", ".join(split)
