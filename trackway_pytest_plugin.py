"""trackway's pytest plugin (the ``pytest11`` entry point ``trackway``): off until asked for.

It lives outside the ``trackway`` package on purpose: pytest loads entry-point plugins
before it starts anything else (coverage included), so importing this module must not
import trackway — it does so only inside the fixtures.

Installing trackway must not change the tests of a project that never asked, so nothing is
blocked by default. A project opts in with the ini option ``trackway_block_network = true``
(every test runs under ``block_network()``; ``@pytest.mark.allow_network`` exempts one), or
marks the tests that should run blocked with ``@pytest.mark.block_network`` (its keyword
arguments are ``block_network``'s: ``allow_loopback=False``, ``allow=[...]``). Fixtures:
``test_model`` (a fresh ``TestModel()``), ``blocked_network`` (the test runs blocked; the
fixture is the active ``NetworkBlock``) and ``event_audit`` (an ``EventAudit`` checked when the
test ends: every event it heard is in the catalogue, its payload fitting). ``-p no:trackway``
turns the plugin off.

Loading the plugin costs a pytest run nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from trackway.agent import EventAudit
    from trackway.testing import NetworkBlock, TestModel

INI_OPTION = "trackway_block_network"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        INI_OPTION,
        "trackway: run every test under block_network() (loopback stays allowed); "
        "@pytest.mark.allow_network exempts one",
        type="bool",
        default=False,
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "block_network(allow_loopback=True, allow=()): trackway: this test runs under "
        "trackway.testing.block_network(...), no connection but loopback",
    )
    config.addinivalue_line(
        "markers",
        f"allow_network: trackway: this test may use the network despite {INI_OPTION}",
    )


@pytest.fixture(autouse=True)
def _trackway_network_guard(request: pytest.FixtureRequest) -> Iterator[None]:
    marker = request.node.get_closest_marker("block_network")
    wanted = marker is not None or (
        bool(request.config.getini(INI_OPTION))
        and request.node.get_closest_marker("allow_network") is None
    )
    if not wanted:
        yield
        return
    from trackway.testing import block_network

    with block_network(**(marker.kwargs if marker is not None else {})):
        yield


@pytest.fixture
def blocked_network() -> Iterator[NetworkBlock]:
    """The test runs under ``block_network()``; the fixture is the block (``.refused``)."""
    from trackway.testing import block_network

    with block_network() as block:
        yield block


@pytest.fixture
def test_model() -> TestModel:
    """A fresh ``TestModel()``: calls every tool it is offered, then answers."""
    from trackway.testing import TestModel

    return TestModel()


@pytest.fixture
def event_audit() -> Iterator[EventAudit]:
    """An ``EventAudit`` (``trackway.agent``): attach it to the agents of the test
    (``.recorder(event_audit)``, ``agent.attach(event_audit)`` or ``agent.on("*",
    event_audit)``); when the test ends, every event it heard must be in the catalogue with
    a payload that fits (your own events: ``event_audit.allow = ("app.*",)``)."""
    from trackway.agent import EventAudit

    audit = EventAudit()
    yield audit
    audit.check()
