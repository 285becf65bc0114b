"""`--ray ADDRESS` that nothing answers is one clear error at once (issue 26.2): Ray's own client would
retry for minutes, printing a line every 5 s (seen with ray 2.60: `plan --verify 3 --rate 2 --ray
127.0.0.1:1` still retrying after 3 minutes)."""

from __future__ import annotations

import socket
import time

import pytest

from llm_cost.errors import InvalidValueError
from llm_cost.executor import run_tasks


def _square(x):
    return x * x


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("form", ["127.0.0.1:{}", "ray://127.0.0.1:{}"])
def test_an_address_nothing_answers_is_refused_at_once(form):
    pytest.importorskip("ray", reason="the ray extra is not installed: pip install 'llm-cost[ray]'")
    address = form.format(_closed_port())
    t0 = time.monotonic()
    with pytest.raises(InvalidValueError, match=r"^ray: no Ray cluster answers at .*Connection refused") as e:
        run_tasks(_square, [1, 2], ray=address)
    assert e.value.params == ("ray",)
    assert time.monotonic() - t0 < 5.0  # a refused connection, not Ray's minutes of retries


@pytest.mark.parametrize("address", ["bogus", "host:", ":6379", "host:99999", "host:port"])
def test_an_address_that_is_not_host_port_is_refused(address):
    pytest.importorskip("ray", reason="the ray extra is not installed: pip install 'llm-cost[ray]'")
    with pytest.raises(InvalidValueError, match=r"^ray must be a cluster address \(host:port, ray://host:port\), "
                                                r"auto or local, got "):
        run_tasks(_square, [1], ray=address)


def test_the_cli_names_the_flag_and_leaves_commands_and_urls_alone():
    from llm_cost.commands.parse import flags_in

    message = "ray: no Ray cluster answers at ray://h:1; start one with `ray start --head`"
    assert flags_in(message, ("ray",), {"ray": "--ray"}) == (
        "--ray: no Ray cluster answers at ray://h:1; start one with `ray start --head`")
