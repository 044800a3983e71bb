"""Fallback chains, circuit breakers, retry policies and model gateways: against real local
HTTP servers (a 529, a refused connection), with an injected clock, replayed exactly."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.law import assert_law
from trackway.agent import (
    Agent,
    CircuitBreaker,
    CircuitOpenError,
    LLMRequest,
    LLMResponse,
    ProviderConfigError,
    ProviderConnectionError,
    ProviderRequestError,
    ProviderResponseError,
    RetryPolicy,
    load_recording,
    mock,
    model_gateway,
    openai,
    receipts,
    replay,
    save_recording,
    with_fallback,
)
from trackway.agent.providers.reliability import _chain
from trackway.engine import thaw

FIXTURE = Path(__file__).parent / "fixtures" / "recording-fallback-v1.jsonl"


def _completion(text: str) -> dict[str, Any]:
    return {
        "id": "c",
        "object": "chat.completion",
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
    }


class Served:
    """A real HTTP server on 127.0.0.1 answering Chat Completions from a script of
    ``(status, body, headers)``; the last entry repeats."""

    def __init__(self, *script: tuple[int, Any, dict[str, str]]) -> None:
        self.script = list(script)
        self.hits = 0
        served = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                status, body, headers = (
                    served.script.pop(0) if len(served.script) > 1 else served.script[0]
                )
                served.hits += 1
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def servers() -> Iterator[list[Served]]:
    made: list[Served] = []
    yield made
    for s in made:
        s.close()


def _closed_port_url() -> str:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now: the connection is refused
    return f"http://127.0.0.1:{port}/v1"


OVERLOADED = (529, {"error": {"type": "overloaded_error", "message": "Overloaded"}}, {})


def _agent(provider: Any) -> Agent:
    return Agent.create(provider=provider, model="m").build()


def test_a_529_falls_back_to_the_next_provider_and_the_receipt_says_so(servers) -> None:
    busy = Served(OVERLOADED)
    good = Served((200, _completion("from backup"), {}))
    servers += [busy, good]
    chain = with_fallback(
        openai("m", base_url=busy.url, api_key="", max_retries=0),
        fallback=[openai("m", base_url=good.url, api_key="", max_retries=0)],
    )
    agent = _agent(chain)
    assert agent.run_sync("hi") == "from backup"
    [receipt] = receipts(agent)
    assert receipt["via"]["base_url"] == good.url  # the provider that answered
    assert receipt["via"]["chain"] == ["openai", "openai"]
    assert receipt["via"]["attempts"] == [
        {"provider": "openai", "outcome": "error", "error": "ProviderResponseError", "status": 529},
        {"provider": "openai", "outcome": "answered"},
    ]
    assert (busy.hits, good.hits) == (1, 1)
    assert assert_law(agent) == 1
    replayed = replay(agent)
    assert thaw(replayed.state)["receipts"] == thaw(agent.snapshot().state)["receipts"]


def test_a_refused_connection_falls_back(servers) -> None:
    good = Served((200, _completion("answered"), {}))
    servers.append(good)
    chain = with_fallback(
        openai("m", base_url=_closed_port_url(), api_key="", max_retries=0),
        fallback=[openai("m", base_url=good.url, api_key="", max_retries=0)],
    )
    agent = _agent(chain)
    assert agent.run_sync("hi") == "answered"
    attempts = receipts(agent)[0]["via"]["attempts"]
    assert attempts[0]["error"] == "ProviderConnectionError" and "status" not in attempts[0]
    assert attempts[1] == {"provider": "openai", "outcome": "answered"}


def test_an_error_the_chain_does_not_fall_back_on_is_raised_at_once(servers) -> None:
    bad = Served((400, {"error": {"message": "bad request"}}, {}))
    good = Served((200, _completion("never"), {}))
    servers += [bad, good]
    chain = with_fallback(
        openai("m", base_url=bad.url, api_key="", max_retries=0),
        fallback=[openai("m", base_url=good.url, api_key="", max_retries=0)],
    )
    with pytest.raises(ProviderResponseError) as raised:
        _agent(chain).run_sync("hi")
    assert raised.value.status == 400 and good.hits == 0
    # on= names the classes that trigger it: a 400 now falls back
    chain = with_fallback(
        openai("m", base_url=bad.url, api_key="", max_retries=0),
        fallback=[openai("m", base_url=good.url, api_key="", max_retries=0)],
        on=(ProviderResponseError,),
    )
    assert _agent(chain).run_sync("hi") == "never"


def test_when_every_provider_fails_the_last_error_carries_the_attempts(servers) -> None:
    busy = Served(OVERLOADED)
    servers.append(busy)
    chain = with_fallback(
        openai("m", base_url=busy.url, api_key="", max_retries=0),
        fallback=[openai("m", base_url=_closed_port_url(), api_key="", max_retries=0)],
    )
    with pytest.raises(ProviderConnectionError) as raised:
        _agent(chain).run_sync("hi")
    attempts = raised.value.attempts  # type: ignore[attr-defined]
    assert [a["error"] for a in attempts] == ["ProviderResponseError", "ProviderConnectionError"]


def test_the_retry_policy_honours_retry_after(servers, monkeypatch) -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(_chain, "_sleep", sleep)
    busy = Served((429, {"error": {"message": "slow down"}}, {"retry-after": "7"}))
    busy.script.append((200, _completion("after the wait"), {}))
    servers.append(busy)
    chain = with_fallback(
        openai("m", base_url=busy.url, api_key="", max_retries=0),
        fallback=[],
        retry=RetryPolicy(attempts=3, backoff=0.01),
    )
    agent = _agent(chain)
    assert agent.run_sync("hi") == "after the wait"
    assert waits == [7.0]
    first, second = receipts(agent)[0]["via"]["attempts"]
    assert first == {
        "provider": "openai",
        "outcome": "error",
        "error": "ProviderRateLimitError",
        "status": 429,
        "wait": 7.0,
    }
    assert second["outcome"] == "answered"
    # an ask longer than max_retry_after is not waited for: the chain moves on
    busy.script[:] = [(429, {"error": {"message": "slow"}}, {"retry-after": "9"})]
    chain = with_fallback(
        openai("m", base_url=busy.url, api_key="", max_retries=0),
        fallback=[mock(reply="elsewhere")],
        retry=[RetryPolicy(attempts=3, max_retry_after=5), None],
    )
    agent = _agent(chain)
    assert agent.run_sync("hi") == "elsewhere"
    assert receipts(agent)[0]["via"]["attempts"][0]["retry_after"] == 9.0


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_breaker_opens_after_n_failures_within_t_then_probes_half_open(servers) -> None:
    clock = Clock()
    busy = Served(OVERLOADED)
    servers.append(busy)
    backup = mock(replies=[f"backup {i}" for i in range(10)])
    chain = with_fallback(
        openai("m", base_url=busy.url, api_key="", max_retries=0),
        fallback=[backup],
        breaker=[CircuitBreaker(failures=2, within=10, cool_down=30, clock=clock), None],
    )
    agent = _agent(chain)
    assert agent.run_sync("1") == "backup 0"
    clock.now += 20  # the first failure is out of the window: still closed
    assert agent.run_sync("2") == "backup 1"
    assert chain.breaker_state(0) == "closed"
    clock.now += 5
    assert agent.run_sync("3") == "backup 2"  # two failures within 10 s: it opens
    assert receipts(agent)[-1]["via"]["attempts"][0]["breaker"] == "opened"
    assert chain.breaker_state(0) == "open"
    hits = busy.hits
    assert agent.run_sync("4") == "backup 3"  # open: skipped, nothing sent
    assert busy.hits == hits
    assert receipts(agent)[-1]["via"]["attempts"][0] == {
        "provider": "openai",
        "outcome": "skipped",
        "breaker": "open",
    }
    clock.now += 30  # the cool-down passed: one probe goes; it fails, it opens again
    assert agent.run_sync("5") == "backup 4"
    assert busy.hits == hits + 1
    assert receipts(agent)[-1]["via"]["attempts"][0]["breaker"] == "opened"
    clock.now += 30  # a probe that succeeds closes it
    busy.script[:] = [(200, _completion("primary again"), {})]
    assert agent.run_sync("6") == "primary again"
    assert receipts(agent)[-1]["via"]["attempts"] == [
        {"provider": "openai", "outcome": "answered", "breaker": "closed"}
    ]
    assert chain.breaker_state(0) == "closed"


def test_every_breaker_open_is_a_circuit_open_error_before_any_request(servers) -> None:
    clock = Clock()
    busy = Served(OVERLOADED)
    servers.append(busy)
    chain = with_fallback(
        openai("m", base_url=busy.url, api_key="", max_retries=0),
        fallback=[],
        breaker=CircuitBreaker(failures=1, within=10, cool_down=60, clock=clock),
    )
    with pytest.raises(ProviderResponseError):
        _agent(chain).run_sync("opens it")
    with pytest.raises(CircuitOpenError, match="open circuit breaker") as raised:
        _agent(chain).run_sync("skipped")
    assert busy.hits == 1
    assert raised.value.attempts == [
        {"provider": "openai", "outcome": "skipped", "breaker": "open"}
    ]


def test_a_streamed_call_falls_back_before_its_first_token(servers) -> None:
    busy = Served(OVERLOADED)
    servers.append(busy)
    chain = with_fallback(
        openai("m", base_url=busy.url, api_key="", max_retries=0),
        fallback=[mock(reply="streamed backup")],
    )
    agent = Agent.create(provider=chain, model="m", stream=True).build()
    assert agent.run_sync("hi") == "streamed backup"
    via = receipts(agent)[0]["via"]
    assert via["stream"] is True and via["attempts"][-1]["outcome"] == "answered"
    assert assert_law(agent) == 1


def test_a_model_gateway_answers_with_the_same_receipts_and_law() -> None:
    seen: list[LLMRequest] = []

    async def gateway(request: LLMRequest) -> dict[str, Any]:
        seen.append(request)
        if len(seen) == 1:
            return {"tool_calls": [{"id": "c1", "name": "echo", "args": {"text": "x"}}]}
        return {"content": f"saw {len(request.messages)} messages", "usage": {"input_tokens": 5}}

    from trackway import tool

    @tool
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    agent = (
        Agent.create(provider=model_gateway(gateway, name="in-house"), model="m").tool(echo).build()
    )
    assert agent.run_sync("hi") == "saw 3 messages"
    first, second = receipts(agent)
    assert first["via"] == {"provider": "in-house", "gateway": "gateway", "stream": False}
    assert second["usage"]["input_tokens"] == 5
    assert assert_law(agent) == 2
    assert [m.role for m in seen[1].messages] == ["user", "assistant", "tool"]
    replayed = replay(agent)
    assert thaw(replayed.state)["final_answer"] == "saw 3 messages"


def test_a_gateway_that_returns_no_response_is_refused_whole() -> None:
    with pytest.raises(ProviderResponseError, match="returned int, not a response"):
        _agent(model_gateway(lambda r: 3)).run_sync("hi")
    with pytest.raises(ProviderResponseError, match="not a response"):
        _agent(model_gateway(lambda r: {"content": 5})).run_sync("hi")
    with pytest.raises(ProviderConnectionError, match="could not reach"):
        _agent(model_gateway(lambda r: (_ for _ in ()).throw(ConnectionResetError("x")))).run_sync(
            "hi"
        )

    def refuses(request: LLMRequest) -> LLMResponse:
        raise ProviderRequestError("no tools here")

    with pytest.raises(ProviderRequestError, match="no tools here"):
        _agent(model_gateway(refuses)).run_sync("hi")


def test_bad_settings_are_refused_by_name() -> None:
    with pytest.raises(ProviderConfigError, match="attempts"):
        RetryPolicy(attempts=0)
    with pytest.raises(ProviderConfigError, match="failures"):
        CircuitBreaker(failures=0)
    with pytest.raises(ProviderConfigError, match="one RetryPolicy for every provider"):
        with_fallback(mock(reply="x"), fallback=[mock(reply="y")], retry=[RetryPolicy()])
    with pytest.raises(ProviderConfigError, match="list of providers"):
        with_fallback(mock(reply="x"), fallback="y")  # type: ignore[arg-type]
    with pytest.raises(ProviderConfigError, match="exception classes"):
        with_fallback(mock(reply="x"), fallback=[], on=("x",))  # type: ignore[arg-type]
    with pytest.raises(ProviderConfigError, match="function of the request"):
        model_gateway(3)  # type: ignore[arg-type]


class Flaky:
    """A provider that fails on the calls its script marks, answering otherwise."""

    def __init__(self, name: str, fails: list[bool]) -> None:
        self.name = name
        self.fails = fails
        self.calls = 0

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.calls += 1
        if self.fails[(self.calls - 1) % len(self.fails)]:
            raise ProviderConnectionError(f"{self.name} is down", quoted=())
        return LLMResponse(content=f"{self.name} {self.calls}")


@settings(max_examples=25, deadline=None)
@given(
    a=st.lists(st.booleans(), min_size=1, max_size=5),
    b=st.lists(st.booleans(), min_size=1, max_size=5),
    turns=st.integers(1, 4),
)
def test_receipts_name_who_answered_and_replay_is_exact(a, b, turns) -> None:
    first, second = Flaky("a", a), Flaky("b", b)
    last = mock(replies=[f"last {i}" for i in range(turns)])
    chain = with_fallback(first, fallback=[second, last])
    agent = _agent(chain)
    for turn in range(turns):
        answer = agent.run_sync(f"turn {turn}")
        via = receipts(agent)[0]["via"]
        assert via["provider"] == answer.split()[0].replace("last", "mock")
        failed = [x["provider"] for x in via["attempts"] if x["outcome"] == "error"]
        assert via["attempts"][-1]["outcome"] == "answered" and len(failed) < 3
        assert assert_law(agent) == 1
        replayed = replay(agent)
        assert thaw(replayed.state)["receipts"] == thaw(agent.snapshot().state)["receipts"]


def test_an_unconfigured_agent_records_nothing_new() -> None:
    plain = _agent(mock(reply="ok"))
    plain.run_sync("hi")
    assert "attempts" not in receipts(plain)[0]["via"]
    assert "chain" not in receipts(plain)[0]["via"]


def test_a_recording_with_a_fallback_from_this_version_loads_and_replays() -> None:
    """tests/agent/fixtures/recording-fallback-v1.jsonl: a tool turn whose first call fell
    back from a failing provider; it rebuilds every request and replays without them."""
    loaded = load_recording(FIXTURE)
    assert assert_law(loaded) == 2
    attempts = receipts(loaded)[0]["via"]["attempts"]
    assert attempts[0] == {
        "provider": "down",
        "outcome": "error",
        "error": "ProviderConnectionError",
    }
    replayed = replay(loaded)
    assert thaw(replayed.state)["final_answer"] == thaw(loaded.state)["final_answer"]


def make_fixture() -> None:  # pragma: no cover - run once by hand to write the fixture
    from trackway import tool

    @tool
    def lookup(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    chain = with_fallback(
        Flaky("down", [True]),
        fallback=[
            mock(
                replies=[
                    {"tool_calls": [{"id": "c1", "name": "lookup", "args": {"city": "Oslo"}}]},
                    {"content": "Sunny in Oslo."},
                ]
            )
        ],
    )
    agent = Agent.create(provider=chain, model="m").tool(lookup).build()
    agent.run_sync("Weather in Oslo?")
    save_recording(agent, FIXTURE)
