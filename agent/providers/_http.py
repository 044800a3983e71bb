"""What the HTTP providers share: one client per call, retries, and the error boundary.

Every HTTP failure is translated into the :class:`ProviderError` family once, with
``raise ... from`` so the transport's own exception stays on the chain (the messages are
built in ``_http_errors``):

- no key for the vendor's own API -> :class:`MissingAPIKeyError`, before any connection;
- 401/403 -> :class:`ProviderAuthError` (names the environment variable to set);
- 404 naming a model -> :class:`ModelNotFoundError` (names the model and the base URL);
- 429 still after the retries -> :class:`ProviderRateLimitError`;
- 408/5xx still after the retries, other 4xx, a body that is not a valid response (not JSON,
  the wrong shape, larger than ``max_response_body``) -> :class:`ProviderResponseError`;
- refused connection, network failure, timeout (after the retries) ->
  :class:`ProviderConnectionError`.

Retries: 408, 429, 5xx, connection errors and timeouts are retried ``max_retries`` times
(a read timeout only with ``retry_read_timeouts=True``: the server had the request and may
still be generating, so by default it is not sent again),
waiting ``backoff * 2**attempt`` seconds (less up to a quarter, jitter) or what the server
asked for in ``retry-after-ms`` / ``retry-after`` (seconds or an HTTP date). A streamed call is
retried only until its response starts: once text was yielded it is never sent again.

Bodies are read as streams with a running count: an error body stops at ``max_error_body``
bytes (the rest is never read), an answer larger than ``max_response_body`` is refused, and
one server-sent event may hold at most ``max_response_body`` bytes.

The API key never appears in a message. Server text and exception text are scrubbed before
they are quoted, and only then cut to a snippet: the key itself, percent-encoded (``quote``
and ``quote_plus`` forms, either hex case), JSON-escaped, base64-encoded (at any alignment,
standard or URL-safe) and split across line breaks, are all replaced by ``***``, and so is
any run of 8 characters or more of one of these forms (what is left of a key cut in two).

Parsers report a payload of the wrong shape with :class:`MalformedPayload`; the provider
turns it into a :class:`ProviderResponseError` that names the event and quotes it.

The key scrubbing lives in ``_scrub``, the payload shape checks in ``_payload``, reading an
answer (plain or streamed, event by event) in ``_http_read``.
"""

from __future__ import annotations

import os
import random
from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing, asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
import orjson

from ..messages._messages import LLMRequest, LLMResponse, StreamDelta
from ..messages._payload import MalformedPayload as MalformedPayload  # (subclasses raise it)
from ..messages._payload import parse_arguments
from ..messages._usage import safe_url
from ._http_errors import MAX_RETRY_AFTER, Answer, retryable
from ._http_parts import Borrowed, StreamOutcome, positive_bytes, read_at_most, retry_after
from ._http_read import Assembly, HTTPReading
from ._provider import MissingAPIKeyError, ProviderConfigError, ProviderError
from ._scrub import Scrubber

__all__ = ["HTTPProvider", "parse_arguments"]

MAX_BACKOFF = 30.0
"""The longest wait between two attempts when the server names none (seconds)."""
MAX_ERROR_BODY = 64 * 1024
"""Bytes of an error response read by default (``max_error_body``)."""
MAX_RESPONSE_BODY = 32 * 1024 * 1024
"""The largest answer read by default (``max_response_body``), in bytes."""


async def _sleep(seconds: float) -> None:
    """The wait between attempts (a seam: tests replace it to record the delays)."""
    await anyio.sleep(seconds)


class HTTPProvider(HTTPReading):
    """The shared half of an HTTP provider: configuration, sending, retrying, errors,
    and the ``complete``/``stream`` calls themselves.

    Subclasses set the class attributes below and implement :meth:`_auth_headers`,
    :meth:`body`, :meth:`_parse`, :meth:`_assembly` and :meth:`_stream_failure`: they
    build the wire body and read the answer, raising :class:`MalformedPayload` on a
    payload of the wrong shape.
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
        max_error_body: int = MAX_ERROR_BODY,
        max_response_body: int = MAX_RESPONSE_BODY,
        retry_read_timeouts: bool = False,
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
        self.max_error_body = positive_bytes(
            factory, "max_error_body", max_error_body, MAX_ERROR_BODY
        )
        self.max_response_body = positive_bytes(
            factory, "max_response_body", max_response_body, MAX_RESPONSE_BODY
        )
        self.retry_read_timeouts = bool(retry_read_timeouts)
        self._env_key_withheld = False
        at_vendor = urlsplit(self.base_url).hostname == urlsplit(self.default_base_url).hostname
        if api_key is not None:
            self._api_key: str | None = api_key or None
        else:
            env_key = os.environ.get(self.key_env) or None
            # An environment key goes only to the vendor's own host: a key for api.openai.com
            # must not leak to whatever base_url points at. api_key= sends one anywhere.
            if env_key and not at_vendor:
                self._env_key_withheld = True
                env_key = None
            self._api_key = env_key
        # The vendor's own API always wants a key: without one (and without api_key="" or an
        # auth header, which say how on purpose) the first call is refused before connecting.
        auth_names = {"authorization", *(name.lower() for name in self._auth_headers("-"))}
        self._key_missing = (
            at_vendor
            and api_key is None
            and self._api_key is None
            and not any(name.lower() in auth_names for name in headers or {})
        )
        if transport is not None and not isinstance(transport, httpx2.AsyncBaseTransport):
            raise ProviderConfigError(
                f"{self.name}(transport={transport!r}): not an httpx2 async transport. The "
                "providers send with an httpx2.AsyncClient, so pass httpx2.MockTransport("
                "handler) in tests or httpx2.AsyncHTTPTransport(...) (from the httpx2 "
                "package; a transport from the httpx package, or a sync one, cannot serve it)"
            )
        self._transport = transport
        self._headers = dict(headers or {})
        self._scrubber_cache: tuple[Scrubber | None] | None = None

    def describe_call(self, streamed: bool) -> dict[str, Any]:
        """How a call is made, for its receipt: kind, base URL without credentials, stream."""
        return {"provider": self.name, "base_url": safe_url(self.base_url), "stream": streamed}

    def _withheld_env_key(self) -> bool:
        return self._env_key_withheld

    def _missing_key(self) -> MissingAPIKeyError:
        """The refusal of a call to the vendor's own API without a key (nothing was sent)."""
        return MissingAPIKeyError(
            f"{self.name}: no API key for {self.base_url}, so nothing was sent: set "
            f"{self.key_env} (read when {self.name}(...) is called) or pass "
            f"{self.name}(..., api_key=...). A server that needs no key (a local one) takes "
            "base_url= instead."
        )

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

    def wire(self, request: LLMRequest, *, stream: bool = False) -> bytes:
        """The exact HTTP body this provider sends for ``request`` (streamed or not).

        With ``served_at`` it shows what went over the wire for any recorded call:
        ``provider.wire(served_at(rec, k), stream=receipts(rec)[k - 1]["via"]["stream"])``.
        """
        return orjson.dumps(self._stream_body(request) if stream else self.body(request))

    def _parse(self, data: Any) -> LLMResponse:
        raise NotImplementedError

    def _assembly(self) -> Assembly:
        raise NotImplementedError

    def _stream_failure(self, event: str, data: dict[str, Any]) -> ProviderError | None:
        """The error a streamed event reports, if it reports one."""
        raise NotImplementedError

    # -- the interface -----------------------------------------------------------------------

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """One call (retried on 408, 429, 5xx, connection errors and timeouts)."""
        if self._key_missing:
            raise self._missing_key()
        async with self._client() as client:
            data = await self._post_json(client, self.path, self.body(request))
        return self._read_answer(data)

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamDelta | LLMResponse]:
        """Stream the answer: a :class:`StreamDelta` per text piece, then the response.

        A stream that ends before its terminal event is a :class:`ProviderResponseError`.
        While it has yielded no text it is retried like a connection error (llama.cpp's
        server sends an empty stream on a context overflow and on some tool calls); once
        text is out, never.
        """
        if self._key_missing:
            raise self._missing_key()
        body = self._stream_body(request)
        attempts = self.max_retries + 1
        async with self._client() as client:
            for attempt in range(attempts):
                outcome = StreamOutcome()
                pieces = self._stream_once(client, body, outcome)
                async with aclosing(pieces):
                    async for piece in pieces:
                        yield piece
                if outcome.unfinished is None:
                    return
                if outcome.yielded or attempt == attempts - 1:
                    raise self._unfinished(outcome, attempt + 1)
                await _sleep(self._backoff_delay(attempt))

    # -- sending -----------------------------------------------------------------------------

    def _client(self) -> httpx2.AsyncClient:
        headers = {"accept": "application/json", **self._static_headers()}
        if self._api_key:
            headers.update(self._auth_headers(self._api_key))
        headers.update(self._headers)
        transport = Borrowed(self._transport) if self._transport is not None else None
        return httpx2.AsyncClient(
            transport=transport, headers=headers, timeout=httpx2.Timeout(self.timeout)
        )

    async def _post_json(self, client: httpx2.AsyncClient, path: str, body: Any) -> Any:
        """POST ``body``, retrying as configured; the decoded JSON answer."""
        answer = await self._send(client, path, body, stream=False)
        return self._decode(answer.content)

    @asynccontextmanager
    async def _post_stream(
        self, client: httpx2.AsyncClient, path: str, body: Any
    ) -> AsyncIterator[httpx2.Response]:
        """POST ``body`` and hold the streamed response open (retried until it starts)."""
        response = (await self._send(client, path, body, stream=True)).response
        try:
            yield response
        finally:
            await response.aclose()

    async def _send(
        self, client: httpx2.AsyncClient, path: str, body: Any, *, stream: bool
    ) -> Answer:
        url = self.base_url + path
        content = orjson.dumps(body)  # the bytes wire() gives
        model = body.get("model") if isinstance(body, dict) else None
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            last = attempt == attempts - 1
            request = client.build_request(
                "POST", url, content=content, headers={"content-type": "application/json"}
            )
            try:
                answer = await self._exchange(client, request, stream=stream)
            except httpx2.TimeoutException as exc:
                if last or (isinstance(exc, httpx2.ReadTimeout) and not self.retry_read_timeouts):
                    raise self._timeout_error(exc, attempt + 1) from exc
                await _sleep(self._backoff_delay(attempt))
                continue
            except httpx2.TransportError as exc:
                if last:
                    raise self._connection_error(exc, attempts) from exc
                await _sleep(self._backoff_delay(attempt))
                continue
            response = answer.response
            if response.is_success:
                if answer.cut:
                    raise self._too_large(response)
                return answer
            status = response.status_code
            if not retryable(status):
                self._raise_status(answer, model, attempts=1)
            wait = retry_after(response.headers)
            if last or (wait is not None and wait > MAX_RETRY_AFTER):
                try:
                    self._raise_status(answer, model, attempts=attempt + 1, asked_wait=wait)
                except ProviderError as exc:  # a fallback chain's retry policy reads it
                    exc.retry_after = wait
                    raise
            await _sleep(wait if wait is not None else self._backoff_delay(attempt))
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _exchange(
        self, client: httpx2.AsyncClient, request: httpx2.Request, *, stream: bool
    ) -> Answer:
        """Send ``request`` and read its body within the caps; a successful stream is
        returned unread and open."""
        response = await client.send(request, stream=True)
        if response.is_success and stream:
            return Answer(response)
        try:
            limit = self.max_response_body if response.is_success else self.max_error_body
            content, cut = await read_at_most(response, limit)
        finally:
            await response.aclose()
        return Answer(response, content, cut)

    def _backoff_delay(self, attempt: int) -> float:
        delay = min(MAX_BACKOFF, self.backoff * 2.0**attempt)
        return delay * (1 - 0.25 * random.random())
