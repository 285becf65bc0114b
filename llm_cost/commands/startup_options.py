"""The shared options and defaults the lightest command (`llm-cost model`) takes, declared once here
and re-exported by `options` with every other shared option: apart so that `model` does not pay for
building the hundred others at startup (issue 24.7, bench/cli_startup.py: about 2 ms)."""

from __future__ import annotations

from typing import Annotated, NamedTuple, Optional

import typer


class DefaultSetting(NamedTuple):
    """A model, a GPU (catalog names) and a profile; a NamedTuple, as `DeploymentArgs` (module startup)."""

    model: str
    gpu: str
    preset: str


# What every command answers with unless told otherwise (README, first screen): one model, one GPU, one
# profile: the article's Llama-3-8B on an H100 SXM (`specs.profiles.ARTICLE_SETTING`, a test holds them
# equal) under the calibrated profile. The commands that print a formula of the article at its peaks
# (roofline, spec, gamma, leviathan, table) default to the article's preset instead; a document's own
# example names its model, GPU and preset.
DEFAULT = DefaultSetting("llama-3-8b", "h100-sxm", "measured")

Format = Annotated[str, typer.Option("--format", "-f", help="Output: table, json, csv or markdown.")]
CONTEXT = typer.Option("--context", help="Cached tokens per sequence.")
Context = Annotated[int, CONTEXT]
KV_BYTES = typer.Option("--kv-bytes", help="Bytes per KV element (2 = BF16, 1 = FP8); --kv-dtype names it.")
KvBytes, MaybeKvBytes = Annotated[float, KV_BYTES], Annotated[Optional[float], KV_BYTES]
