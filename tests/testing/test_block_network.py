"""block_network(): no connection leaves the process but to loopback, unless allowed."""

from __future__ import annotations

import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from trackway import TrackwayError
from trackway.testing import NetworkBlockedError, block_network

UNROUTABLE = ("192.0.2.1", 9)  # TEST-NET-1: nothing answers there, ever


@pytest.fixture
def server() -> Iterator[int]:
    """A TCP listener on 127.0.0.1; its port."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        yield listener.getsockname()[1]


def _connect(host: str, port: int) -> None:
    with socket.create_connection((host, port), timeout=5):
        pass


def test_a_remote_host_is_refused_before_any_lookup_with_the_way_to_allow_it():
    with block_network(), pytest.raises(NetworkBlockedError) as caught:
        _connect("api.example.com", 443)
    message = str(caught.value)
    assert "api.example.com:443" in message
    assert "block_network(allow=['api.example.com'])" in message
    assert "@pytest.mark.allow_network" in message and "TestModel" in message
    assert isinstance(caught.value, TrackwayError) and not isinstance(caught.value, OSError)


def test_an_address_is_refused_at_connect_and_connect_ex():
    with block_network() as block, socket.socket() as sock:
        with pytest.raises(NetworkBlockedError, match="192.0.2.1:9"):
            sock.connect(UNROUTABLE)
        with pytest.raises(NetworkBlockedError):
            sock.connect_ex(UNROUTABLE)
    assert block.refused == [UNROUTABLE, UNROUTABLE]


def test_loopback_stays_allowed_unless_blocked_too(server):
    with block_network():
        _connect("127.0.0.1", server)
        _connect("localhost", server)
    with block_network(allow_loopback=False), pytest.raises(NetworkBlockedError, match="loopback"):
        _connect("127.0.0.1", server)
    with block_network(allow_loopback=False, allow=["127.0.0.1"]):
        _connect("127.0.0.1", server)


def test_unix_sockets_are_not_network():
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "s")
        with socket.socket(socket.AF_UNIX) as listener:
            listener.bind(path)
            listener.listen()
            with block_network(allow_loopback=False), socket.socket(socket.AF_UNIX) as client:
                client.connect(path)


def test_blocks_nest_and_the_sockets_are_restored(server):
    original = (socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo)
    with block_network():
        with block_network(allow_loopback=False), pytest.raises(NetworkBlockedError):
            _connect("127.0.0.1", server)
        _connect("127.0.0.1", server)  # the outer block decides again
    assert (socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo) == original


def test_restored_after_an_error():
    original = socket.socket.connect
    with pytest.raises(RuntimeError), block_network():
        raise RuntimeError("boom")
    assert socket.socket.connect == original


def test_as_a_decorator_of_sync_and_async_functions(server):
    @block_network()
    def sync_call() -> None:
        _connect("api.example.com", 443)

    @block_network()
    async def async_call() -> None:
        await anyio.connect_tcp("api.example.com", 443)

    with pytest.raises(NetworkBlockedError):
        sync_call()
    with pytest.raises(NetworkBlockedError):
        anyio.run(async_call)
    _connect("127.0.0.1", server)  # nothing left behind


def test_async_with_and_a_real_event_loop_client():
    async def main() -> None:
        async with block_network():
            await anyio.connect_tcp("api.example.com", 443)

    with pytest.raises(NetworkBlockedError):
        anyio.run(main)


def test_an_address_through_anyio_arrives_in_its_exception_group(server):
    # anyio tries a literal address in a task group of its own (happy eyeballs)
    async def main() -> None:
        await anyio.connect_tcp("127.0.0.1", server)

    with block_network(allow_loopback=False), pytest.raises(ExceptionGroup) as caught:
        anyio.run(main)
    assert caught.value.subgroup(NetworkBlockedError) is not None


def test_an_agent_on_a_real_provider_fails_naming_the_block():
    from trackway import Agent, StageError, openai

    agent = Agent.create(provider=openai("gpt-4o", api_key="sk-" + "x" * 20, max_retries=0))
    with block_network(), pytest.raises(StageError) as caught:
        agent.build().run_sync("hi")
    assert isinstance(caught.value.__cause__, NetworkBlockedError)
    assert "block_network() refused a connection to api.openai.com:443" in str(caught.value)


def test_allow_is_a_list_of_hosts():
    with pytest.raises(TypeError, match=r"\['api.example.com'\]"):
        block_network(allow="api.example.com")
