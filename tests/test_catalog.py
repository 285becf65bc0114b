"""Catalog lookup and the loader's errors: each names the file and the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_cost.catalog import catalog_names, load_accelerator, load_model, model_from_config
from llm_cost.errors import ConfigError, InvalidValueError, UnknownNameError
from llm_cost.specs import Accelerator, ModelSpec

REQUIRED_MODELS = {"llama-3-8b", "llama-3-70b", "llama-3.1-8b", "llama-3.2-1b", "gpt-3-13b",
                   "gpt-3-175b", "deepseek-v3", "mixtral-8x7b"}
# issue 10: the popular ones, each from its Hugging Face config; the shared test configs they are
# copies of (tests/data/configs, counted there against the published totals), or None
HUB_ENTRIES = {
    "llama-3.1-70b": None, "llama-3.1-405b": "llama-3.1-405b.json", "llama-3.3-70b": "llama-3.3-70b-instruct.json",
    "qwen2.5-7b": None, "qwen2.5-72b": None, "qwen3-8b": "qwen3-8b.json", "qwen3-32b": "qwen3-32b.json",
    "qwen3-30b-a3b": "qwen3-30b-a3b.json", "qwen3-235b-a22b": "qwen3-235b-a22b.json",
    "gpt-oss-20b": "gpt-oss-20b.json", "gpt-oss-120b": "gpt-oss-120b.json", "gemma-2-9b": "gemma-2-9b-it.json",
    "phi-4": "phi-4.json", "mistral-nemo": "mistral-nemo-base-2407.json", "mixtral-8x22b": "mixtral-8x22b-v0.1.json",
    "deepseek-v2-lite": "deepseek-v2-lite.json", "kimi-k2": "kimi-k2-instruct.json",
    "llama-4-scout": "llama-4-scout-17b-16e-instruct.json",
}
REQUIRED_MODELS |= set(HUB_ENTRIES)
REQUIRED_GPUS = {"h100-sxm", "a100-80gb", "a100-40gb", "h200", "b200", "mi300x", "l40s"}


def test_catalog_has_the_required_entries():
    assert REQUIRED_MODELS <= set(catalog_names("models"))
    assert REQUIRED_GPUS <= set(catalog_names("hardware"))


@pytest.mark.parametrize("name", sorted(REQUIRED_GPUS))
def test_every_datasheet_cites_each_figure(name):
    from llm_cost.catalog.paths import catalog_dir as _catalog_dir

    data = json.loads((_catalog_dir("hardware") / f"{name}.json").read_text())
    assert data["source"]
    figures = {k for k, v in data.items() if isinstance(v, (int, float))}
    # every figure cited; every shipped sheet has the usable memory and the interconnect (tp > 1)
    assert set(data["sources"]) == figures
    assert {"usable_memory_bytes", "interconnect_bytes_per_s", "interconnect_latency_s"} <= figures
    assert data["interconnect"]
    assert isinstance(load_accelerator(name), Accelerator)


@pytest.mark.parametrize("name", sorted(REQUIRED_MODELS))
def test_every_model_loads_and_names_its_source(name):
    m = load_model(name)
    assert isinstance(m, ModelSpec) and m.source


def test_unknown_name_lists_known():
    with pytest.raises(UnknownNameError, match="known: .*llama-3-8b"):
        load_model("llama-3-8")  # no guess: the nearest names are suggested, none is taken
    with pytest.raises(UnknownNameError, match="h100-sxm"):
        load_accelerator("h10")
    assert load_accelerator("h100") is load_accelerator("h100-sxm") or (
        load_accelerator("h100") == load_accelerator("h100-sxm"))  # issue 15: h100 is h100-sxm


def test_model_kinds():
    assert load_model("gpt-3-13b").mlp_kind == "plain" and load_model("gpt-3-13b").learned_positions == 2048
    assert load_model("gpt-3-13b").tie_word_embeddings
    ds = load_model("deepseek-v3")
    assert ds.moe.num_experts == 256 and ds.moe.num_shared_experts == 1
    assert ds.moe.experts_per_token == 8 and ds.moe.first_dense_layers == 3
    assert ds.mla.kv_lora_rank == 512
    assert load_model("mixtral-8x7b").moe.num_experts == 8


def test_head_dim_default():
    cfg = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
           "intermediate_size": 128, "vocab_size": 100}
    assert model_from_config(cfg, name="t").head_dim == 16


def write(tmp_path, data, name="config.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


BASE = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
        "intermediate_size": 128, "vocab_size": 100}


@pytest.mark.parametrize("change,message", [
    ({"hidden_size": None}, "missing key 'hidden_size'"),
    ({"hidden_size": "64"}, "key 'hidden_size' must be an integer"),
    ({"num_hidden_layers": -2}, "key 'num_hidden_layers' must be in \\[1, 16777216\\]"),
    ({"vocab_size": 10**300}, "key 'vocab_size' must be in \\[1, 16777216\\], got 100000000000\\.\\.\\."),
    ({"hidden_size": 66}, "'num_attention_heads' \\(4\\) does not divide 'hidden_size' \\(66\\)"),
    ({"num_key_value_heads": 3}, "key 'num_key_value_heads'"),
    ({"tie_word_embeddings": "yes"}, "key 'tie_word_embeddings' must be true or false"),
    ({"model_type": "rwkv"}, "key 'model_type' 'rwkv' is not supported"),
])
def test_bad_config_names_file_and_key(tmp_path, change, message):
    cfg = {k: v for k, v in {**BASE, **change}.items() if v is not None}
    path = write(tmp_path, cfg)
    with pytest.raises(ConfigError, match=message) as err:
        load_model(path)
    assert path in str(err.value)


def test_malformed_json(tmp_path):
    path = write(tmp_path, "{not json", "bad.json")
    with pytest.raises(ConfigError, match="malformed JSON"):
        load_model(path)
    with pytest.raises(ConfigError, match="file not found"):
        load_model(str(tmp_path / "missing.json"))


@pytest.mark.parametrize("change,message", [
    ({"bandwidth_bytes_per_s": None}, "missing key 'bandwidth_bytes_per_s'"),
    ({"memory_bytes": -1}, "key 'memory_bytes' must be in \\[1e\\+09, 1e\\+13\\]"),
    ({"bandwidth_bytes_per_s": 1e-300}, "key 'bandwidth_bytes_per_s' must be in \\[5e\\+10, 1e\\+14\\]"),
    # an H100's 3.35 TB/s written 1000x too small: implausible, refused
    ({"bandwidth_bytes_per_s": 3.35e9}, "key 'bandwidth_bytes_per_s' must be in \\[5e\\+10, 1e\\+14\\], got 3350000000"),
    ({"memory_byts": 80e9}, "unknown key 'memory_byts'; did you mean memory_bytes"),
    ({"fp8_flops_per_s": 1979e6}, "key 'fp8_flops_per_s' must be in \\[1e\\+12, 1e\\+17\\]"),
    ({"usable_memory_bytes": 81559 * 2**20 * 1000}, "key 'usable_memory_bytes' must be in"),
    ({"usable_memory_bytes": 4e9}, "'usable_memory_bytes' must be within 0.5x..1.5x of 'memory_bytes'"),
    ({"interconnect_bytes_per_s": 450e9}, "'interconnect_bytes_per_s' and 'interconnect_latency_s' go together"),
    ({"fp8_flops_per_s": 1e13}, "key 'fp8_flops_per_s' \\(1e\\+13\\) must be at least 'bf16_flops_per_s'"),
    ({"sources": {"memory_byts": "80GB"}}, "unknown key 'sources.memory_byts'; did you mean memory_bytes"),
    ({"bf16_flops_per_s": float("nan")}, "key 'bf16_flops_per_s' must be in"),
    ({"bf16_flops_per_s": "lots"}, "key 'bf16_flops_per_s' must be a number"),
])
def test_bad_datasheet(tmp_path, change, message):
    # plausible figures (an H100's): the ratios of RATIOS hold, so each change is what is refused
    sheet = {"name": "X", "memory_bytes": 80e9, "bandwidth_bytes_per_s": 3.35e12, "bf16_flops_per_s": 989e12}
    sheet = {k: v for k, v in {**sheet, **change}.items() if v is not None}
    with pytest.raises(ConfigError, match=message):
        load_accelerator(write(tmp_path, sheet, "gpu.json"))


def test_specs_name_the_field():
    with pytest.raises(InvalidValueError, match="model.hidden_size"):
        ModelSpec("x", hidden_size=0, num_layers=1, num_heads=1, num_kv_heads=1, head_dim=1,
                  intermediate_size=1, vocab_size=1)
    with pytest.raises(InvalidValueError, match="gpu.bandwidth_bytes_per_s"):
        Accelerator("x", 1e9, -1.0, 1e12)
    with pytest.raises(Exception):  # frozen
        load_model("llama-3-8b").hidden_size = 1


def test_null_means_absent(tmp_path):
    # Hub configs write "key": null for "use the default": mistralai/Mistral-7B-Instruct-v0.3 has
    # "head_dim": null, gpt2 has "n_inner": null, DeepSeek-V2-Lite has "q_lora_rank": null.
    cfg = {**BASE, "head_dim": None, "attention_bias": None, "tie_word_embeddings": None}
    m = load_model(write(tmp_path, cfg))
    assert m.head_dim == 16 and not m.qkv_bias and not m.tie_word_embeddings


def test_model_name_from_folder(tmp_path, monkeypatch):
    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(BASE))
    monkeypatch.chdir(folder)
    assert load_model("config.json").name == "my-model"
    assert load_model(".").name == "my-model"
    monkeypatch.chdir(tmp_path)
    assert load_model("my-model").name == "my-model"  # not a catalog name: a local folder


def test_local_folder_does_not_shadow_a_catalog_name(tmp_path, monkeypatch):
    (tmp_path / "llama-3-8b").mkdir()  # e.g. a download in progress, no config.json yet
    monkeypatch.chdir(tmp_path)
    assert load_model("llama-3-8b").hidden_size == 4096


def test_datasheet_that_is_not_an_object():
    # Review defect: a datasheet dict of the wrong type raised AttributeError, not a one-line error.
    from llm_cost.catalog import accelerator_from_datasheet

    for data in ([1, 2], "h100", None):
        with pytest.raises(ConfigError, match="expected a JSON object at the top level"):
            accelerator_from_datasheet(data, path="gpu.json")


# ---- families: what each refuses rather than counting it as something else ----------------------

def hub(file: str) -> dict:
    """A released model's config.json from tests/data/configs (see its README)."""
    from conftest import DATA

    return json.loads((DATA / "configs" / file).read_text())


NO_ARCH = {"architectures": None}  # so that model_type alone decides


@pytest.mark.parametrize("file,change,message", [
    # a model_type outside the supported set: the nearest family is named
    ("qwen3-8b.json", {"model_type": "qwen4", **NO_ARCH},
     r"key 'model_type' 'qwen4' is not supported; nearest: qwen3 \(supported: .*qwen3_moe.*\)"),
    ("gemma-2-9b-it.json", {"model_type": "gemma4", **NO_ARCH}, r"'gemma4' is not supported; nearest: gemma "),
    ("llama-3.1-405b.json", {"architectures": ["LlamaForCausalLM"], "model_type": "mistral"},
     r"key 'architectures' \['LlamaForCausalLM'\] names the llama architecture, but 'model_type' is 'mistral'"),
    # MoE keys that contradict each other, or a dense family given experts
    ("qwen3-30b-a3b.json", {"num_experts_per_tok": 200}, r"key 'num_experts_per_tok' \(200\) exceeds 'num_experts' \(128\)"),
    ("qwen3-30b-a3b.json", {"num_experts": None},
     r"key 'moe_intermediate_size' is given but no expert count \('num_experts'\)"),
    ("mixtral-8x22b-v0.1.json", {"num_local_experts": None},
     r"key 'num_experts_per_tok' is given but no expert count \('num_local_experts'\)"),
    ("gpt-oss-20b.json", {"experts_per_token": 2}, r"key 'experts_per_token' \(2\) contradicts 'num_experts_per_tok' \(4\)"),
    ("qwen3-8b.json", {"num_experts": 8}, r"key 'num_experts' describes experts, but qwen3 is a dense family"),
    ("llama-3.1-405b.json", {"moe_intermediate_size": 1024}, r"key 'moe_intermediate_size' describes experts"),
    ("qwen3-30b-a3b.json", {"mlp_only_layers": [48]}, r"key 'mlp_only_layers' entry 0 must be in \[0, 47\]"),
    ("qwen3-30b-a3b.json", {"decoder_sparse_step": 49}, r"key 'decoder_sparse_step' leaves no MoE layer of 48"),
    ("deepseek-v2-lite.json", {"first_k_dense_replace": 27}, r"key 'first_k_dense_replace' leaves no MoE layer"),
    ("deepseek-v2-lite.json", {"n_routed_experts": None},
     r"key 'moe_intermediate_size' is given but no expert count \('n_routed_experts'\)"),
    # a window without the layers it applies to
    ("llama-3.1-405b.json", {"sliding_window": 4096},
     r"key 'sliding_window' \(4096\) names a window but not the layers it applies to \(no 'layer_types'\)"),
    ("gpt-oss-20b.json", {"layer_types": None}, r"key 'sliding_window' \(128\) names a window but not the layers"),
    ("gemma-3-1b-it.json", {"sliding_window_pattern": None},
     r"key 'sliding_window' \(512\) names a window but not the layers it applies to \(no 'layer_types' or "
     r"'sliding_window_pattern'\)"),
    ("gpt-oss-20b.json", {"layer_types": ["sliding_attention"] * 23}, r"key 'layer_types' has 23 entries, 'num_hidden_layers' is 24"),
    ("gpt-oss-20b.json", {"layer_types": ["sliding_attention"] * 23 + ["local"]}, r"key 'layer_types' entry 23 'local' is not one of"),
    ("gpt-oss-20b.json", {"sliding_window": None}, r"missing key 'sliding_window'"),
    ("qwen3-8b.json", {"use_sliding_window": True, "max_window_layers": 0}, r"missing key 'sliding_window'"),
    # nested keys of a multimodal wrapper are named with their path
    ("llama-4-scout-17b-16e-instruct.json", {"text_config": None}, r"missing key 'text_config'"),
    ("llama-4-scout-17b-16e-instruct.json", {"text_config": {**hub("llama-4-scout-17b-16e-instruct.json")["text_config"],
                                                             "num_experts_per_tok": 17}},
     r"key 'text_config.num_experts_per_tok' \(17\) exceeds 'text_config.num_local_experts' \(16\)"),
    ("llama-3.1-405b.json", {"quantization_config": {"bits": 4}}, r"missing key 'quantization_config.quant_method'"),
])
def test_bad_family_config_names_file_and_key(tmp_path, file, change, message):
    cfg = {k: v for k, v in {**hub(file), **change}.items() if v is not None}
    path = write(tmp_path, cfg)
    with pytest.raises(ConfigError, match=message) as err:
        load_model(path)
    assert str(err.value).startswith(f"{path}: ")


def test_bad_family_config_is_one_line_on_the_cli(tmp_path):
    from helpers import run

    path = write(tmp_path, {**hub("qwen3-8b.json"), "model_type": "qwen4", "architectures": []})
    out = run("model", path)
    lines = [ln for ln in out.output.splitlines() if ln.strip()]
    assert out.exit_code == 2 and len(lines) == 1 and "Traceback" not in out.output
    assert f"{path}: key 'model_type' 'qwen4' is not supported; nearest: qwen3 (supported: " in lines[0]


def test_a_known_architecture_under_another_model_type(tmp_path):
    # A fine-tune that renames model_type keeps DeepseekV3ForCausalLM: it is read (and named) as
    # deepseek_v3, the way Kimi K2's kimi_k2 is; Kimi K2 under any name counts the same.
    renamed = load_model(write(tmp_path, {**hub("kimi-k2-instruct.json"), "model_type": "my_k2_finetune"}))
    kimi = load_model(write(tmp_path, hub("kimi-k2-instruct.json"), "k2.json"))
    assert (renamed.family, kimi.family) == ("deepseek_v3", "kimi_k2")
    from llm_cost.counts import param_counts

    assert param_counts(renamed).total == param_counts(kimi).total == 1_026_408_232_448


def test_family_window_rules(tmp_path):
    # Qwen2/3: with use_sliding_window, layers from max_window_layers on slide (Qwen3Config);
    # Mistral: the window is every layer's (mistralai/Mistral-7B-v0.1 has sliding_window 4096)
    qwen = load_model(write(tmp_path, {**hub("qwen3-8b.json"), "use_sliding_window": True,
                                       "sliding_window": 4096, "max_window_layers": 28}))
    assert qwen.layer_types == ("full",) * 28 + ("sliding",) * 8 and qwen.sliding_window == 4096
    from conftest import DATA

    mistral = load_model(str(DATA / "mistral-7b-v0.1.json"))
    assert mistral.layer_types == ("sliding",) * 32 and mistral.sliding_window == 4096


def test_spec_windows_must_match_their_layers():
    base = dict(name="x", hidden_size=64, num_layers=2, num_heads=4, num_kv_heads=4, head_dim=16,
                intermediate_size=128, vocab_size=100)
    with pytest.raises(InvalidValueError, match="model.sliding_window"):
        ModelSpec(**base, layer_types=("sliding", "full"))
    with pytest.raises(InvalidValueError, match="model.layer_types must have 2 entries"):
        ModelSpec(**base, layer_types=("full",))
    with pytest.raises(InvalidValueError, match="model.nope_layers"):
        ModelSpec(**base, nope_layers=(2,))
    with pytest.raises(InvalidValueError, match="model.qk_norm"):
        ModelSpec(**base, qk_norm="rms")
    assert ModelSpec(**base, layer_types=("sliding", "full"), sliding_window=8).attention_layer_types == (
        "sliding", "full")


# ---- the issue-10 catalog entries ---------------------------------------------------------------

@pytest.mark.parametrize("name,file", sorted((n, f) for n, f in HUB_ENTRIES.items() if f))
def test_catalog_entry_is_its_hub_config(name, file):
    # the same config.json as the golden test data, with a _source: the same model, the same counts
    from conftest import DATA
    from llm_cost.counts import param_counts

    entry, data = load_model(name), load_model(str(DATA / "configs" / file))
    assert entry.source.startswith("https://huggingface.co/")
    assert entry.family == data.family
    assert param_counts(entry) == param_counts(data)
    assert entry.max_position_embeddings == data.max_position_embeddings > 0


def test_llama_3_1_70b_entry():
    """meta-llama/Llama-3.1-70B: Hub safetensors.total 70,553,706,496, the same as
    Llama-3.3-70B-Instruct's (the entry is that config's shapes; its _source says so).
    Hand count: see tests/test_hub_configs.py::test_llama_3_3_70b_instruct."""
    from llm_cost.counts import param_counts

    m = load_model("llama-3.1-70b")
    assert "Llama-3.3-70B-Instruct" in m.source and m.max_position_embeddings == 131_072
    assert param_counts(m).total == 70_553_706_496


def test_qwen2_5_7b_entry():
    """Qwen/Qwen2.5-7B-Instruct: Hub safetensors.total 7,615,616,512 (the base Qwen2.5-7B records
    the same); card "Number of Parameters: 7.61B" (https://huggingface.co/Qwen/Qwen2.5-7B-Instruct).

    H 3584, L 28, I 18944, nh 28, nkv 4, hd 128, V 152064, untied; q/k/v biases (Qwen2).
    attention 2 x 3584^2 + 2 x 3584 x 512 + 3584 + 2 x 512 = 29,364,736; MLP 3 x 3584 x 18944
    = 203,685,888; norms 7,168; layer 233,057,792.
    total = 2 x 152064 x 3584 + 28 x 233,057,792 + 3584 = 1,089,994,752 + 6,525,618,176 + 3,584
          = 7,615,616,512.
    """
    from llm_cost.counts import param_counts

    m = load_model("qwen2.5-7b")
    p = param_counts(m)
    assert m.qkv_bias and not m.o_bias and p.per_layer == 233_057_792
    assert p.total == 7_615_616_512 and round(p.total / 1e9, 2) == 7.62  # the card truncates: 7.61B


def test_qwen2_5_72b_entry():
    """Qwen/Qwen2.5-72B-Instruct: Hub safetensors.total 72,706,203,648 (Keras-Hub's
    qwen2.5_instruct_72b_en preset records "params": 72706203648; the base Qwen2.5-72B the same);
    card "Number of Parameters: 72.7B" (https://huggingface.co/Qwen/Qwen2.5-72B-Instruct).

    H 8192, L 80, I 29568, nh 64, nkv 8, hd 128, V 152064, untied; q/k/v biases.
    attention 2 x 8192^2 + 2 x 8192 x 1024 + 8192 + 2 x 1024 = 151,005,184; MLP 3 x 8192 x 29568
    = 726,663,168; norms 16,384; layer 877,684,736.
    total = 2 x 152064 x 8192 + 80 x 877,684,736 + 8192 = 2,491,416,576 + 70,214,778,880 + 8,192
          = 72,706,203,648.
    """
    from llm_cost.counts import param_counts

    p = param_counts(load_model("qwen2.5-72b"))
    assert p.per_layer == 877_684_736
    assert p.total == 72_706_203_648 and round(p.total / 1e9, 1) == 72.7


def test_model_and_check_commands_take_every_new_entry():
    from helpers import rows_of, run

    rows = rows_of("model", *sorted(HUB_ENTRIES))
    assert [r["name"] for r in rows] == sorted(HUB_ENTRIES)
    assert all(r["params_total"] > 0 and r["kv_bytes_per_token"] > 0 for r in rows)
    out = run("check", "--model", "kimi-k2", "--model", "gpt-oss-20b", "--model", "llama-4-scout",
              "--examples", "10", "--format", "json")
    assert out.exit_code == 0, out.output
    assert {r["status"] for r in json.loads(out.stdout)} == {"pass"}


@pytest.mark.parametrize("rope,context", [
    (None, 32768),
    ({"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}, 131072),  # Qwen2.5's README
    ({"rope_type": "dynamic", "factor": 2.0}, 65536),
    ({"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192}, 32768),  # already stated
])
def test_context_follows_rope_scaling_as_vllm_does(rope, context):
    """A server's context (vLLM's `_get_and_verify_max_len`): yarn scales original_max_position_embeddings
    by its factor, dynamic and linear scale max_position_embeddings, llama3 / longrope state it."""
    from llm_cost.catalog import model_from_config

    data = json.loads((Path(__file__).parent / "data" / "qwen2-7b.json").read_text())
    data.update(max_position_embeddings=32768, rope_scaling=rope)
    assert model_from_config(data, name="q").max_position_embeddings == context
