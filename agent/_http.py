"""What the HTTP providers share: one client per call, retries, and the error boundary.

Every HTTP failure is translated into the :class:`ProviderError` family here, once, with
``raise ... from`` so the transport's own exception stays on the chain:

- 401/403 -> :class:`ProviderAuthError` (names the environment variable to set);
- 404 naming a model -> :class:`ModelNotFoundError` (names the model and the base URL);
- 429 still after the retries -> :class:`ProviderRateLimitError`;
- 408/5xx still after the retries, other 4xx, a body that is not a valid response ->
  :class:`ProviderResponseError`;
- refused connection, network failure, timeout (after the retries) ->
  :class:`ProviderConnectionError`.

Retries: 408, 429, 5xx, connection errors and timeouts are retried ``max_retries`` times,
waiting ``backoff * 2**attempt`` seconds (less up to a quarter, jitter) or what the server
asked for in ``retry-after-ms`` / ``retry-after`` (seconds or an HTTP date). A streamed call is
retried only until its response starts: once text was yielded it is never sent again.

The API key never appears in a message: server text is scrubbed of it before it is quoted.

Over 400 lines because it is the one error boundary of every HTTP provider: the retry loop,
the stream reader and the translation of each failure read the same response, so they stay
together and each provider module keeps only its wire format.
"""

from __future__ import annotations

import email.utils
import math
import os
import random
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import aclosing, asynccontextmanager
from datetime import UTC, datetime
from typing import Any, NoReturn, Protocol, cast

import anyio
import httpx2
import orjson

from ._messages import LLMRequest, LLMResponse, StreamDelta
from ._provider import (
    ModelNotFoundError,
    ProviderAuthError,
    ProviderConfigError,
    ProviderConnectionError,
    ProviderError,
    ProviderRateLimitError,
    ProviderResponseError,
)

__all__ = ["HTTPProvider", "parse_arguments"]

MAX_RETRY_AFTER = 60.0
"""A server asking for a longer wait than this (seconds) gets an error, not a nap."""
MAX_BACKOFF = 30.0
"""The longest wait between two attempts when the server names none (seconds)."""
UNPARSED_ARGUMENTS = "_unparsed_arguments"


async def _sleep(seconds: float) -> None:
    """The wait between attempts (a seam: tests replace it to record the delays)."""
    await anyio.sleep(seconds)


def parse_arguments(raw: str | None) -> dict[str, Any]:
    """Tool-call arguments from the JSON text the model wrote.

    Empty text or ``null`` is ``{}``. Text that is not a JSON object is kept verbatim as
    ``{"_unparsed_arguments": raw}``: the model wrote it, so it is data, not a provider
    failure; argument validation then tells the model what to fix.
    """
    if raw is None or not raw.strip():
        return {}
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {UNPARSED_ARGUMENTS: raw}
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    return {UNPARSED_ARGUMENTS: raw}


def _snippet(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _retry_after(headers: httpx2.Headers) -> float | None:
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


class _Assembly(Protocol):
    """A streamed answer being put together from its server-sent events."""

    def feed(self, event: str, data: dict[str, Any]) -> str:
        """Take one event in; the text it adds (maybe empty)."""
        ...

    def response(self) -> LLMResponse: ...


def _retryable(status: int) -> bool:
    return status in (408, 429) or status >= 500


class _Borrowed(httpx2.AsyncBaseTransport):
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


class HTTPProvider:
    """The shared half of an HTTP provider: configuration, sending, retrying, errors,
    and the ``complete``/``stream`` calls themselves.

    Subclasses set the class attributes below and implement :meth:`_auth_headers`,
    :meth:`body`, :meth:`_parse`, :meth:`_assembly` and :meth:`_stream_failure`: they
    build the wire body and read the answer.
    """

    name: str
    key_env: str
    """The environment variable the API key is read from (named in auth errors)."""
    api_label: str
    """What the endpoint speaks, for messages ("a Chat Completions response")."""
    default_base_url: str
    """Where the vendor's own API lives (``base_url`` when none is given)."""
    path: str
    """The endpoint under ``base_url`` that both calls post to."""
    stream_item: str
    """What one streamed payload is called, for messages ("a chunk")."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        backoff: float = 0.5,
        transport: httpx2.AsyncBaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        factory = self.name
        base_url = self.default_base_url if base_url is None else base_url
        if not isinstance(model, str) or not model:
            raise ProviderConfigError(
                f"{factory}(model=...) needs a model name, e.g. {factory}('...')"
            )
        if not base_url.startswith(("http://", "https://")):
            raise ProviderConfigError(
                f"{factory}(base_url={base_url!r}): base_url must start with http:// or "
                "https://, e.g. 'http://127.0.0.1:8080/v1'"
            )
        if not (isinstance(max_retries, int) and max_retries >= 0):
            raise ProviderConfigError(f"{factory}(max_retries={max_retries!r}): use 0 or more")
        if not backoff >= 0:
            raise ProviderConfigError(f"{factory}(backoff={backoff!r}): use 0 or more seconds")
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not timeout > 0:
            raise ProviderConfigError(
                f"{factory}(timeout={timeout!r}): use a positive number of seconds"
            )
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.backoff = float(backoff)
        self._api_key = api_key if api_key is not None else os.environ.get(self.key_env) or None
        self._transport = transport
        self._headers = dict(headers or {})

    def __repr__(self) -> str:
        key = "set" if self._api_key else "none"
        return (
            f"<{type(self).__name__} model={self.model!r} base_url={self.base_url!r} api_key={key}>"
        )

    # -- what subclasses provide -------------------------------------------------------------

    def _auth_headers(self, api_key: str) -> dict[str, str]:
        raise NotImplementedError

    def _static_headers(self) -> dict[str, str]:
        return {}

    def body(self, request: LLMRequest) -> dict[str, Any]:
        """The JSON body that asks for ``request``."""
        raise NotImplementedError

    def _stream_body(self, request: LLMRequest) -> dict[str, Any]:
        body = self.body(request)
        body["stream"] = True
        return body

    def _parse(self, data: Any) -> LLMResponse:
        raise NotImplementedError

    def _assembly(self) -> _Assembly:
        raise NotImplementedError

    def _stream_failure(self, event: str, data: dict[str, Any]) -> ProviderError | None:
        """The error a streamed event reports, if it reports one."""
        raise NotImplementedError

    # -- the interface -----------------------------------------------------------------------

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """One call (retried on 408, 429, 5xx, connection errors and timeouts)."""
        async with self._client() as client:
            data = await self._post_json(client, self.path, self.body(request))
        return self._parse(data)

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamDelta | LLMResponse]:
        """Stream the answer: a :class:`StreamDelta` per text piece, then the response."""
        body = self._stream_body(request)
        async with (
            self._client() as client,
            self._post_stream(client, self.path, body) as response,
        ):
            if not self.is_event_stream(response):
                # The server ignored "stream": read the whole answer and pass it on.
                final = self._parse(self._decode(await response.aread()))
                if final.content:
                    yield StreamDelta(text=final.content)
                yield final
                return
            assembled = self._assembly()
            events = self._sse(response)
            async with aclosing(events):
                async for event, data in events:
                    if not isinstance(data, dict):
                        raise self._malformed(
                            orjson.dumps(data), f"{self.stream_item} is not an object"
                        )
                    failure = self._stream_failure(event, data)
                    if failure is not None:
                        raise failure
                    text = assembled.feed(event, data)
                    if text:
                        yield StreamDelta(text=text)
            yield assembled.response()

    # -- sending -----------------------------------------------------------------------------

    def _client(self) -> httpx2.AsyncClient:
        headers = {"accept": "application/json", **self._static_headers()}
        if self._api_key:
            headers.update(self._auth_headers(self._api_key))
        headers.update(self._headers)
        transport = _Borrowed(self._transport) if self._transport is not None else None
        return httpx2.AsyncClient(
            transport=transport, headers=headers, timeout=httpx2.Timeout(self.timeout)
        )

    async def _post_json(self, client: httpx2.AsyncClient, path: str, body: Any) -> Any:
        """POST ``body``, retrying as configured; the decoded JSON answer."""
        response = await self._send(client, path, body, stream=False)
        return self._decode(response.content)

    @asynccontextmanager
    async def _post_stream(
        self, client: httpx2.AsyncClient, path: str, body: Any
    ) -> AsyncIterator[httpx2.Response]:
        """POST ``body`` and hold the streamed response open (retried until it starts)."""
        response = await self._send(client, path, body, stream=True)
        try:
            yield response
        finally:
            await response.aclose()

    async def _send(
        self, client: httpx2.AsyncClient, path: str, body: Any, *, stream: bool
    ) -> httpx2.Response:
        url = self.base_url + path
        content = orjson.dumps(body)
        model = body.get("model") if isinstance(body, dict) else None
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            last = attempt == attempts - 1
            request = client.build_request(
                "POST", url, content=content, headers={"content-type": "application/json"}
            )
            try:
                response = await client.send(request, stream=stream)
                if not response.is_success and stream:
                    try:
                        await response.aread()
                    finally:
                        await response.aclose()
            except httpx2.TimeoutException as exc:
                if last:
                    raise self._timeout_error(exc, attempts) from exc
                await _sleep(self._backoff_delay(attempt))
                continue
            except httpx2.TransportError as exc:
                if last:
                    raise self._connection_error(exc, attempts) from exc
                await _sleep(self._backoff_delay(attempt))
                continue
            if response.is_success:
                return response
            status = response.status_code
            if not _retryable(status):
                self._raise_status(response, model, attempts=1)
            wait = _retry_after(response.headers)
            if last or (wait is not None and wait > MAX_RETRY_AFTER):
                self._raise_status(response, model, attempts=attempt + 1, asked_wait=wait)
            await _sleep(wait if wait is not None else self._backoff_delay(attempt))
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _backoff_delay(self, attempt: int) -> float:
        delay = min(MAX_BACKOFF, self.backoff * 2.0**attempt)
        return delay * (1 - 0.25 * random.random())

    # -- reading -----------------------------------------------------------------------------

    def _decode(self, content: bytes) -> Any:
        try:
            return orjson.loads(content)
        except orjson.JSONDecodeError as exc:
            raise self._malformed(content, "it is not JSON") from exc

    def _malformed(self, content: bytes | str, why: str) -> ProviderResponseError:
        text = content.decode("utf-8", "replace") if isinstance(content, bytes) else content
        return ProviderResponseError(
            self._scrub(
                f"{self.name}: the server at {self.base_url} answered, but not with "
                f"{self.api_label} ({why}): {_snippet(text)!r}. Check that base_url points at "
                f"{self._endpoint_hint()}."
            )
        )

    def _endpoint_hint(self) -> str:
        return "the right API"

    @staticmethod
    def is_event_stream(response: httpx2.Response) -> bool:
        kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        return kind == "text/event-stream"

    async def _sse(self, response: httpx2.Response) -> AsyncGenerator[tuple[str, Any]]:
        """The server-sent events of ``response``: ``(event name, decoded JSON data)``.

        Stops at a ``[DONE]`` data line. A stall or a dropped connection mid-stream is a
        :class:`ProviderConnectionError` (never retried: text may already be out).
        """
        source = cast(AsyncGenerator[httpx2.ServerSentEvent], aiter(httpx2.EventSource(response)))
        try:
            async with aclosing(source):
                async for sse in source:
                    data = sse.data
                    if not data:
                        continue
                    if data.strip() == "[DONE]":
                        return
                    try:
                        decoded = orjson.loads(data)
                    except orjson.JSONDecodeError as exc:
                        raise self._malformed(data, "a stream event is not JSON") from exc
                    yield sse.event, decoded
        except httpx2.SSEError as exc:
            raise ProviderResponseError(
                self._scrub(f"{self.name}: the stream from {self.base_url} is unreadable: {exc}")
            ) from exc
        except httpx2.TimeoutException as exc:
            raise ProviderConnectionError(
                f"{self.name}: the stream from {self.base_url} stalled: no data within "
                f"timeout={self.timeout} seconds ({type(exc).__name__}). Raise timeout= for "
                "slow servers."
            ) from exc
        except httpx2.TransportError as exc:
            raise ProviderConnectionError(
                self._scrub(
                    f"{self.name}: the connection to {self.base_url} dropped mid-stream "
                    f"({type(exc).__name__}: {exc}). Retry the call."
                )
            ) from exc

    # -- errors ------------------------------------------------------------------------------

    def _scrub(self, text: str) -> str:
        key = self._api_key
        if key and len(key) >= 6:
            text = text.replace(key, "***")
        return text

    def _retries_note(self, attempts: int) -> str:
        return "" if attempts == 1 else f" after {attempts} attempts"

    def _timeout_error(self, exc: httpx2.TimeoutException, attempts: int) -> ProviderError:
        return ProviderConnectionError(
            f"{self.name}: no answer from {self.base_url} within timeout={self.timeout} "
            f"seconds{self._retries_note(attempts)} ({type(exc).__name__}). Raise timeout= "
            "for long generations, or check that the server is up."
        )

    def _connection_error(self, exc: httpx2.TransportError, attempts: int) -> ProviderError:
        cause = self._scrub(str(exc) or type(exc).__name__)
        if isinstance(exc, httpx2.ConnectError):
            return ProviderConnectionError(
                f"{self.name}: could not connect to {self.base_url}"
                f"{self._retries_note(attempts)} ({cause}): nothing is listening at "
                f"{self.base_url}; start the server or fix base_url."
            )
        return ProviderConnectionError(
            f"{self.name}: the connection to {self.base_url} failed"
            f"{self._retries_note(attempts)} ({type(exc).__name__}: {cause}). Check the "
            "server and the network, or raise max_retries=."
        )

    def _detail(self, response: httpx2.Response) -> str:
        """The server's own words about a failed call (code and message), scrubbed."""
        try:
            data = orjson.loads(response.content)
        except orjson.JSONDecodeError:
            return self._scrub(_snippet(response.text)) or response.reason_phrase
        parts: list[str] = []
        if isinstance(data, dict):
            error = data.get("error")
            if isinstance(error, dict):
                code = error.get("code") or error.get("type")
                if isinstance(code, str) and code:
                    parts.append(code)
                message = error.get("message")
                if isinstance(message, str) and message:
                    parts.append(message)
            elif isinstance(error, str) and error:
                parts.append(error)
            for field in ("message", "detail"):
                value = data.get(field)
                if isinstance(value, str) and value and value not in parts:
                    parts.append(value)
        text = ": ".join(parts) if parts else _snippet(response.text)
        return self._scrub(_snippet(text)) or response.reason_phrase

    def _raise_status(
        self,
        response: httpx2.Response,
        model: Any,
        *,
        attempts: int,
        asked_wait: float | None = None,
    ) -> NoReturn:
        status = response.status_code
        reason = response.reason_phrase
        detail = self._detail(response).removeprefix(reason).removeprefix(": ")
        head = f"{status} {reason}" if reason else str(status)
        said = f"{head}: {detail}" if detail else head
        where = self.base_url
        tried = self._retries_note(attempts)
        if status in (401, 403):
            how = f"set {self.key_env} or pass {self.name}(..., api_key=...)"
            if not self._api_key:
                text = (
                    f"{self.name}: the server at {where} wants an API key and none was sent "
                    f"({said}). To send one, {how}."
                )
            elif status == 401:
                text = (
                    f"{self.name}: the server at {where} refused the API key ({said}). "
                    f"Check the key: {how}."
                )
            else:
                text = (
                    f"{self.name}: the server at {where} refused this request for the API key "
                    f"({said}). Check that the key may use model {model!r}; to use another "
                    f"key, {how}."
                )
            raise ProviderAuthError(text, status=status)
        if status == 404:
            if "model" in said.lower():
                raise ModelNotFoundError(
                    f"{self.name}: the server at {where} does not know model {model!r} "
                    f"({said}). Check the model name{self._models_hint()}.",
                    status=status,
                )
            raise ProviderResponseError(
                f"{self.name}: nothing at {response.request.url} ({said}). Check base_url: it "
                f"should point at {self._endpoint_hint()}.",
                status=status,
            )
        if status == 429:
            if asked_wait is not None and asked_wait > MAX_RETRY_AFTER:
                text = (
                    f"{self.name}: rate limited at {where} ({said}); the server asks to wait "
                    f"{asked_wait:.0f} seconds (retry-after), longer than the "
                    f"{MAX_RETRY_AFTER:.0f} seconds trackway waits. Retry later."
                )
            else:
                text = (
                    f"{self.name}: still rate limited at {where}{tried} ({said}). Wait and "
                    f"retry, send fewer requests, or raise max_retries= (now {self.max_retries})."
                )
            raise ProviderRateLimitError(text, status=status)
        if _retryable(status):
            raise ProviderResponseError(
                f"{self.name}: the server at {where} failed{tried} ({said}). It may be "
                f"overloaded or down: retry later, or raise max_retries= (now "
                f"{self.max_retries}).",
                status=status,
            )
        raise ProviderResponseError(
            f"{self.name}: the server at {where} rejected the request ({said}).",
            status=status,
        )

    def _models_hint(self) -> str:
        return ""
