"""The pytest plugin: off until a project asks, then every (or one marked) test is blocked.

Each case runs an inner pytest session on a generated test file (``pytester``), in this
process, with the plugin loaded from its entry point as any project would load it.
"""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

BLOCKED = """
import socket
import pytest
from trackway.testing import NetworkBlockedError
from trackway.testing import _network

def blocked():
    return bool(_network._active)

def refused(host, port):
    with socket.socket() as sock:
        try:
            sock.connect((host, port))
        except NetworkBlockedError:
            return True
    return False
"""


def _run(pytester: pytest.Pytester, body: str, ini: str = "") -> pytest.RunResult:
    if ini:
        pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile(test_inner=BLOCKED + body)
    return pytester.runpytest_inprocess("-p", "no:randomly", "--strict-markers", "-q")


def test_nothing_is_blocked_unless_asked(pytester):
    result = _run(pytester, "def test_free():\n    assert not blocked()\n")
    result.assert_outcomes(passed=1)


def test_the_ini_option_blocks_every_test_and_allow_network_exempts_one(pytester):
    body = """
def test_one():
    assert refused("192.0.2.1", 9)

def test_two():
    assert blocked()

@pytest.mark.allow_network
def test_exempt():
    assert not blocked()
"""
    result = _run(pytester, body, ini="trackway_block_network = true")
    result.assert_outcomes(passed=3)


def test_the_marker_blocks_one_test_with_block_networks_arguments(pytester):
    body = """
@pytest.mark.block_network(allow_loopback=False)
def test_marked():
    assert refused("127.0.0.1", 9)

def test_unmarked():
    assert not blocked()
"""
    _run(pytester, body).assert_outcomes(passed=2)


def test_the_fixtures(pytester):
    body = """
from trackway import Agent
from trackway.testing import NetworkBlock, TestModel

def test_model_fixture(test_model):
    assert isinstance(test_model, TestModel)
    assert Agent.create(provider=test_model, model="t").build().run_sync("hi") == (
        "no tools were called"
    )

def test_blocked_network_fixture(blocked_network):
    assert isinstance(blocked_network, NetworkBlock)
    assert refused("192.0.2.1", 9)
    assert blocked_network.refused == [("192.0.2.1", 9)]

def test_after():
    assert not blocked()
"""
    _run(pytester, body).assert_outcomes(passed=3)


def test_a_refused_connection_fails_the_test_with_the_message(pytester):
    body = """
@pytest.mark.block_network
def test_calls_out():
    socket.create_connection(("api.example.com", 443))
"""
    result = _run(pytester, body)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*NetworkBlockedError: block_network() refused a connection*"])


def test_the_plugin_can_be_turned_off(pytester):
    pytester.makepyfile(test_inner="def test_no_fixture(test_model):\n    pass\n")
    result = pytester.runpytest_inprocess("-p", "no:trackway", "-p", "no:randomly")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*fixture 'test_model' not found*"])
