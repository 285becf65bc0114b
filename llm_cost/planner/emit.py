"""A deployable answer: the chosen plan row as an engine's launch command and a Kubernetes Deployment.

One replica's command (tp x pp GPUs; the row's replicas become the Deployment's replicas):

- vLLM (`vllm serve`, engine arguments, docs.vllm.ai/en/latest/configuration/engine_args.html):
  --tensor-parallel-size, --pipeline-parallel-size, --enable-expert-parallel (ep > 1),
  --kv-cache-dtype fp8, --quantization fp8, --max-num-seqs, --max-num-batched-tokens,
  --speculative-config (JSON: num_speculative_tokens and the draft's model, or method deepseek_mtp).
- SGLang (`python3 -m sglang.launch_server`, docs.sglang.io/advanced_features/server_arguments.html):
  --model-path, --tp-size, --pp-size, --ep-size, --kv-cache-dtype fp8_e4m3, --quantization fp8,
  --max-running-requests, --chunked-prefill-size, --speculative-algorithm, --speculative-num-steps,
  --speculative-num-draft-tokens, --speculative-draft-model-path.
- TensorRT-LLM (`trtllm-serve`, nvidia.github.io/TensorRT-LLM/1.1.0rc5/commands/trtllm-serve/trtllm-serve.html):
  --backend pytorch, --tp_size, --pp_size, --ep_size, --max_batch_size, --max_num_tokens, and
  --extra_llm_api_options FILE: the LLM API options trtllm-serve has no flag for, as a YAML file
  (`extra_llm_api_options`): the K/V dtype (`kv_cache_config.dtype: fp8`, docs features/quantization)
  and speculation (`speculative_config`: `decoding_type` DraftTarget with `max_draft_len` and
  `speculative_model_dir`, the overlap scheduler off as its example runs it, or MTP with
  `num_nextn_predict_layers`; docs features/speculative-decoding). The command writes the file first
  (a shell here-document); the Kubernetes manifest mounts it from a ConfigMap.

The flags each engine documents, with the page and version they were copied from, are in
tests/data/engine_flags.json; a test holds every emitted flag and option to them.

One engine spans max(tp, ep) x pp GPUs (`engine_gpus`): an ep group wider than tp runs ep / tp
attention groups of tp GPUs in one engine, and under dp_attention each of its GPUs is an attention
rank (attention tp 1). vLLM: --tensor-parallel-size the attention's tp, --data-parallel-size the
groups, --enable-expert-parallel (its EP is tp x dp; docs serving/expert_parallel_deployment);
SGLang: --tp-size the engine's GPUs, --dp-size the groups with --enable-dp-attention (its attention
tp is tp-size / dp-size), --ep-size; TensorRT-LLM: --tp_size the engine's GPUs, --ep_size, and
`enable_attention_dp` (every GPU an attention rank, its DeepSeek-R1 serve example): it has no
attention tp between 1 and tp_size, so an ep group wider than tp without dp_attention is launched
with attention over all the engine's GPUs and a note says so. The Kubernetes pod asks for one
engine's GPUs and the Deployment's replicas are the row's GPUs over them.

Tokens per iteration: a whole prompt plus one decode row per sequence, ISL + batch (the plan's static
batch is prefilled whole, `request`'s model); a row served (`plan --verify`: `served`, the
`ServeSettings.config_fields` it ran with) takes what it was served with: prompts in chunks of
`prefill_chunk` tokens where the engine chunked (TensorRT-LLM: `enable_chunked_prefill`), prefix
caching (vLLM --enable-prefix-caching; SGLang's radix cache is on by default; TensorRT-LLM
`kv_cache_config.enable_block_reuse`); a host K/V tier is not set (none of the flags checked,
tests/data/engine_flags.json, sizes one): a note says so.

Weights (`checkpoint_of`): bf16 (and a model's own checkpoint format, `checkpoint`: a caller whose
model ships the row's format, DeepSeek-V3's FP8, gives the row as `checkpoint`) load the model's repo; fp8 is
quantized at load by vLLM and SGLang (`--quantization fp8`, vLLM's online dynamic quantization from
a BF16 checkpoint, docs features/quantization/fp8); every other case (int4 and int8 weight-only,
W8A8, NVFP4, llama.cpp's blocks, and FP8 on TensorRT-LLM, whose PyTorch backend reads FP8 from a
pre-quantized ModelOpt checkpoint only) needs a pre-quantized checkpoint: without one given
(`prequantized`) the command names a placeholder, `<an int4 (AWQ/GPTQ) checkpoint of ORG/NAME>`, to be
filled in (an engine given it fails loudly rather than load the bf16 weights), and `launch_notes`
says so. vLLM and SGLang read such a checkpoint's quantization from its config: no flag.
"""

from __future__ import annotations

import json
import shlex

from llm_cost.errors import InvalidValueError, check_choice
from llm_cost.specs.deployment import busiest_rank_sequences
from llm_cost.specs.weights import (BF16, CHECKPOINT, FP8, INT4_G128, INT8_G128, INT8_W8A8, NVFP4, Q4_0, Q8_0,
                                    WEIGHT_FORMATS)

ENGINES = ("vllm", "sglang", "trtllm")
OPTIONS_FILE = "extra-llm-api-options.yaml"  # trtllm-serve --extra_llm_api_options, beside the command
OPTIONS_MOUNT = "/etc/llm-cost"  # where the Kubernetes manifest mounts it (a ConfigMap)


def hub_repo(source: str) -> str | None:
    """The Hugging Face repo id a config's source names ('https://huggingface.co/ORG/NAME/...' ->
    'ORG/NAME'), or None: the checkpoint an engine loads for a catalog model.

    >>> hub_repo("https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json"), hub_repo("./c.json")
    ('meta-llama/Meta-Llama-3-8B', None)
    """
    prefix = "https://huggingface.co/"
    if not isinstance(source, str) or not source.startswith(prefix):
        return None
    parts = source[len(prefix):].split("/")
    return "/".join(parts[:2]) if len(parts) >= 2 and all(parts[:2]) else None


# What a row's weights need beyond the model's repo (module doc): the formats loaded as published,
# those an engine quantizes at load (its --quantization value), and the pre-quantized checkpoint
# any other needs, by the registry's formats (`specs.weights`: their names, a row's name resolved there)
AS_PUBLISHED = tuple(name for name, fmt in WEIGHT_FORMATS.items() if fmt in (BF16, CHECKPOINT))
QUANTIZED_AT_LOAD = {"vllm": {FP8.name: "fp8"}, "sglang": {FP8.name: "fp8"}, "trtllm": {}}
PREQUANTIZED = {INT4_G128.name: "an int4 (AWQ/GPTQ) checkpoint", INT8_G128.name: "an int8 weight-only (GPTQ) checkpoint",
                INT8_W8A8.name: "an INT8 W8A8 (SmoothQuant) checkpoint", NVFP4.name: "an NVFP4 checkpoint",
                FP8.name: "an FP8 (ModelOpt) checkpoint", Q8_0.name: "a GGUF Q8_0 file",
                Q4_0.name: "a GGUF Q4_0 file"}


def needs_checkpoint(row: dict, engine: str) -> str | None:
    """The pre-quantized checkpoint `engine` needs for the row's weights ('an int4 (AWQ/GPTQ)
    checkpoint'), or None: the model's repo as published, or quantized at load.

    >>> needs_checkpoint({"weights": "int4"}, "vllm"), needs_checkpoint({"weights": "fp8"}, "vllm")
    ('an int4 (AWQ/GPTQ) checkpoint', None)
    >>> needs_checkpoint({"weights": "fp8"}, "trtllm"), needs_checkpoint({"weights": "w4a16"}, "sglang")
    ('an FP8 (ModelOpt) checkpoint', 'an int4 (AWQ/GPTQ) checkpoint')
    """
    weights = str(row["weights"])
    fmt = WEIGHT_FORMATS.get(weights)
    name = weights if fmt is None else fmt.name  # another name of a format (w4a16: int4) needs what it does
    if name in AS_PUBLISHED or name in QUANTIZED_AT_LOAD[engine]:
        return None
    return PREQUANTIZED.get(name, f"a {weights} checkpoint")


def checkpoint_of(row: dict, engine: str, model: str, prequantized: bool = False) -> str:
    """What the command names as the checkpoint: `model`, or where the row's weights need a
    pre-quantized checkpoint and `model` is not one (`prequantized` False) a placeholder to fill in.

    >>> checkpoint_of({"weights": "int4"}, "vllm", "meta-llama/Meta-Llama-3-70B")
    '<an int4 (AWQ/GPTQ) checkpoint of meta-llama/Meta-Llama-3-70B>'
    """
    need = needs_checkpoint(row, engine)
    return model if need is None or prequantized else f"<{need} of {model}>"


def engine_gpus(row: dict) -> int:
    """GPUs one engine of the row spans: max(tp, ep) x pp (module doc)."""
    return max(int(row["tp"]), int(row.get("ep", 1))) * int(row["pp"])


def attention_split(row: dict) -> tuple[int, int]:
    """(attention tp, attention groups) of one engine stage: (1, max(tp, ep)) under dp_attention, else
    (tp, max(tp, ep) / tp).

    >>> attention_split({"tp": 2, "ep": 8, "dp_attention": True}), attention_split({"tp": 2, "ep": 8})
    ((1, 8), (2, 4))
    """
    tp, group = int(row["tp"]), max(int(row["tp"]), int(row.get("ep", 1)))
    att = 1 if row.get("dp_attention") else tp
    return att, group // att


def engine_sequences(row: dict, per_rank: bool = False) -> int:
    """Sequences one engine holds: the row's batch per tp x pp replica times the max(tp, ep) / tp replicas
    it spans; `per_rank`: per attention group (vLLM's --max-num-seqs and TensorRT-LLM's --max_batch_size
    are per data-parallel rank, SGLang's --max-running-requests the server's).

    >>> row = {"tp": 2, "ep": 8, "batch": 512, "dp_attention": True}
    >>> engine_sequences(row), engine_sequences(row, per_rank=True), engine_sequences(dict(row, ep=1))
    (2048, 256, 512)
    """
    tp = int(row["tp"])
    total = int(row["batch"]) * max(tp, int(row.get("ep", 1))) // tp
    return busiest_rank_sequences(total, attention_split(row)[1]) if per_rank else total


def launch_notes(row: dict, engine: str, model: str, *, served: dict | None = None,
                 prequantized: bool = False) -> list[str]:
    """What the launch command cannot say (module doc), one line each: a placeholder checkpoint to
    fill in, TensorRT-LLM's attention over an ep group wider than tp, a served host K/V tier."""
    engine = check_choice("emit", engine, ENGINES)
    served, out = served or {}, []
    need = needs_checkpoint(row, engine)
    if need and not prequantized:
        out.append(f"the row's weights are {row['weights']}: {engine} loads them from {need} of {model}, not "
                   f"the repo as published; the command names it {checkpoint_of(row, engine, model)}: put its repo or "
                   "path there")
    att, groups = attention_split(row)
    if engine == "trtllm" and att > 1 and groups > 1:
        out.append(f"trtllm runs attention data parallel on every GPU or on none: launched with attention tensor "
                   f"parallel over the engine's {engine_gpus(row) // int(row['pp'])} GPUs, not the row's {groups} "
                   f"groups of tp {att}")
    if served.get("kv_offload_bytes"):
        out.append(f"served with a host K/V tier of {served['kv_offload_bytes'] / 1e9:g} GB per replica: the command "
                   f"sets none (no such flag is in the {engine} flags it was checked against); set {engine}'s host "
                   "K/V offload by hand")
    return out


def _spec(row: dict, draft_model: str | None = None) -> tuple[int, str | None]:
    """(draft tokens per round, draft checkpoint or None) of a row (`draft_model` in place of the draft's
    name in the row); (0, None) without speculation."""
    kind = row.get("speculation") or "none"
    if kind == "none":
        return 0, None
    if kind == "draft":  # a draft known only by its cost ratio c: no checkpoint for the engine to load
        raise InvalidValueError("emit: the row speculates with a draft known only by its cost ratio c; give "
                                "draft (a model) so the launch command can name it", params=("emit", "c", "draft"))
    return int(row["gamma"]), ((draft_model or kind[len("draft "):]) if kind.startswith("draft ") else None)


def extra_llm_api_options(row: dict, draft_model: str | None = None, served: dict | None = None) -> dict:
    """TensorRT-LLM's LLM API options of `row` that trtllm-serve takes no flag for (module doc): the K/V
    dtype, attention data parallel, the speculation, and as `served` (`ServeSettings.config_fields`)
    chunked prefill and block reuse, as {section: {key: value}} for the YAML file; {} when none is set.

    >>> extra_llm_api_options({"kv_dtype": "fp8", "speculation": "draft llama-3.2-1b", "gamma": 4, "tp": 1, "ep": 1})
    {'kv_cache_config': {'dtype': 'fp8'}, 'speculative_config': {'decoding_type': 'DraftTarget', \
'max_draft_len': 4, 'speculative_model_dir': 'llama-3.2-1b'}, 'disable_overlap_scheduler': True}
    """
    served = served or {}
    out: dict = {}
    kv = {**({"dtype": "fp8"} if row["kv_dtype"] == "fp8" else {}),
          **({"enable_block_reuse": True} if served.get("prefix_caching") else {})}
    if kv:
        out["kv_cache_config"] = kv
    if row.get("dp_attention") and engine_gpus(row) > 1:
        out["enable_attention_dp"] = True
    if served.get("prefill_chunk"):
        out["enable_chunked_prefill"] = True
    gamma, draft = _spec(row, draft_model)
    if gamma and draft:
        out["speculative_config"] = {"decoding_type": "DraftTarget", "max_draft_len": gamma,
                                     "speculative_model_dir": draft}
        out["disable_overlap_scheduler"] = True
    elif gamma:
        out["speculative_config"] = {"decoding_type": "MTP", "num_nextn_predict_layers": gamma}
    return out


def options_yaml(options: dict) -> str:
    """`extra_llm_api_options` as YAML text (sections of scalars; strings JSON-quoted, which YAML reads).

    >>> print(options_yaml({"kv_cache_config": {"dtype": "fp8"}, "disable_overlap_scheduler": True}), end="")
    kv_cache_config:
      dtype: "fp8"
    disable_overlap_scheduler: true
    """
    def scalar(value):
        return json.dumps(value)

    lines = []
    for key, value in options.items():
        if isinstance(value, dict):
            lines += [f"{key}:"] + [f"  {field}: {scalar(entry)}" for field, entry in value.items()]
        else:
            lines.append(f"{key}: {scalar(value)}")
    return "\n".join(lines) + "\n"


def launch_args(row: dict, engine: str, model: str, isl: int, *, options_file: str = OPTIONS_FILE,
                draft_model: str | None = None, served: dict | None = None, prequantized: bool = False) -> list[str]:
    """The launch command of one engine of plan row `row` for `engine`, as an argument list; trtllm's
    extra options are read from `options_file` (`extra_llm_api_options`); `draft_model`: the draft's
    checkpoint (default the name the row gives it); `served`: the `ServeSettings.config_fields` the row
    was served with (None: not served); `prequantized`: `model` is already in the row's weights."""
    engine = check_choice("emit", engine, ENGINES)
    served = served or {}
    tokens = int(served.get("prefill_chunk") or int(isl) + int(row["batch"]))
    name = checkpoint_of(row, engine, model, prequantized)
    spec = _spec(row, draft_model)
    if engine == "vllm":
        return _vllm_args(row, name, tokens, spec, served)
    if engine == "sglang":
        return _sglang_args(row, name, tokens, spec)
    args = ["trtllm-serve", name, "--backend", "pytorch", "--tp_size", str(engine_gpus(row) // int(row["pp"])),
            "--pp_size", str(row["pp"]), "--max_batch_size", str(engine_sequences(row, per_rank=True)), "--max_num_tokens", str(tokens)]
    args += ["--ep_size", str(row["ep"])] if int(row.get("ep", 1)) > 1 else []
    return args + (["--extra_llm_api_options", options_file] if extra_llm_api_options(row, served=served) else [])


def _vllm_args(row: dict, name: str, tokens: int, spec: tuple, served: dict) -> list[str]:
    att, groups = attention_split(row)
    args = ["vllm", "serve", name, "--tensor-parallel-size", str(att), "--pipeline-parallel-size", str(row["pp"]),
            "--max-num-seqs", str(engine_sequences(row, per_rank=True)), "--max-num-batched-tokens", str(tokens)]
    args += ["--data-parallel-size", str(groups)] if groups > 1 else []
    args += ["--enable-expert-parallel"] if int(row.get("ep", 1)) > 1 else []
    args += ["--kv-cache-dtype", "fp8"] if row["kv_dtype"] == "fp8" else []
    quant = QUANTIZED_AT_LOAD["vllm"].get(row["weights"])
    args += ["--quantization", quant] if quant else []
    args += ["--enable-prefix-caching"] if served.get("prefix_caching") else []
    gamma, draft = spec
    if gamma:
        conf = {"num_speculative_tokens": gamma, **({"model": draft} if draft else {"method": "deepseek_mtp"})}
        args += ["--speculative-config", json.dumps(conf, sort_keys=True)]
    return args


def _sglang_args(row: dict, name: str, tokens: int, spec: tuple) -> list[str]:
    _, groups = attention_split(row)
    args = ["python3", "-m", "sglang.launch_server", "--model-path", name, "--tp-size",
            str(engine_gpus(row) // int(row["pp"])), "--pp-size", str(row["pp"]), "--max-running-requests",
            str(engine_sequences(row)), "--chunked-prefill-size", str(tokens)]
    args += ["--ep-size", str(row["ep"])] if int(row.get("ep", 1)) > 1 else []
    args += ["--enable-dp-attention", "--dp-size", str(groups)] if groups > 1 else []
    args += ["--kv-cache-dtype", "fp8_e4m3"] if row["kv_dtype"] == "fp8" else []
    quant = QUANTIZED_AT_LOAD["sglang"].get(row["weights"])
    args += ["--quantization", quant] if quant else []
    gamma, draft = spec
    if gamma:
        # SGLang runs a model's MTP module as EAGLE (its DeepSeek-V3 instructions), a separate draft as STANDALONE
        args += ["--speculative-algorithm", "EAGLE" if draft is None else "STANDALONE",
                 "--speculative-num-steps", str(gamma), "--speculative-num-draft-tokens", str(gamma + 1)]
        args += ["--speculative-draft-model-path", draft] if draft else []
    return args


def launch_command(row: dict, engine: str, model: str, isl: int, *, draft_model: str | None = None,
                   served: dict | None = None, prequantized: bool = False) -> str:
    """`launch_args` as one shell line (shlex-quoted), after the here-document that writes trtllm's
    options file when the row has extra options: the command is always the last line."""
    command = shlex.join(launch_args(row, engine, model, isl, draft_model=draft_model, served=served,
                                     prequantized=prequantized))
    options = extra_llm_api_options(row, draft_model, served) if engine == "trtllm" else {}
    if not options:
        return command
    return f"cat > {OPTIONS_FILE} <<'EOF'\n{options_yaml(options)}EOF\n{command}"


def k8s_deployment(row: dict, engine: str, model: str, isl: int, *, image: str | None = None,
                   draft_model: str | None = None, served: dict | None = None, prequantized: bool = False) -> str:
    """A Kubernetes Deployment (apps/v1) of the row: one engine per pod (`engine_gpus`: max(tp, ep) x pp
    GPUs, the `nvidia.com/gpu` limit), the row's GPUs over them as replicas, the launch command as the
    container's command; YAML text. trtllm's extra options go first as a ConfigMap (a second
    document), mounted at OPTIONS_MOUNT."""
    engine = check_choice("emit", engine, ENGINES)
    options = extra_llm_api_options(row, draft_model, served) if engine == "trtllm" else {}
    args = launch_args(row, engine, model, isl, options_file=f"{OPTIONS_MOUNT}/{OPTIONS_FILE}", draft_model=draft_model,
                       served=served, prequantized=prequantized)
    image = image or {"vllm": "vllm/vllm-openai:latest", "sglang": "lmsysorg/sglang:latest",
                      "trtllm": "nvcr.io/nvidia/tensorrt-llm/release:latest"}[engine]
    name = f"llm-cost-{engine}"
    gpus = engine_gpus(row)
    total = int(row.get("gpus") or int(row["replicas"]) * int(row["tp"]) * int(row["pp"]))
    if total % gpus:
        raise InvalidValueError(f"emit: the row's {total} GPUs are not whole engines of {gpus} (max(tp, ep) x pp)",
                                params=("emit", "ep"))
    lines = ["apiVersion: apps/v1", "kind: Deployment", "metadata:", f"  name: {name}", "spec:",
             f"  replicas: {total // gpus}", "  selector:", "    matchLabels:", f"      app: {name}",
             "  template:", "    metadata:", "      labels:", f"        app: {name}", "    spec:", "      containers:",
             f"      - name: {engine}", f"        image: {json.dumps(image)}", "        command:"]
    lines += [f"        - {json.dumps(arg)}" for arg in args]
    lines += ["        resources:", "          limits:", f'            nvidia.com/gpu: "{gpus}"']
    if not options:
        return "\n".join(lines) + "\n"
    lines += ["        volumeMounts:", "        - name: llm-api-options", f"          mountPath: {OPTIONS_MOUNT}",
              "      volumes:", "      - name: llm-api-options", "        configMap:", f"          name: {name}"]
    config = ["apiVersion: v1", "kind: ConfigMap", "metadata:", f"  name: {name}", "data:",
              f"  {OPTIONS_FILE}: |"] + [f"    {line}" for line in options_yaml(options).splitlines()]
    return "\n".join(config + ["---"] + lines) + "\n"
