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
        if name not in EXAMPLES or name in ("as_weights", "PlanRequest"):  # PlanRequest keeps names as given:
            continue  # run_plan resolves them (test_spec_names.test_run_plan_takes_names_and_specs_alike)
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


def test_the_weights_help_is_the_registrys():
    """Issue 24.2: `--weights`' help lists the registry (`weight_format_names`), every name once, its
    aliases beside it, the bits each format stores a weight in."""
    import re

    from llm_cost.commands.options import WEIGHTS
    from llm_cost.specs.weights import WEIGHT_FORMATS, weight_format_names

    listed = weight_format_names()
    assert WEIGHTS.help == f"Weight format: {listed}."
    names = re.findall(r"(?:^|, )([\w/]+) \(", listed)
    assert sorted(alias for group in names for alias in group.split("/")) == sorted(WEIGHT_FORMATS)
    for group in names:
        fmt = WEIGHT_FORMATS[group.split("/")[0]]
        assert all(WEIGHT_FORMATS[alias] is fmt for alias in group.split("/"))
        assert fmt.checkpoint or f"{group} ({fmt.effective_bits:g} bits" in listed


def test_shipped_formats_are_calibrates_only_extra_names():
    """A shipped format's name (mxfp4) is the checkpoint format of a model that ships it, refused for another."""
    from llm_cost.calibrate.prediction import weight_format_of
    from llm_cost.catalog import load_model
    from llm_cost.specs.weights import CHECKPOINT, SHIPPED_FORMATS, WEIGHT_FORMATS

    assert SHIPPED_FORMATS and not set(SHIPPED_FORMATS) & set(WEIGHT_FORMATS)
    assert weight_format_of("mxfp4", 0, load_model("gpt-oss-20b")) is CHECKPOINT
    with pytest.raises(LlmCostError, match="does not ship MXFP4 \\(gpt-oss does\\)"):
        weight_format_of("mxfp4", 0, load_model("llama-3.1-8b"))


def test_emits_tables_are_keyed_by_the_registry():
    """`planner.emit`'s checkpoint tables name registry formats only, and every registry format is
    either loaded as published or has the pre-quantized checkpoint it needs: a format added to the
    registry fails here until emit says what an engine loads for it. Another name of a format needs
    what the format does (w4a16 is int4)."""
    from llm_cost.planner import emit
    from llm_cost.specs.weights import WEIGHT_FORMATS

    keys = {*emit.AS_PUBLISHED, *emit.PREQUANTIZED, *(name for table in emit.QUANTIZED_AT_LOAD.values() for name in table)}
    assert keys <= set(WEIGHT_FORMATS) and set(emit.QUANTIZED_AT_LOAD) == set(emit.ENGINES)
    for name, fmt in WEIGHT_FORMATS.items():
        assert (name in emit.AS_PUBLISHED) == (fmt.name in emit.AS_PUBLISHED)
        assert fmt.name in emit.AS_PUBLISHED or fmt.name in emit.PREQUANTIZED, name
        for engine in emit.ENGINES:
            assert emit.needs_checkpoint({"weights": name}, engine) == emit.needs_checkpoint({"weights": fmt.name}, engine)
    assert emit.needs_checkpoint({"weights": "w4a16"}, "vllm") == "an int4 (AWQ/GPTQ) checkpoint"
