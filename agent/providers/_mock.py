"""``mock``: a scripted provider for tests, demos and benchmarks (no network, no model)."""

from __future__ import annotations

import difflib
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from ..messages._messages import LLMRequest, LLMResponse, StreamDelta, Usage
from ._provider import ProviderConfigError, ProviderError
from ._structured import NativeOutput

__all__ = ["MockExhaustedError", "MockProvider", "mock", "refuse_unknown_keys"]

Reply = str | dict[str, Any] | LLMResponse


class MockExhaustedError(ProviderError):
    """The scripted replies ran out: the run asked the model more often than the script said."""


_REPLY_KEYS = ("content", "tool_calls", "usage", "stop_reason", "thinking")
_CALL_KEYS = ("id", "name", "args")


def refuse_unknown_keys(
    keys: Any, known: tuple[str, ...], what: str, error: type[Exception] = ProviderConfigError
) -> None:
    """A misspelled key of a scripted answer would be dropped silently: refuse it with
    ``error``, naming the closest (the mock provider's and the mock classifier's)."""
    for key in keys:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise error(
                f"{what} has the key {key!r}{hint}; the keys it takes are {', '.join(known)}"
            )


def _check_reply(reply: Reply, n: int) -> None:
    if not isinstance(reply, dict):
        return
    refuse_unknown_keys(reply, _REPLY_KEYS, f"mock reply {n}")
    for i, call in enumerate(reply.get("tool_calls", ())):
        if not isinstance(call, dict) or "name" not in call:
            raise ProviderConfigError(
                f"mock reply {n}, tool call {i}: {call!r} is not a tool call; write "
                "{'name': 'tool', 'args': {...}} (an 'id' is optional)"
            )
        refuse_unknown_keys(call, _CALL_KEYS, f"mock reply {n}, tool call {i}")


def _as_response(reply: Reply, n: int, *, checked: bool = False) -> LLMResponse:
    """The reply as a response, validated once (the mock is the edge the scripted reply
    enters by): a dict reply and its calls in one validation. ``checked``: its keys were
    checked when the script was given."""
    if isinstance(reply, LLMResponse):
        return reply
    if isinstance(reply, str):
        return LLMResponse(content=reply, stop_reason="stop")
    if isinstance(reply, dict):
        if not checked:
            _check_reply(reply, n)
        calls = [
            {"id": c.get("id") or f"call_{n}_{i}", "name": c["name"], "args": c.get("args", {})}
            for i, c in enumerate(reply.get("tool_calls", ()))
        ]
        usage = reply.get("usage")
        return LLMResponse.model_validate(
            {
                "content": reply.get("content", ""),
                "tool_calls": calls,
                "usage": Usage(**usage) if usage else None,
                "stop_reason": reply.get("stop_reason", "tool_use" if calls else "stop"),
                "thinking": reply.get("thinking"),
            }
        )
    raise ProviderConfigError(
        f"mock reply {n} is {reply!r}; a reply is a str (the answer), a dict "
        "{'content': ..., 'tool_calls': [{'id', 'name', 'args'}]} or an LLMResponse"
    )


def _prebuilt(reply: Reply, n: int) -> LLMResponse | None:
    try:
        return _as_response(reply, n, checked=True)
    except Exception:  # raised again, at the call that uses this reply
        return None


class MockProvider:
    """Answers from a script (``replies``, in order) or a function of each request.

    ``requests`` keeps every request it was handed: a tap for tests (``keep_requests=False``
    keeps none: each request holds the whole conversation, so keeping them all costs
    memory quadratic in a long run's length). With ``stream=True`` it also streams each
    answer word by word.

    It takes a ``json_schema`` response format as it is (``output_schema(...,
    strategy="native")``), so a test can script what a native answer is and why it stopped.
    """

    native_output: NativeOutput = "response_format"

    def __init__(
        self,
        replies: Sequence[Reply] | None = None,
        respond: Callable[[LLMRequest], Reply] | None = None,
        *,
        stream: bool = False,
        name: str = "mock",
        keep_requests: bool = True,
    ) -> None:
        self.name = name
        self.keep_requests = keep_requests
        self.calls = 0  # requests handed to it, kept or not
        self._replies = list(replies) if replies is not None else None
        for n, reply in enumerate(self._replies or ()):
            _check_reply(reply, n)
        # each scripted reply validated once, here at the edge it enters by; one that does
        # not validate is kept as given and fails when the run asks for it, as it always did
        self._built = [_prebuilt(reply, n) for n, reply in enumerate(self._replies or ())]
        self._respond = respond
        self._stream = stream
        self.requests: list[LLMRequest] = []

    def _next(self, request: LLMRequest) -> LLMResponse:
        n = self.calls
        self.calls = n + 1
        if self.keep_requests:
            self.requests.append(request)
        if self._respond is not None:
            return _as_response(self._respond(request), n)
        assert self._replies is not None
        if n >= len(self._replies):
            raise MockExhaustedError(
                f"mock provider ran out of replies: it was asked for reply {n + 1} (counting "
                f"every call it served) but the script has {len(self._replies)}; add replies, "
                "or check max_iterations"
            )
        built = self._built[n]
        return built if built is not None else _as_response(self._replies[n], n, checked=True)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        return self._next(request)

    def stream(self, request: LLMRequest) -> AsyncIterator[StreamDelta | LLMResponse]:
        """The answer's words (with ``stream=True``), then the answer itself."""
        return _Pieces(self, request)

    @property
    def streams(self) -> bool:
        return self._stream


class _Pieces:
    """A mock stream: an async iterator, not an async generator, so a call costs no
    registration with the event loop's generator bookkeeping (a test double should not
    weigh on what a bench measures). The reply is taken at the first step, as a
    generator's body would take it."""

    __slots__ = ("_items", "_provider", "_request")

    def __init__(self, provider: MockProvider, request: LLMRequest) -> None:
        self._provider: MockProvider | None = provider
        self._request = request
        self._items: list[StreamDelta | LLMResponse] = []

    def __aiter__(self) -> _Pieces:
        return self

    async def __anext__(self) -> StreamDelta | LLMResponse:
        provider = self._provider
        if provider is not None:
            self._provider = None
            response = provider._next(self._request)
            items = self._items
            if provider._stream and response.content:
                words = response.content.split(" ")
                items.extend(
                    StreamDelta(text=word if i == 0 else " " + word) for i, word in enumerate(words)
                )
            items.append(response)
            items.reverse()  # handed out from the end
        if not self._items:
            raise StopAsyncIteration
        return self._items.pop()

    async def aclose(self) -> None:
        """Stop the stream: nothing more is handed out (nor asked of the script)."""
        self._provider = None
        self._items.clear()


def mock(
    reply: Reply | None = None,
    *,
    replies: Sequence[Reply] | None = None,
    respond: Callable[[LLMRequest], Reply] | None = None,
    stream: bool = False,
    keep_requests: bool = True,
) -> MockProvider:
    """A scripted provider: one ``reply`` for every call, ``replies`` in order, or ``respond``.
    ``keep_requests=False``: ``provider.requests`` stays empty (``provider.calls`` counts)."""
    given = sum(x is not None for x in (reply, replies, respond))
    if given != 1:
        raise ProviderConfigError("mock() takes exactly one of reply=, replies= or respond=")
    if reply is not None:
        # a text reply is the same answer every call: built (and validated) once
        answer = _as_response(reply, 0) if isinstance(reply, str) else reply
        return MockProvider(
            respond=lambda _request: answer, stream=stream, keep_requests=keep_requests
        )
    return MockProvider(
        replies=replies, respond=respond, stream=stream, keep_requests=keep_requests
    )
