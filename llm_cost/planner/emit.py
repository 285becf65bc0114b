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
- TensorRT-LLM (`trtllm-serve`, nvidia.github.io/TensorRT-LLM/commands/trtllm-serve.html):
  --backend pytorch, --tp_size, --pp_size, --ep_size, --max_batch_size, --max_num_tokens; its K/V
  dtype and speculation live in the --extra_llm_api_options YAML, which this does not write: those
  settings are left to the engine's defaults (README says so).

Tokens per iteration: a whole prompt plus one decode row per sequence, ISL + batch (the plan's static
batch is prefilled whole, `request`'s model). Weight formats other than bf16 and fp8 (int8, int4)
need a pre-quantized checkpoint: the command names the model as given and no --quantization.
"""

from __future__ import annotations

import json
import shlex

from llm_cost.errors import InvalidValueError, check_choice

ENGINES = ("vllm", "sglang", "trtllm")


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


def _spec(row: dict) -> tuple[int, str | None]:
    """(draft tokens per round, draft model or None) of a row; (0, None) without speculation."""
    kind = row.get("speculation") or "none"
    if kind == "none":
        return 0, None
    if kind == "draft":  # a draft known only by its cost ratio c: no checkpoint for the engine to load
        raise InvalidValueError("emit: the row speculates with a draft known only by its cost ratio c; give "
                                "draft (a model) so the launch command can name it", params=("emit", "c", "draft"))
    return int(row["gamma"]), (kind[len("draft "):] if kind.startswith("draft ") else None)


def launch_args(row: dict, engine: str, model: str, isl: int) -> list[str]:
    """The launch command of one replica of plan row `row` for `engine`, as an argument list."""
    engine = check_choice("emit", engine, ENGINES)
    tp, pp, ep, batch = int(row["tp"]), int(row["pp"]), int(row.get("ep", 1)), int(row["batch"])
    tokens = int(isl) + batch
    fp8_kv, fp8_w = row["kv_dtype"] == "fp8", row["weights"] == "fp8"
    gamma, draft = _spec(row)
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
    return args + (["--ep_size", str(ep)] if ep > 1 else [])


def launch_command(row: dict, engine: str, model: str, isl: int) -> str:
    """`launch_args` as one shell line (shlex-quoted)."""
    return shlex.join(launch_args(row, engine, model, isl))


def k8s_deployment(row: dict, engine: str, model: str, isl: int, *, image: str | None = None) -> str:
    """A Kubernetes Deployment (apps/v1) of the row: its replicas, tp x pp GPUs per pod
    (`nvidia.com/gpu` limit), the launch command as the container's command; YAML text."""
    args = launch_args(row, engine, model, isl)
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
    return "\n".join(lines) + "\n"
