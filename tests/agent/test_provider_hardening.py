"""The HTTP providers against hostile answers: key echoes in every encoding, payloads of the
wrong shape, and bodies too large to hold (MockTransport servers, no network)."""

from __future__ import annotations

import base64
import json
import re
import urllib.parse
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx2
import orjson
import pytest

from tests.backends import run_async
from trackway.agent import Agent
from trackway.agent.messages._messages import LLMRequest, LLMResponse, Message, StreamDelta
from trackway.agent.providers._anthropic import AnthropicProvider, anthropic
from trackway.agent.providers._http import HTTPProvider, MalformedPayload
from trackway.agent.providers._openai import OpenAIProvider, _Stream, openai
from trackway.agent.providers._provider import (
    ProviderAuthError,
    ProviderConfigError,
    ProviderConnectionError,
    ProviderError,
    ProviderRateLimitError,
    ProviderResponseError,
)

from .wire_server import Server

KEY = 'sk-Pr0j/Ab+Cd=Ef Gh"Ij\\Kl-0123456789abcdef'
"""A key with the characters every encoding treats differently: / + = space quote backslash."""
PLAIN_KEY = "sk-proj-0123456789abcdefghijklmnopqrstuv"
HELLO = LLMRequest(model="m", messages=(Message(role="user", content="Hello"),))
OFFSETS = range(250, 321)
"""Where the key starts in the server text: on both sides of the 300-character snippet."""
PIECE = 8


def _lower_hex(text: str) -> str:
    return re.sub(r"%[0-9A-F]{2}", lambda match: match.group().lower(), text)


ENCODINGS: dict[str, Callable[[str], str]] = {
    "raw": lambda key: key,
    "quote": lambda key: urllib.parse.quote(key),
    "quote-safe-none": lambda key: urllib.parse.quote(key, safe=""),
    "quote-lower-hex": lambda key: _lower_hex(urllib.parse.quote(key, safe="")),
    "quote_plus": lambda key: urllib.parse.quote_plus(key),
    "quote_plus-lower-hex": lambda key: _lower_hex(urllib.parse.quote_plus(key)),
    "json": lambda key: json.dumps(key)[1:-1],
    "json-slash": lambda key: json.dumps(key)[1:-1].replace("/", "\\/"),
    "json-unicode": lambda key: "".join(f"\\u{ord(char):04x}" for char in key),
    "base64": lambda key: base64.b64encode(key.encode()).decode(),
    "base64-urlsafe": lambda key: base64.urlsafe_b64encode(key.encode()).decode(),
    "base64-basic-auth": lambda key: base64.b64encode(b"user:" + key.encode()).decode(),
    "base64-offset-2": lambda key: base64.b64encode(b"ab" + key.encode()).decode(),
    "split-newline": lambda key: key[:11] + "\n" + key[11:],
    "split-crlf": lambda key: key[:23] + "\r\n" + key[23:],
    "split-twice": lambda key: key[:7] + "\n  " + key[7:19] + "\r\n" + key[19:],
    "split-json-escaped": lambda key: key[:17] + "\\n" + key[17:],
    "split-json-crlf": lambda key: key[:5] + "\\r\\n" + key[5:],
}


def leaks(text: str, secret: str = KEY) -> list[str]:
    """The pieces of ``secret`` (``PIECE`` characters or more) that appear in ``text``."""
    pieces = (secret[i : i + PIECE] for i in range(len(secret) - PIECE + 1))
    texts = (text.lower(), text.lower().replace("\\\\", "\\"))  # as quoted with repr() too
    return [piece for piece in pieces if any(piece.lower() in each for each in texts)]


def assert_no_key(text: str, key: str = KEY, form: str = "") -> None:
    """Neither the key nor a piece of it is in ``text``; nor a piece of ``form``, the
    encoded key the server sent (for base64, the part that encodes the key alone)."""
    assert key not in text
    assert leaks(text, key) == [], text
    if form.isascii() and re.fullmatch(r"[A-Za-z0-9+/=_-]+", form):
        form = form[8:-4]  # base64: the ends may also encode what is around the key
    for part in re.split(r"\s+|\\[rn]", form):
        assert leaks(text, part) == [], text


def filler(count: int) -> str:
    return "".join(f"word{i % 10} " for i in range(count))[:count]


def padded(form: str, offset: int) -> str:
    """A long server text with ``form`` starting at ``offset``."""
    return filler(offset) + form + " and then " + filler(2000)


def openai_with(handler: Callable[[httpx2.Request], Any], **options: Any) -> OpenAIProvider:
    options.setdefault("api_key", KEY)
    options.setdefault("max_retries", 0)
    return openai(
        "m", base_url="https://llm.test/v1", transport=httpx2.MockTransport(handler), **options
    )


def anthropic_with(handler: Callable[[httpx2.Request], Any], **options: Any) -> AnthropicProvider:
    options.setdefault("api_key", KEY)
    options.setdefault("max_retries", 0)
    return anthropic(
        "m", base_url="https://claude.test", transport=httpx2.MockTransport(handler), **options
    )


def failures(make: Callable[[str], HTTPProvider], texts: list[str], *, stream: bool) -> list[str]:
    """The message of the error each server text causes, one provider call per text."""

    async def collect() -> list[str]:
        messages: list[str] = []
        for text in texts:
            provider = make(text)
            try:
                if stream:
                    async for _ in provider.stream(HELLO):
                        pass
                else:
                    await provider.complete(HELLO)
            except ProviderError as error:
                messages.append(str(error))
            else:
                raise AssertionError(f"no error for {text[:40]!r}")
        return messages

    return run_async(collect)


def event_stream(*payloads: dict[str, Any] | str) -> httpx2.Response:
    lines = []
    for payload in payloads:
        data = payload if isinstance(payload, str) else orjson.dumps(payload).decode()
        event = payload.get("type") if isinstance(payload, dict) else None
        head = f"event: {event}\n" if isinstance(event, str) else ""
        lines.append(f"{head}data: {data}\n\n")
    return httpx2.Response(
        200, headers={"content-type": "text/event-stream"}, content="".join(lines).encode()
    )


# -- 1. the key never survives, whatever its encoding and wherever the cut falls ---------------


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_a_key_echoed_in_a_text_error_body_is_scrubbed_at_every_offset(encoding: str) -> None:
    form = ENCODINGS[encoding](KEY)
    texts = [padded(form, offset) for offset in OFFSETS]

    def make(text: str) -> HTTPProvider:
        return openai_with(lambda request: httpx2.Response(401, text=text))

    for message in failures(make, texts, stream=False):
        assert "refused the API key" in message
        assert "***" in message or "…" in message
        assert_no_key(message, form=form)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_a_key_echoed_in_a_json_error_message_is_scrubbed_at_every_offset(encoding: str) -> None:
    form = ENCODINGS[encoding](KEY)
    texts = [padded(form, offset) for offset in OFFSETS]

    def make(text: str) -> HTTPProvider:
        body = {"type": "error", "error": {"type": "invalid_request_error", "message": text}}
        return anthropic_with(lambda request: httpx2.Response(400, json=body))

    for message in failures(make, texts, stream=True):
        assert "rejected the request (400 Bad Request: invalid_request_error: word0" in message
        assert_no_key(message, form=form)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_a_key_in_a_body_that_is_not_a_response_is_scrubbed_at_every_offset(encoding: str) -> None:
    form = ENCODINGS[encoding](KEY)
    texts = [padded(form, offset) for offset in OFFSETS]

    def make(text: str) -> HTTPProvider:
        return openai_with(lambda request: httpx2.Response(200, text=text))

    for message in failures(make, texts, stream=False):
        assert "it is not JSON" in message
        assert_no_key(message, form=form)


@pytest.mark.parametrize("encoding", ["raw", "quote_plus", "json-unicode", "split-crlf", "base64"])
def test_a_key_in_stream_errors_is_scrubbed_at_every_offset(encoding: str) -> None:
    form = ENCODINGS[encoding](KEY)
    texts = [padded(form, offset) for offset in OFFSETS]

    def openai_error(text: str) -> HTTPProvider:
        chunk = {"choices": [{"index": 0, "delta": {"content": "Hi"}}]}
        answer = event_stream(chunk, {"error": {"message": text}})
        return openai_with(lambda request: answer)

    def anthropic_error(text: str) -> HTTPProvider:
        error = {"type": "error", "error": {"type": "overloaded_error", "message": text}}
        return anthropic_with(lambda request: event_stream(error))

    def not_json(text: str) -> HTTPProvider:
        return openai_with(lambda request: event_stream("{" + text.replace("\n", " ")))

    for make in (openai_error, anthropic_error, not_json):
        for message in failures(make, texts, stream=True):
            assert_no_key(message, form=form)


@pytest.mark.parametrize("encoding", ["raw", "quote", "json", "split-newline", "base64"])
def test_a_key_in_exception_text_is_scrubbed(encoding: str) -> None:
    form = ENCODINGS[encoding](KEY)
    texts = [padded(form, offset) for offset in OFFSETS[::5]]

    def refused(text: str) -> HTTPProvider:
        def handler(request: httpx2.Request) -> httpx2.Response:
            raise httpx2.ConnectError(text)

        return openai_with(handler)

    def dropped(text: str) -> HTTPProvider:
        class Drops(httpx2.AsyncByteStream):
            async def __aiter__(self) -> AsyncIterator[bytes]:
                yield b'data: {"choices": [{"delta": {"content": "Hi"}}]}\n\n'
                raise httpx2.RemoteProtocolError(text)

        headers = {"content-type": "text/event-stream"}
        return openai_with(lambda request: httpx2.Response(200, headers=headers, stream=Drops()))

    for message in failures(refused, texts, stream=False):
        assert "could not connect" in message
        assert_no_key(message, form=form)
    for message in failures(dropped, texts, stream=True):
        assert "dropped mid-stream" in message
        assert_no_key(message, form=form)


@pytest.mark.parametrize("encoding", ["raw", "quote_plus", "split-newline", "base64"])
def test_a_key_cut_in_two_by_max_error_body_is_not_quoted_in_part(encoding: str) -> None:
    form = ENCODINGS[encoding](KEY)
    texts = [filler(offset) + form + filler(500) for offset in range(60, 101)]

    def make(text: str) -> HTTPProvider:
        return openai_with(lambda request: httpx2.Response(500, text=text), max_error_body=100)

    for message in failures(make, texts, stream=False):
        assert "the body was cut at 100 bytes, raise max_error_body=" in message
        assert_no_key(message, form=form)


def test_an_ordinary_key_is_scrubbed_the_same_way() -> None:
    texts = [padded(PLAIN_KEY, offset) for offset in OFFSETS]

    def make(text: str) -> HTTPProvider:
        return openai_with(lambda request: httpx2.Response(403, text=text), api_key=PLAIN_KEY)

    for message in failures(make, texts, stream=False):
        assert_no_key(message, PLAIN_KEY)


def test_the_snippet_keeps_the_server_text_around_a_scrubbed_key() -> None:
    text = f"Incorrect API key provided:\n{KEY[:20]}\r\n{KEY[20:]}. See the docs."
    (message,) = failures(
        lambda body: openai_with(lambda request: httpx2.Response(401, text=body)),
        [text],
        stream=False,
    )
    assert "(401 Unauthorized: Incorrect API key provided: ***. See the docs.)" in message


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("encoding", ["raw", "quote_plus", "json-unicode", "split-crlf", "base64"])
def test_the_key_is_not_in_the_recording_of_a_failed_agent_run(encoding: str, stream: bool) -> None:
    form = ENCODINGS[encoding](KEY)
    for offset in (240, 260, 280):  # the message quoted starts with "invalid_api_key: "
        body = {"error": {"message": padded(form, offset), "code": "invalid_api_key"}}

        def refuses(request: httpx2.Request, body: Any = body) -> httpx2.Response:
            return httpx2.Response(401, json=body)

        provider = openai_with(refuses)
        agent = Agent.create(provider=provider, model="m", stream=stream).build()
        with pytest.raises(ProviderAuthError) as caught:
            agent.run_sync("Hi")
        assert_no_key(str(caught.value), form=form)
        recording = agent.snapshot().to_json()
        strings = list(_strings(orjson.loads(recording)))
        assert any("refused the API key" in text for text in strings)  # the error is recorded
        assert_no_key(recording.decode(), form=form)
        assert_no_key("\n".join(strings), form=form)


def _strings(value: Any) -> Iterator[str]:
    """Every string in a JSON document."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


# -- 2. payloads of the wrong shape are response errors, never TypeErrors ----------------------


@pytest.mark.parametrize(
    ("chunk", "why"),
    [
        ({"choices": "x"}, "choices is a string, not a list"),
        ({"choices": 5}, "choices is a number, not a list"),
        ({"choices": [5]}, "choices[0] is not an object"),
        ({"choices": [{"delta": 5}]}, "choices[0].delta is a number, not an object"),
        ({"choices": [{"delta": {"content": ["a"]}}]}, "choices[0].delta.content is a list"),
        ({"choices": [{"delta": {"tool_calls": 5}}]}, "delta.tool_calls is a number, not a list"),
        ({"choices": [{"delta": {"tool_calls": ["x"]}}]}, "tool_calls[0] is not an object"),
        (
            {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"name": 5}}]}}]},
            "tool_calls[0].function.name is a number, not a string",
        ),
        (
            {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": "f"}]}}]},
            "tool_calls[0].function is a string, not an object",
        ),
        (
            {"choices": [{"delta": {"tool_calls": [{"function": {"arguments": {}}}]}}]},
            "tool_calls[0].function.arguments is an object, not a string",
        ),
        (
            {"choices": [{"delta": {"tool_calls": [{"index": "0", "id": "c"}]}}]},
            "tool_calls[0].index is a string, not an integer",
        ),
        ({"choices": [{"index": [0], "delta": {}}]}, "choices[0].index is a list"),
        ({"choices": [], "usage": 12}, "usage is a number, not an object"),
        ({"usage": {"prompt_tokens_details": []}}, "usage.prompt_tokens_details is a list"),
    ],
)
def test_an_openai_chunk_of_the_wrong_shape_names_the_chunk_and_the_field(
    chunk: dict[str, Any], why: str
) -> None:
    first = {"choices": [{"index": 0, "delta": {"content": "Hi"}}]}
    provider = openai_with(lambda request: event_stream(first, chunk))
    seen: list[StreamDelta | LLMResponse] = []

    async def collect() -> None:
        async for item in provider.stream(HELLO):
            seen.append(item)

    with pytest.raises(ProviderResponseError) as caught:
        run_async(collect)
    message = str(caught.value)
    assert why in message
    assert "streamed a chunk that is malformed (number 2 of the stream, event 'message')" in message
    assert "Check that base_url points at an OpenAI-compatible API" in message
    assert isinstance(caught.value.__cause__, MalformedPayload)
    assert seen == [StreamDelta(text="Hi")]


@pytest.mark.parametrize(
    ("event", "why"),
    [
        ({"type": "content_block_delta", "index": 0, "delta": 5}, "delta is a number"),
        ({"type": "content_block_delta", "index": 0}, "delta is null, not an object"),
        (
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 1}},
            "delta.text is a number, not a string",
        ),
        (
            {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta"}},
            "delta.partial_json is null, not a string",
        ),
        (
            {"type": "content_block_delta", "index": "1", "delta": {"type": "text_delta"}},
            "delta.text is null",
        ),
        (
            {
                "type": "content_block_delta",
                "index": "1",
                "delta": {"type": "text_delta", "text": ""},
            },
            "index is a string, not an integer",
        ),
        (
            {"type": "content_block_start", "index": 0, "content_block": []},
            "content_block is a list",
        ),
        (
            {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use"}},
            "content_block.name is missing",
        ),
        (
            {"type": "content_block_start", "content_block": {"type": "tool_use", "name": 7}},
            "content_block.name is a number, not a string",
        ),
        (
            {"type": "content_block_start", "content_block": {"type": "text", "text": 7}},
            "content_block.text is a number, not a string",
        ),
        ({"type": "message_start", "message": "m"}, "message is a string, not an object"),
        ({"type": "message_start", "message": {"usage": 3}}, "message.usage is a number"),
        ({"type": "message_delta", "delta": [], "usage": {}}, "delta is a list, not an object"),
        ({"type": "message_delta", "usage": "x"}, "usage is a string, not an object"),
    ],
)
def test_an_anthropic_event_of_the_wrong_shape_names_the_event_and_the_field(
    event: dict[str, Any], why: str
) -> None:
    start = {"type": "message_start", "message": {"model": "claude", "usage": {}}}
    provider = anthropic_with(lambda request: event_stream(start, event))
    with pytest.raises(ProviderResponseError) as caught:
        run_async(lambda: _drain(provider))
    message = str(caught.value)
    assert why in message
    assert (
        f"streamed an event that is malformed (number 2 of the stream, event {event['type']!r})"
        in message
    )
    assert "Check that base_url points at the Messages API root" in message


async def _drain(provider: HTTPProvider) -> list[StreamDelta | LLMResponse]:
    return [item async for item in provider.stream(HELLO)]


def test_a_stream_that_ends_with_a_nameless_tool_call_is_a_response_error() -> None:
    chunk = {
        "choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}}]
    }
    provider = openai_with(lambda request: event_stream(chunk, "[DONE]"))
    with pytest.raises(ProviderResponseError, match="tool call 0 came without a name"):
        run_async(lambda: _drain(provider))
    delta = {"type": "input_json_delta", "partial_json": "{}"}
    orphan = {"type": "content_block_delta", "index": 0, "delta": delta}
    stop = {"type": "message_stop"}
    messages_api = anthropic_with(lambda request: event_stream(orphan, stop))
    with pytest.raises(ProviderResponseError, match="tool_use block 0 came without a name"):
        run_async(lambda: _drain(messages_api))


def test_an_unexpected_error_in_a_parser_is_still_a_response_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(self: _Stream, event: str, chunk: dict[str, Any]) -> str:
        raise KeyError("choices")

    monkeypatch.setattr(_Stream, "feed", broken)
    provider = openai_with(lambda request: event_stream({"choices": []}))
    with pytest.raises(ProviderResponseError, match=r"number 1 of the stream.*KeyError") as caught:
        run_async(lambda: _drain(provider))
    assert isinstance(caught.value.__cause__, KeyError)


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ({"choices": [{"message": {"content": 5}}]}, "choices[0].message.content is a number"),
        (
            {"choices": [{"message": {"tool_calls": [{"id": 5, "function": {"name": "f"}}]}}]},
            "choices[0].message.tool_calls[0].id is a number, not a string",
        ),
        (
            {
                "choices": [
                    {"message": {"tool_calls": [{"function": {"name": "f", "arguments": 1}}]}}
                ]
            },
            "tool_calls[0].function.arguments is a number, not a string",
        ),
        ({"choices": [{"message": {"content": "x"}}], "usage": []}, "usage is a list"),
        (
            {"choices": [{"message": {}}], "usage": {"prompt_tokens_details": 1}},
            "usage.prompt_tokens_details is a number",
        ),
    ],
)
def test_an_openai_body_of_the_wrong_shape_is_a_response_error(body: Any, why: str) -> None:
    provider = openai_with(lambda request: httpx2.Response(200, json=body))
    with pytest.raises(ProviderResponseError) as caught:
        run_async(provider.complete, HELLO)
    assert why in str(caught.value)
    assert "answered, but not with a Chat Completions response" in str(caught.value)
    with pytest.raises(ProviderResponseError, match=re.escape(why)):  # "stream" ignored
        run_async(lambda: _drain(provider))


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ({"content": [{"type": "text", "text": 5}]}, "content[0].text is a number, not a string"),
        ({"content": [{"type": "text"}]}, "content[0].text is null, not a string"),
        ({"content": [{"type": 1}]}, "content[0].type is a number, not a string"),
        (
            {"content": [{"type": "tool_use", "name": "f", "id": []}]},
            "content[0].id is a list, not a string",
        ),
        ({"content": [], "usage": "lots"}, "usage is a string, not an object"),
    ],
)
def test_an_anthropic_body_of_the_wrong_shape_is_a_response_error(body: Any, why: str) -> None:
    provider = anthropic_with(lambda request: httpx2.Response(200, json=body))
    with pytest.raises(ProviderResponseError) as caught:
        run_async(provider.complete, HELLO)
    assert why in str(caught.value)
    assert "answered, but not with a Messages API response" in str(caught.value)


def test_an_anthropic_rate_limit_event_with_an_odd_error_is_still_mapped() -> None:
    event = {"type": "error", "error": {"type": "rate_limit_error", "message": ["slow"]}}
    provider = anthropic_with(lambda request: event_stream(event))
    with pytest.raises(ProviderRateLimitError, match=r"rate_limit_error: \['slow'\]"):
        run_async(lambda: _drain(provider))


# -- 3. bodies too large to hold are never read whole ------------------------------------------


class Huge:
    """A body of ``size`` bytes handed out lazily; ``handed`` counts what was taken."""

    def __init__(
        self, size: int = 200 * 1024 * 1024, chunk: int = 8 * 1024, head: bytes = b""
    ) -> None:
        self.size = size
        self.chunk = chunk
        self.head = head
        self.handed = 0

    async def body(self) -> AsyncIterator[bytes]:
        if self.head:
            self.handed += len(self.head)
            yield self.head
        block = b"e" * self.chunk
        while self.handed < self.size:
            self.handed += len(block)
            yield block

    def answer(self, status: int, content_type: str = "text/plain") -> httpx2.Response:
        return httpx2.Response(status, headers={"content-type": content_type}, content=self.body())


@pytest.mark.parametrize("stream", [False, True])
def test_a_200_mb_error_body_is_cut_at_max_error_body(stream: bool) -> None:
    huge = Huge(head=b"upstream exploded: ")
    provider = openai_with(lambda request: huge.answer(502))
    with pytest.raises(ProviderResponseError) as caught:
        if stream:
            run_async(lambda: _drain(provider))
        else:
            run_async(provider.complete, HELLO)
    cap = 64 * 1024
    assert huge.handed < 4 * cap
    message = str(caught.value)
    assert caught.value.status == 502
    assert "(502 Bad Gateway: upstream exploded: eeee" in message
    assert "the body was cut at 65536 bytes, raise max_error_body= to read more" in message
    assert len(message) < 1000


def test_max_error_body_is_an_option() -> None:
    huge = Huge(chunk=100)
    provider = anthropic_with(lambda request: huge.answer(400), max_error_body=1000)
    with pytest.raises(ProviderResponseError, match="cut at 1000 bytes"):
        run_async(provider.complete, HELLO)
    assert huge.handed <= 1100


def test_a_small_error_body_is_not_said_to_be_cut() -> None:
    provider = openai_with(lambda request: httpx2.Response(400, text="x" * 99), max_error_body=99)
    with pytest.raises(ProviderResponseError) as caught:
        run_async(provider.complete, HELLO)
    assert "cut" not in str(caught.value)


def test_an_answer_larger_than_max_response_body_is_refused_unread() -> None:
    huge = Huge(head=b'{"choices": [')
    server = Server(lambda request: huge.answer(200, "application/json"))
    provider = openai("m", api_key="", transport=server.transport, max_response_body=1024 * 1024)
    with pytest.raises(ProviderResponseError) as caught:
        run_async(provider.complete, HELLO)
    assert huge.handed < 4 * 1024 * 1024
    message = str(caught.value)
    assert "larger than max_response_body=1048576 bytes" in message
    assert "raise openai(..., max_response_body=...)" in message
    assert caught.value.status == 200
    assert len(server.requests) == 1  # not retried


def test_the_default_max_response_body_is_32_mib() -> None:
    huge = Huge(chunk=256 * 1024)
    provider = anthropic_with(lambda request: huge.answer(200, "application/json"))
    assert provider.max_response_body == 32 * 1024 * 1024
    with pytest.raises(ProviderResponseError, match="max_response_body=33554432"):
        run_async(provider.complete, HELLO)
    assert huge.handed < 4 * 32 * 1024 * 1024


def test_a_huge_answer_to_a_stream_request_that_is_not_a_stream_is_refused() -> None:
    huge = Huge()
    provider = openai_with(
        lambda request: huge.answer(200, "application/json"), max_response_body=64 * 1024
    )
    with pytest.raises(ProviderResponseError, match="larger than max_response_body=65536"):
        run_async(lambda: _drain(provider))
    assert huge.handed < 4 * 64 * 1024


def test_one_huge_stream_event_is_refused_at_max_response_body() -> None:
    huge = Huge(head=b'data: {"choices": [{"delta": {"content": "')
    provider = anthropic_with(
        lambda request: huge.answer(200, "text/event-stream"), max_response_body=64 * 1024
    )
    with pytest.raises(ProviderResponseError) as caught:
        run_async(lambda: _drain(provider))
    assert huge.handed < 4 * 64 * 1024
    message = str(caught.value)
    assert "the stream from https://claude.test is unreadable" in message
    assert "max_response_body=65536" in message


def test_events_below_the_cap_still_stream() -> None:
    text = "x" * (2 * 1024 * 1024)  # larger than httpx2's own 1 MiB default event cap
    chunk = {"choices": [{"index": 0, "delta": {"content": text}}]}
    provider = openai_with(lambda request: event_stream(chunk, "[DONE]"))
    *_, final = run_async(lambda: _drain(provider))
    assert isinstance(final, LLMResponse) and final.content == text


def test_a_body_dropped_while_it_is_read_is_a_connection_error(sleeps: list[float]) -> None:
    class Drops(httpx2.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            yield b'{"choices": '
            raise httpx2.ReadError("connection reset")

    server = Server(lambda request: httpx2.Response(200, stream=Drops()))
    provider = openai("m", api_key="", transport=server.transport)
    with pytest.raises(ProviderConnectionError, match="ReadError: connection reset"):
        run_async(provider.complete, HELLO)
    assert len(server.requests) == 3  # read before the answer is used: retried
    with pytest.raises(ProviderConnectionError, match="dropped mid-stream"):
        run_async(lambda: _drain(openai("m", api_key="", transport=server.transport)))


@pytest.mark.parametrize("option", ["max_error_body", "max_response_body"])
@pytest.mark.parametrize("value", [0, -1, True, 1.5, "1024", None])
def test_the_caps_must_be_positive_whole_numbers(option: str, value: Any) -> None:
    for factory in (openai, anthropic):
        with pytest.raises(ProviderConfigError, match=rf"{option}={value!r}\): use a positive"):
            factory("m", **{option: value})
    assert openai("m", max_error_body=1, max_response_body=1).max_error_body == 1
