"""The options several commands share, each declared once (name, flags, help)."""

from __future__ import annotations

import functools
import inspect
from typing import Annotated, List, NamedTuple, Optional

import typer

from llm_cost.report.render import Column, fixed
from llm_cost.specs.profiles import ARTICLE_SETTING, Setting

# What every command answers with unless told otherwise (README, first screen): one model, one GPU, one
# profile. The commands that print a formula of the article at its peaks (roofline, spec, gamma, leviathan,
# table) default to DOCUMENT_PRESET instead; a document's own example names its model, GPU and preset.
DEFAULT = Setting(ARTICLE_SETTING.model, ARTICLE_SETTING.gpu, "measured")
DOCUMENT_PRESET = ARTICLE_SETTING.preset

Format = Annotated[str, typer.Option("--format", "-f", help="Output: table, json, csv or markdown.")]
ModelOpt = Annotated[str, typer.Option("--model", "-m", help="Catalog name or path to a config.json.")]
GpuOpt = Annotated[str, typer.Option("--gpu", "-g", help="Catalog name or path to a datasheet JSON.")]
# Repeatable: one row for each model and each GPU (compare in one command)
ModelsOpt = Annotated[List[str], typer.Option("--model", "-m", help="Catalog name or path to a config.json (repeatable: a row each).")]
GpusOpt = Annotated[List[str], typer.Option("--gpu", "-g", help="Catalog name or path to a datasheet JSON (repeatable: a row each).")]
Preset = Annotated[str, typer.Option("--preset", "--profile", help="Efficiency profile: article, lecture, lecture-draft, measured, or a profile JSON file (llm-cost calibrate -o).")]
Mfu = Annotated[Optional[float], typer.Option("--mfu", help="Compute efficiency in (0, 1], overrides the preset.")]
BwEff = Annotated[Optional[float], typer.Option("--bw-eff", help="Bandwidth efficiency in (0, 1], overrides the preset.")]
FixedMs = Annotated[Optional[float], typer.Option("--fixed-ms", help="Fixed time per forward pass in ms, overrides the preset.")]
UsdPerKwh = Annotated[Optional[float], typer.Option(
    "--usd-per-kwh", help="Electricity price in $/kWh, in [0, 1000]: adds the energy's cost (an estimate).")]
# the energy estimate's columns (`roofline.energy`), on every timing command's rows
ENERGY_COLUMNS = [Column("watts", "W (est.)", fixed(0)), Column("joules_per_token", "J/token (est.)", fixed(3))]
ENERGY_PRICE_COLUMN = Column("usd_per_million_tokens_energy", "energy $/M tok (est.)", fixed(4))
ReadEmb = Annotated[Optional[bool], typer.Option("--read-embedding/--no-read-embedding",
                                                 help="Count the input embedding table as read.")]
KvOpt = Annotated[Optional[bool], typer.Option("--kv/--no-kv", help="Count KV reads and attention FLOPs.")]
Weights = Annotated[str, typer.Option("--weights", "-w", help="Weight format: bf16, w4a16 (int4 g128), int8, fp8, or checkpoint (the model's own: FP8 blocks, MXFP4 experts, else torch_dtype).")]


Batches = Annotated[List[int], typer.Option("--batch", "-b", help="Sequences decoded together, >= 1 (repeatable).")]
Context = Annotated[int, typer.Option(help="Cached tokens per sequence.")]
Reserve = Annotated[float, typer.Option(help="Fraction of GPU memory held back from weights and KV, in [0, 1).")]
MaxLen = Annotated[Optional[int], typer.Option("--max-len", help="Tokens a max-length reservation holds (default: the model's context, 2048 for GPT-3).")]
KvTokens = Annotated[Optional[int], typer.Option("--kv-tokens", help="KV capacity in tokens, instead of memory - reserve - weights.")]
KvBytes = Annotated[float, typer.Option("--kv-bytes", help="Bytes per KV element (2 = BF16, 1 = FP8).")]
Rates = Annotated[Optional[List[float]], typer.Option("--rate", help="Poisson arrival rate in req/s, 'inf' for all at once (repeatable).")]
Requests = Annotated[int, typer.Option("--requests", "-n", help="Requests to simulate.")]
Seed = Annotated[int, typer.Option(help="Seed of the workload (same seed, same requests).")]

# Speculative decoding (batching, plan): the draft's acceptance and cost, declared once
SpecAlpha = Annotated[Optional[float], typer.Option("--spec-alpha", help="Acceptance rate of each draft token, in [0, 1] (speculative decoding).")]
SpecGamma = Annotated[Optional[int], typer.Option("--spec-gamma", help="Draft tokens per sequence per round, in [0, 64] (speculative decoding).")]
DRAFT_C_HELP = ("Draft step over target step (Leviathan's c), >= 0 (a tree: one draft level's); repeatable "
                "where the command sweeps it; unset with --draft: the draft's own cost.")
DraftC = Annotated[Optional[float], typer.Option("--c", help=DRAFT_C_HELP)]
DraftCs = Annotated[Optional[List[float]], typer.Option("--c", help=DRAFT_C_HELP)]  # repeatable
DraftModel = Annotated[Optional[str], typer.Option("--draft", help="Draft model (catalog name or config.json): its own step time on the same GPUs, its weights and K/V beside the target's; instead of --c.")]
# The serving workload's lengths (batching)
PromptLen = Annotated[Optional[str], typer.Option("--prompt-len", help="Prompt tokens: N, uniform:A:B, lognormal:MEAN:SIGMA or zipf:S:MAX (default uniform:32:512).")]
OutputLen = Annotated[Optional[str], typer.Option("--output-len", help="Output tokens: as --prompt-len (default uniform:1:128).")]

# A deployment (every timing command): declared once here, added to a command by `deployment_options`,
# turned into a `Deployment` by `parse.deployment`.
Tp = Annotated[int, typer.Option("--tp", help="Tensor-parallel GPUs per pipeline stage (divides the heads).")]
Pp = Annotated[int, typer.Option("--pp", help="Pipeline stages (layers split in balanced stages).")]
Ep = Annotated[int, typer.Option("--ep", help="Expert-parallel ranks of a MoE's routed experts (divides or is a multiple of --tp).")]
Gpus = Annotated[Optional[int], typer.Option("--gpus", help="GPUs in all, a multiple of tp x pp (default tp x pp: one replica).")]
KvDtype = Annotated[Optional[str], typer.Option("--kv-dtype", help="KV cache element type: bf16, fp16, fp8, int8 or int4 (default bf16).")]
OverlapComm = Annotated[bool, typer.Option("--overlap-comm/--no-overlap-comm", help="Hide collectives behind compute (default: they add).")]
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
    usable_memory: Optional[bool] = None  # None: the profile's memory basis
    strict: bool = False


DEPLOYMENT_OPTIONS = {"tp": Tp, "pp": Pp, "ep": Ep, "gpus": Gpus, "kv_dtype": KvDtype, "overlap_comm": OverlapComm,
                      "usable_memory": UsableMemory, "strict": Strict}
DEPLOYMENT_PARAMETER = "deploy"
AS_GIVEN = DeploymentArgs()  # a command's `deploy` default: no deployment option given


def deployment_options(fn):
    """Give command `fn` the deployment options in place of its `deploy` parameter, which then
    receives them as one `DeploymentArgs`: `--tp --pp --ep --gpus --kv-dtype --overlap-comm
    --usable-memory/--marketed-memory --strict`, declared once (`DEPLOYMENT_OPTIONS`).

    Typer reads the options from the signature this sets (`__signature__`, `__annotations__`).
    """
    signature = inspect.signature(fn, eval_str=True)  # the command's Annotated options, resolved
    names = list(signature.parameters)
    if DEPLOYMENT_PARAMETER not in names:
        raise TypeError(f"{fn.__name__} needs a {DEPLOYMENT_PARAMETER!r} parameter for the deployment options")
    kind = signature.parameters[DEPLOYMENT_PARAMETER].kind
    added = [inspect.Parameter(name, kind, default=default, annotation=DEPLOYMENT_OPTIONS[name])
             for name, default in DeploymentArgs._field_defaults.items()]
    at = names.index(DEPLOYMENT_PARAMETER)
    params = list(signature.parameters.values())
    params[at:at + 1] = added

    @functools.wraps(fn)
    def with_deployment(*args, **kw):
        given = {name: kw.pop(name) for name in DEPLOYMENT_OPTIONS if name in kw}
        return fn(*args, **{DEPLOYMENT_PARAMETER: DeploymentArgs(**given)}, **kw)

    with_deployment.__signature__ = signature.replace(parameters=params)
    with_deployment.__annotations__ = {p.name: p.annotation for p in params}
    return with_deployment
