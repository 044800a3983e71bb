"""How an HTTP provider reads an answer: a JSON body decoded and parsed, a body that already
started read within the cap, and a streamed answer taken event by event (server-sent events)
through the provider's :class:`Assembly`, every fault of shape a
:class:`ProviderResponseError` naming the event.

:class:`HTTPReading` is the half of :class:`~trackway.agent.providers._http.HTTPProvider` that reads
what came back; sending, retrying and the calls themselves stay there.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import AbstractAsyncContextManager, aclosing
from typing import TYPE_CHECKING, Any, Protocol, cast

import httpx2
import orjson

from ..messages._messages import LLMResponse, StreamDelta
from ..messages._payload import SHAPE_ERRORS, MalformedPayload
from ._http_errors import HTTPErrors
from ._http_parts import DONE, StreamOutcome, hollow, read_at_most
from ._provider import ProviderError, ProviderResponseError

__all__ = ["Assembly", "HTTPReading"]


class Assembly(Protocol):
    """A streamed answer being put together from its server-sent events.

    Both methods raise :class:`MalformedPayload` on a payload of the wrong shape.
    """

    def feed(self, event: str, data: dict[str, Any]) -> str:
        """Take one event in; the text it adds (maybe empty)."""
        ...

    def response(self) -> LLMResponse: ...

    def finished(self, saw_done: bool) -> bool:
        """Whether the stream reached its terminal event (``saw_done``: a ``[DONE]`` line)."""
        ...


class HTTPReading(HTTPErrors):
    """Reading answers, plain and streamed (the base of ``HTTPProvider``)."""

    path: str

    if TYPE_CHECKING:

        def _post_stream(
            self, client: httpx2.AsyncClient, path: str, body: Any
        ) -> AbstractAsyncContextManager[httpx2.Response]: ...

        def _parse(self, data: Any) -> LLMResponse: ...

        def _assembly(self) -> Assembly: ...

        def _stream_failure(self, event: str, data: dict[str, Any]) -> ProviderError | None: ...

    async def _stream_once(
        self, client: httpx2.AsyncClient, body: dict[str, Any], outcome: StreamOutcome
    ) -> AsyncGenerator[StreamDelta | LLMResponse]:
        """One streamed attempt; an unfinished stream is left in ``outcome`` (not raised),
        so the caller decides whether to send it again."""
        async with self._post_stream(client, self.path, body) as response:
            if not self.is_event_stream(response):
                # The server ignored "stream": read the whole answer and pass it on.
                final = self._read_answer(self._decode(await self._read_started(response)))
                if final.content:
                    yield StreamDelta(text=final.content)
                yield final
                return
            assembled = self._assembly()
            events = self._sse(response)
            number = 0
            saw_done = False
            async with aclosing(events):
                async for event, data in events:
                    if data is DONE:
                        saw_done = True
                        break
                    number += 1
                    if not isinstance(data, dict):
                        raise self._malformed_event(
                            number, event, data, f"{self.stream_item} is not an object"
                        )
                    try:
                        failure = self._stream_failure(event, data)
                        if failure is not None:
                            raise failure
                        text = assembled.feed(event, data)
                    except ProviderError:
                        raise
                    except MalformedPayload as exc:
                        raise self._malformed_event(number, event, data, exc.why) from exc
                    except SHAPE_ERRORS as exc:
                        why = f"{type(exc).__name__}: {exc}"
                        raise self._malformed_event(number, event, data, why) from exc
                    if text:
                        outcome.yielded = True
                        yield StreamDelta(text=text)
            if not assembled.finished(saw_done):
                outcome.unfinished = number
                return
            try:
                final = assembled.response()
            except ProviderError:
                raise
            except (MalformedPayload, *SHAPE_ERRORS) as exc:
                why = exc.why if isinstance(exc, MalformedPayload) else repr(exc)
                raise ProviderResponseError(
                    self._scrub(
                        f"{self.name}: the stream from {self.base_url} ended with an answer "
                        f"that is not {self.api_label} ({why}). Check that base_url points "
                        f"at {self._endpoint_hint()}."
                    ),
                    quoted=(why,),
                ) from exc
            empty = hollow(final)
            if empty is not None:
                outcome.unfinished = number
                outcome.hollow = empty
                return
            yield final

    def _read_answer(self, data: Any) -> LLMResponse:
        """The response in a decoded body; a body of the wrong shape is a response error."""
        try:
            return self._parse(data)
        except ProviderError:
            raise
        except MalformedPayload as exc:
            raise self._malformed(orjson.dumps(data), exc.why) from exc
        except SHAPE_ERRORS as exc:
            why = f"{type(exc).__name__}: {exc}"
            raise self._malformed(orjson.dumps(data), why) from exc

    async def _read_started(self, response: httpx2.Response) -> bytes:
        """The whole body of a response that already started (no retry from here on)."""
        try:
            content, cut = await read_at_most(response, self.max_response_body)
        except httpx2.TransportError as exc:
            raise self._broken_stream(exc) from exc
        if cut:
            raise self._too_large(response)
        return content

    def _decode(self, content: bytes) -> Any:
        try:
            return orjson.loads(content)
        except orjson.JSONDecodeError as exc:
            raise self._malformed(content, "it is not JSON") from exc

    @staticmethod
    def is_event_stream(response: httpx2.Response) -> bool:
        kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        return kind == "text/event-stream"

    async def _sse(self, response: httpx2.Response) -> AsyncGenerator[tuple[str, Any]]:
        """The server-sent events of ``response``: ``(event name, decoded JSON data)``.

        Stops at a ``[DONE]`` data line. A stall or a dropped connection mid-stream is a
        :class:`ProviderConnectionError` (never retried: text may already be out). One event
        may hold at most ``max_response_body`` bytes.
        """
        source = cast(
            AsyncGenerator[httpx2.ServerSentEvent],
            aiter(httpx2.EventSource(response, max_event_size=self.max_response_body)),
        )
        try:
            async with aclosing(source):
                async for sse in source:
                    data = sse.data
                    if not data:
                        continue
                    if data.strip() == "[DONE]":
                        yield sse.event, DONE
                        return
                    try:
                        decoded = orjson.loads(data)
                    except orjson.JSONDecodeError as exc:
                        raise self._malformed(data, "a stream event is not JSON") from exc
                    yield sse.event, decoded
        except httpx2.SSEError as exc:
            said = self._quote(str(exc))
            raise ProviderResponseError(
                self._scrub(
                    f"{self.name}: the stream from {self.base_url} is unreadable: "
                    f"{said} One event may hold at most "
                    f"max_response_body={self.max_response_body} bytes: raise it if the "
                    "server sends larger events."
                ),
                quoted=(said,),
            ) from exc
        except httpx2.TransportError as exc:
            raise self._broken_stream(exc) from exc
