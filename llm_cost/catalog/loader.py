"""Catalogs: Hugging Face style config.json files (models/) and datasheets (hardware/).

A catalog entry and a user's own file go through the same loader. A name is looked up
exactly (no fuzzy matching); an unknown name lists the known ones. Anything that looks like
a path (contains a slash or ends in .json) is read as a file.

What Hub configs leave implicit, by `model_type`:
- llama, mistral, qwen2, qwen3, mixtral: gated (SwiGLU) MLP, RMSNorm, RoPE, no biases unless
  `attention_bias` / `mlp_bias`; qwen2 has q/k/v biases without a key for them.
- deepseek_v3 (and deepseek_v2): MLA and MoE keys; `first_k_dense_replace` dense layers.
- gpt3, gpt2: plain GELU MLP, LayerNorm with bias, biases everywhere, learned positions,
  tied embeddings. GPT-2's own key names (n_embd, n_layer, ...) are accepted.
`head_dim` defaults to hidden_size / num_attention_heads.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from llm_cost.errors import ConfigError, LlmCostError, UnknownNameError, short_repr
from llm_cost.specs.model import Accelerator, MLASpec, MoESpec, ModelSpec

LLAMA_LIKE = ("llama", "mistral", "qwen2", "qwen3", "mixtral")
DEEPSEEK = ("deepseek_v3", "deepseek_v2")
GPT_LIKE = ("gpt3", "gpt2")
SUPPORTED_MODEL_TYPES = LLAMA_LIKE + DEEPSEEK + GPT_LIKE
GPT2_KEYS = {"n_embd": "hidden_size", "n_layer": "num_hidden_layers", "n_head": "num_attention_heads",
             "n_inner": "intermediate_size", "n_positions": "max_position_embeddings"}


def _catalog_dir(kind: str) -> Path:
    """The folder of a catalog: inside the installed package, or at the checkout root."""
    import llm_cost

    for entry in llm_cost.__path__:
        candidate = Path(entry) / kind
        if candidate.is_dir():
            return candidate
    raise LlmCostError(f"the {kind}/ catalog is missing from this installation")  # pragma: no cover


def catalog_names(kind: str) -> list[str]:
    """Names of the catalog entries of `kind` ("models" or "hardware"), sorted."""
    folder = _catalog_dir(kind)
    if kind == "models":
        return sorted(p.parent.name for p in folder.glob("*/config.json"))
    return sorted(p.stem for p in folder.glob("*.json"))


def _looks_like_path(ref: str) -> bool:
    """A separator or a .json suffix makes a reference a path; a bare word is a catalog name first."""
    return "/" in ref or "\\" in ref or ref.endswith(".json") or ref in (".", "..")


def _as_file(ref: str, kind: str, what: str) -> Path:
    path = Path(ref)
    if kind == "models" and path.is_dir():
        path = path / "config.json"
    if not path.is_file():
        raise ConfigError(f"{what} file not found: {path}")
    return path


def _resolve(ref: str, kind: str, what: str) -> Path:
    """The file a reference names: a path, else a catalog entry, else a bare local path."""
    if not isinstance(ref, str) or not ref:
        raise UnknownNameError(f"{what} must be a catalog name or a path, got {ref!r}")
    if _looks_like_path(ref):
        return _as_file(ref, kind, what)
    folder = _catalog_dir(kind)
    path = folder / ref / "config.json" if kind == "models" else folder / f"{ref}.json"
    if path.is_file():
        return path
    if Path(ref).exists():  # `llm-cost model my-model` where ./my-model/config.json exists
        return _as_file(ref, kind, what)
    raise UnknownNameError(f"unknown {what} {ref!r}; known: {', '.join(catalog_names(kind))}")


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a UTF-8 text file") from None
    except json.JSONDecodeError as err:
        raise ConfigError(f"{path}: malformed JSON at line {err.lineno}: {err.msg}") from None
    except OSError as err:
        raise ConfigError(f"{path}: cannot read ({err.strerror})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object at the top level")
    return data


MAX_SIZE = 2**24  # widths, layer and expert counts, vocabularies: 16.7M is far past any model


class _Fields:
    """Typed access to a config dict; every error names the file and the key."""

    def __init__(self, data: dict, path: Path | str):
        self.data, self.path = data, path

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def get(self, key: str, default):
        """The value, or `default` when the key is absent or null (Hub configs write both)."""
        value = self.data.get(key)
        return default if value is None else value

    def int(self, key: str, default=None, *, minimum: int = 1, maximum: int = MAX_SIZE) -> int:
        value = self.get(key, default)
        if value is None:
            raise ConfigError(f"{self.path}: missing key '{key}'")
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise ConfigError(f"{self.path}: key '{key}' must be an integer, got {value!r}")
        if not minimum <= value <= maximum:
            raise ConfigError(f"{self.path}: key '{key}' must be in [{minimum}, {maximum}], got {short_repr(value)}")
        return value

    def number(self, key: str, low: float, high: float) -> float:
        value = self.data.get(key)
        if value is None:
            raise ConfigError(f"{self.path}: missing key '{key}'")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{self.path}: key '{key}' must be a number, got {value!r}")
        if not low <= value <= high:  # also rejects NaN and inf
            raise ConfigError(f"{self.path}: key '{key}' must be in [{low:g}, {high:g}], got {short_repr(value)}")
        return float(value)

    def bool(self, key: str, default: bool) -> bool:
        value = self.get(key, default)
        if not isinstance(value, bool):
            raise ConfigError(f"{self.path}: key '{key}' must be true or false, got {value!r}")
        return value

    def str(self, key: str, default=None) -> str:
        value = self.get(key, default)
        if value is None:
            raise ConfigError(f"{self.path}: missing key '{key}'")
        if not isinstance(value, str):
            raise ConfigError(f"{self.path}: key '{key}' must be a string, got {value!r}")
        return value


def model_from_config(data: dict, *, name: str, path: Path | str = "<config>") -> ModelSpec:
    """Build a ModelSpec from a Hugging Face style config dict (see the module docstring)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object at the top level")
    data = {GPT2_KEYS.get(k, k): v for k, v in data.items()}
    f = _Fields(data, path)
    model_type = f.str("model_type")
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise ConfigError(f"{path}: key 'model_type' {model_type!r} is not supported; "
                          f"supported: {', '.join(SUPPORTED_MODEL_TYPES)}")
    hidden = f.int("hidden_size")
    heads = f.int("num_attention_heads")
    if not f.has("head_dim") and hidden % heads:
        raise ConfigError(f"{path}: key 'num_attention_heads' ({heads}) does not divide "
                          f"'hidden_size' ({hidden}) and no 'head_dim' is given")
    gpt = model_type in GPT_LIKE
    kv_heads = f.int("num_key_value_heads", heads)
    if heads % kv_heads:
        raise ConfigError(f"{path}: key 'num_key_value_heads' ({kv_heads}) must divide "
                          f"'num_attention_heads' ({heads})")
    attention_bias = f.bool("attention_bias", gpt)
    try:
        return ModelSpec(
            name=name,
            hidden_size=hidden,
            num_layers=f.int("num_hidden_layers"),
            num_heads=heads,
            num_kv_heads=kv_heads,
            head_dim=f.int("head_dim", hidden // heads),
            intermediate_size=f.int("intermediate_size", 4 * hidden if gpt else None),
            vocab_size=f.int("vocab_size"),
            mlp_kind="plain" if gpt else "gated",
            norm_kind="layer" if gpt else "rms",
            tie_word_embeddings=f.bool("tie_word_embeddings", gpt),
            qkv_bias=attention_bias or model_type == "qwen2",
            o_bias=attention_bias,
            mlp_bias=f.bool("mlp_bias", gpt),
            learned_positions=f.int("max_position_embeddings") if gpt else 0,
            max_position_embeddings=f.int("max_position_embeddings", 0, minimum=0),
            moe=_moe(f, model_type),
            mla=_mla(f) if model_type in DEEPSEEK else None,
            mtp_layers=f.int("num_nextn_predict_layers", 0, minimum=0),
            source=str(data.get("_source", path)),
        )
    except ConfigError:
        raise
    except LlmCostError as err:  # a spec invariant: still name the file
        raise ConfigError(f"{path}: {err}") from None


def _moe(f: _Fields, model_type: str) -> MoESpec | None:
    if model_type in DEEPSEEK:
        if not f.has("n_routed_experts"):
            return None
        return MoESpec(
            num_experts=f.int("n_routed_experts"),
            experts_per_token=f.int("num_experts_per_tok"),
            expert_intermediate_size=f.int("moe_intermediate_size"),
            num_shared_experts=f.int("n_shared_experts", 0, minimum=0),
            first_dense_layers=f.int("first_k_dense_replace", 0, minimum=0),
            router_bias=model_type == "deepseek_v3",
        )
    if f.has("num_local_experts"):  # Mixtral, Qwen-MoE style
        return MoESpec(
            num_experts=f.int("num_local_experts"),
            experts_per_token=f.int("num_experts_per_tok"),
            expert_intermediate_size=f.int("intermediate_size"),
        )
    return None


def _mla(f: _Fields) -> MLASpec:
    return MLASpec(
        kv_lora_rank=f.int("kv_lora_rank"),
        qk_nope_head_dim=f.int("qk_nope_head_dim"),
        qk_rope_head_dim=f.int("qk_rope_head_dim"),
        v_head_dim=f.int("v_head_dim"),
        q_lora_rank=f.int("q_lora_rank", 0, minimum=0),
    )


@lru_cache(maxsize=64)
def load_model(ref: str) -> ModelSpec:
    """A model by catalog name (`llama-3-8b`) or by path to a config.json (or its folder)."""
    path = _resolve(ref, "models", "model")
    catalog = path.parent.parent == _catalog_dir("models")
    name = ref if catalog else (path.resolve().parent.name if path.name == "config.json" else path.stem)
    return model_from_config(_read_json(path), name=name, path=path)


# Plausible ranges, SI: a typo of a unit (GB/s written as bytes/s) lands outside them.
DATASHEET_RANGES = {
    "memory_bytes": (1e8, 1e14),  # 100 MB .. 100 TB
    "bandwidth_bytes_per_s": (1e9, 1e15),  # 1 GB/s .. 1 PB/s
    "bf16_flops_per_s": (1e11, 1e18),  # 0.1 TFLOP/s .. 1 EFLOP/s
}


def accelerator_from_datasheet(data: dict, *, path: Path | str = "<datasheet>") -> Accelerator:
    """Build an Accelerator from a datasheet dict: name, the three figures, their sources."""
    f = _Fields(data, path)
    try:
        return Accelerator(
            name=f.str("name"),
            memory_bytes=f.number("memory_bytes", *DATASHEET_RANGES["memory_bytes"]),
            bandwidth_bytes_per_s=f.number("bandwidth_bytes_per_s", *DATASHEET_RANGES["bandwidth_bytes_per_s"]),
            bf16_flops_per_s=f.number("bf16_flops_per_s", *DATASHEET_RANGES["bf16_flops_per_s"]),
            source=str(data.get("source", path)),
        )
    except ConfigError:
        raise
    except LlmCostError as err:
        raise ConfigError(f"{path}: {err}") from None


@lru_cache(maxsize=64)
def load_accelerator(ref: str) -> Accelerator:
    """An accelerator by catalog name (`h100-sxm`) or by path to a datasheet JSON."""
    path = _resolve(ref, "hardware", "gpu")
    return accelerator_from_datasheet(_read_json(path), path=path)
