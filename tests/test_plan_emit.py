"""`plan --emit vllm|sglang|trtllm` and `--emit-k8s`: every emitted flag is one the engine documents."""

from __future__ import annotations

import shlex

import pytest
from helpers import CONFIGS, error_line, run

from llm_cost.errors import InvalidValueError
from llm_cost.planner.emit import k8s_deployment, launch_args

# Flags taken from each engine's documentation (the pages named); a flag emitted must be listed here.
# vLLM engine arguments, https://docs.vllm.ai/en/latest/configuration/engine_args.html (v0.8+;
# --enable-expert-parallel and --speculative-config JSON from the same page)
VLLM_FLAGS = {"--tensor-parallel-size", "--pipeline-parallel-size", "--enable-expert-parallel", "--kv-cache-dtype",
              "--quantization", "--max-num-seqs", "--max-num-batched-tokens", "--speculative-config"}
VLLM_KV = {"auto", "fp8", "fp8_e5m2", "fp8_e4m3"}
# SGLang server arguments, https://docs.sglang.io/advanced_features/server_arguments.html
SGLANG_FLAGS = {"--model-path", "--tp-size", "--pp-size", "--ep-size", "--kv-cache-dtype", "--quantization",
                "--max-running-requests", "--chunked-prefill-size", "--speculative-algorithm",
                "--speculative-num-steps", "--speculative-num-draft-tokens", "--speculative-draft-model-path"}
SGLANG_KV = {"auto", "fp8_e5m2", "fp8_e4m3"}
# trtllm-serve options, https://nvidia.github.io/TensorRT-LLM/0.18.2/commands/trtllm-serve.html (--ep_size:
# https://nvidia.github.io/TensorRT-LLM/commands/trtllm-serve/trtllm-serve.html)
TRTLLM_FLAGS = {"--backend", "--tp_size", "--pp_size", "--ep_size", "--max_batch_size", "--max_num_tokens"}
KNOWN = {"vllm": (VLLM_FLAGS, ["vllm", "serve"]), "sglang": (SGLANG_FLAGS, ["python3", "-m", "sglang.launch_server"]),
         "trtllm": (TRTLLM_FLAGS, ["trtllm-serve"])}

ROW = {"tp": 2, "pp": 2, "ep": 4, "batch": 64, "replicas": 3, "kv_dtype": "fp8", "weights": "fp8",
       "speculation": "draft llama-3.2-1b", "gamma": 4}


def _flags(args):
    return [a for a in args if a.startswith("--")]


@pytest.mark.parametrize("engine", sorted(KNOWN))
def test_every_flag_is_documented_and_the_sizes_are_the_rows(engine):
    flags, head = KNOWN[engine]
    row = ROW if engine != "trtllm" else dict(ROW, speculation="none")
    args = shlex.split(shlex.join(launch_args(row, engine, "meta-llama/Llama-3.1-70B", 1024)))
    assert args[:len(head)] == head
    assert set(_flags(args)) <= flags, set(_flags(args)) - flags
    value = {a: b for a, b in zip(args, args[1:]) if a.startswith("--")}
    tp, pp, seqs, tokens = {"vllm": ("--tensor-parallel-size", "--pipeline-parallel-size", "--max-num-seqs",
                                     "--max-num-batched-tokens"),
                            "sglang": ("--tp-size", "--pp-size", "--max-running-requests", "--chunked-prefill-size"),
                            "trtllm": ("--tp_size", "--pp_size", "--max_batch_size", "--max_num_tokens")}[engine]
    assert (value[tp], value[pp], value[seqs], value[tokens]) == ("2", "2", "64", str(1024 + 64))
    if engine == "vllm":
        assert value["--kv-cache-dtype"] in VLLM_KV and "--enable-expert-parallel" in args
        assert '"num_speculative_tokens": 4' in value["--speculative-config"]
    if engine == "sglang":
        assert value["--kv-cache-dtype"] in SGLANG_KV and value["--ep-size"] == "4"
        assert value["--speculative-draft-model-path"] == "llama-3.2-1b"


def test_a_draft_without_a_model_cannot_be_launched():
    with pytest.raises(InvalidValueError, match="cost ratio c; give draft") as err:  # the CLI: --c, --draft
        launch_args(dict(ROW, speculation="draft"), "vllm", "m", 128)
    assert "draft" in err.value.params


def test_k8s_manifest_is_a_deployment_of_the_rows_replicas():
    yaml = pytest.importorskip("yaml", reason="PyYAML (comes with the ray extra) parses the manifest")
    doc = yaml.safe_load(k8s_deployment(ROW, "vllm", "meta-llama/Llama-3.1-70B", 1024))
    assert doc["kind"] == "Deployment" and doc["spec"]["replicas"] == 3
    c = doc["spec"]["template"]["spec"]["containers"][0]
    assert c["command"] == launch_args(ROW, "vllm", "meta-llama/Llama-3.1-70B", 1024)
    assert c["resources"]["limits"]["nvidia.com/gpu"] == "4"


PLAN = ("plan", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpus", "2", "--isl", "1024", "--osl", "128",
        "--ttft-ms", "500", "--tpot-ms", "20", "--preset", "lecture", "--format", "csv")


def test_cli_emit_prints_the_best_rows_command_last():
    out = run(*PLAN, "--emit", "sglang", "--served-model", "meta-llama/Meta-Llama-3-8B")
    assert out.exit_code == 0, out.output
    last = shlex.split(out.stdout.strip().splitlines()[-1])
    assert last[:5] == ["python3", "-m", "sglang.launch_server", "--model-path", "meta-llama/Meta-Llama-3-8B"]
    assert set(_flags(last)) <= SGLANG_FLAGS


def test_cli_emit_names_a_catalog_models_hub_repo_by_default(tmp_path):
    """Without --served-model a catalog model is launched as the repo its config came from
    (models/llama-3-8b/config.json's _source: huggingface.co/meta-llama/Meta-Llama-3-8B), which an
    engine can load; a config file given by path (no Hub source) is named as given."""
    out = run(*PLAN, "--emit", "vllm")
    assert out.exit_code == 0, out.output
    assert shlex.split(out.stdout.strip().splitlines()[-1])[:3] == ["vllm", "serve", "meta-llama/Meta-Llama-3-8B"]
    config = tmp_path / "config.json"
    config.write_text((CONFIGS / "granite-3.3-8b-instruct.json").read_text())
    args = tuple(str(config) if a == "llama-3-8b" else a for a in PLAN)
    out = run(*args, "--emit", "vllm")
    assert out.exit_code == 0, out.output
    assert shlex.split(out.stdout.strip().splitlines()[-1])[2] == str(config)


def test_cli_emit_errors_are_one_line():
    assert "emit" in error_line(*PLAN, "--emit", "tgi")
    assert "--emit" in error_line(*PLAN, "--emit-k8s")
