"""anthropic(...): the Messages API wire format, streaming, retries and errors (MockTransport)."""

from __future__ import annotations

from typing import Any

import httpx2
import orjson
import pytest

from tests.backends import run_async
from trackway.agent.messages._messages import (
    LLMRequest,
    LLMResponse,
    Message,
    StreamDelta,
    ToolCall,
    Usage,
)
from trackway.agent.providers._anthropic import API_VERSION, AnthropicProvider, anthropic
from trackway.agent.providers._provider import (
    ModelNotFoundError,
    ProviderAuthError,
    ProviderConnectionError,
    ProviderRateLimitError,
    ProviderResponseError,
    StreamingProvider,
)

from .wire_server import WEATHER, Server, collect_stream

KEY = "sk-ant-test-0123456789"
URL = "https://claude.test"
HELLO = LLMRequest(model="claude-test", messages=(Message(role="user", content="Hello"),))


def provider(server: Server, **options: Any) -> AnthropicProvider:
    options.setdefault("api_key", KEY)
    options.setdefault("backoff", 0.001)
    return anthropic("claude-test", base_url=URL, transport=server.transport, **options)


def message(
    *blocks: dict[str, Any], stop_reason: str = "end_turn", usage: dict[str, Any] | None = None
) -> httpx2.Response:
    return httpx2.Response(
        200,
        json={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test-2025",
            "content": list(blocks),
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": usage or {"input_tokens": 10, "output_tokens": 5},
        },
    )


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def sse(*events: dict[str, Any]) -> httpx2.Response:
    wire = "".join(f"event: {e['type']}\ndata: {orjson.dumps(e).decode()}\n\n" for e in events)
    return httpx2.Response(
        200, headers={"content-type": "text/event-stream; charset=utf-8"}, content=wire.encode()
    )


def complete(p: AnthropicProvider, request: LLMRequest = HELLO) -> LLMResponse:
    return run_async(p.complete, request)


def stream(p: AnthropicProvider, request: LLMRequest = HELLO) -> list[StreamDelta | LLMResponse]:
    return collect_stream(p, request)


@pytest.fixture(autouse=True)
def no_env_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


# -- the wire ----------------------------------------------------------------------------------


def test_the_wire_body_for_system_tools_and_tool_results() -> None:
    server = Server(message(text("Done.")))
    request = LLMRequest(
        model="claude-test",
        system="You answer weather questions.",
        messages=(
            Message(role="user", content="Weather in Paris and Rome?"),
            Message(
                role="assistant",
                content="Checking both.",
                tool_calls=(
                    ToolCall(id="toolu_1", name="weather", args={"city": "Paris"}),
                    ToolCall(id="toolu_2", name="weather", args={"city": "Rome"}),
                ),
            ),
            Message(role="tool", tool_call_id="toolu_1", name="weather", content="sunny"),
            Message(role="tool", tool_call_id="toolu_2", name="weather", content="rain"),
            Message(role="user", content="And tomorrow?"),
            Message(role="assistant", tool_calls=(ToolCall(id="toolu_3", name="weather"),)),
            Message(role="tool", tool_call_id="toolu_3", content="snow"),
        ),
        tools=(WEATHER,),
        temperature=0.5,
    )
    complete(provider(server), request)
    (sent,) = server.requests
    assert str(sent.url) == f"{URL}/v1/messages"
    assert sent.headers["x-api-key"] == KEY
    assert sent.headers["anthropic-version"] == API_VERSION == "2023-06-01"
    assert sent.headers["content-type"] == "application/json"
    assert "authorization" not in sent.headers
    assert server.body() == {
        "model": "claude-test",
        "max_tokens": 1024,
        "system": "You answer weather questions.",
        "messages": [
            {"role": "user", "content": "Weather in Paris and Rome?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Checking both."},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "weather",
                        "input": {"city": "Paris"},
                    },
                    {
                        "type": "tool_use",
                        "id": "toolu_2",
                        "name": "weather",
                        "input": {"city": "Rome"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": "rain"},
                ],
            },
            {"role": "user", "content": "And tomorrow?"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_3", "name": "weather", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_3", "content": "snow"}],
            },
        ],
        "tools": [
            {
                "name": "weather",
                "description": "Current weather for a city.",
                "input_schema": WEATHER.input_schema,
            }
        ],
        "temperature": 0.5,
    }


def test_max_tokens_comes_from_the_request_else_the_provider() -> None:
    server = Server(message(text("ok")))
    complete(provider(server), HELLO.model_copy(update={"max_tokens": 50}))
    assert server.body()["max_tokens"] == 50
    complete(provider(server, max_tokens=4096))
    assert server.body()["max_tokens"] == 4096
    complete(provider(server))
    assert server.body() == {
        "model": "claude-test",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": "Hello"}],
    }


def test_the_env_key_goes_only_to_anthropic_and_extra_headers_are_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    server = Server(message(text("ok")), message(text("ok")))
    complete(provider(server, api_key=None, headers={"anthropic-beta": "tools-2024"}))
    assert "x-api-key" not in server.requests[0].headers  # a gateway: not Anthropic's host
    assert server.requests[0].headers["anthropic-beta"] == "tools-2024"
    complete(anthropic("m", transport=server.transport))
    assert server.requests[1].headers["x-api-key"] == "sk-ant-from-env"
    assert str(server.requests[1].url) == "https://api.anthropic.com/v1/messages"


def test_it_is_a_streaming_provider_and_hides_the_key() -> None:
    p = provider(Server(message()))
    assert isinstance(p, StreamingProvider)
    assert p.name == "anthropic"
    assert KEY not in repr(p)
    with pytest.raises(ValueError, match="max_tokens"):
        anthropic("m", max_tokens=0)


# -- answers -----------------------------------------------------------------------------------


def test_text_tool_use_and_usage_are_read() -> None:
    server = Server(
        message(
            text("Let me "),
            text("check."),
            {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}},
            stop_reason="tool_use",
            usage={"input_tokens": 20, "output_tokens": 7, "cache_read_input_tokens": 12},
        )
    )
    assert complete(provider(server)) == LLMResponse(
        content="Let me check.",
        tool_calls=(ToolCall(id="toolu_1", name="weather", args={"city": "Paris"}),),
        usage=Usage(input_tokens=20, output_tokens=7, cache_read_tokens=12),
        stop_reason="tool_use",
        model="claude-test-2025",
    )


@pytest.mark.parametrize(
    ("raw", "normalised"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("tool_use", "tool_use"),
        ("max_tokens", "max_tokens"),
        ("refusal", "refusal"),  # one word with OpenAI's message.refusal
        ("pause_turn", "pause_turn"),
    ],
)
def test_stop_reasons_are_normalised(raw: str, normalised: str) -> None:
    assert complete(provider(Server(message(text("x"), stop_reason=raw)))).stop_reason == normalised


@pytest.mark.parametrize(
    "body",
    [b"not json", b'{"type": "message"}', b'{"content": ["text"]}'],
)
def test_a_body_that_is_not_a_message_is_a_response_error(body: bytes) -> None:
    server = Server(httpx2.Response(200, content=body))
    with pytest.raises(ProviderResponseError, match="Messages API") as caught:
        complete(provider(server))
    assert "base_url" in str(caught.value)


# -- streaming ---------------------------------------------------------------------------------


def test_streamed_text_and_tool_input_then_the_response() -> None:
    server = Server(
        sse(
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "model": "claude-test-2025",
                    "content": [],
                    "usage": {"input_tokens": 25, "output_tokens": 1, "cache_read_input_tokens": 3},
                },
            },
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            {"type": "ping"},
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Let me "},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "check."},
            },
            {"type": "content_block_stop", "index": 0},
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "weather",
                    "input": {},
                },
            },
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '{"city": "Pa'},
            },
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": 'ris"}'},
            },
            {"type": "content_block_stop", "index": 1},
            {
                "type": "content_block_start",
                "index": 2,
                "content_block": {"type": "tool_use", "id": "toolu_2", "name": "now", "input": {}},
            },
            {"type": "content_block_stop", "index": 2},
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 42},
            },
            {"type": "message_stop"},
        )
    )
    items = stream(provider(server))
    assert items == [
        StreamDelta(text="Let me "),
        StreamDelta(text="check."),
        LLMResponse(
            content="Let me check.",
            tool_calls=(
                ToolCall(id="toolu_1", name="weather", args={"city": "Paris"}),
                ToolCall(id="toolu_2", name="now", args={}),
            ),
            usage=Usage(input_tokens=25, output_tokens=42, cache_read_tokens=3),
            stop_reason="tool_use",
            model="claude-test-2025",
        ),
    ]
    assert server.body()["stream"] is True


def test_invalid_streamed_tool_json_is_kept_verbatim() -> None:
    server = Server(
        sse(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": "t", "name": "weather", "input": {}},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": '{"city": '},
            },
            {"type": "message_stop"},
        )
    )
    final = stream(provider(server))[-1]
    assert isinstance(final, LLMResponse)
    assert final.tool_calls == (
        ToolCall(id="t", name="weather", args={"_unparsed_arguments": '{"city": '}),
    )


def test_an_error_event_mid_stream_is_a_response_error() -> None:
    server = Server(
        sse(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Hi"},
            },
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        )
    )
    with pytest.raises(ProviderResponseError, match="mid-stream.*overloaded_error: Overloaded"):
        stream(provider(server))


def test_a_server_that_ignores_stream_is_still_streamed() -> None:
    server = Server(message(text("whole")))
    items = stream(provider(server))
    assert items[0] == StreamDelta(text="whole")
    assert isinstance(items[1], LLMResponse) and items[1].content == "whole"


# -- retries and errors ------------------------------------------------------------------------


def test_429_with_retry_after_then_success(sleeps: list[float]) -> None:
    server = Server(
        httpx2.Response(
            429,
            headers={"retry-after": "3"},
            json={"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}},
        ),
        message(text("ok")),
    )
    assert complete(provider(server)).content == "ok"
    assert sleeps == [3.0]


def test_429_exhausted_is_a_rate_limit_error(sleeps: list[float]) -> None:
    server = Server(httpx2.Response(429, json={"type": "error", "error": {"message": "slow"}}))
    with pytest.raises(ProviderRateLimitError, match="after 3 attempts"):
        complete(provider(server))
    assert len(server.requests) == 3


def test_529_overloaded_exhausted_is_a_response_error() -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    server = Server(httpx2.Response(529, json=overloaded))
    with pytest.raises(ProviderResponseError, match="overloaded_error: Overloaded") as caught:
        complete(provider(server, backoff=0.001))
    assert caught.value.status == 529
    assert len(server.requests) == 3


def test_401_names_the_env_var_and_never_the_key() -> None:
    server = Server(
        httpx2.Response(
            401,
            json={
                "type": "error",
                "error": {"type": "authentication_error", "message": f"invalid x-api-key {KEY}"},
            },
        )
    )
    with pytest.raises(ProviderAuthError) as caught:
        complete(provider(server))
    assert "ANTHROPIC_API_KEY" in str(caught.value)
    assert KEY not in str(caught.value)
    assert len(server.requests) == 1


def test_404_for_an_unknown_model_names_model_and_base_url() -> None:
    server = Server(
        httpx2.Response(
            404,
            json={
                "type": "error",
                "error": {"type": "not_found_error", "message": "model: claude-x"},
            },
        )
    )
    with pytest.raises(ModelNotFoundError) as caught:
        complete(provider(server), HELLO.model_copy(update={"model": "claude-x"}))
    assert "model 'claude-x'" in str(caught.value)
    assert URL in str(caught.value)


def test_a_connection_error_says_nothing_is_listening(sleeps: list[float]) -> None:
    server = Server(httpx2.ConnectError("[Errno 111] Connection refused"))
    with pytest.raises(ProviderConnectionError, match=f"nothing is listening at {URL}"):
        complete(provider(server))
    assert len(server.requests) == 3


def test_a_timeout_names_the_timeout_option(sleeps: list[float]) -> None:
    server = Server(httpx2.ConnectTimeout("connect timed out"))
    with pytest.raises(ProviderConnectionError, match="timeout=3.0"):
        complete(provider(server, timeout=3))


# -- streams that end before their answer ------------------------------------------------------


def _start() -> dict[str, Any]:
    return {"type": "message_start", "message": {"model": "m", "usage": {"input_tokens": 3}}}


def test_a_stream_without_message_stop_is_retried_then_an_error(sleeps: list[float]) -> None:
    cut = sse(_start(), {"type": "content_block_start", "index": 0, "content_block": text("")})
    server = Server(cut)
    with pytest.raises(ProviderResponseError, match=r"ended before the answer finished \(after 2"):
        stream(provider(server))
    assert len(server.requests) == 3


def test_a_hollow_answer_from_a_gateway_is_an_unfinished_stream(sleeps: list[float]) -> None:
    """What the litellm proxy sends when the server behind it closed an empty stream."""
    hollow = sse(
        _start(),
        {"type": "content_block_start", "index": 0, "content_block": text("")},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"input_tokens": 0, "output_tokens": 0},
        },
        {"type": "message_stop"},
    )
    whole = sse(
        _start(),
        {"type": "content_block_start", "index": 0, "content_block": text("hi")},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 1},
        },
        {"type": "message_stop"},
    )
    assert stream(provider(Server(hollow, whole)))[-1].content == "hi"
    with pytest.raises(ProviderResponseError, match="an empty answer of 0 output tokens"):
        stream(provider(Server(hollow)))
