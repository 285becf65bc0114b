"""Efficiency profiles: how close to the datasheet a forward pass gets, and what it reads.

The two source documents are two presets of one profile (see README, "Sources"): `article`
(peak figures, every weight byte, no KV) and `lecture` (80% bandwidth, 60% compute, KV read,
the input embedding a lookup, 1 ms fixed per pass; `lecture-draft` 0.3 ms).
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, replace

from llm_cost.errors import InvalidValueError, check_choice, check_number
from llm_cost.specs.validate import check_fields, check_value

# What a GPU's memory is taken to be (`Profile.memory_basis`): the driver's figure or the label's.
MEMORY_BASES = ("usable", "marketed")
KERNEL_SOURCES = ("datasheet", "measured")
# The knobs a profile fits per serving engine (`Profile.engine_costs`), in this order: its fixed costs and
# its kernels' large-GEMM MFU (the prefill's efficiency; an entry of the first three alone, as profiles
# fitted before it was an engine's, takes the profile's own compute_efficiency)
ENGINE_KNOBS = ("fixed_time_s", "fixed_time_per_layer_s", "ttft_overhead_s", "compute_efficiency")
MIN_EFFICIENCY = 1e-4  # 0.01% of a peak: below it a time is not a model of any machine
MAX_FIXED_S = 3600.0  # an hour of overhead per pass is a typo, not a measurement
MAX_HALF_WIDTH = 65536.0  # columns per GPU: wider than any GEMM of a released model


@dataclass(frozen=True)
class Profile:
    """How close to the datasheet a forward pass gets, and what it reads.

    T(m) = max(bytes_read / (BW * bw_efficiency), flops(m) / (F * compute_efficiency)) + fixed_time_s

    Parameters
    ----------
    name : str
        The profile's name (a preset's: "article", "lecture", "lecture-draft").
    bw_efficiency : float, optional
        Share of peak bandwidth reached, in (0, 1] (default 1). Keyword only, as are the rest.
    compute_efficiency : float, optional
        Share of peak FLOP/s reached (MFU), in (0, 1] (default 1).
    fixed_time_s : float, optional
        Seconds per forward pass on top of the roofline (launches, scheduling, sampling), >= 0.
    read_input_embedding : bool, optional
        Count the input embedding table as read (the article) or as a lookup (the lecture).
    count_kv : bool, optional
        Count KV cache reads and attention FLOPs with context (default False).
    weight_only_bw_factor : float, optional
        Share of `bw_efficiency` a pass reaches when the weights are weight-only quantized (INT4 or
        INT8 dequantized inside the GEMM kernel: gpt-fast's int4 at ~60% of its bf16 GB/s), in (0, 1]
        (default 1: as BF16).
    fp8_compute_factor : float, optional
        Share of `compute_efficiency` FP8 GEMMs reach (of the FP8 peak), in (0, 1] (default 1).
    fixed_time_per_layer_s : float, optional
        Seconds per layer per forward pass on top of `fixed_time_s` (kernel launches and small
        kernels in each layer), >= 0 (default 0).
    small_gemm_factor : float, optional
        Share of `compute_efficiency` a GEMM of few rows reaches, in (0, 1] (default 1: every GEMM at
        `compute_efficiency`). A GEMM of m rows runs at
        compute_efficiency x (r + (1 - r) m / (m + gemm_half_rows)), r this factor: few rows cannot
        fill the tensor cores' tiles, a prefill's thousands can (so `compute_efficiency` is the
        large GEMMs' MFU). Attention pairs stay at `compute_efficiency`.
    gemm_half_rows : float, optional
        Rows m of a pass at which its GEMMs are halfway from `small_gemm_factor` to full efficiency,
        >= 0 (default 0: no ramp).
    gemm_half_width : float, optional
        Columns w_h per GPU at which a GEMM reaches half its efficiency, in [0, 65536] (default 0: any
        width at full efficiency): a GEMM w columns wide on one GPU (the dimension tensor parallelism
        splits) runs at w / (w + w_h) of it: a routed expert at its intermediate size over the GPUs that
        share it, the other GEMMs at their FLOP-weighted harmonic mean width over tp
        (`roofline.gemm_rows`). gpt-oss-120b's experts, 2,880 wide, are 360 a GPU at tp 8. Under
        `kernels` "measured" a GPU with a GEMM table keeps the table's efficiencies instead (fitted on
        wide GEMMs).
    memory_basis : str, optional
        The memory a GPU offers, for every fit and KV capacity: "usable" (default: the datasheet's
        `usable_memory_bytes`, what the driver reports, 81,559 MiB on an "80GB" H100) or "marketed"
        (`memory_bytes`, 80e9: the two documents' arithmetic, so the seeds' presets use it).
    ttft_overhead_s : float, optional
        Seconds between a request's arrival and its first token beyond its prefill (tokenizing,
        scheduling, the first token's detokenizing and streaming), >= 0 (default 0).
    engine_costs : tuple, optional
        Knobs fitted per serving engine: ((engine, fixed_time_s, fixed_time_per_layer_s,
        ttft_overhead_s, compute_efficiency), ...), the fixed times >= 0, the efficiency (the engine's
        kernels' large-GEMM MFU, what its prefill reaches) in (0, 1]; an entry without the efficiency
        takes this profile's `compute_efficiency` (`for_engine`; default (): none).
    kernels : str, optional
        "datasheet" (default: this profile's efficiencies everywhere) or "measured": on a GPU with a
        measured kernel table (hardware/kernels/, fitted to NVIDIA aiconfigurator 0.12.0's tables by
        analysis/fit_kernel_tables.py) the GEMM roofline's bw_efficiency, compute_efficiency,
        small_gemm_factor and gemm_half_rows are the table's for the GEMM format (FP8's replaces
        fp8_compute_factor), tp all-reduces take its NCCL latency and bus bandwidth, and MoE
        experts, all-to-alls, decode and prefill attention and MLA their own tables' curves
        (`llm_cost.roofline.kernels`); a GPU without a table keeps this profile's figures, and
        `PassCost.kernel_source` and the breakdown's source column say which.

    Raises
    ------
    InvalidValueError
        Naming the field (`profile.bw_efficiency must be in (0, 1], got 1.2`).

    Examples
    --------
    The two source documents' presets (README, "Sources"): the article at peak, the lecture at
    80% bandwidth and 60% compute with 1 ms per pass.

    >>> a, l = PRESETS["article"], PRESETS["lecture"]
    >>> a.bw_efficiency, a.compute_efficiency, a.fixed_time_s, a.count_kv
    (1.0, 1.0, 0.0, False)
    >>> l.bw_efficiency, l.compute_efficiency, l.fixed_time_s, l.read_input_embedding, l.count_kv
    (0.8, 0.6, 0.001, False, True)
    >>> Profile("p", bw_efficiency=1.2)
    Traceback (most recent call last):
    ...
    llm_cost.errors.InvalidValueError: profile.bw_efficiency must be in [0.0001, 1], got 1.2
    """

    name: str
    _: KW_ONLY  # the knobs by name only: two efficiencies by position are easy to swap
    bw_efficiency: float = 1.0
    compute_efficiency: float = 1.0  # MFU
    fixed_time_s: float = 0.0  # per forward pass: launches, scheduling, sampling
    read_input_embedding: bool = True  # the article reads it; the lecture treats it as a lookup
    count_kv: bool = False  # KV cache reads and attention FLOPs with context
    weight_only_bw_factor: float = 1.0  # of bw_efficiency, under INT4/INT8 weight-only formats
    fp8_compute_factor: float = 1.0  # of compute_efficiency, for GEMMs at the FP8 peak
    fixed_time_per_layer_s: float = 0.0  # per layer per pass: launches of the layer's small kernels
    small_gemm_factor: float = 1.0  # of compute_efficiency, for a GEMM of few rows (1: no ramp)
    gemm_half_rows: float = 0.0  # rows where the GEMM efficiency is halfway up its ramp
    gemm_half_width: float = 0.0  # columns per GPU at which a GEMM is at half its efficiency (0: none)
    memory_basis: str = "usable"  # fits and KV capacity: usable_memory_bytes, or "marketed" memory_bytes
    ttft_overhead_s: float = 0.0  # per request, between its arrival and its first token, beyond the prefill
    # Fitted per serving engine: ((engine, fixed_time_s, fixed_time_per_layer_s, ttft_overhead_s,
    # compute_efficiency), ...) (`for_engine`); () for the documents' presets
    engine_costs: tuple = ()
    # "measured": GEMM efficiencies from measured kernel tables where the GPU has one
    # (`llm_cost.roofline.kernels`); "datasheet": this profile's own figures everywhere
    kernels: str = "datasheet"

    def __post_init__(self) -> None:
        check_fields(self, "profile.")
        # efficiencies from MIN_EFFICIENCY (a subnormal one makes every time infinite) to 1; fixed
        # times up to MAX_FIXED_S a pass
        for name in ("bw_efficiency", "compute_efficiency", "weight_only_bw_factor", "fp8_compute_factor",
                     "small_gemm_factor"):
            check_number(f"profile.{name}", getattr(self, name), low=MIN_EFFICIENCY, high=1)
        check_number("profile.fixed_time_s", self.fixed_time_s, low=0, high=MAX_FIXED_S)
        check_number("profile.fixed_time_per_layer_s", self.fixed_time_per_layer_s, low=0, high=MAX_FIXED_S)
        check_number("profile.gemm_half_rows", self.gemm_half_rows, low=0, high=1e12)
        check_number("profile.gemm_half_width", self.gemm_half_width, low=0, high=MAX_HALF_WIDTH)
        object.__setattr__(self, "memory_basis", check_choice("profile.memory_basis", self.memory_basis, MEMORY_BASES))
        object.__setattr__(self, "kernels", check_choice("profile.kernels", self.kernels, KERNEL_SOURCES))  # as spelled in the list
        check_number("profile.ttft_overhead_s", self.ttft_overhead_s, low=0, high=MAX_FIXED_S)
        entries = []
        for entry in self.engine_costs:
            if len(entry) not in (4, 5) or not isinstance(entry[0], str):
                raise InvalidValueError("profile.engine_costs must hold (engine, fixed_time_s, fixed_time_per_layer_s, "
                                        f"ttft_overhead_s[, compute_efficiency]) entries, got {entry!r}",
                                        params=("engine_costs",))
            entry = tuple(entry) if len(entry) == 5 else (*entry, self.compute_efficiency)  # the profile's MFU
            for knob, value in zip(ENGINE_KNOBS, entry[1:]):
                low, high = (MIN_EFFICIENCY, 1) if knob == "compute_efficiency" else (0, MAX_FIXED_S)
                check_number(f"profile.engine_costs[{entry[0]}].{knob}", value, low=low, high=high)
            entries.append(entry)
        object.__setattr__(self, "engine_costs", tuple(entries))

    def for_engine(self, engine: str) -> "Profile":
        """This profile with `engine`'s fitted knobs (`engine_costs`); an engine it was not fitted to takes
        the mean of the fitted engines' (the typical engine), and a profile fitted to none is itself.

            fixed_time_s, fixed_time_per_layer_s, ttft_overhead_s, compute_efficiency
                <-  engine_costs[engine], or their mean

        >>> p = Profile("p", engine_costs=(("vllm", 1e-3, 1e-5, 0.0, 0.7), ("sglang", 3e-3, 3e-5, 0.01, 0.5)))
        >>> p.for_engine("vllm").fixed_time_s, round(p.for_engine("llama.cpp").fixed_time_s, 6)
        (0.001, 0.002)
        >>> p.for_engine("sglang").compute_efficiency, round(p.for_engine("generic").compute_efficiency, 6)
        (0.5, 0.6)
        >>> PRESETS["lecture"].for_engine("vllm") is PRESETS["lecture"]
        True
        """
        if not self.engine_costs:
            return self
        costs = {entry[0]: entry[1:] for entry in self.engine_costs}
        values = costs.get(engine) or tuple(sum(knobs[index] for knobs in costs.values()) / len(costs)
                                            for index in range(len(ENGINE_KNOBS)))
        return replace(self, **dict(zip(ENGINE_KNOBS, values)))

    @property
    def engines(self) -> tuple[str, ...]:
        """The engines this profile has fitted fixed costs for."""
        return tuple(entry[0] for entry in self.engine_costs)

    def with_(self, *, name: str | None = None, bw_efficiency: float | None = None,
              compute_efficiency: float | None = None, fixed_time_s: float | None = None,
              read_input_embedding: bool | None = None, count_kv: bool | None = None,
              weight_only_bw_factor: float | None = None, fp8_compute_factor: float | None = None,
              fixed_time_per_layer_s: float | None = None, small_gemm_factor: float | None = None,
              gemm_half_rows: float | None = None, gemm_half_width: float | None = None,
              memory_basis: str | None = None,
              ttft_overhead_s: float | None = None, engine_costs: tuple | None = None) -> "Profile":
        """A copy with the given knobs changed (None keeps a knob); validated again.

        Parameters
        ----------
        name, bw_efficiency, compute_efficiency, fixed_time_s, read_input_embedding, count_kv,
        weight_only_bw_factor, fp8_compute_factor, fixed_time_per_layer_s, small_gemm_factor,
        gemm_half_rows, gemm_half_width, memory_basis, ttft_overhead_s, engine_costs
            As in `Profile`, each optional; None keeps the current value.

        Returns
        -------
        Profile
            The copy (`self` when nothing changes).

        Examples
        --------
        >>> PRESETS["lecture"].with_(compute_efficiency=0.5).compute_efficiency
        0.5

        The article §2.4 at 60% MFU (593 of 989 TFLOP/s):

        >>> round(989e12 * PRESETS["article"].with_(compute_efficiency=0.6).compute_efficiency / 1e12)
        593
        """
        given = dict(name=name, bw_efficiency=bw_efficiency, compute_efficiency=compute_efficiency,
                     fixed_time_s=fixed_time_s, read_input_embedding=read_input_embedding,
                     count_kv=count_kv, weight_only_bw_factor=weight_only_bw_factor,
                     fp8_compute_factor=fp8_compute_factor, fixed_time_per_layer_s=fixed_time_per_layer_s,
                     small_gemm_factor=small_gemm_factor, gemm_half_rows=gemm_half_rows,
                     gemm_half_width=gemm_half_width, memory_basis=memory_basis, ttft_overhead_s=ttft_overhead_s,
                     engine_costs=engine_costs)
        changes = {knob: value for knob, value in given.items() if value is not None}
        return replace(self, **changes) if changes else self


# The two source documents as presets (README, "Sources"); both count the marketed memory (80e9 for an
# "80GB" H100, 40e9 for the lecture's A100 40GB), so their capacity figures stay as printed.
PRESETS: dict[str, Profile] = {
    # the article: peak bandwidth and FLOP/s, all weight bytes incl. embedding, no KV, no fixed cost
    "article": Profile("article", memory_basis="marketed"),
    # the lecture, demo 05: 80% of bandwidth, 60% of FLOP/s, KV read, embedding a lookup, 1 ms fixed
    "lecture": Profile("lecture", bw_efficiency=0.8, compute_efficiency=0.6, fixed_time_s=1e-3,
                       read_input_embedding=False, count_kv=True, memory_basis="marketed"),
    # the lecture's draft model pays a smaller fixed cost per pass (0.3 ms)
    "lecture-draft": Profile("lecture-draft", bw_efficiency=0.8, compute_efficiency=0.6, fixed_time_s=0.3e-3,
                             read_input_embedding=False, count_kv=True, memory_basis="marketed"),
    # Calibrated on both training files (tests/data/measured/train.csv, 88 published figures, and
    # train_inferencex.csv, 372 served figures; README, "Calibration"), the driver's memory, each engine
    # with 10 rows or more its own fixed times and MFU (the shared ones are the engines' mean, what an
    # engine it was not fitted to and a profile asked for no engine use; gpt-fast's rows never reach the
    # compute roof, so its MFU is that mean): `analysis/refit_measured.py` (command in its doc) wrote
    # analysis/measured_engines.json, kept here to 4 digits (fixed times under 1 ns as 0). A GEMM of m
    # rows and w columns a GPU reaches MFU x (0.164 + 0.836 m / (m + 190)) x w / (w + 664) of the peak.
    "measured": Profile("measured", bw_efficiency=0.8252, compute_efficiency=0.7376, fixed_time_s=2.644e-3,
                        read_input_embedding=False, count_kv=True, weight_only_bw_factor=0.7490,
                        fp8_compute_factor=0.5363, fixed_time_per_layer_s=44.06e-6, small_gemm_factor=0.1637,
                        gemm_half_rows=189.7, gemm_half_width=663.9, ttft_overhead_s=56.73e-3, engine_costs=(
                            # (engine, fixed per pass s, per layer s, first-token overhead s, MFU)
                            ("gpt-fast", 0.0, 57.79e-6, 0.6465e-3, 0.7376),
                            ("trtllm-0", 0.3286e-3, 56.40e-6, 0.0, 0.7480),
                            ("lmdeploy", 0.0, 104.3e-6, 3.270e-3, 0.7467),
                            ("vllm", 2.105e-3, 24.33e-6, 0.5743e-6, 0.4161),
                            ("sglang", 5.145e-3, 6.578e-6, 139.7e-3, 1.0),
                            ("trtllm", 8.285e-3, 14.95e-6, 196.8e-3, 0.7771))),
}


def preset(name: str) -> Profile:
    """A preset by its exact name (article, lecture, lecture-draft, measured); an unknown name lists them.

    (No formula: the presets' knobs enter `Profile`'s T(m).) Case is ignored.

    Parameters
    ----------
    name : str
        One of PRESETS' keys.

    Returns
    -------
    Profile

    Raises
    ------
    UnknownNameError
        For any other name, with the nearest presets.

    Examples
    --------
    >>> preset("lecture").fixed_time_s, preset("lecture-draft").fixed_time_s  # the lecture, demo 05
    (0.001, 0.0003)
    >>> preset("lectur")
    Traceback (most recent call last):
    ...
    llm_cost.errors.UnknownNameError: preset must be one of article, lecture, lecture-draft, measured,
        got 'lectur'; did you mean lecture or lecture-draft?
    """
    return PRESETS[check_choice("preset", name, tuple(PRESETS))]


# The profile a draft model runs under when the target runs under a preset: the lecture's draft
# pays a smaller fixed cost per pass (demo 05); any other profile drafts under itself.
DRAFT_PRESET_OF = {"lecture": "lecture-draft"}


def draft_profile_for(profile: Profile) -> Profile:
    """The draft's profile for a target `profile`: `lecture-draft` for `lecture`, else the same.

    Knobs the user changed on the target (its efficiencies) carry over to the draft. The lecture
    (demo 05): the draft pays 0.3 ms per pass instead of the target's 1 ms.

    Parameters
    ----------
    profile : Profile or str
        The target's profile, or a preset's name.

    Returns
    -------
    Profile
        `lecture-draft` (with the target's changed efficiencies) for a `lecture` profile, else
        `profile` itself.

    Examples
    --------
    >>> d = draft_profile_for(PRESETS["lecture"].with_(compute_efficiency=0.5))
    >>> d.name, d.fixed_time_s, d.compute_efficiency, d.bw_efficiency
    ('lecture-draft', 0.0003, 0.5, 0.8)
    >>> draft_profile_for(PRESETS["article"]) is PRESETS["article"]
    True
    >>> draft_profile_for("lecture").name
    'lecture-draft'
    """
    if isinstance(profile, str):  # a preset by name, as every function that takes a profile
        profile = PRESETS[check_choice("profile", profile, tuple(PRESETS))]
    check_value("profile", profile, "Profile", field="profile")
    name = DRAFT_PRESET_OF.get(profile.name)
    if name is None:
        return profile
    base, draft = PRESETS[profile.name], PRESETS[name]
    return draft.with_(bw_efficiency=profile.bw_efficiency if profile.bw_efficiency != base.bw_efficiency else None,
                       compute_efficiency=(profile.compute_efficiency
                                           if profile.compute_efficiency != base.compute_efficiency else None))


@dataclass(frozen=True)
class Setting:
    """Where a source document computes: a model and an accelerator (catalog names) and a preset.

    Parameters
    ----------
    model, gpu : str
        Catalog names of the model and the accelerator.
    preset : str
        A key of PRESETS.

    Examples
    --------
    The article §1.2 computes Llama-3-8B on an H100 SXM at peak:

    >>> ARTICLE_SETTING
    Setting(model='llama-3-8b', gpu='h100-sxm', preset='article')
    >>> LECTURE_DECODE.model, LECTURE_SERVING.gpu  # the lecture, demo 05 and §3.3
    ('llama-3.1-8b', 'a100-40gb')
    """

    model: str
    gpu: str
    preset: str


# The settings of the two documents; commands take their defaults from these.
ARTICLE_SETTING = Setting("llama-3-8b", "h100-sxm", "article")  # the article, §1.2
LECTURE_DECODE = Setting("llama-3.1-8b", "h100-sxm", "lecture")  # the lecture, demo 05 (§9-§10)
LECTURE_SERVING = Setting("gpt-3-13b", "a100-40gb", "lecture")  # the lecture, §3.3 (Orca's setting)


@dataclass(frozen=True)
class Draft:
    """A speculative draft as the closed forms see it: acceptance rate, tokens per round, cost ratio `c`."""

    alpha: float
    gamma: int
    c: float


ARTICLE_DRAFT = Draft(alpha=0.8, gamma=4, c=0.1)  # the article §2.3: E = 3.36 tokens, 2.4x
