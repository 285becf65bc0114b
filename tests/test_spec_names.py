"""Issue 28.8: every public function that takes a spec takes its catalog name too.

A model, a GPU, a profile and a weight format are each given by the spec or by the name a user
types on the command line (`lc.step_time("llama-3-8b", "h100-sxm", "article", weights="fp8")`), and
the two give the same result. The walk covers `lc.__all__` and the subpackages' (test_public_audit's
`public_callables`, each with its `EXAMPLES` call): every argument of the example that is a spec is
replaced by its name, and every spec parameter the example leaves at its default is given once by
name and once as the spec that name loads. A kv dtype is a name already (`Deployment(kv_dtype="fp8")`);
a deployment has no catalog entry, so it stays a `Deployment`.
"""

from __future__ import annotations

import dataclasses

import inspect

import pytest

from test_public_audit import EXAMPLES, public_callables

import llm_cost as lc
from llm_cost.errors import LlmCostError
from llm_cost.specs import Accelerator, ModelSpec, Profile, WeightFormat


def _name(value):
    """The catalog name a user types for `value` (a spec, or a list of specs), or None."""
    if isinstance(value, ModelSpec):
        return value.name
    if isinstance(value, Accelerator):
        return value.label
    if isinstance(value, (Profile, WeightFormat)):
        return value.name
    if isinstance(value, (list, tuple)) and value and all(_name(v) is not None for v in value):
        return type(value)(_name(v) for v in value)
    return None


# a spec parameter left at its default: the name given, and the spec it loads
BY_NAME = {"model": ("llama-3.2-1b", lambda: lc.load_model("llama-3.2-1b")),
           "target": ("llama-3.2-1b", lambda: lc.load_model("llama-3.2-1b")),
           "draft": ("llama-3.2-1b", lambda: lc.load_model("llama-3.2-1b")),
           "gpu": ("h100-sxm", lambda: lc.load_accelerator("h100-sxm")),
           "profile": ("lecture", lambda: lc.PRESETS["lecture"]),
           "draft_profile": ("lecture-draft", lambda: lc.PRESETS["lecture-draft"]),
           "weights": ("int4", lambda: lc.weight_format("int4")),
           "draft_weights": ("int4", lambda: lc.weight_format("int4"))}


def _outcome(fn, args, kwargs) -> str:
    """What a call gives: its result's repr, or its library error's message."""
    try:
        return repr(fn(*args, **kwargs))
    except LlmCostError as err:
        return f"{type(err).__name__}: {err}"


# records of what was asked, names kept as given (a plan's launch command names the checkpoint asked for);
# the call that takes one resolves them (`test_run_plan_takes_names_and_specs_alike`)
AS_GIVEN = ("PlanRequest",)


def _cases():
    for name, fn in sorted(public_callables().items()):
        if name not in EXAMPLES or name in AS_GIVEN:
            continue
        try:
            names = list(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            continue
        args, kwargs = EXAMPLES[name]()
        given = {**dict(zip(names, args)), **kwargs}
        for param in names:
            if param in given and _name(given[param]) is not None:
                yield name, param, None
            elif param not in given and param in BY_NAME:
                yield name, param, BY_NAME[param]


CASES = list(_cases())


def _call(name, param, value):
    fn = public_callables()[name]
    names = list(inspect.signature(fn).parameters)
    args, kwargs = EXAMPLES[name]()
    args = list(args)
    if names.index(param) < len(args):
        args[names.index(param)] = value
    else:
        kwargs = {**kwargs, param: value}
    return _outcome(fn, args, kwargs)


@pytest.mark.parametrize("name, param, default", CASES, ids=[f"{n}-{p}" for n, p, _ in CASES])
def test_a_spec_by_its_catalog_name(name, param, default):
    if default is None:  # the example's own spec, and its name
        args, kwargs = EXAMPLES[name]()
        names = list(inspect.signature(public_callables()[name]).parameters)
        spec = {**dict(zip(names, args)), **kwargs}[param]
        by_name, by_spec = _name(spec), spec
    else:
        by_name, by_spec = default[0], default[1]()
    named, spec = _call(name, param, by_name), _call(name, param, by_spec)
    if default is not None and spec.startswith(f"InvalidValueError: {param} must be a list"):
        named, spec = _call(name, param, [by_name]), _call(name, param, [by_spec])  # sweep's weights: a list
    assert named == spec


def test_the_walk_covers_every_kind_of_spec():
    """The walk finds each spec parameter: it cannot pass by finding none."""
    params = {p for _, p, _ in CASES}
    assert {"model", "target", "draft", "gpu", "profile", "draft_profile", "weights", "draft_weights",
            "gpus"} <= params
    assert len(CASES) >= 100


def test_the_issues_example():
    """Issue 28: `lc.step_time(..., weights="fp8")` raised AttributeError."""
    by_name = lc.step_time("llama-3-8b", "h100-sxm", "article", weights="fp8")
    spec = lc.step_time(lc.load_model("llama-3-8b"), lc.load_accelerator("h100-sxm"), lc.PRESETS["article"],
                        weights=lc.FP8)
    assert by_name == spec and by_name.weight_bytes_read < lc.step_time("llama-3-8b", "h100-sxm",
                                                                         "article").weight_bytes_read


@pytest.mark.parametrize("build", [lambda m, g, p, w: lc.PassCost.from_specs(m, g, p, w),
                                   lambda m, g, p, w: lc.Replica.from_specs(m, g, p, weights=w)])
def test_the_constructors_from_specs_take_names(build):
    names = build("llama-3.2-1b", "h100-sxm", "lecture", "int4")
    specs = build(lc.load_model("llama-3.2-1b"), lc.load_accelerator("h100-sxm"), lc.PRESETS["lecture"],
                  lc.weight_format("int4"))
    assert repr(names) == repr(specs)


def test_a_plans_draft_by_name_or_path():
    """Issue 28.8: `SpecOption(draft=...)` takes the catalog name and the config's path, held as the
    spec they load; anything else is one line naming `draft`."""
    from llm_cost.catalog.paths import catalog_dir
    from llm_cost.planner import SpecOption

    spec = SpecOption("draft", 0.8, (1, 2), draft=lc.load_model("llama-3.2-1b"))
    assert SpecOption("draft", 0.8, (1, 2), draft="llama-3.2-1b") == spec
    assert SpecOption("draft", 0.8, (1, 2), draft=str(catalog_dir("models") / "llama-3.2-1b" / "config.json")) == spec
    for bad, said in ((3, "draft must be one of ModelSpec, str"), ("no-such-model", "draft: unknown model")):
        with pytest.raises(LlmCostError) as err:
            SpecOption("draft", 0.8, (1,), draft=bad)
        assert str(err.value).startswith(said) and "\n" not in str(err.value) and err.value.params[0] == "draft"


def test_run_plan_takes_names_and_specs_alike():
    """`PlanRequest` keeps its model and GPU as given (`AS_GIVEN`); `run_plan` gives the same rows for a
    catalog name (and a weight format's name) as for its spec."""
    from test_public_audit import _plan_request

    from llm_cost.specs.weights import as_weights

    named = lc.run_plan(dataclasses.replace(_plan_request(), model="llama-3.2-1b", gpu=("h100-sxm",),
                                            weights=("int4",)))
    specs = lc.run_plan(dataclasses.replace(_plan_request(), model=lc.load_model("llama-3.2-1b"),
                                            gpu=(lc.load_accelerator("h100-sxm"),), weights=(as_weights("int4"),)))
    def numbers(outcome):  # `request_args` writes the GPU as it was given (a name, or the spec's display name)
        return repr([{key: value for key, value in row.items() if key != "request_args"} for row in outcome.rows])

    assert named.rows and numbers(named) == numbers(specs)
