"""`plan --emit vllm|sglang|trtllm` and `--emit-k8s`: every emitted flag is one the engine documents."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from helpers import CONFIGS, error_line, run

from llm_cost.errors import InvalidValueError
from llm_cost.planner.emit import OPTIONS_FILE, extra_llm_api_options, k8s_deployment, launch_args, launch_command

# Each engine's documented flags, with the page and docs version they were copied from (the data file)
DOCS = json.loads((Path(__file__).parent / "data" / "engine_flags.json").read_text())
KNOWN = {engine: (set(DOCS[engine]["flags"]), DOCS[engine]["command"]) for engine in ("vllm", "sglang", "trtllm")}
SGLANG_FLAGS = KNOWN["sglang"][0]

ROW = {"tp": 2, "pp": 2, "ep": 4, "batch": 64, "replicas": 3, "kv_dtype": "fp8", "weights": "fp8",
       "speculation": "draft llama-3.2-1b", "gamma": 4}


def _flags(args):
    return [a for a in args if a.startswith("--")]


ROWS = [ROW, dict(ROW, speculation="none", kv_dtype="bf16", weights="bf16", ep=1),
        dict(ROW, speculation="mtp", gamma=1)]  # a draft model, none, a model's MTP module


def _documented_values(engine, value):
    """Each emitted flag whose values the docs list takes one of them."""
    for flag, allowed in DOCS[engine].get("values", {}).items():
        if flag in value:
            assert value[flag] in allowed, (flag, value[flag], allowed)


@pytest.mark.parametrize("row", ROWS, ids=["draft", "plain", "mtp"])
@pytest.mark.parametrize("engine", sorted(KNOWN))
def test_every_flag_is_documented(engine, row):
    flags, head = KNOWN[engine]
    args = shlex.split(launch_command(row, engine, "meta-llama/Llama-3.1-70B", 1024).splitlines()[-1])
    assert args[:len(head)] == head
    assert set(_flags(args)) <= flags, set(_flags(args)) - flags
    _documented_values(engine, {a: b for a, b in zip(args, args[1:]) if a.startswith("--")})


def test_trtllm_options_file_holds_only_documented_options():
    """trtllm-serve takes the K/V dtype and the speculation in its --extra_llm_api_options YAML: the
    keys and values written are those its docs list (the data file), read back as YAML."""
    yaml = pytest.importorskip("yaml", reason="PyYAML (comes with the ray extra) parses the options file")
    doc = DOCS["trtllm"]["extra_llm_api_options"]
    for row in ROWS:
        text = launch_command(row, "trtllm", "m", 1024)
        options = extra_llm_api_options(row)
        if not options:
            assert "--extra_llm_api_options" not in text and "EOF" not in text
            continue
        written = text.split("<<'EOF'\n", 1)[1].split("\nEOF\n", 1)[0]
        assert yaml.safe_load(written) == options and text.startswith(f"cat > {OPTIONS_FILE} ")
        assert set(options) <= set(doc["top_level"])
        for section in ("kv_cache_config", "speculative_config"):
            assert set(options.get(section, {})) <= set(doc[section])
        for key, allowed in doc["values"].items():
            section, field = key.split(".")
            if field in options.get(section, {}):
                assert options[section][field] in allowed
    assert extra_llm_api_options(ROW)["kv_cache_config"] == {"dtype": "fp8"}
    assert extra_llm_api_options(ROW)["speculative_config"] == {
        "decoding_type": "DraftTarget", "max_draft_len": 4, "speculative_model_dir": "llama-3.2-1b"}
    assert extra_llm_api_options(ROWS[2])["speculative_config"] == {"decoding_type": "MTP", "num_nextn_predict_layers": 1}


@pytest.mark.parametrize("engine", sorted(KNOWN))
def test_the_sizes_are_the_rows(engine):
    args = shlex.split(launch_command(ROW, engine, "meta-llama/Llama-3.1-70B", 1024).splitlines()[-1])
    value = {a: b for a, b in zip(args, args[1:]) if a.startswith("--")}
    tp, pp, seqs, tokens = {"vllm": ("--tensor-parallel-size", "--pipeline-parallel-size", "--max-num-seqs",
                                     "--max-num-batched-tokens"),
                            "sglang": ("--tp-size", "--pp-size", "--max-running-requests", "--chunked-prefill-size"),
                            "trtllm": ("--tp_size", "--pp_size", "--max_batch_size", "--max_num_tokens")}[engine]
    assert (value[tp], value[pp], value[seqs], value[tokens]) == ("2", "2", "64", str(1024 + 64))
    if engine == "vllm":
        assert value["--kv-cache-dtype"] == "fp8" and "--enable-expert-parallel" in args
        spec = json.loads(value["--speculative-config"])
        assert set(spec) <= set(DOCS["vllm"]["speculative_config_keys"]) and spec["num_speculative_tokens"] == 4
    if engine == "sglang":
        assert value["--kv-cache-dtype"] == "fp8_e4m3" and value["--ep-size"] == "4"
        assert value["--speculative-draft-model-path"] == "llama-3.2-1b"
    if engine == "trtllm":
        assert value["--ep_size"] == "4" and value["--extra_llm_api_options"] == OPTIONS_FILE


def test_a_draft_without_a_model_cannot_be_launched():
    with pytest.raises(InvalidValueError, match="cost ratio c; give draft") as err:  # the CLI: --c, --draft
        launch_args(dict(ROW, speculation="draft"), "vllm", "m", 128)
    assert "draft" in err.value.params


def test_k8s_manifest_mounts_trtllms_options_from_a_config_map():
    yaml = pytest.importorskip("yaml", reason="PyYAML (comes with the ray extra) parses the manifest")
    config, deployment = yaml.safe_load_all(k8s_deployment(ROW, "trtllm", "m", 1024))
    assert config["kind"] == "ConfigMap" and deployment["kind"] == "Deployment"
    assert yaml.safe_load(config["data"][OPTIONS_FILE]) == extra_llm_api_options(ROW)
    pod = deployment["spec"]["template"]["spec"]
    c = pod["containers"][0]
    path = c["command"][c["command"].index("--extra_llm_api_options") + 1]
    mount = c["volumeMounts"][0]
    assert path == f"{mount['mountPath']}/{OPTIONS_FILE}"
    assert pod["volumes"][0]["configMap"]["name"] == config["metadata"]["name"]


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


@pytest.mark.parametrize("engine, flag", [("vllm", "--speculative-config"), ("sglang", "--speculative-draft-model-path"),
                                          ("trtllm", "speculative_model_dir")])
def test_cli_emit_names_a_catalog_drafts_hub_repo(engine, flag):
    """A draft given by catalog name is launched as the repo its config came from (models/llama-3.2-1b's
    _source: meta-llama/Llama-3.2-1B), as the target is: the catalog name alone is not loadable."""
    out = run("plan", "--gpus", "1", "--preset", "lecture", "--weights", "bf16", "--spec-alpha", "0.8", "--draft",
              "llama-3.2-1b", "--batch", "1", "--emit", engine, "--format", "csv")  # the best row speculates
    assert out.exit_code == 0, out.output
    tail = out.stdout.split("\n", 2)[-1]
    assert flag in tail and "meta-llama/Llama-3.2-1B" in tail and "llama-3.2-1b" not in tail.split(flag, 1)[1]
