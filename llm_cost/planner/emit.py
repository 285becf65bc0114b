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

Tokens per iteration: a whole prompt plus one decode row per sequence, ISL + batch (the plan's static
batch is prefilled whole, `request`'s model). Weight formats other than bf16 and fp8 (int8, int4)
need a pre-quantized checkpoint: the command names the model as given and no --quantization
(TensorRT-LLM's PyTorch backend reads FP8 too from a pre-quantized checkpoint only).
"""

from __future__ import annotations

import json
import shlex

from llm_cost.errors import InvalidValueError, check_choice

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


def extra_llm_api_options(row: dict, draft_model: str | None = None) -> dict:
    """TensorRT-LLM's LLM API options of `row` that trtllm-serve takes no flag for (module doc): the K/V
    dtype and the speculation, as {section: {key: value}} for the YAML file; {} when the row sets none.

    >>> extra_llm_api_options({"kv_dtype": "fp8", "speculation": "draft llama-3.2-1b", "gamma": 4})
    {'kv_cache_config': {'dtype': 'fp8'}, 'speculative_config': {'decoding_type': 'DraftTarget', \
'max_draft_len': 4, 'speculative_model_dir': 'llama-3.2-1b'}, 'disable_overlap_scheduler': True}
    """
    out: dict = {}
    if row["kv_dtype"] == "fp8":
        out["kv_cache_config"] = {"dtype": "fp8"}
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
    def scalar(v):
        return json.dumps(v)

    lines = []
    for key, value in options.items():
        if isinstance(value, dict):
            lines += [f"{key}:"] + [f"  {k}: {scalar(v)}" for k, v in value.items()]
        else:
            lines.append(f"{key}: {scalar(value)}")
    return "\n".join(lines) + "\n"


def launch_args(row: dict, engine: str, model: str, isl: int, *, options_file: str = OPTIONS_FILE,
                draft_model: str | None = None) -> list[str]:
    """The launch command of one replica of plan row `row` for `engine`, as an argument list; trtllm's
    extra options are read from `options_file` (`extra_llm_api_options`); `draft_model`: the draft's
    checkpoint (default the name the row gives it)."""
    engine = check_choice("emit", engine, ENGINES)
    tp, pp, ep, batch = int(row["tp"]), int(row["pp"]), int(row.get("ep", 1)), int(row["batch"])
    tokens = int(isl) + batch
    fp8_kv, fp8_w = row["kv_dtype"] == "fp8", row["weights"] == "fp8"
    gamma, draft = _spec(row, draft_model)
    if engine == "vllm":
        args = ["vllm", "serve", model, "--tensor-parallel-size", str(tp), "--pipeline-parallel-size", str(pp),
                "--max-num-seqs", str(batch), "--max-num-batched-tokens", str(tokens)]
        args += ["--enable-expert-parallel"] if ep > 1 else []
        args += ["--kv-cache-dtype", "fp8"] if fp8_kv else []
        args += ["--quantization", "fp8"] if fp8_w else []
        if gamma:
            conf = {"num_speculative_tokens": gamma, **({"model": draft} if draft else {"method": "deepseek_mtp"})}
            args += ["--speculative-config", json.dumps(conf, sort_keys=True)]
        return args
    if engine == "sglang":
        args = ["python3", "-m", "sglang.launch_server", "--model-path", model, "--tp-size", str(tp),
                "--pp-size", str(pp), "--max-running-requests", str(batch), "--chunked-prefill-size", str(tokens)]
        args += ["--ep-size", str(ep)] if ep > 1 else []
        args += ["--kv-cache-dtype", "fp8_e4m3"] if fp8_kv else []
        args += ["--quantization", "fp8"] if fp8_w else []
        if gamma:
            # SGLang runs a model's MTP module as EAGLE (its DeepSeek-V3 instructions), a separate draft as STANDALONE
            args += ["--speculative-algorithm", "EAGLE" if draft is None else "STANDALONE",
                     "--speculative-num-steps", str(gamma), "--speculative-num-draft-tokens", str(gamma + 1)]
            args += ["--speculative-draft-model-path", draft] if draft else []
        return args
    args = ["trtllm-serve", model, "--backend", "pytorch", "--tp_size", str(tp), "--pp_size", str(pp),
            "--max_batch_size", str(batch), "--max_num_tokens", str(tokens)]
    args += ["--ep_size", str(ep)] if ep > 1 else []
    return args + (["--extra_llm_api_options", options_file] if extra_llm_api_options(row) else [])


def launch_command(row: dict, engine: str, model: str, isl: int, *, draft_model: str | None = None) -> str:
    """`launch_args` as one shell line (shlex-quoted), after the here-document that writes trtllm's
    options file when the row has extra options: the command is always the last line."""
    command = shlex.join(launch_args(row, engine, model, isl, draft_model=draft_model))
    options = extra_llm_api_options(row, draft_model) if engine == "trtllm" else {}
    if not options:
        return command
    return f"cat > {OPTIONS_FILE} <<'EOF'\n{options_yaml(options)}EOF\n{command}"


def k8s_deployment(row: dict, engine: str, model: str, isl: int, *, image: str | None = None,
                   draft_model: str | None = None) -> str:
    """A Kubernetes Deployment (apps/v1) of the row: its replicas, tp x pp GPUs per pod
    (`nvidia.com/gpu` limit), the launch command as the container's command; YAML text. trtllm's extra
    options go first as a ConfigMap (a second document), mounted at OPTIONS_MOUNT."""
    options = extra_llm_api_options(row, draft_model) if engine == "trtllm" else {}
    args = launch_args(row, engine, model, isl, options_file=f"{OPTIONS_MOUNT}/{OPTIONS_FILE}", draft_model=draft_model)
    image = image or {"vllm": "vllm/vllm-openai:latest", "sglang": "lmsysorg/sglang:latest",
                      "trtllm": "nvcr.io/nvidia/tensorrt-llm/release:latest"}[engine]
    name = f"llm-cost-{engine}"
    gpus = int(row["tp"]) * int(row["pp"])
    lines = ["apiVersion: apps/v1", "kind: Deployment", "metadata:", f"  name: {name}", "spec:",
             f"  replicas: {int(row['replicas'])}", "  selector:", "    matchLabels:", f"      app: {name}",
             "  template:", "    metadata:", "      labels:", f"        app: {name}", "    spec:", "      containers:",
             f"      - name: {engine}", f"        image: {json.dumps(image)}", "        command:"]
    lines += [f"        - {json.dumps(a)}" for a in args]
    lines += ["        resources:", "          limits:", f'            nvidia.com/gpu: "{gpus}"']
    if not options:
        return "\n".join(lines) + "\n"
    lines += ["        volumeMounts:", "        - name: llm-api-options", f"          mountPath: {OPTIONS_MOUNT}",
              "      volumes:", "      - name: llm-api-options", "        configMap:", f"          name: {name}"]
    config = ["apiVersion: v1", "kind: ConfigMap", "metadata:", f"  name: {name}", "data:",
              f"  {OPTIONS_FILE}: |"] + [f"    {line}" for line in options_yaml(options).splitlines()]
    return "\n".join(config + ["---"] + lines) + "\n"
