"""A missing API key is said as such, before any connection: never as a network fault.

The provider's official endpoint with no key (no ``api_key=``, no environment variable) is
refused at the first call with :class:`MissingAPIKeyError`; a server that needs no key (a
local llama.cpp, a ``base_url`` on 127.0.0.1) keeps working without one. ``block_network()``
(the real socket guard) proves that nothing tried to connect.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

from tests.agent.wire_server import collect_stream
from tests.backends import run_async
from tests.local_http import Handler, base_url, serving
from trackway import Agent, anthropic, openai
from trackway.agent import (
    MissingAPIKeyError,
    ProviderAuthError,
    ProviderConfigError,
    RunCheckpointError,
)
from trackway.agent.messages._messages import LLMRequest, Message
from trackway.agent.providers._http import HTTPProvider
from trackway.testing import NetworkBlockedError, block_network

HELLO = LLMRequest(model="m", messages=(Message(role="user", content="Hello"),))


@pytest.fixture(autouse=True)
def no_env_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


class _Local(Handler):
    """A keyless Chat Completions server: answers 401 when ``status`` says so."""

    seen: ClassVar[list[dict[str, Any]]] = []
    status = 200

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        type(self).seen.append({"auth": self.headers.get("authorization")})
        if type(self).status == 200:
            answer: dict[str, Any] = {
                "choices": [{"message": {"content": "hello, keyless"}, "finish_reason": "stop"}]
            }
        else:
            answer = {"error": {"message": "Incorrect API key provided"}}
        self.answer(type(self).status, json.dumps(answer).encode())


@pytest.fixture
def local() -> Iterator[str]:
    _Local.seen = []
    _Local.status = 200
    with serving(_Local) as httpd:
        yield base_url(httpd)


def _complete(provider: HTTPProvider) -> Any:
    return run_async(provider.complete, HELLO)


@pytest.mark.parametrize(
    ("make", "env"),
    [(openai, "OPENAI_API_KEY"), (anthropic, "ANTHROPIC_API_KEY")],
    ids=["openai", "anthropic"],
)
def test_the_official_endpoint_without_a_key_is_refused_before_connecting(
    make: Any, env: str
) -> None:
    provider = make("some-model", max_retries=2, backoff=0)
    with block_network() as block:
        with pytest.raises(MissingAPIKeyError) as direct:
            _complete(provider)
        with pytest.raises(MissingAPIKeyError) as streamed:
            collect_stream(provider, HELLO)
    assert block.refused == []  # nothing tried to connect, let alone three times
    message = str(direct.value)
    assert env in message and f"{make.__name__}(..., api_key=...)" in message
    assert provider.base_url in message and "no API key" in message
    assert "connect" not in message
    assert str(streamed.value) == message
    # the families a caller already catches: an auth problem, a configuration problem
    assert isinstance(direct.value, ProviderAuthError)
    assert isinstance(direct.value, ProviderConfigError)


def test_an_agent_run_says_the_key_is_missing_not_that_it_could_not_connect() -> None:
    agent = Agent.create(provider=openai("gpt-4o", backoff=0)).build()  # building needs no key
    with block_network() as block, pytest.raises(MissingAPIKeyError) as caught:
        agent.run_sync("hi")
    assert block.refused == []
    assert "OPENAI_API_KEY" in str(caught.value)
    # nothing was sent: there is no conversation to resume, so no RunCheckpointError
    assert not isinstance(caught.value, RunCheckpointError)
    assert caught.value.stage_error is not None  # the engine's record, as for any provider error


def test_a_key_from_the_environment_or_the_argument_is_enough() -> None:
    # with a key, the call goes out (and block_network() stops it at the socket)
    with block_network() as block, pytest.raises(Exception) as caught:
        _complete(openai("gpt-4o", api_key="sk-" + "x" * 20, max_retries=0))
    assert not isinstance(caught.value, MissingAPIKeyError)
    assert any(isinstance(e, NetworkBlockedError) for e in _chain(caught.value))
    assert block.refused


def test_the_environment_key_is_read_when_the_provider_is_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-" + "y" * 20)
    provider = anthropic("claude-x", max_retries=0)
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with block_network() as block, pytest.raises(Exception) as caught:
        _complete(provider)
    assert not isinstance(caught.value, MissingAPIKeyError) and block.refused


@pytest.mark.parametrize(
    "options",
    [
        {"api_key": ""},  # "send none", said on purpose (a proxy adds it)
        {"headers": {"Authorization": "Bearer from-a-header"}},
    ],
    ids=["api_key-empty", "auth-header"],
)
def test_saying_how_auth_is_done_is_not_refused(options: dict[str, Any]) -> None:
    with block_network() as block, pytest.raises(Exception) as caught:
        _complete(openai("gpt-4o", max_retries=0, **options))
    assert not isinstance(caught.value, MissingAPIKeyError) and block.refused


def test_a_local_server_needs_no_key(local: str) -> None:
    agent = Agent.create(provider=openai("local", base_url=local), stream=False).build()
    assert agent.run_sync("hi") == "hello, keyless"
    assert _Local.seen == [{"auth": None}]


def test_an_auth_failure_is_never_retried_as_a_network_fault(local: str) -> None:
    _Local.status = 401
    provider = openai("local", base_url=local, max_retries=3, backoff=0)
    with pytest.raises(ProviderAuthError) as caught:
        _complete(provider)
    assert len(_Local.seen) == 1  # one request: a refused key is not retried
    assert "wants an API key and none was sent" in str(caught.value)
    assert not isinstance(caught.value, MissingAPIKeyError)


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, BaseExceptionGroup):
            for inner in seen.exceptions:
                yield from _chain(inner)
        yield seen
        seen = seen.__cause__ or seen.__context__
