"""A config without `head_dim` gets its family's default, as transformers' config classes set it
(issue 29): Qwen3Config 128 (configuration_qwen3.py `head_dim=128`), Gemma2Config and
Gemma3TextConfig 256, GptOssConfig 64 (configuration_gpt_oss.py `head_dim=64`). Qwen3MoeConfig
declares none and its attention falls back to hidden_size / heads (configuration_qwen3_moe.py),
which would not load a Qwen3-MoE checkpoint: such a config is refused, never counted at half its K/V.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_cost.catalog import load_model
from llm_cost.counts import kv_bytes_per_token
from llm_cost.errors import ConfigError

CONFIGS = Path(__file__).parent / "data" / "configs"


def without_head_dim(tmp_path, file: str) -> str:
    data = json.loads((CONFIGS / file).read_text())
    (data.get("text_config") or data).pop("head_dim", None)
    out = tmp_path / file
    out.write_text(json.dumps(data))
    return str(out)


@pytest.mark.parametrize("file,head_dim", [("qwen3-8b.json", 128), ("qwen3-32b.json", 128),
                                           ("gemma-2-9b-it.json", 256), ("gemma-3-1b-it.json", 256),
                                           ("gpt-oss-20b.json", 64), ("gpt-oss-120b.json", 64)])
def test_the_family_default_is_the_released_width(tmp_path, file, head_dim):
    stated = load_model(str(CONFIGS / file))
    implicit = load_model(without_head_dim(tmp_path, file))
    assert stated.head_dim == implicit.head_dim == head_dim
    assert kv_bytes_per_token(implicit) == kv_bytes_per_token(stated)


def test_qwen3_32b_without_head_dim_is_not_hidden_over_heads(tmp_path):
    """Qwen3-32B: hidden 5120 / 64 heads = 80, but its heads are 128 wide (K/V 262,144 B/token)."""
    m = load_model(without_head_dim(tmp_path, "qwen3-32b.json"))
    assert kv_bytes_per_token(m) == 2 * 64 * 8 * 128 * 2 == 262_144


def test_qwen3_moe_without_head_dim_is_refused(tmp_path):
    """Qwen3-30B-A3B without the key was 49,152 B/token for 98,304: now one line naming the key."""
    with pytest.raises(ConfigError, match=r"missing key 'head_dim' \(qwen3_moe checkpoints use 128"):
        load_model(without_head_dim(tmp_path, "qwen3-30b-a3b.json"))
