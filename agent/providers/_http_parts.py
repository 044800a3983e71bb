"""The small pieces an HTTP provider is built from: reading a body under a cap, the wait a
server asks for, how one streamed attempt ended, and a transport used without owning it."""

from __future__ import annotations

import email.utils
import math
from contextlib import aclosing
from datetime import UTC, datetime
from typing import Any

import httpx2

from ..messages._messages import LLMResponse
from ._provider import ProviderConfigError

__all__ = [
    "DONE",
    "Borrowed",
    "StreamOutcome",
    "hollow",
    "positive_bytes",
    "read_at_most",
    "retry_after",
]


async def read_at_most(response: httpx2.Response, limit: int) -> tuple[bytes, bool]:
    """Up to ``limit`` bytes of ``response``'s (decoded) body, and whether there was more.

    Reads chunk by chunk with a running count, so a larger body is never held whole: the
    reading stops at the first chunk past the limit and the rest is left unread.
    """
    parts: list[bytes] = []
    size = 0
    async with aclosing(response.aiter_bytes()) as chunks:
        async for chunk in chunks:
            room = limit - size
            if len(chunk) > room:
                parts.append(chunk[:room])
                return b"".join(parts), True
            parts.append(chunk)
            size += len(chunk)
    return b"".join(parts), False


def retry_after(headers: httpx2.Headers) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms``, ``retry-after``), if any."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            value = float(millis) / 1000
        except ValueError:
            value = math.nan
        if math.isfinite(value):
            return max(0.0, value)
    text = headers.get("retry-after")
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


class StreamOutcome:
    """How one streamed attempt ended: whether text went out, and the number of events of
    a stream that ended before its terminal event (``None`` when it finished)."""

    __slots__ = ("hollow", "unfinished", "yielded")

    def __init__(self) -> None:
        self.yielded = False
        self.unfinished: int | None = None
        self.hollow: str | None = None


def hollow(final: LLMResponse) -> str | None:
    """Why a streamed answer that ended cleanly holds no answer at all, or ``None``: empty
    and counted by the server itself as 0 output tokens (how a gateway renders an upstream
    stream that ended without an answer: the litellm proxy's ``/v1/messages`` in front of
    llama.cpp's server), or empty and never saying why it stopped (a ``[DONE]`` after no
    answer: a server that dropped the request mid-way, as llama-cpp-python's does when a
    concurrent request interrupts it)."""
    if final.content or final.tool_calls or final.thinking:
        return None
    usage = final.usage
    if usage is not None and usage.output_tokens == 0:
        return "with an empty answer of 0 output tokens"
    if final.stop_reason is None:
        return "with an empty answer and no stop reason"
    return None


DONE: Any = object()
"""What ``_sse`` yields for a ``[DONE]`` line (the end of an OpenAI-style stream)."""


class Borrowed(httpx2.AsyncBaseTransport):
    """A caller's transport, used without taking ownership.

    Each call opens (and closes) its own client; closing that client must not close a
    transport the caller passed in, so a pooling transport keeps its connections across
    calls.
    """

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        """Leave the caller's transport open: its owner closes it."""


def positive_bytes(factory: str, option: str, value: object, default: int) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    raise ProviderConfigError(
        f"{factory}({option}={value!r}): use a positive whole number of bytes, e.g. "
        f"{option}={default} (the default)"
    )
