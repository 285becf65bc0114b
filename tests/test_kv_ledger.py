"""The K/V allocator (issue 24.1): `kv_ledger.KvLedger` owns the paged free blocks and each sequence's
blocks, and the general loop's parts (completion, composition, admission, preemption, swap-in, prefix
caching's admission) go through it instead of editing the state's fields by hand."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from llm_cost.catalog import load_accelerator, load_model
from llm_cost.serving import kv_ledger
from llm_cost.serving.engine import serve
from llm_cost.serving.engine_state import EngineState
from llm_cost.serving.kv_blocks import block_pool
from llm_cost.serving.replica import Replica
from llm_cost.serving.serve_config import ServeConfig
from llm_cost.serving.workload import poisson_workload
from llm_cost.specs import PRESETS

SERVING = Path(__file__).resolve().parents[1] / "llm_cost" / "serving"
LOOP_PARTS = ("engine_loop.py", "engine_preemption.py", "engine_routed.py", "decode_stretch.py")


def _ledger(free=10, block=16, requests=3):
    state = EngineState.start([1] * requests, [0.0] * requests, free_blocks=free, acceptance=None)
    return state, kv_ledger.KvLedger(state, block)


def test_take_resize_give_move_blocks_between_the_free_count_and_a_sequence():
    state, ledger = _ledger()
    ledger.take(0, 4)
    ledger.take(1, 2)
    assert (state.free, state.blocks, state.used) == (4, [4, 2, 0], 96.0)
    assert ledger.resize(0, 6) == 2 and ledger.resize(1, 1) == -1
    assert (state.free, state.blocks, state.used) == (3, [6, 1, 0], 112.0)
    assert ledger.give(0) == 6 and ledger.release(1) == 1
    assert (state.free, state.blocks, state.used) == (10, [0, 0, 0], 0.0)


def test_set_blocks_resizes_many_sequences_as_resize_one_at_a_time_would():
    state, ledger = _ledger(free=20)
    ledger.take(0, 2)
    ledger.take(2, 3)
    twin, twin_ledger = _ledger(free=20)
    twin_ledger.take(0, 2)
    twin_ledger.take(2, 3)
    ledger.set_blocks([2, 0], [5, 4], taken=4)
    assert twin_ledger.resize(2, 5) + twin_ledger.resize(0, 4) == 4
    assert (state.free, state.blocks, state.used) == (twin.free, twin.blocks, twin.used) == (11, [4, 0, 5], 144.0)


@pytest.mark.parametrize("free, want, watermark, alone, fits", [
    (10, 8, 2, False, True), (10, 9, 2, False, False), (10, 9, 2, True, True), (10, 11, 0, True, False),
    (5, 5, 0, False, True), (5, 6, 0, False, False)])
def test_fits_is_admissions_watermark_rule(free, want, watermark, alone, fits):
    assert _ledger(free=free)[1].fits(want, watermark, alone) is fits


class _Cache:
    """A stand-in prefix cache recording the ledger's calls."""

    def __init__(self, requests):
        self.held, self.calls = [0] * requests, []

    def trim(self, free):
        self.calls.append(("trim", free))

    def take(self, req, hits):
        self.held[req] = hits
        self.calls.append(("take", req, hits))

    def register(self, req, prefilled):
        self.calls.append(("register", req, prefilled))
        return 1

    def release(self, req, tokens):
        self.calls.append(("release", req, tokens))
        return 2  # of its 3 cached blocks, 2 are unreferenced now


def test_the_prefix_cache_plugs_into_the_ledger():
    state, ledger = _ledger()
    cache = ledger.cache = _Cache(3)
    ledger.share(0, 3, 1)  # 3 cached blocks, 1 of them unreferenced: 1 leaves the free count
    ledger.take(0, 2)
    assert (state.free, state.blocks[0]) == (7, 5)
    assert ledger.register(0, 64) == 1 and state.free == 8  # a duplicate copy freed
    ledger.trim()
    assert ledger.release(0, 80) == 5 - 3 + 2 and (state.free, state.blocks[0]) == (12, 0)
    assert cache.calls == [("take", 0, 3), ("register", 0, 64), ("trim", 8), ("trim", 8), ("release", 0, 80)]
    assert _ledger()[1].trim() is None  # no cache: nothing to trim


def _fields_edited(tree) -> list:
    """Lines that assign (or augment) a `.free` attribute or an item of a `.blocks` attribute."""
    found = []
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AugAssign) else []
        for target in targets:
            for part in ast.walk(target):
                if isinstance(part, ast.Attribute) and part.attr == "free" and isinstance(part.ctx, ast.Store):
                    found.append(node.lineno)
                if (isinstance(part, ast.Subscript) and isinstance(part.value, ast.Attribute)
                        and part.value.attr == "blocks" and isinstance(part.ctx, ast.Store)):
                    found.append(node.lineno)
    return found


@pytest.mark.parametrize("name", LOOP_PARTS)
def test_the_general_loop_moves_blocks_only_through_the_ledger(name):
    tree = ast.parse((SERVING / name).read_text())
    assert not _fields_edited(tree), (name, _fields_edited(tree))
    assert "ledger" in (SERVING / name).read_text()


def test_the_check_finds_a_hand_edit():
    assert _fields_edited(ast.parse("state.free -= want\nstate.blocks[req] = 0\nx.blocks = []\n")) == [1, 2]


@pytest.mark.parametrize("preemption", ["recompute", "swap"])
def test_every_block_is_free_or_held_throughout_a_preempting_run(monkeypatch, preemption):
    replica = Replica.from_specs(load_model("gpt-3-13b"), load_accelerator("a100-40gb"), PRESETS["lecture"])
    cfg = ServeConfig(max_batch=64, reservation="paged", preemption=preemption)
    total = block_pool(replica.kv_capacity_tokens, cfg.block_size, cfg.watermark)[0]
    checked = [0]

    def checking(method):
        def call(self, *args, **kwargs):
            out = method(self, *args, **kwargs)
            state = self.state
            assert state.free + sum(state.blocks) == total and 0 <= state.free <= total
            assert state.used == (total - state.free) * self.block_size
            checked[0] += 1
            return out
        return call

    for name in ("take", "resize", "give", "release"):
        monkeypatch.setattr(kv_ledger.KvLedger, name, checking(getattr(kv_ledger.KvLedger, name)))
    result = serve(poisson_workload(400, 40.0, seed=0), replica, cfg, fast=False)
    assert result.preemptions > 0 and checked[0] > 400
