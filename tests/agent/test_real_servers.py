"""openai() and anthropic() against real, independent servers: llama-cpp-python serving a
real model (SmolLM2-135M-Instruct) and the litellm proxy's Anthropic-format /v1/messages in
front of it. `.ci/run` starts both (`.ci/llama.sh`, `.ci/litellm.sh`) on 127.0.0.1.

Each run checks the record as well as the answer: every ``served_at`` hash equals its
receipt, the bytes on the wire equal ``provider.wire(served_at(rec, k))``, and the
recording replays with the network closed.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.backends import run_async
from trackway.agent import (
    Agent,
    ContextLengthError,
    ModelNotFoundError,
    ProviderAuthError,
    ProviderConnectionError,
    ProviderResponseError,
    anthropic,
    load_recording,
    openai,
    receipts,
    replay,
    save_recording,
    served_at,
)
from trackway.agent.providers._http import HTTPProvider
from trackway.tools import define_tool

pytestmark = pytest.mark.real_llm

LLAMA = os.environ.get("TRACKWAY_TEST_LLAMA_URL")
LITELLM = os.environ.get("TRACKWAY_TEST_LITELLM_URL")
LITELLM_KEY = os.environ.get("TRACKWAY_TEST_LITELLM_KEY", "sk-trackway-test")
MODEL = "smollm2"
needs_llama = pytest.mark.skipif(
    not LLAMA, reason="set TRACKWAY_TEST_LLAMA_URL (start it with .ci/llama.sh start)"
)
needs_litellm = pytest.mark.skipif(
    not (LLAMA and LITELLM),
    reason="set TRACKWAY_TEST_LITELLM_URL (start it with .ci/litellm.sh start LLAMA_URL)",
)
KINDS = [
    pytest.param("openai", marks=needs_llama),
    pytest.param("anthropic", marks=needs_litellm),
]

CALLS: list[dict[str, Any]] = []
WEATHER = define_tool(
    name="weather",
    description="Current weather for a city.",
    input_schema={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
    execute=lambda args, ctx: CALLS.append(args) or f"{args['city']}: sunny, 22 C",
)


class Tap(httpx2.AsyncBaseTransport):
    """The real network, with every request body kept (no connection is reused, so each
    call may run on its own event loop)."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.bodies.append(request.content)
        inner = httpx2.AsyncHTTPTransport(limits=httpx2.Limits(max_keepalive_connections=0))
        return await inner.handle_async_request(request)


def provider(kind: str, tap: Tap | None = None, **options: Any) -> HTTPProvider:
    options.setdefault("timeout", 60.0)
    options.setdefault("backoff", 0.05)
    if kind == "openai":
        assert LLAMA
        return openai(MODEL, base_url=LLAMA, transport=tap, **options)
    assert LITELLM
    options.setdefault("api_key", LITELLM_KEY)
    return anthropic(MODEL, base_url=LITELLM, transport=tap, **options)


@pytest.fixture(autouse=True)
def _fresh_calls() -> Iterator[None]:
    CALLS.clear()
    yield
    CALLS.clear()


def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("replay touched the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def check_record(agent: Agent, p: HTTPProvider, tap: Tap, tmp_path: Path, monkeypatch) -> None:
    """The conformance law, the wire, and a hermetic replay of the saved recording."""
    rs = receipts(agent)
    assert len(rs) == len(tap.bodies)
    for k, receipt in enumerate(rs, start=1):
        served = served_at(agent, k)
        assert served.hash == receipt["request_hash"]
        via = receipt["via"]
        assert via["provider"] == p.name and via["base_url"] == p.base_url
        assert tap.bodies[k - 1] == p.wire(served, stream=via["stream"])
    path = save_recording(agent, tmp_path / "run.json")
    with monkeypatch.context() as m:
        no_network(m)
        replay(load_recording(path))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_plain_answer(kind: str, stream: bool, tmp_path: Path, monkeypatch) -> None:
    tap = Tap()
    p = provider(kind, tap)
    agent = Agent.create(provider=p, max_tokens=12, temperature=0.0, stream=stream).build()
    result = run_async(agent.run_result, "Say hello to Ada.")
    assert isinstance(result.output, str) and result.output.strip()
    assert result.usage.calls == 1
    if kind == "openai" and stream:
        # llama.cpp's server ignores stream_options.include_usage: said, not taken as zero
        assert receipts(agent)[0]["usage"] is None
        assert result.usage.unreported_calls == 1 and not result.usage.complete
    else:
        assert result.usage.complete and result.usage.output_tokens > 0
    if receipts(agent)[0]["stop_reason"] == "max_tokens":
        assert result.cut_at_max_tokens  # 12 tokens: the answer is said to be cut
    check_record(agent, p, tap, tmp_path, monkeypatch)


@needs_llama
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_the_real_model_calls_a_tool_then_wraps_up(stream: bool, tmp_path, monkeypatch) -> None:
    """With ``tool_choice`` naming the tool (llama.cpp's server streams tool calls only
    then), the model calls it each turn until ``max_iterations``, then the wrap-up asks for
    an answer without tools."""
    tap = Tap()
    p = provider("openai", tap)
    agent = (
        Agent.create(
            provider=p,
            max_iterations=2,
            max_tokens=40,
            temperature=0.0,
            tool_choice="weather",
            stream=stream,
        )
        .system("You answer weather questions with the weather tool.")
        .tool(WEATHER)
        .build()
    )
    answer = agent.run_sync("What is the weather in Paris?")
    assert isinstance(answer, str)
    state = agent.snapshot().state
    said = (state.get("tool_results"), [r.get("stop_reason") for r in receipts(agent)], answer)
    assert CALLS, f"no call ran (results, stop reasons, answer): {said}"  # said when it flakes
    assert all(isinstance(args["city"], str) for args in CALLS)
    history = agent.snapshot().state["history"]
    assert [m["role"] for m in history][:3] == ["user", "assistant", "tool"]
    assert history[2]["content"].endswith("sunny, 22 C")
    stopped = agent.stopped_early()
    assert stopped is not None and stopped["reason"] == "max-iterations" and stopped["wrapped_up"]
    last = served_at(agent, len(receipts(agent)))
    assert last.tools is None and last.tool_choice is None  # the wrap-up withholds both
    check_record(agent, p, tap, tmp_path, monkeypatch)


@needs_llama
def test_the_real_model_chooses_a_tool_and_the_agent_answers(tmp_path, monkeypatch) -> None:
    tap = Tap()
    p = provider("openai", tap)
    agent = (
        Agent.create(
            provider=p,
            max_iterations=3,
            max_tokens=40,
            temperature=0.0,
            tool_choice="auto",
            stream=False,  # llama.cpp's server cannot stream a call it chose itself
        )
        .system("You answer weather questions with the weather tool.")
        .tool(WEATHER)
        .build()
    )
    answer = agent.run_sync("What is the weather in Paris?")
    assert isinstance(answer, str)
    assert CALLS, "the model was offered the tool with tool_choice='auto' and called it"
    tool_messages = [m for m in agent.snapshot().state["history"] if m["role"] == "tool"]
    assert len(tool_messages) == len(CALLS)
    check_record(agent, p, tap, tmp_path, monkeypatch)


@needs_litellm
def test_a_streamed_tool_call_split_by_the_gateway_is_merged_and_run(tmp_path) -> None:
    """The litellm proxy's /v1/messages splits one streamed call into blocks that share its
    id; the agent runs it once and records the repair. (Its next request fails upstream:
    litellm sends llama.cpp's server the assistant turn without ``content``, which that
    server refuses; the error quotes the server's own reason.)"""
    tap = Tap()
    p = provider("anthropic", tap, max_retries=0)
    agent = (
        Agent.create(
            provider=p, max_iterations=2, max_tokens=60, temperature=0.0, tool_choice="weather"
        )
        .tool(WEATHER)
        .build()
    )
    with pytest.raises(ProviderResponseError):
        agent.run_sync("What is the weather in Paris?")
    first = receipts(agent)[0]
    assert first["via"]["stream"] is True
    repairs = first["tool_call_repairs"]
    assert repairs and repairs[0]["action"] == "merged" and repairs[0]["parts"] > 1
    assert len(CALLS) == 1 and isinstance(CALLS[0]["city"], str)
    history = agent.snapshot().state["history"]
    ids = [c["id"] for m in history for c in (m.get("tool_calls") or ())]
    assert len(ids) == len(set(ids)) == 1  # never a repeated id on the wire
    sent = tap.bodies[1].decode()
    assert sent.count(f'"id":"{ids[0]}"') == 1


@pytest.mark.parametrize("kind", KINDS)
def test_a_wrap_up_at_max_iterations(kind: str, tmp_path, monkeypatch) -> None:
    """max_iterations=1: the model's tool call is not run; it is asked to answer without
    tools (works through the gateway too: no tool turn is sent back)."""
    tap = Tap()
    p = provider(kind, tap)
    agent = (
        Agent.create(
            provider=p, max_iterations=1, max_tokens=30, temperature=0.0, tool_choice="weather"
        )
        .tool(WEATHER)
        .build()
    )
    result = run_async(agent.run_result, "What is the weather in Rome?")
    assert CALLS == []
    assert result.stopped_early is not None
    assert result.stopped_early["reason"] == "max-iterations" or result.cut_at_max_tokens
    check_record(agent, p, tap, tmp_path, monkeypatch)


LONG = "word " * 3000  # more than the server's 2048-token context


@pytest.mark.parametrize("kind", KINDS)
def test_a_context_overflow(kind: str) -> None:
    whole = Agent.create(provider=provider(kind), max_tokens=5, stream=False).build()
    with pytest.raises(ContextLengthError, match="maximum context length is 2048"):
        whole.run_sync(LONG)
    streamed = Agent.create(provider=provider(kind, max_retries=1), max_tokens=5).build()
    with pytest.raises(ProviderResponseError, match="ended before the answer finished"):
        streamed.run_sync(LONG)


@needs_litellm
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_wrong_model_through_the_gateway(kind: str) -> None:
    assert LITELLM
    if kind == "openai":
        p: HTTPProvider = openai("nope", base_url=f"{LITELLM}/v1", api_key=LITELLM_KEY)
    else:
        p = anthropic("nope", base_url=LITELLM, api_key=LITELLM_KEY)
    with pytest.raises(ModelNotFoundError, match="Invalid model name passed in model=nope"):
        Agent.create(provider=p, stream=False).build().run_sync("hi")


@needs_litellm
def test_a_bad_key_at_the_gateway_is_an_auth_error() -> None:
    assert LITELLM
    p = anthropic(MODEL, base_url=LITELLM, api_key="sk-not-the-key")
    with pytest.raises(ProviderAuthError, match="No connected db") as caught:
        Agent.create(provider=p, stream=False).build().run_sync("hi")
    assert "sk-not-the-key" not in str(caught.value)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_server_that_is_down(kind: str) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    p: HTTPProvider = (
        openai(MODEL, base_url=f"{url}/v1", backoff=0.01)
        if kind == "openai"
        else anthropic(MODEL, base_url=url, api_key="k", backoff=0.01)
    )
    with pytest.raises(ProviderConnectionError, match="could not connect"):
        Agent.create(provider=p).build().run_sync("hi")


@pytest.mark.parametrize("kind", KINDS)
def test_a_stalled_stream(kind: str) -> None:
    """The server takes longer than ``timeout`` to read a long prompt: the stream stalls
    and the call is not sent again (the server is still working on it)."""
    p = provider(kind, timeout=0.01)
    with pytest.raises(ProviderConnectionError, match=r"timeout=0\.01"):
        Agent.create(provider=p, max_tokens=5).build().run_sync("word " * 1500)
