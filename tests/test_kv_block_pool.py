"""One K/V allocator (issue 24 review, item 6): the paged pool's total blocks (capacity // block) and
watermark blocks (ceil(watermark x total)) are written once, in `kv_blocks.block_pool`; the engine's
checks, its general loop and every fast path take them from it."""

from __future__ import annotations

import re
from pathlib import Path

from llm_cost.serving.kv_blocks import block_pool

SERVING = Path(__file__).resolve().parents[1] / "llm_cost" / "serving"


def test_the_pool_is_whole_blocks_and_the_watermark_rounds_up():
    assert block_pool(100, 16, 0.0) == (6, 0)  # 96 tokens in whole blocks; the last 4 hold nothing
    assert block_pool(100, 16, 0.01) == (6, 1)  # any watermark > 0 keeps at least one block free
    assert block_pool(1600, 16, 0.05) == (100, 5) and block_pool(15, 16, 0.5) == (0, 0)


def test_no_module_but_kv_blocks_derives_the_pool_again():
    again = re.compile(r"watermark\s*\*|(kv_capacity_tokens|\bcap)\s*//\s*(self\.)?(B|block|block_size)\b")
    found = [f"{p.name}:{i}" for p in sorted(SERVING.glob("*.py")) if p.name != "kv_blocks.py"
             for i, line in enumerate(p.read_text().splitlines(), 1) if again.search(line.split("#")[0])]
    assert not found, found
    users = [p.name for p in SERVING.glob("*.py") if "block_pool(" in p.read_text()]
    assert {"engine.py", "engine_loop.py", "fast_engine.py", "fast_pipeline.py"} <= set(users)
