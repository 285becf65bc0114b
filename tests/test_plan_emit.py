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

ROW = {"tp": 2, "pp": 2, "ep": 2, "batch": 64, "replicas": 3, "kv_dtype": "fp8", "weights": "fp8",
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
        assert value["--kv-cache-dtype"] == "fp8_e4m3" and value["--ep-size"] == "2"
        assert value["--speculative-draft-model-path"] == "llama-3.2-1b"
    if engine == "trtllm":
        assert value["--ep_size"] == "2" and value["--extra_llm_api_options"] == OPTIONS_FILE


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


# Issue 26's review, Part E: the emitted deployment is the one planned (and served)

def _last_args(out):
    return shlex.split(out.stdout.strip().splitlines()[-1])


def _values(args):
    return {a: b for a, b in zip(args, args[1:]) if a.startswith("--")}


def test_cli_emit_an_int4_row_names_a_placeholder_not_the_bf16_repo():
    """The default plan's best row of llama-3-70b on one GPU is int4 (75 GB; the bf16 repo is 140 GB):
    the command must not load meta-llama/Meta-Llama-3-70B as it is, but name a checkpoint to fill in,
    and a note says so; --served-model names it as given (the checkpoint the user has)."""
    out = run("plan", "--model", "llama-3-70b", "--gpus", "1", "--emit", "vllm", "--format", "csv")
    assert out.exit_code == 0, out.output
    assert out.stdout.splitlines()[1].split(",")[out.stdout.splitlines()[0].split(",").index("weights")] == "int4"
    args = _last_args(out)
    assert args[2] == "<an int4 (AWQ/GPTQ) checkpoint of meta-llama/Meta-Llama-3-70B>", args
    assert "--quantization" not in args  # vLLM reads an AWQ/GPTQ checkpoint's quantization from its config
    assert "Note: the row's weights are int4" in out.stderr and "put its repo or path there" in out.stderr
    given = run("plan", "--model", "llama-3-70b", "--gpus", "1", "--emit", "vllm", "--format", "csv",
                "--served-model", "casperhansen/llama-3-70b-instruct-awq")
    assert given.exit_code == 0, given.output
    assert _last_args(given)[2] == "casperhansen/llama-3-70b-instruct-awq" and "weights are int4" not in given.stderr


@pytest.mark.parametrize("engine, name, quant", [
    ("vllm", "meta-llama/Meta-Llama-3-8B", "fp8"), ("sglang", "meta-llama/Meta-Llama-3-8B", "fp8"),
    ("trtllm", "<an FP8 (ModelOpt) checkpoint of meta-llama/Meta-Llama-3-8B>", None)])
def test_fp8_is_quantized_at_load_except_on_trtllm(engine, name, quant):
    """vLLM and SGLang quantize a bf16 checkpoint to FP8 at load (--quantization fp8); TensorRT-LLM's
    PyTorch backend reads FP8 from a pre-quantized checkpoint only: a placeholder, no flag."""
    row = dict(ROWS[1], weights="fp8")
    args = shlex.split(launch_command(row, engine, "meta-llama/Meta-Llama-3-8B", 1024).splitlines()[-1])
    assert name in args and _values(args).get("--quantization") == quant


PLAN_SERVED = ("plan", "--gpus", "2", "--ttft-ms", "500", "--tpot-ms", "20", "--verify", "1", "--rate", "2",
               "-n", "100", "--engine", "vllm", "--prefix-caching", "--shared-prefix", "256", "--format", "csv")


def _served_chunk():
    from llm_cost.catalog.loader import as_accelerator
    from llm_cost.planner.verify import ServeSettings

    return ServeSettings("vllm", True).config_fields(as_accelerator("h100-sxm"))["prefill_chunk"]


def test_cli_emit_after_verify_is_what_was_served():
    """A verified row was served with vLLM's prompt chunks (8,192 tokens on an H100) and prefix caching:
    the command says those, not ISL + batch and no cache; a host K/V tier, which no flag checked sets,
    is a note."""
    out = run(*PLAN_SERVED, "--kv-offload-bytes", "1e10", "--emit", "vllm")
    assert out.exit_code == 0, out.output
    args = _last_args(out)
    assert _values(args)["--max-num-batched-tokens"] == str(_served_chunk()) and "--enable-prefix-caching" in args
    assert "host K/V tier of 10 GB" in out.stderr
    trt = run(*PLAN_SERVED, "--emit", "trtllm")
    assert trt.exit_code == 0, trt.output
    assert _values(_last_args(trt))["--max_num_tokens"] == str(_served_chunk())
    assert "enable_chunked_prefill: true" in trt.stdout and "enable_block_reuse: true" in trt.stdout


def test_cli_emit_refuses_a_verified_row_that_misses_the_served_slo():
    """At 500 req/s on one GPU no verified row meets the SLO: nothing to deploy, as the static path says."""
    out = run("plan", "--gpus", "1", "--ttft-ms", "500", "--tpot-ms", "20", "--verify", "3", "--rate", "500",
              "-n", "500", "--emit", "vllm", "--format", "csv")
    assert out.exit_code == 2 and "Traceback" not in out.output, out.output
    assert "served SLO" in out.stderr and "nothing to deploy" in out.stderr and "vllm serve" not in out.stdout


def test_cli_emit_dp_attention_is_one_engine_of_the_ep_group():
    """tp 2, ep 8 with dp_attention on 8 GPUs: one engine of 8 GPUs, every GPU an attention rank; SGLang
    --tp-size 8 --dp-size 8 --enable-dp-attention --ep-size 8, vLLM tp 1 x dp 8 with expert parallel,
    one pod of 8 GPUs, and the sequences the row's replicas hold (batch x 4) in the engine."""
    plan = ("plan", "--model", "mixtral-8x7b", "--gpus", "8", "--tp", "2", "--ep", "8", "--dp-attention",
            "--format", "csv")
    out = run(*plan, "--emit", "sglang")
    assert out.exit_code == 0, out.output
    header, best = out.stdout.splitlines()[0].split(","), out.stdout.splitlines()[1].split(",")
    assert "dp-attn" in best[header.index("split")]
    batch = int(best[header.index("batch")])
    sg = _values(_last_args(out))
    assert (sg["--tp-size"], sg["--ep-size"], sg["--dp-size"]) == ("8", "8", "8") and "--enable-dp-attention" in _last_args(out)
    assert sg["--max-running-requests"] == str(batch * 4)
    vl = run(*plan, "--emit", "vllm")
    v = _values(_last_args(vl))
    assert (v["--tensor-parallel-size"], v["--data-parallel-size"]) == ("1", "8") and "--enable-expert-parallel" in _last_args(vl)
    assert v["--max-num-seqs"] == str(batch * 4 // 8)  # per data-parallel rank
    yaml = pytest.importorskip("yaml", reason="PyYAML (comes with the ray extra) parses the manifest")
    k8s = run(*plan, "--emit", "trtllm", "--emit-k8s")
    config, deployment = yaml.safe_load_all(k8s.stdout[k8s.stdout.index("apiVersion"):])  # after the table
    assert yaml.safe_load(config["data"][OPTIONS_FILE])["enable_attention_dp"] is True
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "8"


def test_an_ep_group_wider_than_tp_is_one_engine_of_tp_groups():
    """tp 2, ep 8 without dp_attention: 4 attention groups of tp 2 in one engine of 8 GPUs (vLLM tp 2 x
    dp 4; SGLang tp-size 8, dp-size 4); TensorRT-LLM has no attention tp between 1 and tp_size: a note."""
    from llm_cost.planner.emit import launch_notes

    row = dict(ROWS[1], tp=2, pp=1, ep=8, replicas=4, gpus=8)
    v = _values(launch_args(row, "vllm", "m", 1024))
    assert (v["--tensor-parallel-size"], v["--data-parallel-size"], v["--max-num-seqs"]) == ("2", "4", "64")
    s = launch_args(row, "sglang", "m", 1024)
    assert (_values(s)["--tp-size"], _values(s)["--dp-size"], _values(s)["--max-running-requests"]) == ("8", "4", "256")
    assert _values(launch_args(row, "trtllm", "m", 1024))["--tp_size"] == "8"
    assert any("attention data parallel on every GPU or on none" in n for n in launch_notes(row, "trtllm", "m"))
    assert launch_notes(row, "vllm", "m") == []
    with pytest.raises(InvalidValueError, match="not whole engines"):
        k8s_deployment(dict(row, gpus=12), "vllm", "m", 1024)


@pytest.mark.parametrize("engine", ["sglang", "trtllm"])
def test_cli_emit_a_model_that_ships_fp8_loads_its_repo_as_published(engine):
    """DeepSeek-V3's repo ships FP8 128 x 128 blocks (its config's quantization_config): an fp8 row loads
    it as published, with no --quantization (SGLang's DeepSeek page: not to be run with one) and no
    placeholder."""
    out = run("plan", "--model", "deepseek-v3", "--gpu", "h200", "--gpus", "8", "--weights", "fp8", "--emit", engine,
              "--format", "csv")
    assert out.exit_code == 0, out.output
    args = _last_args(out)
    assert "deepseek-ai/DeepSeek-V3" in args and "--quantization" not in args and "weights are" not in out.stderr


def _engine_parser(engine):
    """An argument parser of `engine`'s documented flags (the data file): its `switches` take no value,
    every other flag exactly one, `positional` arguments (the model) besides; an unknown flag, a flag
    without its value or a value given to a switch is an error, as the engine's own parser makes it."""
    import argparse

    parser = argparse.ArgumentParser(prog=engine, add_help=False, exit_on_error=False, allow_abbrev=False)
    for k in range(DOCS[engine]["positional"]):
        parser.add_argument(f"positional_{k}")
    switches = set(DOCS[engine]["switches"])
    assert switches <= set(DOCS[engine]["flags"])
    for flag in DOCS[engine]["flags"]:
        parser.add_argument(flag, action="store_true") if flag in switches else parser.add_argument(flag)
    return parser


def _parses(engine, args):
    head = DOCS[engine]["command"]
    assert args[:len(head)] == head
    try:
        parsed, extra = _engine_parser(engine).parse_known_args(args[len(head):])
    except (SystemExit, Exception) as e:  # argparse exits on a missing value in some Pythons
        raise AssertionError(f"{engine} cannot parse {shlex.join(args)}: {e}") from None
    assert not extra, (engine, extra)
    return vars(parsed)


@pytest.mark.parametrize("row", ROWS, ids=["draft", "plain", "mtp"])
@pytest.mark.parametrize("engine", sorted(KNOWN))
def test_every_emitted_command_parses_with_the_engines_arguments(engine, row):
    """Issue 26.6: the emitted command parses with each engine's argument list: every flag known, each
    value-taking flag followed by its value, no value after a switch, the model where it goes."""
    args = shlex.split(launch_command(row, engine, "meta-llama/Llama-3.1-70B", 1024).splitlines()[-1])
    parsed = _parses(engine, args)
    model = parsed.get("positional_0") or parsed.get("model_path")  # the repo, or a checkpoint to fill in naming it
    assert model == "meta-llama/Llama-3.1-70B" or (model.startswith("<") and "meta-llama/Llama-3.1-70B>" in model)


def test_served_and_dp_attention_commands_parse_with_the_engines_arguments():
    """The switches plan writes after a verify (vLLM --enable-prefix-caching) and under dp-attention
    (SGLang --enable-dp-attention, vLLM --enable-expert-parallel) parse as switches, not eating a value."""
    served = run(*PLAN_SERVED, "--emit", "vllm")
    assert served.exit_code == 0, served.output
    assert _parses("vllm", _last_args(served))["enable_prefix_caching"] is True
    plan = ("plan", "--model", "mixtral-8x7b", "--gpus", "8", "--tp", "2", "--ep", "8", "--dp-attention",
            "--format", "csv")
    for engine, switch in (("sglang", "enable_dp_attention"), ("vllm", "enable_expert_parallel")):
        out = run(*plan, "--emit", engine)
        assert out.exit_code == 0, out.output
        assert _parses(engine, _last_args(out))[switch] is True


def test_the_parser_refuses_what_an_engine_would():
    """The check can fail: a flag without its value, a value after a switch, an unknown flag."""
    for bad in (["vllm", "serve", "m", "--max-num-seqs"], ["vllm", "serve", "m", "--enable-prefix-caching", "yes"],
                ["vllm", "serve", "m", "--tensor-parallel", "2"]):
        with pytest.raises(AssertionError):
            _parses("vllm", bad)
