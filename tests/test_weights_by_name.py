"""Issue 28: roofline.step_time, request_cost and roofline_speedup take a weight format's name, as
public.step_time does (`as_weights`), and give the same result as the format itself."""

from __future__ import annotations

import pytest

from llm_cost.errors import LlmCostError
from llm_cost.requests import request_cost
from llm_cost.roofline import step_time
from llm_cost.specs.weights import INT4_G128
from llm_cost.speculative.batched import roofline_speedup


def test_step_time_takes_a_name():
    by_name = step_time("llama-3-8b", "h100-sxm", "article", weights="int4")
    assert by_name.step_time_s == step_time("llama-3-8b", "h100-sxm", "article", weights=INT4_G128).step_time_s
    assert by_name.step_time_s < step_time("llama-3-8b", "h100-sxm", "article").step_time_s


def test_request_cost_takes_a_name():
    a = request_cost("llama-3-8b", "h100-sxm", "measured", isl=512, osl=32, weights="int4")
    b = request_cost("llama-3-8b", "h100-sxm", "measured", isl=512, osl=32, weights=INT4_G128)
    assert a.e2e_s == b.e2e_s


def test_roofline_speedup_takes_names():
    a = roofline_speedup("llama-3-8b", "h100-sxm", "article", alpha=0.8, gamma=4, c=0.1, weights="int4")
    b = roofline_speedup("llama-3-8b", "h100-sxm", "article", alpha=0.8, gamma=4, c=0.1, weights=INT4_G128)
    assert a.speedup == pytest.approx(b.speedup, rel=1e-12)


def test_an_unknown_name_is_refused():
    with pytest.raises(LlmCostError, match="weights|format"):
        step_time("llama-3-8b", "h100-sxm", "article", weights="int3")


def test_one_registry_for_the_cli_and_measurement_files():
    """Issue 24.2: measurement files' `weights` column reads the same registry as `--weights`
    (`specs.weights.WEIGHT_FORMATS`); calibrate adds only gpt-oss's shipped `mxfp4`.
    llama.cpp's q8_0 / q4_0: one fp16 scale per 32 weights (ggml-common.h `block_q8_0`, `block_q4_0`):
    8 + 16/32 = 8.5 and 4 + 16/32 = 4.5 bits."""
    from llm_cost.calibrate.points import WEIGHTS
    from llm_cost.calibrate.prediction import weight_format_of
    from llm_cost.specs.weights import WEIGHT_FORMATS, weight_format

    assert set(WEIGHTS) == set(WEIGHT_FORMATS) | {"mxfp4"}
    bits = {name: weight_format_of(name, 128).effective_bits for name in ("bf16", "fp16", "fp8", "w8a8", "nvfp4")}
    assert bits == {"bf16": 16, "fp16": 16, "fp8": 8, "w8a8": 8, "nvfp4": 4.5}
    assert weight_format_of("q8_0", 0).effective_bits == 8.5 and weight_format_of("q4_0", 128).effective_bits == 4.5
    # the row's group size applies to the weight-only integer formats: 16-bit scale and zero per group
    assert weight_format_of("int4", 128) == weight_format("int4") and weight_format("int4").effective_bits == 4.25
    assert weight_format_of("int4", 64).effective_bits == 4.5 and weight_format_of("int8", 0).effective_bits == 8
    with pytest.raises(ValueError, match="group_size"):
        weight_format("int4", group_size=-1)


def test_every_public_function_that_takes_a_format_takes_its_name():
    """Issue 28.8: every public callable with a `weights` (or `draft_weights`) parameter gives the same
    result for a format's name as for the format (its test_public_audit example call, that one changed);
    `sweep`, `plan_space` and `plan_grid` take a list of them."""
    import inspect

    from test_public_audit import EXAMPLES, public_callables

    from llm_cost.specs.weights import as_weights

    checked = 0
    for name, fn in public_callables().items():
        if name not in EXAMPLES or name == "as_weights":
            continue
        names = list(inspect.signature(fn).parameters)
        for param in [p for p in names if p in ("weights", "draft_weights")]:
            def call(value):
                args, kwargs = EXAMPLES[name]()
                args = list(args)
                if names.index(param) < len(args):
                    args[names.index(param)] = value
                else:
                    kwargs = {**kwargs, param: value}
                return fn(*args, **kwargs)

            many = name in ("sweep", "plan_space", "plan_grid")
            by_name = call(["int4"] if many else "int4")
            assert repr(by_name) == repr(call([as_weights("int4")] if many else as_weights("int4"))), (name, param)
            checked += 1
    assert checked >= 25


def test_a_replica_takes_a_formats_name():
    from llm_cost.serving.replica import Replica

    a = Replica.from_specs("llama-3.2-1b", "h100-sxm", "lecture", weights="int4")
    b = Replica.from_specs("llama-3.2-1b", "h100-sxm", "lecture", weights=INT4_G128)
    assert a.kv_capacity_tokens == b.kv_capacity_tokens and a.cost == b.cost
