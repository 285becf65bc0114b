"""`plan`'s search and served defaults are the library's (whole-diff review: the CLI wrote them again beside
`PlanRequest` and `SERVED_DEFAULTS`, and since the CLI passes only the options given, a changed copy
would show in --help and never run)."""

from __future__ import annotations

import dataclasses
import inspect

from llm_cost.commands.plan import plan_cmd
from llm_cost.planner.plan_request import SERVED_DEFAULTS, PlanRequest


def test_the_commands_defaults_are_the_requests():
    shown = {name: param.default for name, param in inspect.signature(plan_cmd).parameters.items()}
    request = {field.name: field.default for field in dataclasses.fields(PlanRequest)}
    for name in ("max_gamma", "mtp_alpha", "max_tp"):
        assert shown[name] == request[name], name
    for name, value in SERVED_DEFAULTS.items():
        assert shown[name] == value, name
