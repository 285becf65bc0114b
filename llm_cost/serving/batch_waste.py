"""What a batch spends beyond the tokens its requests need: padding, and per-request attention launches.

Sources: the lecture §2.2 and exercise 1 (request-level batching pads prompts to the longest and
runs every row to the longest output), §4.4 (one attention kernel per request and layer:
40 x 32 = 1280 launches in a 32-request GPT-3 13B iteration).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from llm_cost.catalog import as_accelerator, as_model, as_profile
from llm_cost.errors import InvalidValueError, check_all, check_number
from llm_cost.roofline import step_time
from llm_cost.specs import BF16, Accelerator, ModelSpec, Profile, WeightFormat
from llm_cost.catalog.arguments import MAX_COUNT, Many, Number, check_arguments

LENGTHS = Many(Number(0, MAX_COUNT, integer=True), optional=True)  # tokens of each request


@dataclass(frozen=True)
class PaddingWaste:
    r"""Token positions a request-level batch computes vs the positions its requests need.

    .. math:: \mathit{waste} = 1 - \mathit{needed} / \mathit{computed}

    Attributes
    ----------
    batch, prompt_max, output_max
        Requests in the batch and their longest prompt and output (tokens).
    positions_computed
        B x L_max + B x (O_max - 1) positions.
    positions_needed
        sum(P_i + O_i - 1) positions.

    Examples
    --------
    See `padding_waste`.
    """

    batch: int
    prompt_max: int
    output_max: int
    positions_computed: int
    positions_needed: int

    @property
    def positions_wasted(self) -> int:
        """Padded positions: computed - needed."""
        return self.positions_computed - self.positions_needed

    @property
    def waste_fraction(self) -> float:
        """1 - needed / computed (exercise 1: 34.4%)."""
        return self.positions_wasted / self.positions_computed


def padded_positions(batch: int, prompt_max: int, output_max: int) -> int:
    r"""Token positions a request-level batch computes (and KV tokens it ends up holding), unchecked.

    B x L_max + B x (O_max - 1): every prompt padded to the longest, every row run to the longest
    output (the prefill makes the first output token). `padding_waste` and the simulator's
    request-level scheduler both count with this.

    .. math:: \mathit{computed} = B\,L_{max} + B\,(O_{max} - 1)

    Parameters
    ----------
    batch : int
        Requests B in the batch (>= 1).
    prompt_max : int
        The longest prompt L_max (tokens, >= 1).
    output_max : int
        The longest output O_max (tokens, >= 1).

    Returns
    -------
    int
        Positions (tokens).

    Examples
    --------
    The lecture exercise 1: 3 x 300 + 3 x 49.

    >>> padded_positions(3, 300, 50)
    1047
    """
    return batch * prompt_max + batch * (output_max - 1)


@check_arguments(prompts=LENGTHS, outputs=LENGTHS)
def padding_waste(prompts: Sequence[int], outputs: Sequence[int]) -> PaddingWaste:
    r"""Request-level batching pads prompts to the longest and runs every row to the longest output.

    computed = B x L_max + B x (O_max - 1) (the prefill makes the first output token);
    needed = sum(P_i + O_i - 1). Exercise 1: prompts 100, 300, 200, outputs 10, 50, 30 ->
    1047 computed, 687 needed, 34.4% wasted. The lecture §2.2.

    .. math:: \mathit{waste} = 1 - \frac{\sum_i (P_i + O_i - 1)}{B\,L_{max} + B\,(O_{max} - 1)}

    Parameters
    ----------
    prompts : sequence of int
        Prompt tokens per request, each a whole number >= 1 (at least one request).
    outputs : sequence of int
        Generated tokens per request, each >= 1, as many as prompts.

    Returns
    -------
    PaddingWaste
        Positions computed, needed and wasted, and the waste fraction in [0, 1).

    Examples
    --------
    >>> w = padding_waste([100, 300, 200], [10, 50, 30])
    >>> w.positions_computed, w.positions_needed, w.positions_wasted, f"{w.waste_fraction:.1%}"
    (1047, 687, 360, '34.4%')
    """
    prompts, outputs = list(prompts or ()), list(outputs or ())  # None: no value, not a TypeError
    if len(prompts) != len(outputs):
        raise InvalidValueError(
            f"prompts and outputs must be given the same number of times, got {len(prompts)} and {len(outputs)}",
            params=("prompts", "outputs"))
    prompts = check_all("prompts", prompts, low=1, integer=True)
    outputs = check_all("outputs", outputs, low=1, integer=True)
    batch, lmax, omax = len(prompts), int(max(prompts)), int(max(outputs))
    return PaddingWaste(batch=batch, prompt_max=lmax, output_max=omax,
                        positions_computed=padded_positions(batch, lmax, omax),
                        positions_needed=int(sum(prompts) + sum(outputs)) - batch)


@dataclass(frozen=True)
class AttentionLaunches:
    r"""Attention kernels launched one per request and layer, and what they cost in an iteration.

    .. math:: t_{launch} = L \cdot n_{req} \cdot t_{kernel},\quad
              \mathit{share} = t_{launch} / T_{step}

    Attributes
    ----------
    launches
        Kernel launches: layers x requests.
    launch_cost_s
        Seconds per launch.
    step_time_s
        The iteration's roofline time, launches excluded (seconds).

    Examples
    --------
    See `attention_launches`.
    """

    launches: int
    launch_cost_s: float
    step_time_s: float  # the iteration's roofline time, launches excluded

    @property
    def overhead_s(self) -> float:
        """Seconds the launches take: launches x launch cost."""
        return self.launches * self.launch_cost_s

    @property
    def share_of_step(self) -> float:
        """Launch time / the iteration's roofline time (lecture §4.4: 13% to 44%)."""
        return self.overhead_s / self.step_time_s

    @property
    def share_of_iteration(self) -> float:
        """Launch time / (roofline time + launch time): the part of the longer iteration."""
        return self.overhead_s / (self.step_time_s + self.overhead_s)


@check_arguments(requests=Number(1, 1e12, integer=True), launch_cost_s=Number(0, 1))
def attention_launches(model: ModelSpec, gpu: Accelerator, profile: Profile, *, requests: int,
                       context: float, launch_cost_s: float,
                       weights: WeightFormat = BF16) -> AttentionLaunches:
    r"""Per-request attention in a pure decode iteration: layers x requests kernel launches.

    Lecture §4.4 (demo 02.4): GPT-3 13B, A100, 40 layers x 32 requests = 1280 launches, "每次
    几微秒，加起来是这次迭代的 13%-44%". The lecture states no per-launch cost; against a
    32-request decode step at the workload's mean length of 336 tokens (28.7 ms, lecture preset)
    its 13% and 44% are about 2.9 and 9.9 us per launch.

    .. math:: n = L \cdot n_{req},\quad \mathit{share} = n\,t_{kernel} / T(n_{req}, ctx)

    Parameters
    ----------
    model : ModelSpec
        The model (a spec).
    gpu : Accelerator
        The accelerator (a spec).
    profile : Profile
        The time model's preset (a spec, e.g. `llm_cost.specs.PRESETS["lecture"]`).
    requests : int
        Decoding requests in the iteration, a whole number >= 1.
    context : float
        Cached tokens per request, in [0, inf).
    launch_cost_s : float
        Seconds per kernel launch, in [0, inf).
    weights : WeightFormat, optional
        Weight format (default BF16).

    Returns
    -------
    AttentionLaunches
        Launch count, launch time and the step's roofline time (seconds), with their shares.

    Examples
    --------
    >>> from llm_cost.catalog import load_model, load_accelerator
    >>> from llm_cost.specs import PRESETS
    >>> a = attention_launches(load_model("gpt-3-13b"), load_accelerator("a100-40gb"), PRESETS["lecture"],
    ...                        requests=32, context=336, launch_cost_s=3e-6)
    >>> a.launches, round(a.step_time_s * 1e3, 1), f"{a.share_of_step:.1%}"
    (1280, 28.7, '13.4%')
    """


    model = as_model(model)


    gpu = as_accelerator(gpu)


    profile = as_profile(profile)
    check_number("requests", requests, low=1, integer=True)
    check_number("launch_cost_s", launch_cost_s, low=0)
    check_number("context", context, low=0)
    step = step_time(model, gpu, profile, rows=requests, batch=requests, context=context, weights=weights)
    return AttentionLaunches(launches=model.num_layers * int(requests), launch_cost_s=launch_cost_s,
                             step_time_s=step.step_time_s)
