"""The options several commands share, each declared once (name, flags, help)."""

from __future__ import annotations

import functools
import inspect
from typing import Annotated, List, NamedTuple, Optional

import typer

from llm_cost.commands import startup_options as startup
from llm_cost.serving import prefix_defaults  # the prefix options' defaults (constants only)
from llm_cost.report.render import Column, fixed
from llm_cost.specs.weights import weight_format_names

# the options `model` takes, declared in `startup_options` (its startup) and shared from here like the rest
DefaultSetting, DEFAULT, Format = startup.DefaultSetting, startup.DEFAULT, startup.Format
CONTEXT, Context, KV_BYTES, KvBytes, MaybeKvBytes = (startup.CONTEXT, startup.Context, startup.KV_BYTES,
                                                     startup.KvBytes, startup.MaybeKvBytes)


# The workload of the commands that take one request's lengths (request, plan, plot plan): ISL, OSL tokens.
DEFAULT_ISL, DEFAULT_OSL = 1024, 256
# plan's budget unless told: one node of eight GPUs (one NVLink domain, as --max-tp's default 8).
DEFAULT_PLAN_GPUS = 8



def repeatable(help_text: str, how: str = "") -> str:
    """The help of a flag's repeatable form: its single form's `help_text`, then "Repeatable" and `how`
    (issue 24.4: a flag has one help text; tests/test_one_help_text.py allows only this suffix)."""
    return f"{help_text} Repeatable: {how}." if how else f"{help_text} Repeatable."


# Every option two commands share is declared here once, with one help text, true for every command
# using it (tests/test_structure.py, tests/test_one_help_text.py hold it). A flag has a second declaration
# only where its type truly differs, side by side: a repeatable list beside a single value, a search's
# list beside a deployment's number; the list's help is the single's, then `repeatable`'s suffix. A
# command whose option may be left out (plot, plan) uses the same declaration under Optional[...] (plot
# builds its own Optional aliases from these constants: the typing objects cost every command's startup).
MODEL_HELP, GPU_HELP = "Catalog name or path to a config.json.", "Catalog name or path to a datasheet JSON."
MODEL = typer.Option("--model", "-m", help=MODEL_HELP)
MODELS = typer.Option("--model", "-m", help=repeatable(MODEL_HELP, "a row, or column, each; check: the models checked, "
                                                                   "default the whole catalog"))
GPU = typer.Option("--gpu", "-g", help=GPU_HELP)
GPUS = typer.Option("--gpu", "-g", help=repeatable(GPU_HELP, "a row each; plan: the accelerators searched; check: "
                                                             "the GPUs checked on"))
ModelOpt, ModelsOpt = Annotated[str, MODEL], Annotated[List[str], MODELS]
GpuOpt, GpusOpt = Annotated[str, GPU], Annotated[List[str], GPUS]
MaybeModel, MaybeModels = Annotated[Optional[str], MODEL], Annotated[Optional[List[str]], MODELS]
MaybeGpus = Annotated[Optional[List[str]], GPUS]
PRESET = typer.Option("--preset", "--profile", help="Efficiency profile: article, lecture, lecture-draft, measured, or a profile JSON file (llm-cost calibrate -o); its memory basis counts the fits.")
Preset = Annotated[str, PRESET]
MFU_HELP = "Compute efficiency in (0, 1], overrides the preset."
MFU = typer.Option("--mfu", help=MFU_HELP)
MFUS = typer.Option("--mfu", help=repeatable(MFU_HELP, "a row or curve each; default the preset's and 0.6"))
Mfu, Mfus = Annotated[Optional[float], MFU], Annotated[Optional[List[float]], MFUS]
BwEff = Annotated[Optional[float], typer.Option("--bw-eff", help="Bandwidth efficiency in (0, 1], overrides the preset.")]
FixedMs = Annotated[Optional[float], typer.Option("--fixed-ms", help="Fixed time per forward pass in ms, overrides the preset.")]
UsdPerKwh = Annotated[Optional[float], typer.Option(
    "--usd-per-kwh", help="Electricity price in $/kWh, in [0, 1000]: adds the energy's cost (an estimate).")]
USD_PER_GPU_HOUR_HELP = "Price of one GPU-hour in USD: adds $ per million tokens."
UsdPerGpuHour = Annotated[Optional[float], typer.Option("--usd-per-gpu-hour", help=USD_PER_GPU_HOUR_HELP)]
UsdPerGpuHours = Annotated[Optional[List[str]], typer.Option("--usd-per-gpu-hour", help=repeatable(
    USD_PER_GPU_HOUR_HELP, "plan's, as GPU=PRICE (PRICE alone with one --gpu), ranks by $ per million output tokens"))]
# the energy estimate's columns (`roofline.energy`), on every timing command's rows
ENERGY_COLUMNS = [Column("watts", "W (est.)", fixed(0)), Column("joules_per_token", "J/token (est.)", fixed(3))]
ENERGY_PRICE_COLUMN = Column("usd_per_million_tokens_energy", "energy $/M tok (est.)", fixed(4))
GPU_PRICE_COLUMN = Column("usd_per_million_tokens_gpu", "GPU $/M tok", fixed(4))  # a served run's GPU-hours
ReadEmb = Annotated[Optional[bool], typer.Option("--read-embedding/--no-read-embedding",
                                                 help="Count the input embedding table as read.")]
KvOpt = Annotated[Optional[bool], typer.Option("--kv/--no-kv", help="Count KV reads and attention FLOPs.")]
WEIGHTS_HELP = f"Weight format: {weight_format_names()}."  # the registry's (`specs.weights`)
WEIGHTS = typer.Option("--weights", "-w", help=WEIGHTS_HELP)
Weights = Annotated[str, WEIGHTS]
WeightsSearched = Annotated[Optional[List[str]], typer.Option("--weights", "-w", help=repeatable(
    WEIGHTS_HELP, "plan searches each (default bf16, fp8 where the chip has FP8, int8, int4)"))]
Breakdown = Annotated[bool, typer.Option("--breakdown", help="One row per operator of each pass (bytes, FLOPs, time, bound, source), summing to its time (request: the prefill and the first and last decode steps).")]

BATCH_HELP = "Sequences decoded together, >= 1."
BATCHES = typer.Option("--batch", "-b", help=repeatable(BATCH_HELP, "rows for each; plan: the batches searched, default "
                                                                    "1, 2, 4, ..., 512; plot: points or curves"))
Batches, MaybeBatches = Annotated[List[int], BATCHES], Annotated[Optional[List[int]], BATCHES]
Batch = Annotated[int, typer.Option("--batch", "-b", help=BATCH_HELP)]
Contexts = Annotated[List[int], typer.Option("--context", help=repeatable(CONTEXT.help, "a row each"))]
# one request's lengths (request, plan, table, plot plan), or each request's of one batch (waste)
# (a command's own remark sits in the repeatable form's suffix or the command's docstring: plan's osl >= 2)
ISL_HELP = f"Prompt (input) tokens per request, >= 1 (default {DEFAULT_ISL})."
OSL_HELP = f"Output tokens per request, >= 1 (default {DEFAULT_OSL})."
ISL, OSL = typer.Option("--isl", help=ISL_HELP), typer.Option("--osl", help=OSL_HELP)
Isl, Osl = Annotated[Optional[int], ISL], Annotated[Optional[int], OSL]
ISLS = typer.Option("--isl", help=repeatable(ISL_HELP, "request: a row each; waste: one request of the batch each "
                                                       "(default the lecture's exercise-1 batch)"))
OSLS = typer.Option("--osl", help=repeatable(OSL_HELP, "request: a row each; waste: one request of the batch each, "
                                                       "in --isl's order (default the lecture's exercise-1 batch)"))
Isls, Osls = Annotated[List[int], ISLS], Annotated[List[int], OSLS]
MaybeIsls, MaybeOsls = Annotated[Optional[List[int]], ISLS], Annotated[Optional[List[int]], OSLS]
TtftMs = Annotated[Optional[float], typer.Option("--ttft-ms", help="Target: time to first token at most this (ms).")]
TpotMs = Annotated[Optional[float], typer.Option("--tpot-ms", help="Target: time per output token at most this (ms).")]
RESERVE = typer.Option("--reserve", help="Fraction of GPU memory held back from weights and KV, in [0, 1).")
Reserve = Annotated[float, RESERVE]
MaxLen = Annotated[Optional[int], typer.Option("--max-len", help="Tokens a max-length reservation holds (default: the model's context, 2048 for GPT-3).")]
KvTokens = Annotated[Optional[int], typer.Option("--kv-tokens", help="KV capacity in tokens, instead of memory - reserve - weights.")]
KV_DTYPE_HELP = "KV cache element type: bf16, fp16, fp8, int8 or int4 (default bf16)."
KvDtypes = Annotated[Optional[List[str]], typer.Option("--kv-dtype", help=repeatable(
    KV_DTYPE_HELP, "plan searches each (default bf16 and fp8)"))]
# Token counts of a workload: capacity's means (each request's, one batch: waste's --isl and --osl)
PromptTokens = Annotated[float, typer.Option("--prompt", help="Prompt tokens per request (a mean may be fractional).")]
OutputFile = Annotated[str, typer.Option("--output", "-o", help="File to write: a figure (.png or .svg) or a profile JSON (use it with --profile FILE).")]
# capacity's is a workload's mean (the lecture's 64.5), batching's every request's whole tokens: one help
MAX_GEN_HELP = ("Tokens a request declares it may generate (capacity: the requests' mean, may be fractional; "
                "batching: every request's, default its own output length).")
MaxGen = Annotated[float, typer.Option("--max-gen", help=MAX_GEN_HELP)]
MaxGenTokens = Annotated[Optional[int], typer.Option("--max-gen", help=MAX_GEN_HELP)]
Rates = Annotated[Optional[List[float]], typer.Option("--rate", help="Poisson arrival rate in req/s, 'inf' for all at once (repeatable; plan's served check takes finite rates only).")]
REQUESTS = typer.Option("--requests", "-n", help="Requests to simulate (at each rate).")
Requests = Annotated[int, REQUESTS]
SEED = typer.Option("--seed", help="Seed of the workload (same seed, same requests).")
Seed = Annotated[int, SEED]
MAX_BATCH_HELP = "Most requests in a batch or an iteration."
MAX_BATCH = typer.Option("--max-batch", help=MAX_BATCH_HELP)
MaxBatch = Annotated[int, MAX_BATCH]
MaxBatches = Annotated[Optional[List[int]], typer.Option("--max-batch", help=repeatable(MAX_BATCH_HELP, "a curve each"))]
SCHEDULER_HELP = ("request (whole batches, max-length reservation), iteration (Orca: FCFS, declared reservation) or "
                  "none (no reservation: it can deadlock; simulated, never plotted).")
Scheduler = Annotated[str, typer.Option("--scheduler", help=SCHEDULER_HELP)]
Schedulers = Annotated[Optional[List[str]], typer.Option("--scheduler", help=repeatable(SCHEDULER_HELP, "a curve each"))]
SloMs = Annotated[Optional[float], typer.Option("--slo-ms", help="Latency target (ms), per generated token by default.")]
SloStat = Annotated[str, typer.Option("--slo-stat", help="Statistic a latency target applies to: median (= p50), p50, p90 or p99.")]
Concurrency = Annotated[Optional[int], typer.Option("--concurrency", help="Closed loop: N clients over the deployment, each sending its next request when its last one finishes.")]
Arrivals = Annotated[str, typer.Option("--arrivals", help="poisson or gamma:SHAPE (gamma gaps, SHAPE < 1 bursty).")]
Trace = Annotated[Optional[str], typer.Option("--trace", help="CSV trace, the columns arrival_s, prompt_tokens, output_tokens (then max_tokens, and prefix_id, prefix_tokens, optional).")]
PrefillChunk = Annotated[Optional[int], typer.Option("--prefill-chunk", help="Prompt tokens per pass (chunked prefill, decodes first; default: the whole prompt).")]
# Prompts that share prefixes and the cache that keeps them (batching, plan --verify)
PrefixCaching = Annotated[bool, typer.Option("--prefix-caching", help="Keep full K/V blocks of shared prompt prefixes cached (LRU); a cached prefix is not prefilled again. Block-level: implies --reservation paged unless one is given.")]
KvOffloadBytes = Annotated[float, typer.Option("--kv-offload-bytes", help="paged, recompute: bytes of host memory for K/V offload (0 off): evicted prefix blocks and preempted sequences go there and come back over the host link instead of being recomputed.")]
SharedPrefix = Annotated[Optional[int], typer.Option("--shared-prefix", help="Every prompt starts with the same N tokens (a system prompt), added to its length.")]
PrefixGroups = Annotated[Optional[int], typer.Option("--prefix-groups", help="G distinct prefixes of --group-prefix tokens, requests spread over them (--prefix-dist).")]
GroupPrefix = Annotated[Optional[int], typer.Option("--group-prefix", help="Tokens of each --prefix-groups prefix (default 256).")]
PrefixDist = Annotated[Optional[str], typer.Option("--prefix-dist", help="--prefix-groups spread: zipf (P(g) ~ 1/(g+1), the default) or uniform.")]
Sessions = Annotated[Optional[int], typer.Option("--sessions", help="Multi-turn chats: S sessions, each turn's prompt its previous prompt and answer plus its own tokens.")]
Turns = Annotated[Optional[int], typer.Option("--turns", help=f"--sessions: turns per chat, then a new chat (default {prefix_defaults.DEFAULT_TURNS}).")]
# a search's switch (plan) beside the split it finds (batching): one help
DISAGGREGATE_HELP = ("Separate prefill and decode pools. plan: a switch, it searches the split of the GPUs that meets "
                     "both targets at the highest rate; batching: P:D, prefills on P replicas, decodes on D (tp x pp "
                     "GPUs each), the K/V moved over the GPU's link (--rate is the fleet's).")
Disaggregate = Annotated[bool, typer.Option("--disaggregate", help=DISAGGREGATE_HELP)]
DisaggregateSplit = Annotated[Optional[str], typer.Option("--disaggregate", help=DISAGGREGATE_HELP)]
JOBS = typer.Option("--jobs", "-j", help="Local processes to run in (default all cores; results identical to --jobs 1).")
Jobs, MaybeJobs = Annotated[int, JOBS], Annotated[Optional[int], JOBS]
Ray = Annotated[Optional[str], typer.Option("--ray", help="Run as Ray tasks on the cluster at ADDRESS, or auto (pip install 'llm-cost[ray]').")]
Force = Annotated[bool, typer.Option("--force", help="Replace an existing output file (never one of the command's inputs).")]
EngineOpt = Annotated[Optional[str], typer.Option(
    "--engine", help="Serving engine: vllm, sglang, trtllm (1.x), trtllm-0 (0.x static batches), lmdeploy, gpt-fast, "
                     "llama.cpp or generic: its "
                     "fixed costs and MFU as the profile fitted them (an engine it was not fitted to: the fitted "
                     "engines' mean; the documents' presets have none).")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress display on stderr (it shows only on a terminal, past a second) and no notes; warnings and errors stay.")]
SkipBad = Annotated[bool, typer.Option("--skip-bad", help="Predict the good rows of a file with bad ones (each bad row is named in a warning) instead of refusing it.")]

# Speculative decoding: the draft's acceptance and cost, declared once
ALPHA_HELP, GAMMA_HELP = "Acceptance rate per draft position in [0, 1].", "Draft tokens per round, >= 0."
ALPHAS = typer.Option("--alpha", "-a", help=repeatable(ALPHA_HELP, "a row or curve each"))
Alphas, MaybeAlphas = Annotated[List[float], ALPHAS], Annotated[Optional[List[float]], ALPHAS]
Alpha = Annotated[float, typer.Option("--alpha", "-a", help=ALPHA_HELP)]
GAMMAS = typer.Option("--gamma", help=repeatable(GAMMA_HELP, "a row or curve each"))
Gammas = Annotated[List[int], GAMMAS]
Gamma = Annotated[int, typer.Option("--gamma", help=GAMMA_HELP)]
GAMMA_MAX = typer.Option("--gamma-max", help="Largest gamma searched (or drawn).")
GammaMax = Annotated[int, GAMMA_MAX]
TAU_HELP = ("Mean accepted length per round (as EAGLE papers report) in [1, gamma + 1], instead of the acceptance "
            "rate (--alpha or --spec-alpha, whichever the command takes), which is solved from it at each gamma.")
Tau = Annotated[Optional[float], typer.Option("--tau", help=TAU_HELP)]
Taus = Annotated[Optional[List[float]], typer.Option("--tau", help=repeatable(TAU_HELP, "a row each"))]
MTP_ALPHA_HELP = "Acceptance of a model's MTP module (DeepSeek-V3 report: 0.85-0.90)."
MtpAlpha = Annotated[float, typer.Option("--mtp-alpha", help=MTP_ALPHA_HELP)]
MtpAlphas = Annotated[List[float], typer.Option("--mtp-alpha", help=repeatable(MTP_ALPHA_HELP, "a row each"))]
WIDTHS = typer.Option("--widths", help="Branching width per depth of a token tree, like 4,2,2,1 (repeatable).")
Widths = Annotated[List[str], WIDTHS]
HITS = typer.Option("--hits", help="The draft's top-k hit rates as k:rate pairs; every width needs one.")
Hits = Annotated[str, HITS]
# Two families on purpose: --alpha / --gamma where speculation is the subject (spec, gamma, leviathan, tree,
# plot, table: the rows or curves swept), --spec-alpha / --spec-gamma where it is one setting of a request or
# a serving run (request, batching, plan), in [0, 64] wherever it is taken (`requests.speculation_from`,
# `ServeConfig`); --tau stands in for either acceptance.
SPEC_GAMMA = typer.Option("--spec-gamma", help="Draft tokens per sequence per round, in [0, 64] (speculative decoding).")
SpecAlpha = Annotated[Optional[float], typer.Option("--spec-alpha", help="Acceptance rate of each draft token, in [0, 1] (speculative decoding).")]
SpecGamma, SpecGammaSet = Annotated[Optional[int], SPEC_GAMMA], Annotated[int, SPEC_GAMMA]
DRAFT_C_HELP = "Draft step over target step (Leviathan's c), >= 0; unset with --draft: the draft's own cost."
DraftC = Annotated[Optional[float], typer.Option("--c", help=DRAFT_C_HELP)]
DraftCs = Annotated[Optional[List[float]], typer.Option("--c", help=repeatable(DRAFT_C_HELP, "a row or curve each"))]
DraftModel = Annotated[Optional[str], typer.Option("--draft", help="Draft model (catalog name or config.json): its own step time on the same GPUs, its weights and K/V beside the target's; instead of --c.")]
# The serving workload's lengths (batching)
PromptLen = Annotated[Optional[str], typer.Option("--prompt-len", help="Prompt tokens: N, uniform:A:B, lognormal:MEAN:SIGMA or zipf:S:MAX (default uniform:32:512; plan --verify: every prompt --isl long).")]
OutputLen = Annotated[Optional[str], typer.Option("--output-len", help="Output tokens: as --prompt-len (default uniform:1:128; plan --verify: every output --osl long).")]

# A deployment (every timing command): declared once here, added to a command by `deployment_options`,
# turned into a `Deployment` by `parse.deployment`.
TP_HELP = "Tensor-parallel GPUs per pipeline stage (divides the heads)."
PP_HELP = "Pipeline stages (layers split in balanced stages)."
EP_HELP = "Expert-parallel ranks of a MoE's routed experts (divides or is a multiple of --tp)."
Tp = Annotated[int, typer.Option("--tp", help=TP_HELP)]
Pp = Annotated[int, typer.Option("--pp", help=PP_HELP)]
Ep = Annotated[int, typer.Option("--ep", help=EP_HELP)]
# the degrees a search tries (plan), beside the deployment's one value
TpSearched = Annotated[Optional[List[int]], typer.Option("--tp", help=repeatable(
    TP_HELP, "plan searches each (default powers of two up to --max-tp)"))]
PpSearched = Annotated[Optional[List[int]], typer.Option("--pp", help=repeatable(
    PP_HELP, "plan searches each (default powers of two up to --gpus)"))]
EpSearched = Annotated[Optional[List[int]], typer.Option("--ep", help=repeatable(
    EP_HELP, "plan searches each for a MoE model (default 1 and each tp)"))]
Gpus = Annotated[Optional[int], typer.Option("--gpus", help="GPUs in all, a multiple of tp x pp (default tp x pp: one replica; plan: the most it may use, "
                                                                  f"default {DEFAULT_PLAN_GPUS}, one node).")]
KvDtype = Annotated[Optional[str], typer.Option("--kv-dtype", help=KV_DTYPE_HELP)]
OverlapComm = Annotated[bool, typer.Option("--overlap-comm/--no-overlap-comm", help="Hide collectives behind compute (default: they add).")]
DpAttention = Annotated[bool, typer.Option("--dp-attention", help="MoE: attention data parallel over the --tp GPUs (each holds the non-expert weights whole and its own sequences' K/V), the MoE layers expert parallel over --ep (a multiple of --tp); no all-reduce, the all-to-alls remain.")]
Strict = Annotated[bool, typer.Option("--strict", help="Exit 2 when a deployment does not fit (memory or context).")]
UsableMemory = Annotated[Optional[bool], typer.Option(
    "--usable-memory/--marketed-memory",
    help="The GPU memory every fit and KV capacity counts: usable (what the driver reports: 81,559 MiB on an "
         "80GB H100) or marketed (80e9 bytes). Default: the profile's (the documents' presets marketed, "
         "measured usable).")]


class DeploymentArgs(NamedTuple):
    """The deployment options as given on the command line (`deployment_options`; a NamedTuple, not a
    frozen dataclass: it is built at every command's import, and a dataclass costs ~1 ms to create)."""

    tp: int = 1
    pp: int = 1
    ep: int = 1
    gpus: Optional[int] = None
    kv_dtype: Optional[str] = None  # None: bf16 (or what a command's --kv-bytes says)
    overlap_comm: bool = False
    dp_attention: bool = False
    usable_memory: Optional[bool] = None  # None: the profile's memory basis
    strict: bool = False


DEPLOYMENT_OPTIONS = {"tp": Tp, "pp": Pp, "ep": Ep, "gpus": Gpus, "kv_dtype": KvDtype, "overlap_comm": OverlapComm,
                      "dp_attention": DpAttention, "usable_memory": UsableMemory, "strict": Strict}
DEPLOYMENT_PARAMETER = "deploy"
AS_GIVEN = DeploymentArgs()  # a command's `deploy` default: no deployment option given


def deployment_options(fn):
    """Give command `fn` the deployment options in place of its `deploy` parameter, which then
    receives them as one `DeploymentArgs`: `--tp --pp --ep --gpus --kv-dtype --overlap-comm
    --dp-attention --usable-memory/--marketed-memory --strict`, declared once (`DEPLOYMENT_OPTIONS`).
    """
    return option_group(fn, DEPLOYMENT_PARAMETER, DEPLOYMENT_OPTIONS, DeploymentArgs)


# Prompts that share prefixes (batching, plan --verify): declared once here (`PREFIX_OPTIONS`), added to a
# command by `prefix_options` as one `PromptPrefixes` (the library's: `WorkloadRecipe` and `batching` apply it).
PREFIX_OPTIONS = {"shared_prefix": SharedPrefix, "prefix_groups": PrefixGroups, "group_prefix": GroupPrefix,
                  "prefix_dist": PrefixDist, "sessions": Sessions, "turns": Turns}
PREFIX_PARAMETER = "prefixes"


def prefix_options(fn):
    """Give command `fn` the prefix options (`--shared-prefix --prefix-groups --group-prefix --prefix-dist
    --sessions --turns`, `PREFIX_OPTIONS`) in place of its `prefixes` parameter (default `PromptPrefixes()`:
    none given), which then receives them as one `PromptPrefixes`."""
    from llm_cost.serving.prefixes import PromptPrefixes  # here: only batching and plan import it

    return option_group(fn, PREFIX_PARAMETER, PREFIX_OPTIONS, PromptPrefixes)


def option_group(fn, parameter: str, options: dict, group):
    """`fn` with the options `options` (name: Annotated type, declared once) in place of its `parameter`,
    which then receives them as one `group` (a NamedTuple of those names, its defaults the options').

    Typer reads the options from the signature this sets (`__signature__`, `__annotations__`).
    """
    signature = inspect.signature(fn, eval_str=True)  # the command's Annotated options, resolved
    names = list(signature.parameters)
    if parameter not in names:
        raise TypeError(f"{fn.__name__} needs a {parameter!r} parameter for its {group.__name__} options")
    kind = signature.parameters[parameter].kind
    added = [inspect.Parameter(name, kind, default=default, annotation=options[name])
             for name, default in group._field_defaults.items()]
    at = names.index(parameter)
    params = list(signature.parameters.values())
    params[at:at + 1] = added

    @functools.wraps(fn)
    def with_group(*args, **kw):
        given = {name: kw.pop(name) for name in options if name in kw}
        return fn(*args, **{parameter: group(**given)}, **kw)

    with_group.__signature__ = signature.replace(parameters=params)
    with_group.__annotations__ = {param.name: param.annotation for param in params}
    return with_group


# batching --disaggregate P:D: the decode pool's own split and batch (default: the prefill pool's)
DecodeTp = Annotated[Optional[int], typer.Option("--decode-tp", help="With --disaggregate: the decode pool's tensor-parallel GPUs per replica (default --tp).")]
DecodeMaxBatch = Annotated[Optional[int], typer.Option("--decode-max-batch", help="With --disaggregate: the decode pool's most requests in an iteration (default --max-batch).")]
