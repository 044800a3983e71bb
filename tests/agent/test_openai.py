"""openai(...): the Chat Completions wire format, streaming, retries and errors (MockTransport)."""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import AsyncIterator
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
from trackway.agent.providers._openai import OpenAIProvider, openai
from trackway.agent.providers._provider import (
    ModelNotFoundError,
    ProviderAuthError,
    ProviderConnectionError,
    ProviderError,
    ProviderRateLimitError,
    ProviderResponseError,
    StreamingProvider,
)

from .wire_server import WEATHER, Server, collect_stream

KEY = "sk-test-0123456789abcdef"
URL = "https://llm.test/v1"
HELLO = LLMRequest(model="gpt-test", messages=(Message(role="user", content="Hello"),))


def provider(server: Server, **options: Any) -> OpenAIProvider:
    options.setdefault("api_key", KEY)
    options.setdefault("backoff", 0.001)
    return openai("gpt-test", base_url=URL, transport=server.transport, **options)


def completion(
    content: str | None = "Hi!",
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    finish_reason: str = "stop",
    usage: dict[str, Any] | None = None,
) -> httpx2.Response:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-test-2025",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
    }
    if usage is not None:
        body["usage"] = usage
    return httpx2.Response(200, json=body)


def sse(*chunks: dict[str, Any] | str) -> httpx2.Response:
    lines = [f"data: {c if isinstance(c, str) else orjson.dumps(c).decode()}\n\n" for c in chunks]
    return httpx2.Response(
        200, headers={"content-type": "text/event-stream"}, content="".join(lines).encode()
    )


def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "gpt-test-2025",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


def complete(p: OpenAIProvider, request: LLMRequest = HELLO) -> LLMResponse:
    return run_async(p.complete, request)


def stream(p: OpenAIProvider, request: LLMRequest = HELLO) -> list[StreamDelta | LLMResponse]:
    return collect_stream(p, request)


@pytest.fixture(autouse=True)
def no_env_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


# -- the wire ----------------------------------------------------------------------------------


def test_the_wire_body_for_system_tools_and_tool_results() -> None:
    server = Server(completion())
    request = LLMRequest(
        model="gpt-test",
        system="You answer weather questions.",
        messages=(
            Message(role="user", content="Weather in Paris and Rome?"),
            Message(
                role="assistant",
                content="Checking.",
                tool_calls=(
                    ToolCall(id="c1", name="weather", args={"city": "Paris"}),
                    ToolCall(id="c2", name="weather", args={"city": "Rome"}),
                ),
            ),
            Message(role="tool", tool_call_id="c1", name="weather", content="sunny"),
            Message(role="tool", tool_call_id="c2", name="weather", content="rain"),
            Message(role="assistant", tool_calls=(ToolCall(id="c3", name="weather"),)),
            Message(role="tool", tool_call_id="c3", content="?"),
        ),
        tools=(WEATHER,),
        temperature=0.2,
        max_tokens=300,
    )
    complete(provider(server), request)
    (sent,) = server.requests
    assert sent.method == "POST"
    assert str(sent.url) == f"{URL}/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.headers["content-type"] == "application/json"
    assert server.body() == {
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "You answer weather questions."},
            {"role": "user", "content": "Weather in Paris and Rome?"},
            {
                "role": "assistant",
                "content": "Checking.",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city":"Paris"}'},
                    },
                    {
                        "id": "c2",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city":"Rome"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
            {"role": "tool", "tool_call_id": "c2", "content": "rain"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "c3",
                        "type": "function",
                        "function": {"name": "weather", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c3", "content": "?"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "weather",
                    "description": "Current weather for a city.",
                    "parameters": WEATHER.input_schema,
                },
            }
        ],
        "temperature": 0.2,
        "max_tokens": 300,
    }


def test_a_minimal_request_leaves_unset_fields_out() -> None:
    server = Server(completion())
    complete(provider(server))
    assert server.body() == {
        "model": "gpt-test",
        "messages": [{"role": "user", "content": "Hello"}],
    }


def test_no_key_sends_no_authorization_and_the_env_key_goes_only_to_openai(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = Server(completion(), completion(), completion())
    complete(provider(server, api_key=None))
    assert "authorization" not in server.requests[-1].headers
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-123")
    # another host never sees the environment's key ...
    complete(provider(server, api_key=None))
    assert "authorization" not in server.requests[-1].headers
    # ... OpenAI's own host does, and an explicit key goes anywhere
    vendor = openai("gpt-test", transport=server.transport, api_key=None)
    complete(vendor)
    assert server.requests[-1].headers["authorization"] == "Bearer sk-from-env-123"
    assert str(server.requests[-1].url).startswith("https://api.openai.com/v1/")


def test_a_401_says_the_env_key_was_withheld_from_another_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-123")
    server = Server(httpx2.Response(401, json={"error": {"message": "no key"}}))
    with pytest.raises(ProviderAuthError) as caught:
        complete(provider(server, api_key=None))
    text = str(caught.value)
    assert "OPENAI_API_KEY is set, but an environment key is sent only to the vendor" in text
    assert "sk-from-env-123" not in text


def test_extra_headers_are_sent() -> None:
    server = Server(completion())
    complete(provider(server, headers={"OpenAI-Organization": "org-1"}))
    assert server.requests[0].headers["openai-organization"] == "org-1"


def test_a_tool_result_without_its_call_id_is_refused_before_sending() -> None:
    server = Server(completion())
    request = LLMRequest(model="m", messages=(Message(role="tool", content="x"),))
    with pytest.raises(ValueError, match=r"messages\[0\].*tool_call_id"):
        complete(provider(server), request)
    assert server.requests == []


def test_it_is_a_streaming_provider_and_its_repr_hides_the_key() -> None:
    p = provider(Server(completion()))
    assert isinstance(p, StreamingProvider)
    assert p.name == "openai"
    assert KEY not in repr(p)
    assert "api_key=set" in repr(p)


def test_bad_options_are_refused_with_the_fix() -> None:
    with pytest.raises(ValueError, match="http:// or https://"):
        openai("m", base_url="127.0.0.1:8080/v1")
    with pytest.raises(ValueError, match="max_retries"):
        openai("m", max_retries=-1)
    with pytest.raises(ValueError, match="model name"):
        openai("")


def test_a_transport_passed_in_is_not_closed_by_a_call() -> None:
    closed: list[bool] = []

    class Tracking(httpx2.MockTransport):
        async def aclose(self) -> None:
            closed.append(True)

    transport = Tracking(lambda request: completion())
    p = openai("m", api_key="", transport=transport)
    complete(p)
    complete(p)
    assert closed == []


# -- answers -----------------------------------------------------------------------------------


def test_text_usage_and_model_are_read() -> None:
    usage = {
        "prompt_tokens": 11,
        "completion_tokens": 3,
        "total_tokens": 14,
        "prompt_tokens_details": {"cached_tokens": 8},
    }
    response = complete(provider(Server(completion("Hi!", usage=usage))))
    assert response == LLMResponse(
        content="Hi!",
        usage=Usage(input_tokens=3, output_tokens=3, cache_read_tokens=8),  # 11 - 8 cached
        stop_reason="stop",
        model="gpt-test-2025",
    )


@pytest.mark.parametrize(
    ("finish_reason", "stop_reason"),
    [
        ("stop", "stop"),
        ("tool_calls", "tool_use"),
        ("function_call", "tool_use"),
        ("length", "max_tokens"),
        ("content_filter", "content_filter"),
        ("eos", "eos"),
    ],
)
def test_stop_reasons_are_normalised(finish_reason: str, stop_reason: str) -> None:
    response = complete(provider(Server(completion(finish_reason=finish_reason))))
    assert response.stop_reason == stop_reason


def test_tool_calls_are_read_with_their_arguments() -> None:
    calls = [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
        },
        {"id": "c2", "type": "function", "function": {"name": "now", "arguments": ""}},
        {"type": "function", "function": {"name": "ollama_style", "arguments": {"x": 1}}},
    ]
    response = complete(
        provider(Server(completion(None, tool_calls=calls, finish_reason="tool_calls")))
    )
    assert response.content == ""
    assert response.stop_reason == "tool_use"
    assert response.tool_calls == (
        ToolCall(id="c1", name="weather", args={"city": "Paris"}),
        ToolCall(id="c2", name="now", args={}),
        ToolCall(id="call_2", name="ollama_style", args={"x": 1}),
    )


def test_arguments_that_are_not_a_json_object_are_kept_verbatim_and_sent_back_as_written() -> None:
    calls = [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "weather", "arguments": '{"city": "Par'},
        },
        {"id": "c2", "type": "function", "function": {"name": "weather", "arguments": "[1, 2]"}},
    ]
    server = Server(completion(None, tool_calls=calls, finish_reason="tool_calls"), completion())
    p = provider(server)
    response = complete(p)
    assert [c.args for c in response.tool_calls] == [
        {"_unparsed_arguments": '{"city": "Par'},
        {"_unparsed_arguments": "[1, 2]"},
    ]
    follow_up = LLMRequest(
        model="gpt-test",
        messages=(*HELLO.messages, Message(role="assistant", tool_calls=response.tool_calls)),
    )
    complete(p, follow_up)
    sent = server.body()["messages"][-1]["tool_calls"]
    assert [c["function"]["arguments"] for c in sent] == ['{"city": "Par', "[1, 2]"]


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"<html>Welcome to nginx</html>", "not JSON"),
        (b'{"object": "list", "data": []}', "no 'choices'"),
        (b'{"choices": [{"finish_reason": "stop"}]}', "no 'choices[0].message'"),
        (b'{"choices": [{"message": {"tool_calls": [{"id": "c"}]}}]}', "has no name"),
    ],
)
def test_a_body_that_is_not_a_completion_is_a_response_error(body: bytes, why: str) -> None:
    server = Server(httpx2.Response(200, content=body))
    with pytest.raises(ProviderResponseError, match=re.escape(why)) as caught:
        complete(provider(server))
    assert "Chat Completions" in str(caught.value)
    assert "base_url" in str(caught.value)
    assert len(server.requests) == 1  # not retried


# -- streaming ---------------------------------------------------------------------------------


def test_streamed_text_then_the_response_with_usage() -> None:
    server = Server(
        sse(
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": "Hel"}),
            chunk({"content": "lo, "}),
            chunk({"content": "world"}),
            chunk({}, finish_reason="stop"),
            {
                "id": "chatcmpl-1",
                "model": "gpt-test-2025",
                "choices": [],
                "usage": {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9},
            },
            "[DONE]",
        )
    )
    items = stream(provider(server))
    assert items == [
        StreamDelta(text="Hel"),
        StreamDelta(text="lo, "),
        StreamDelta(text="world"),
        LLMResponse(
            content="Hello, world",
            usage=Usage(input_tokens=5, output_tokens=4),
            stop_reason="stop",
            model="gpt-test-2025",
        ),
    ]
    body = server.body()
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


def test_streamed_tool_calls_are_assembled_from_their_deltas() -> None:
    def call(index: int, **fields: Any) -> dict[str, Any]:
        return {"tool_calls": [{"index": index, **fields}]}

    server = Server(
        sse(
            chunk({"role": "assistant", "content": None}),
            chunk({"content": "Let me check."}),
            chunk(call(0, id="c1", type="function", function={"name": "weather", "arguments": ""})),
            chunk(call(0, function={"arguments": '{"ci'})),
            chunk(
                call(
                    1,
                    id="c2",
                    type="function",
                    function={"name": "weather", "arguments": '{"city"'},
                )
            ),
            chunk(call(0, function={"arguments": 'ty": "Paris"}'})),
            chunk(call(1, function={"arguments": ': "Rome"}'})),
            chunk({}, finish_reason="tool_calls"),
            "[DONE]",
        )
    )
    *deltas, final = stream(provider(server))
    assert deltas == [StreamDelta(text="Let me check.")]
    assert final == LLMResponse(
        content="Let me check.",
        tool_calls=(
            ToolCall(id="c1", name="weather", args={"city": "Paris"}),
            ToolCall(id="c2", name="weather", args={"city": "Rome"}),
        ),
        stop_reason="tool_use",
        model="gpt-test-2025",
    )


def test_a_stream_with_a_finish_reason_but_no_done_line_is_whole() -> None:
    server = Server(sse(chunk({"content": "partial"}), chunk({}, finish_reason="stop")))
    assert stream(provider(server)) == [
        StreamDelta(text="partial"),
        LLMResponse(content="partial", stop_reason="stop", model="gpt-test-2025"),
    ]


def test_a_stream_cut_after_text_is_an_error_and_never_sent_again(sleeps: list[float]) -> None:
    server = Server(sse(chunk({"content": "partial"})), sse(chunk({"content": "again"})))
    pieces: list[Any] = []

    async def read() -> None:
        async for piece in provider(server).stream(HELLO):
            pieces.append(piece)

    with pytest.raises(ProviderResponseError, match="ended before the answer finished"):
        run_async(read)
    assert pieces == [StreamDelta(text="partial")]
    assert len(server.requests) == 1


def test_an_empty_stream_is_retried_then_an_error(sleeps: list[float]) -> None:
    server = Server(sse(), sse(), sse())
    with pytest.raises(ProviderResponseError) as caught:
        stream(provider(server))
    assert "ended before the answer finished (without a single event after 3 attempts)" in str(
        caught.value
    )
    assert "stream=False" in str(caught.value)
    assert len(server.requests) == 3
    assert len(sleeps) == 2


def test_an_empty_stream_then_a_whole_one_answers(sleeps: list[float]) -> None:
    server = Server(sse(), sse(chunk({"content": "ok"}), "[DONE]"))
    assert stream(provider(server))[-1] == LLMResponse(content="ok", model="gpt-test-2025")


def test_done_after_no_answer_and_no_stop_reason_is_an_unfinished_stream(
    sleeps: list[float],
) -> None:
    """What llama-cpp-python sends when a concurrent request interrupted this one: a role
    chunk, then ``[DONE]``, never a finish reason. An empty answer would read as the model's."""
    dropped = sse(chunk({"role": "assistant"}), "[DONE]")
    server = Server(dropped, sse(chunk({"content": "ok"}, "stop"), "[DONE]"))
    assert stream(provider(server))[-1].content == "ok"
    assert len(server.requests) == 2
    with pytest.raises(ProviderResponseError, match="an empty answer and no stop reason"):
        stream(provider(Server(dropped)))
    # an empty answer the server says it finished is the model's own, and is kept
    said = Server(sse(chunk({"role": "assistant"}, "stop"), "[DONE]"))
    assert stream(provider(said))[-1] == LLMResponse(
        content="", stop_reason="stop", model="gpt-test-2025"
    )


def test_a_server_that_ignores_stream_is_still_streamed() -> None:
    server = Server(completion("whole answer", usage={"prompt_tokens": 1, "completion_tokens": 2}))
    assert stream(provider(server)) == [
        StreamDelta(text="whole answer"),
        LLMResponse(
            content="whole answer",
            usage=Usage(input_tokens=1, output_tokens=2),
            stop_reason="stop",
            model="gpt-test-2025",
        ),
    ]


def test_an_error_inside_the_stream_is_a_response_error() -> None:
    server = Server(
        sse(chunk({"content": "Hel"}), {"error": {"message": "The server had an error"}})
    )
    with pytest.raises(ProviderResponseError, match="mid-stream: The server had an error"):
        stream(provider(server))


def test_an_unreadable_stream_event_is_a_response_error() -> None:
    with pytest.raises(ProviderResponseError, match="stream event is not JSON"):
        stream(provider(Server(sse("{not json"))))


def test_a_stalled_stream_names_the_timeout() -> None:
    class Stalls(httpx2.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            yield b'data: {"choices": [{"delta": {"content": "Hi"}}]}\n\n'
            raise httpx2.ReadTimeout("read timed out")

    server = Server(
        httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=Stalls())
    )
    seen: list[StreamDelta | LLMResponse] = []

    async def collect() -> None:
        async for item in provider(server, timeout=7.5).stream(HELLO):
            seen.append(item)

    with pytest.raises(ProviderConnectionError, match=r"stalled.*timeout=7.5"):
        run_async(collect)
    assert seen == [StreamDelta(text="Hi")]
    assert len(server.requests) == 1  # text was out: never sent again


def test_a_stream_is_retried_until_it_starts(sleeps: list[float]) -> None:
    server = Server(httpx2.Response(503), sse(chunk({"content": "ok"}), "[DONE]"))
    assert stream(provider(server))[-1] == LLMResponse(content="ok", model="gpt-test-2025")
    assert len(server.requests) == 2


def test_a_stream_that_fails_to_start_raises_the_mapped_error() -> None:
    server = Server(httpx2.Response(401, json={"error": {"message": "bad key"}}))
    with pytest.raises(ProviderAuthError, match="OPENAI_API_KEY"):
        stream(provider(server))


# -- retries -----------------------------------------------------------------------------------


def test_429_with_retry_after_is_waited_out_then_succeeds(sleeps: list[float]) -> None:
    server = Server(
        httpx2.Response(
            429, headers={"retry-after": "2"}, json={"error": {"message": "slow down"}}
        ),
        completion("after the wait"),
    )
    assert complete(provider(server)).content == "after the wait"
    assert sleeps == [2.0]
    assert len(server.requests) == 2
    assert server.requests[0].content == server.requests[1].content


def test_retry_after_as_an_http_date_and_in_milliseconds(sleeps: list[float]) -> None:
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    server = Server(
        httpx2.Response(429, headers={"retry-after": later}),
        httpx2.Response(503, headers={"retry-after-ms": "250", "retry-after": "9"}),
        completion(),
    )
    complete(provider(server))
    assert 25 < sleeps[0] <= 30
    assert sleeps[1] == 0.25


def test_429_still_after_the_retries_is_a_rate_limit_error(sleeps: list[float]) -> None:
    server = Server(httpx2.Response(429, json={"error": {"message": "Rate limit reached"}}))
    with pytest.raises(ProviderRateLimitError) as caught:
        complete(provider(server, max_retries=3))
    assert len(server.requests) == 4
    assert len(sleeps) == 3
    assert caught.value.status == 429
    message = str(caught.value)
    assert "after 4 attempts" in message
    assert "Rate limit reached" in message
    assert "max_retries=" in message


def test_a_retry_after_longer_than_a_minute_fails_at_once(sleeps: list[float]) -> None:
    server = Server(httpx2.Response(429, headers={"retry-after": "3600"}))
    with pytest.raises(ProviderRateLimitError, match="wait 3600 seconds"):
        complete(provider(server))
    assert len(server.requests) == 1
    assert sleeps == []


def test_500s_exhausted_back_off_exponentially_then_raise(sleeps: list[float]) -> None:
    server = Server(httpx2.Response(500, json={"error": {"message": "boom"}}))
    with pytest.raises(ProviderResponseError) as caught:
        complete(provider(server, backoff=1.0, max_retries=3))
    assert caught.value.status == 500
    assert "failed after 4 attempts" in str(caught.value)
    assert "boom" in str(caught.value)
    assert len(server.requests) == 4
    for attempt, waited in enumerate(sleeps):  # 1, 2, 4 seconds, less up to a quarter
        assert 0.75 * 2**attempt <= waited <= 2**attempt


def test_500s_exhausted_with_real_tiny_sleeps() -> None:
    server = Server(httpx2.Response(502), httpx2.Response(503), httpx2.Response(504))
    with pytest.raises(ProviderResponseError) as caught:
        complete(provider(server, backoff=0.001))
    assert caught.value.status == 504
    assert len(server.requests) == 3


def test_max_retries_zero_sends_once(sleeps: list[float]) -> None:
    server = Server(httpx2.Response(503))
    with pytest.raises(ProviderResponseError):
        complete(provider(server, max_retries=0))
    assert len(server.requests) == 1


def test_a_connection_error_is_retried_then_says_nothing_is_listening(sleeps: list[float]) -> None:
    server = Server(httpx2.ConnectError("[Errno 111] Connection refused"))
    with pytest.raises(ProviderConnectionError) as caught:
        complete(provider(server))
    assert len(server.requests) == 3
    assert str(caught.value).endswith(
        f"nothing is listening at {URL}; start the server or fix base_url."
    )
    assert isinstance(caught.value.__cause__, httpx2.ConnectError)


def test_a_connection_error_then_success(sleeps: list[float]) -> None:
    server = Server(httpx2.ConnectError("refused"), completion("back"))
    assert complete(provider(server)).content == "back"


def test_a_real_refused_connection() -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on: bound, then closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = openai("m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=1, backoff=0.001)
    with pytest.raises(
        ProviderConnectionError, match=f"nothing is listening at http://127.0.0.1:{port}/v1"
    ):
        complete(p)


def test_a_read_timeout_is_not_sent_again_by_default(sleeps: list[float]) -> None:
    server = Server(httpx2.ReadTimeout("timed out"))
    with pytest.raises(ProviderConnectionError) as caught:
        complete(provider(server, timeout=12.5))
    assert "timeout=12.5" in str(caught.value)
    assert "retry_read_timeouts=True" in str(caught.value)
    assert len(server.requests) == 1
    assert sleeps == []


def test_a_read_timeout_is_retried_when_asked(sleeps: list[float]) -> None:
    server = Server(httpx2.ReadTimeout("timed out"))
    with pytest.raises(ProviderConnectionError) as caught:
        complete(provider(server, timeout=12.5, retry_read_timeouts=True))
    assert "after 3 attempts" in str(caught.value)
    assert len(server.requests) == 3


def test_a_connect_timeout_is_retried(sleeps: list[float]) -> None:
    server = Server(httpx2.ConnectTimeout("timed out"))
    with pytest.raises(ProviderConnectionError, match="after 3 attempts"):
        complete(provider(server))
    assert len(server.requests) == 3


def test_a_dropped_connection_is_a_connection_error(sleeps: list[float]) -> None:
    server = Server(httpx2.RemoteProtocolError("peer closed connection"))
    with pytest.raises(ProviderConnectionError, match="RemoteProtocolError: peer closed"):
        complete(provider(server))


# -- errors that say what to do ----------------------------------------------------------------


def test_401_names_the_env_var_and_never_the_key() -> None:
    server = Server(
        httpx2.Response(
            401,
            json={
                "error": {
                    "message": f"Incorrect API key provided: {KEY}.",
                    "code": "invalid_api_key",
                }
            },
        )
    )
    with pytest.raises(ProviderAuthError) as caught:
        complete(provider(server))
    message = str(caught.value)
    assert "OPENAI_API_KEY" in message
    assert "refused the API key" in message
    assert KEY not in message
    assert caught.value.status == 401
    assert len(server.requests) == 1  # never retried


def test_401_without_a_key_says_none_was_sent() -> None:
    server = Server(httpx2.Response(401, json={"error": {"message": "Missing bearer"}}))
    with pytest.raises(ProviderAuthError, match="none was sent.*set OPENAI_API_KEY"):
        complete(provider(server, api_key=None))


def test_403_is_an_auth_error_naming_the_model() -> None:
    server = Server(httpx2.Response(403, json={"error": {"message": "no access"}}))
    with pytest.raises(ProviderAuthError, match="'gpt-test'.*OPENAI_API_KEY"):
        complete(provider(server))


def test_404_for_an_unknown_model_names_model_and_base_url() -> None:
    server = Server(
        httpx2.Response(
            404,
            json={
                "error": {
                    "message": "The model `gpt-nope` does not exist.",
                    "type": "invalid_request_error",
                    "code": "model_not_found",
                }
            },
        )
    )
    request = HELLO.model_copy(update={"model": "gpt-nope"})
    with pytest.raises(ModelNotFoundError) as caught:
        complete(provider(server), request)
    message = str(caught.value)
    assert "model 'gpt-nope'" in message
    assert URL in message
    assert f"{URL}/models" in message
    assert caught.value.status == 404


def test_404_for_a_wrong_path_points_at_base_url() -> None:
    server = Server(httpx2.Response(404, text="Not Found"))
    with pytest.raises(ProviderResponseError, match=r"Check base_url.*/v1") as caught:
        complete(provider(server))
    assert not isinstance(caught.value, ModelNotFoundError)


def test_400_passes_the_server_message_on_without_retrying() -> None:
    server = Server(
        httpx2.Response(400, json={"error": {"message": "max_tokens is too large", "code": None}})
    )
    with pytest.raises(ProviderResponseError, match="max_tokens is too large") as caught:
        complete(provider(server))
    assert caught.value.status == 400
    assert len(server.requests) == 1


def test_every_failure_is_a_provider_error() -> None:
    for answer in (httpx2.Response(401), httpx2.Response(404), httpx2.Response(418)):
        with pytest.raises(ProviderError):
            complete(provider(Server(answer)))


def test_an_error_body_with_status_200_is_a_response_error() -> None:
    server = Server(httpx2.Response(200, json={"error": {"message": "model overloaded"}}))
    with pytest.raises(ProviderResponseError, match="reported an error: model overloaded"):
        complete(provider(server))
