"""Option parsing: the CLI's text and units turned into the library's values, before the library.

Milliseconds become seconds here (`--fixed-ms`, `--slo-ms`), each checked in the unit the user
typed; text options (`--widths 4,2,2,1`, `--hits 1:0.44,...`) become values. Library errors name
parameters; `flags_in` puts the command's flags in their place.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from llm_cost.errors import InvalidValueError, check_choice, check_number
from llm_cost.specs.weights import WeightFormat, weight_format

if TYPE_CHECKING:  # annotations only: the spec modules load where they are used
    from llm_cost.specs import Profile

# A library parameter whose CLI option has another name (repeatables are singular on the CLI).
OPTION_OF = {
    "alphas": "alpha", "taus": "tau", "gammas": "gamma", "batches": "batch", "cs": "c", "c_hats": "c_hat",
    "mfus": "mfu", "contexts": "context", "mtp_alphas": "mtp_alpha", "rates": "rate",
    "prompts": "prompt", "outputs": "output", "widths_list": "widths",
    "kv_bytes_per_element": "kv_bytes", "lora_rank": "lora_rank", "format": "fmt",
    "compute_efficiency": "mfu", "bw_efficiency": "bw_eff", "statistic": "slo_stat",
    "schedulers": "scheduler", "max_batches": "max_batch", "marks": "batch", "path": "output",
    "isls": "isl", "osls": "osl", "requests": "request", "tps": "tp", "pps": "pp", "eps": "ep",
    "rate_req_per_s": "rate", "emit": "emit_engine",
    "prefix_distribution": "prefix_dist", "prefix_tokens": "group_prefix",  # `prefixes.with_prefix_groups`
    "slo_s": "slo_ms", "slo_ttft_s": "slo_ttft_ms", "slo_tpot_s": "slo_tpot_ms",  # `BatchingRequest`: seconds
    "spec_off_above": "spec_policy", "prompt": "prompt_len", "output": "output_len",
    "budget": "gpus", "tpot_s": "tpot_ms", "ttft_s": "ttft_ms",  # `plan`: its GPU budget, its targets in seconds
}


def flags_in(message: str, params, flags: dict[str, str]) -> str:
    """`message` with each parameter in `params` that has a flag in `flags` written as that flag.

    `flags` maps a command's parameter names to their flags ({"slo_ms": "--slo-ms"}).
    """
    for name in params:
        flag = flags.get(OPTION_OF.get(name, name)) or flags.get(name)
        if flag:
            message = re.sub(rf"(?<![\w.`-]){re.escape(name)}(?![\w-]|://)", flag, message)  # not in `code`, a URL
    return message


def seconds(name: str, ms, *, positive: bool = False, most_s: float | None = None):
    """A duration typed in milliseconds, checked in milliseconds (at most `most_s` seconds where given: the
    library's bound, told in the unit typed), in seconds (None stays None)."""
    if ms is None:
        return None
    check_number(name, ms, low=0, low_open=positive, high=None if most_s is None else most_s * 1e3)
    return ms * 1e-3


def profile(preset: str = "article", *, mfu: float | None = None, bw_eff: float | None = None,
            fixed_ms: float | None = None, read_embedding: bool | None = None,
            kv: bool | None = None, option: str = "preset") -> Profile:
    """The preset with the knobs the user overrode (None keeps the preset's value).

    `option`: the parameter an unknown preset name is reported under (`draft_preset`). A name ending
    in .json, or naming a file, is a profile file (`llm-cost calibrate -o`).
    """
    from llm_cost.specs.profiles import PRESETS
    if is_profile_file(preset):
        from llm_cost.calibrate.profile_file import read_profile

        base = read_profile(preset)
    elif option == "preset":  # the option answers to --preset and --profile: name the first
        from llm_cost.errors import UnknownNameError

        try:
            base = PRESETS[check_choice(option, preset, tuple(PRESETS))]
        except UnknownNameError as err:
            raise UnknownNameError(f"--{err} (or a profile JSON file)") from None
    else:
        base = PRESETS[check_choice(option, preset, tuple(PRESETS))]
    from llm_cost.specs.profiles import MIN_EFFICIENCY

    if mfu is not None:
        check_number("mfu", mfu, low=MIN_EFFICIENCY, high=1)
    if bw_eff is not None:
        check_number("bw_eff", bw_eff, low=MIN_EFFICIENCY, high=1)
    return base.with_(compute_efficiency=mfu, bw_efficiency=bw_eff,
                      fixed_time_s=seconds("fixed_ms", fixed_ms), read_input_embedding=read_embedding,
                      count_kv=kv)


def is_profile_file(preset: str) -> bool:
    """Whether --preset/--profile names a profile file (ends in .json, or is a file and no preset)."""
    import os

    from llm_cost.specs.profiles import PRESETS

    return preset.lower().endswith(".json") or (preset not in PRESETS and os.path.isfile(preset))


def profile_title(preset: str, prof: Profile) -> str:
    """A title's words for the profile: "preset measured", or "profile calibrated from FILE" (a
    profile file, named: its profile's own name says nothing of which file)."""
    return f"profile {prof.name} from {preset}" if is_profile_file(preset) else f"preset {prof.name}"


def ignored_context(prof: Profile, context, how: str) -> str | None:
    """The note for a --context the profile ignores (it counts no KV reads or attention FLOPs), or
    None when the context counts or is 0. `how`: what counts it on this command (`add --kv`)."""
    contexts = context if isinstance(context, (list, tuple)) else [context]
    if prof.count_kv or not any(contexts):
        return None
    given = ", ".join(f"{tokens:g}" for tokens in contexts)
    from llm_cost.specs.profiles import PRESETS
    why = "--no-kv" if prof.name in PRESETS and PRESETS[prof.name].count_kv else "the article's convention"
    return (f"--context {given} changes nothing here: preset {prof.name} counts no KV reads or attention "
            f"FLOPs ({why}); {how} to count them")


def weights(name: str) -> WeightFormat:
    """`--weights`: a weight format by name."""
    return weight_format(name)


def choice(name: str, value: str, allowed) -> str:
    """An option that takes one of a closed set of words."""
    return check_choice(name, value, allowed)


def widths(text: str) -> tuple[int, ...]:
    """'4,2,2,1' or '4x2x2x1' -> (4, 2, 2, 1); each width a whole number >= 1."""
    parts = text.replace("x", ",").replace("X", ",").split(",")
    try:
        values = tuple(int(part) for part in parts)
    except ValueError:
        raise InvalidValueError(f"--widths must be whole numbers >= 1 per depth, like 4,2,2,1; "
                                f"got {text!r}") from None
    for width in values:
        check_number(f"--widths {text}: each width", width, low=1, integer=True)
    return values


def hits(text: str):
    """'1:0.44,2:0.64,4:0.79,8:0.91' -> the draft's top-k hit rates (k >= 1, rate in [0, 1])."""
    from llm_cost.speculative.trees import TopKHits

    rates = {}
    for pair in text.split(","):
        k_text, sep, rate_text = pair.partition(":")
        try:
            k_int, rate_f = int(k_text), float(rate_text)
        except ValueError:
            raise InvalidValueError(f"--hits must be k:rate pairs like 1:0.44,2:0.64; got {pair!r}") from None
        if not sep or k_int in rates:
            raise InvalidValueError(f"--hits must be k:rate pairs, each k once; got {text!r}")
        check_number(f"--hits rate for k = {k_int}", rate_f, low=0, high=1)
        check_number("--hits k", k_int, low=1, integer=True)
        rates[k_int] = rate_f
    try:
        return TopKHits.of(rates)
    except InvalidValueError as err:
        raise InvalidValueError(f"--hits: {err}") from None


def deployment(args, profile=None, reserve: float | None = None, kv_dtype: str | None = None):
    """The deployment options (`options.DeploymentArgs`: --tp --pp --ep --gpus --kv-dtype --overlap-comm
    --usable-memory/--marketed-memory) and `--reserve` where a command has it: a `Deployment`, checked
    (tp x pp at most --gpus and dividing it), on `profile`'s memory basis unless a flag names one;
    `kv_dtype` replaces --kv-dtype (a command that also reads --kv-bytes)."""
    from llm_cost.specs.deployment import DEFAULT_RESERVE, Deployment

    tp, pp, gpus = args.tp, args.pp, args.gpus
    if gpus is not None:
        check_number("gpus", gpus, low=1, integer=True)
        for name, degree in (("tp", tp), ("pp", pp)):
            check_number(name, degree, low=1, integer=True)
        if tp * pp > gpus:
            raise InvalidValueError(f"tp x pp = {tp * pp} exceeds gpus = {gpus}", params=("tp", "pp", "gpus"))
    basis = None if args.usable_memory is None else ("usable" if args.usable_memory else "marketed")
    out = Deployment(tp=tp, pp=pp, ep=args.ep, gpus=gpus or 0, kv_dtype=str(kv_dtype or args.kv_dtype or "bf16").lower(),
                     overlap_comm=args.overlap_comm, dp_attention=args.dp_attention, reserve=DEFAULT_RESERVE if reserve is None else reserve,
                     memory_basis=basis)
    return out if profile is None else out.following(profile)


def cached_new(text: str) -> tuple[int, int]:
    """`--request 3:1`: (cached, new) tokens of one request in an iteration."""
    cached, sep, new = str(text).partition(":")
    try:
        pair = (int(cached), int(new))
    except ValueError:
        pair = None
    if not sep or pair is None:
        raise InvalidValueError(f"request must be cached:new tokens like 3:1, got {text!r}", params=("request",))
    return pair


def spec_policy(text: str) -> tuple[str, int]:
    """(policy, N) of `fixed`, `adaptive` or `off-above-batch:N` (`SpecConfig.policy`, `off_above`)."""
    word = str(text).strip().lower()
    if word in ("fixed", "adaptive"):
        return word, 0
    if word.startswith("off-above-batch:"):
        try:
            return "off-above-batch", int(word.split(":", 1)[1])
        except ValueError:
            pass
    raise InvalidValueError(f"spec_policy must be fixed, off-above-batch:N or adaptive, got {text!r}",
                            params=("spec_policy",))


def acceptance(text: str):
    """None for `iid`, a `rounds.BurstyAcceptance` for `bursty:EASY:HARD:P_EH:P_HE`."""
    from llm_cost.speculative.rounds import BurstyAcceptance

    word = str(text).strip().lower()
    if word == "iid":
        return None
    parts = word.split(":")
    if parts[0] == "bursty" and len(parts) == 5:
        try:
            easy, hard, p_eh, p_he = (float(part) for part in parts[1:])
        except ValueError:
            pass
        else:
            try:
                return BurstyAcceptance(easy, hard, p_eh, p_he)
            except InvalidValueError as err:
                raise InvalidValueError(f"spec_acceptance: {err}", params=("spec_acceptance",)) from None
    raise InvalidValueError(f"spec_acceptance must be iid or bursty:EASY:HARD:P_EH:P_HE, got {text!r}",
                            params=("spec_acceptance",))


def split(text: str | None) -> tuple[int, int] | None:
    """`--disaggregate P:D`: (prefill, decode) replicas, each >= 1; None stays None."""
    if text is None:
        return None
    prefill, _, decode = str(text).partition(":")
    if not (prefill.isdigit() and decode.isdigit() and int(prefill) >= 1 and int(decode) >= 1):
        raise InvalidValueError(f"disaggregate takes P:D, prefill and decode replicas >= 1 each, got {text!r}",
                                params=("disaggregate",))
    return int(prefill), int(decode)
