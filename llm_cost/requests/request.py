"""Whole requests: B requests of ISL prompt and OSL output tokens, served as one static batch.

    TTFT  = the prefill (`phases`): the first output token comes from its last row; plus the
            profile's `ttft_overhead_s` (an engine's time before the first token beyond the prefill)
    TPOT  = the mean of the OSL - 1 decode steps (contexts ISL .. ISL + OSL - 2 cached tokens)
    e2e   = TTFT + (OSL - 1) x TPOT
    output tokens/s per user = OSL / e2e;  in all = replicas x B x OSL / e2e (a static batch cannot
    fill pp stages: one batch per replica is in flight);  per GPU = that / gpus
    GPU-seconds of a phase = its time x tp x pp (the replica's GPUs, all held by the batch), dollars = GPU-seconds x price / 3600: input tokens are priced by the prefill, output
    tokens by the decode steps (the first output token is the prefill's).

With speculation the decode's tokens each take round(ctx) / E of a speculative round at their
context (`speculative.roofline_speedup` per context: gamma draft steps and one verification over
B (gamma + 1) rows), a mean-field view of rounds that accept E tokens on average.
"""

from __future__ import annotations

from llm_cost.specs.weights import as_weights

import dataclasses
from dataclasses import dataclass

from llm_cost.catalog import as_accelerator, as_model, as_profile
from llm_cost.errors import InvalidValueError, check_number
from llm_cost.parallel import Fit, deployed_pass_cost, step_fit
from llm_cost.requests.phases import BLOCK_STEPS, Phases, check_request_work, linear_in_context, phases
from llm_cost.specs import BF16, WeightFormat
from llm_cost.specs.deployment import SINGLE_GPU, Deployment
from llm_cost.specs.profiles import ARTICLE_DRAFT
from llm_cost.catalog.arguments import MAX_COUNT, MAX_TOKENS, Number, check_arguments, default_rules
from llm_cost.specs.validate import check_fields, check_value



@dataclass(frozen=True)
class Speculation:
    """Speculative decoding of the decode phase: acceptance `alpha`, `gamma` drafts per round, and the
    draft's cost as `c` (t_draft = c T(B)) or a `draft` model on the same deployment.

    A draft given by name is loaded when the `Speculation` is made (an unknown name fails there);
    `request_cost` asks for exactly one of `c` and `draft`.

    Examples
    --------
    Llama-3.2-1B drafting 4 tokens for Llama-3.1-8B at alpha 0.8, 8 requests of 1,024 + 256 tokens on
    an H100 (lecture preset): 3.36 tokens a round, 4.52 ms an output token instead of 7.05 ms, and the
    draft's weights and K/V fit beside the target's.

    >>> import llm_cost as lc
    >>> spec = lc.Speculation(alpha=0.8, gamma=4, draft="llama-3.2-1b")
    >>> spec.draft.name, spec.c
    ('llama-3.2-1b', None)
    >>> plain = lc.request_cost("llama-3.1-8b", "h100-sxm", "lecture", batch=8, isl=1024, osl=256)
    >>> fast = lc.request_cost("llama-3.1-8b", "h100-sxm", "lecture", batch=8, isl=1024, osl=256, speculation=spec)
    >>> round(fast.expected_tokens, 2), round(plain.tpot_s * 1e3, 2), round(fast.tpot_s * 1e3, 2), fast.fit.fits
    (3.36, 7.05, 4.52, True)
    >>> lc.Speculation(alpha=0.8, gamma=4, draft="llama-3.2-2b")
    Traceback (most recent call last):
    ...
    llm_cost.errors.UnknownNameError: draft: unknown model 'llama-3.2-2b'; did you mean llama-3.2-1b, ...
    """

    alpha: float
    gamma: int
    c: float | None = None
    draft: object = None  # a ModelSpec, or a catalog name (held as the spec it loads)
    draft_profile: object = None  # a Profile, or a preset's name (held as the preset)

    def __post_init__(self) -> None:
        check_fields(self)
        check_value("draft", self.draft, "ModelSpec | str | None", field="draft")
        check_value("draft_profile", self.draft_profile, "Profile | str | None", field="draft_profile")
        rules = default_rules()  # a name resolved once, here: equal to the spec it names
        for name in ("draft", "draft_profile"):
            if isinstance(getattr(self, name), str):
                object.__setattr__(self, name, rules[name].check(name, getattr(self, name)))


DEFAULT_C = ARTICLE_DRAFT.c  # a draft's cost over the target's step when neither c nor a draft model is given (the article §2.3)
MAX_C = 10  # the largest draft cost coefficient c (a draft step over a target step) taken


def speculation_from(*, spec_alpha=None, tau=None, spec_gamma: int = 4, c=None, draft=None) -> "Speculation | None":
    """The `Speculation` of a request's decode from its settings, or None without `spec_alpha` or `tau`:
    acceptance `spec_alpha`, or the alpha whose expected tokens per round at `spec_gamma` is `tau`
    (`speculative.tau.alpha_from_tau`); `spec_gamma` in [0, `GAMMA_MAX`]; the draft's cost `c` in [0,
    `MAX_C`] (default `DEFAULT_C`) or a `draft` model's own. `spec_alpha` and `tau` exclude each other,
    as do `c` and `draft`, which need one of the first two. Each refusal names its parameters.

    >>> speculation_from(tau=3.3616, spec_gamma=4)
    Speculation(alpha=0.8, gamma=4, c=0.1, draft=None, draft_profile=None)
    >>> speculation_from(spec_alpha=0.8, spec_gamma=65)
    Traceback (most recent call last):
    ...
    llm_cost.errors.InvalidValueError: spec_gamma must be in [0, 64], got 65
    """
    from llm_cost.speculative.inputs import GAMMA_MAX

    if spec_alpha is not None and tau is not None:
        raise InvalidValueError("spec_alpha and tau exclude each other: give the acceptance rate or the mean "
                                "accepted length it is solved from", params=("spec_alpha", "tau"))
    if spec_alpha is None and tau is None:
        if c is not None or draft is not None:
            raise InvalidValueError("c and draft describe the drafting model of speculative decoding: give spec_alpha or tau",
                                    params=("c", "draft", "spec_alpha", "tau"))
        return None
    if c is not None and draft is not None:
        raise InvalidValueError("c and draft exclude each other: the drafting model's cost is one or the other",
                                params=("c", "draft"))
    check_number("spec_gamma", spec_gamma, low=0, high=GAMMA_MAX, integer=True)
    if spec_alpha is not None:
        check_number("spec_alpha", spec_alpha, low=0, high=1)
    if c is not None:
        check_number("c", c, low=0, high=MAX_C)
    alpha = spec_alpha
    if tau is not None:
        from llm_cost.speculative.tau import alpha_from_tau

        alpha = float(alpha_from_tau(tau, spec_gamma))
    return Speculation(alpha=alpha, gamma=spec_gamma, c=None if draft is not None else (DEFAULT_C if c is None else c),
                       draft=draft)


@dataclass(frozen=True)
class RequestCost:
    """One static batch of requests on a deployment: the phases, the request's latencies, throughput,
    GPU-seconds and the fit (SI).

    Attributes
    ----------
    batch, isl, osl
        Requests in the batch, prompt tokens (image tokens included) and output tokens of each.
    phases
        The prefill's and the decode's seconds, passes and bounds (`phases.Phases`).
    deployment, fit
        The GPUs the batch runs on, and one GPU's memory at the batch's peak (`parallel.Fit`).
    expected_tokens
        Tokens per decode round: 1 without speculation, E with it.
    images, image_tokens, encoder_s, ttft_overhead_s
        Images per prompt, their soft tokens per request, the vision tower's seconds and the
        profile's time before the first token beyond the prefill.

    Examples
    --------
    `request_cost` gives it. 8 requests of 1,024 prompt and 256 output tokens of Llama-3-8B on an
    H100 (lecture preset): a compute-bound prefill of 212 ms, then 255 memory-bound decode steps of
    7.05 ms on average; 1,019 output tokens a second, 2.01 GPU-seconds for the batch.

    >>> import llm_cost as lc
    >>> r = lc.request_cost("llama-3-8b", "h100-sxm", "lecture", batch=8, isl=1024, osl=256)
    >>> round(r.ttft_s * 1e3, 1), r.phases.prefill_bound, round(r.tpot_s * 1e3, 2), r.phases.decode_bound
    (211.9, 'compute', 7.05, 'memory')
    >>> round(r.e2e_s, 2), round(r.output_tokens_per_s), round(r.gpu_seconds(r.e2e_s), 2), r.fit.fits
    (2.01, 1019, 2.01, True)

    Llama-3-70B does not fit one H100 (`fit`); over tp = 4 an output token takes 14.8 ms and the
    batch 4 x its seconds of GPU time:

    >>> lc.request_cost("llama-3-70b", "h100-sxm", "lecture", batch=8, isl=1024, osl=256).fit.fits
    False
    >>> tp4 = lc.request_cost("llama-3-70b", "h100-sxm", "lecture", batch=8, isl=1024, osl=256,
    ...                       deployment=lc.Deployment(tp=4))
    >>> tp4.fit.fits, round(tp4.tpot_s * 1e3, 1), round(tp4.gpu_seconds(tp4.e2e_s) / tp4.e2e_s)
    (True, 14.8, 4)
    """

    batch: int
    isl: int
    osl: int
    phases: Phases
    deployment: Deployment
    fit: Fit
    expected_tokens: float = 1.0  # tokens per decode round (1 without speculation)
    # Images in each prompt (`images`): their soft tokens, in the prefill beside the isl text tokens,
    # and the vision tower's seconds, in the TTFT (`phases.prefill_s` includes them)
    images: int = 0
    image_tokens: int = 0  # per request, all its images
    encoder_s: float = 0.0
    ttft_overhead_s: float = 0.0  # the profile's (its engine's) time to first token beyond the prefill

    @property
    def ttft_s(self) -> float:
        """The prefill and the engine's overhead before the first token."""
        return self.phases.prefill_s + self.ttft_overhead_s if self.ttft_overhead_s else self.phases.prefill_s

    @property
    def tpot_s(self) -> float:
        """Mean seconds per output token after the first (0 when OSL = 1)."""
        return self.phases.decode_s / (self.osl - 1) if self.osl > 1 else 0.0

    @property
    def e2e_s(self) -> float:
        return self.ttft_s + self.phases.decode_s

    @property
    def in_flight(self) -> int:
        """Batches the deployment serves at once (`Deployment.batches_in_flight`)."""
        return self.deployment.batches_in_flight

    @property
    def output_tokens_per_s(self) -> float:
        return self.in_flight * self.batch * self.osl / self.e2e_s

    @property
    def prefill_tokens_per_s(self) -> float:
        return self.in_flight * self.batch * self.isl / self.phases.prefill_s

    def gpu_seconds(self, seconds: float) -> float:
        """GPU-seconds one batch takes over `seconds` of its life (`gpu_seconds`)."""
        return gpu_seconds(seconds, self.deployment)


@check_arguments(seconds=Number(0, 1e15))
def gpu_seconds(seconds: float, deployment: Deployment) -> float:
    """GPU-seconds one batch takes over `seconds` of its life: its replica's tp x pp GPUs, all held by
    the one static batch in flight (`Deployment.batches_in_flight`): seconds x tp x pp."""
    return seconds * deployment.gpus_per_replica


def usd_per_million_tokens(gpu_seconds, tokens, usd_per_gpu_hour):
    """Dollars per million of `tokens` made in `gpu_seconds` GPU-seconds at `usd_per_gpu_hour` dollars a
    GPU-hour: the one price formula (`request`, `table`, `plan`, `batching` call it); numbers or numpy
    arrays, unchecked (the callers check the price and divide by a positive count).

        usd per million tokens = gpu_seconds x usd_per_gpu_hour / 3600 / tokens x 1e6

    >>> usd_per_million_tokens(3600.0, 1e6, 2.0)  # a GPU-hour at $2 making a million tokens
    2.0
    """
    return gpu_usd(gpu_seconds, usd_per_gpu_hour) / tokens * 1e6


def gpu_usd(gpu_seconds, usd_per_gpu_hour):
    """Dollars of `gpu_seconds` GPU-seconds at `usd_per_gpu_hour` dollars a GPU-hour: gpu_seconds x price /
    3600 (`usd_per_million_tokens` per token; a request's price per request).

    >>> gpu_usd(1800.0, 2.0)
    1.0
    """
    return gpu_seconds * usd_per_gpu_hour / SECONDS_PER_HOUR


SECONDS_PER_HOUR = 3600  # a GPU-hour's seconds: prices are per GPU-hour, times are seconds


@check_arguments()
def request_cost(model, gpu, profile, *, batch: int = 1, isl: int, osl: int,
                 deployment: Deployment = SINGLE_GPU, weights: WeightFormat = BF16,
                 prefill_chunk: int | None = None, speculation: Speculation | None = None,
                 images: int = 0, image_size: int | None = None) -> RequestCost:
    """`RequestCost` of `batch` requests of `isl` prompt and `osl` output tokens (module doc).

    Parameters
    ----------
    model, gpu, profile
        Specs, or catalog names / a preset name.
    batch, isl, osl
        Requests in the static batch, prompt and output tokens of each: whole numbers >= 1; isl at
        most the model's context limit (`max_position_embeddings`, when known).
    deployment, weights
        The GPUs and their split, K/V precision; the weight format.
    prefill_chunk
        Prompt tokens per prefill pass (chunked prefill), >= 1; None: the whole prompt at once.
    speculation
        Speculative decoding of the decode phase (`Speculation`), or None.
    images, image_size
        Images in each request's prompt, >= 0, and their side in pixels (None: the tower's own
        image_size): each adds `counts.vision.image_cost` tokens to the prefill, and the tower's
        encoder FLOPs, B x images x F_enc / (F eta_f x tp) seconds (the tower sharded like the
        text model, compute-bound), to the TTFT. A model without a vision tower refuses images.

    Examples
    --------
    A 4,096-token prompt and 256 output tokens of Llama-3-8B on an H100 (lecture preset):

    >>> r = request_cost("llama-3-8b", "h100-sxm", "lecture", isl=4096, osl=256)
    >>> round(r.ttft_s * 1e3, 1), round(r.tpot_s * 1e3, 2), r.phases.prefill_bound, r.phases.decode_bound
    (112.0, 6.81, 'compute', 'memory')
    >>> abs(r.e2e_s - (r.ttft_s + 255 * r.tpot_s)) < 1e-12
    True
    """
    model, gpu, profile = as_model(model), as_accelerator(gpu), as_profile(profile)
    check_number("batch", batch, low=1, high=1e9, integer=True)
    check_number("isl", isl, low=1, high=MAX_TOKENS, integer=True)
    check_number("osl", osl, low=1, high=MAX_TOKENS, integer=True)
    if prefill_chunk is not None:
        check_number("prefill_chunk", prefill_chunk, low=1, high=MAX_TOKENS, integer=True)
    limit = model.max_position_embeddings
    if limit and isl > limit:
        raise InvalidValueError(f"isl must be at most the model's context of {limit} tokens, got {isl}",
                                params=("isl",))
    batch, isl, osl = int(batch), int(isl), int(osl)
    deployment = deployment.following(profile)  # the fit counts the profile's memory basis
    weights = as_weights(weights)  # a format or its name ("fp8")
    cost = deployed_pass_cost(model, gpu, profile, weights, deployment)
    check_request_work(isl, osl, prefill_chunk, speculative=speculation is not None,  # before any pass
                       closed_form=linear_in_context(cost, profile.count_kv))
    image_tokens, encoder_s = _images(model, images, image_size, batch, cost, deployment)
    text_isl, isl = isl, isl + image_tokens  # the prompt the text model prefills
    if limit and isl > limit:
        raise InvalidValueError(f"isl + image tokens ({text_isl} + {image_tokens}) must be at most the model's "
                                f"context of {limit} tokens", params=("isl", "images"))
    ph = phases(cost, batch=batch, isl=isl, osl=osl, chunk=prefill_chunk, count_kv=profile.count_kv)
    if encoder_s:
        ph = dataclasses.replace(ph, prefill_s=ph.prefill_s + encoder_s)
    expected = 1.0
    if speculation is not None and osl > 1:
        ph, expected = _speculative_decode(ph, model, gpu, profile, weights, deployment, speculation,
                                           batch=batch, isl=isl, osl=osl)
        # the target's collectives: one verification pass over B (gamma + 1) rows per round, (OSL - 1) / E rounds
        ph = dataclasses.replace(ph, decode_comm_time_s=(osl - 1) / expected
                                 * float(cost.comm_time_s(batch * (speculation.gamma + 1))))
    return RequestCost(batch=batch, isl=isl, osl=osl, phases=ph, deployment=deployment,
                       fit=request_fit(model, gpu, deployment, weights, batch=batch, isl=isl, osl=osl,
                                       chunk=prefill_chunk, gamma=speculation.gamma if speculation else 0,
                                       draft=speculation.draft if speculation else None),
                       expected_tokens=expected, images=int(images), image_tokens=image_tokens, encoder_s=encoder_s,
                       ttft_overhead_s=profile.ttft_overhead_s)


def _images(model, images, image_size, batch: int, cost, deployment: Deployment) -> tuple[int, float]:
    """(soft tokens per request, encoder seconds of the batch) of `images` images per prompt."""
    check_number("images", images, low=0, high=1e4, integer=True)
    if not images:
        return 0, 0.0
    from llm_cost.counts.vision import image_cost

    one = image_cost(model, image_size)
    seconds = batch * images * one.encoder_flops / (cost.flops_per_s * deployment.tp)
    return int(images) * one.tokens, seconds


@check_arguments(isl=Number(1, MAX_COUNT), gamma=Number(0, 1e6, integer=True), chunk=Number(1, MAX_COUNT, integer=True))
def request_fit(model, gpu, deployment, weights, *, batch, isl, osl, chunk=None, gamma=0, draft=None) -> Fit:
    """One GPU's memory at the batch's peak: the weights, the K/V of ISL + OSL tokens per request, and
    the larger workspace of a prefill pass and a (verification) decode step; with a `draft` model on
    the same GPUs (`speculative.fit.draft_deployment_for`), its weights and its K/V too (the
    lecture §9.3: the draft's weights and K/V take memory, so fewer target sequences fit)."""
    pre = step_fit(model, gpu, deployment, rows=batch * min(chunk or isl, isl), batch=batch, context=0,
                   weights=weights)
    end = step_fit(model, gpu, deployment, rows=batch * (gamma + 1), batch=batch,
                   context=isl + osl - 1 - gamma, weights=weights)
    fit = dataclasses.replace(end, workspace_bytes=max(pre.workspace_bytes, end.workspace_bytes), context=isl + osl)
    if draft is None:
        return fit
    return fit.beside(_draft_fit(draft, gpu, deployment, batch=batch, isl=isl, osl=osl, gamma=gamma))


def _draft_fit(draft, gpu, deployment, *, batch, isl, osl, gamma) -> Fit:
    """The draft's own `Fit` at the end of the batch (BF16 weights, the target's K/V dtype)."""
    from llm_cost.speculative.fit import draft_deployment_for

    return step_fit(draft, gpu, draft_deployment_for(draft, deployment), rows=batch * (gamma + 1), batch=batch,
                    context=isl + osl - 1 - gamma)


def _speculative_decode(ph: Phases, model, gpu, profile, weights, deployment, spec: Speculation, *,
                        batch, isl, osl) -> tuple[Phases, float]:
    """The decode phase under speculation: each of the OSL - 1 tokens takes round(ctx) / E."""
    import numpy as np

    from llm_cost.speculative import roofline_speedup

    total, first = 0.0, None
    for lo in range(0, osl - 1, BLOCK_STEPS):  # blocks: memory stays bounded whatever OSL (phases' doc)
        contexts = isl + np.arange(lo, min(osl - 1, lo + BLOCK_STEPS), dtype=float)
        speedup = roofline_speedup(model, gpu, profile, alpha=spec.alpha, gamma=spec.gamma, batch=batch, c=spec.c,
                             draft=spec.draft, draft_profile=spec.draft_profile, context=contexts,
                             weights=weights, deployment=deployment)
        per_token = np.broadcast_to(np.asarray(speedup.round_s) / np.asarray(speedup.expected_tokens), contexts.shape)
        total += float(np.sum(per_token))
        first = float(per_token[0]) if first is None else first
    expected = float(np.asarray(speedup.expected_tokens).flat[0])
    return (Phases(ph.prefill_s, ph.prefill_comm_time_s, ph.prefill_passes, total, first, float(per_token[-1]),
                   ph.decode_comm_time_s, ph.prefill_bound,
                   "compute" if bool(np.asarray(speedup.verify_compute_bound).flat[-1]) else "memory"), expected)
