"""The one provider interface, and the errors every provider raises.

A provider turns an :class:`LLMRequest` into an :class:`LLMResponse`. Streaming providers
also implement ``stream``, an async iterator of :class:`StreamDelta` pieces that ends with
the :class:`LLMResponse`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from trackway.engine import ConfigurationError, StageError, TrackwayError

from ..messages._messages import LLMRequest, LLMResponse, StreamDelta

__all__ = [
    "ContextLengthError",
    "MissingAPIKeyError",
    "ModelNotFoundError",
    "Provider",
    "ProviderAuthError",
    "ProviderConfigError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderRateLimitError",
    "ProviderRequestError",
    "ProviderResponseError",
    "StreamingProvider",
]


@runtime_checkable
class Provider(Protocol):
    """Anything with a ``name`` and an async ``complete(request) -> LLMResponse``."""

    name: str

    async def complete(self, request: LLMRequest) -> LLMResponse: ...


@runtime_checkable
class StreamingProvider(Provider, Protocol):
    """A provider that can also stream: deltas, then the full response last."""

    def stream(self, request: LLMRequest) -> AsyncIterator[StreamDelta | LLMResponse]: ...


class ProviderError(TrackwayError):
    """A provider call failed; the message says what to do about it.

    Raised from ``agent.run(...)`` as itself (catch ``ProviderError`` around it); the
    engine's wrapping is kept on ``stage_error``: the :class:`StageError` of the
    ``call-llm`` stage, with its ``stage_path`` and the run's ``snapshot``.

    ``quoted`` names the parts of the message that quote the server (or the transport):
    under a redaction policy with ``errors=True`` (``conversation_redaction()``) what the
    run keeps masks just those, since a server's error can echo the request.

    ::

        ProviderError
        ├── ProviderConfigError      a provider built with an option it cannot take
        ├── ProviderRequestError     a request this provider cannot send as it is
        ├── ProviderAuthError        the API key was refused
        │   └── MissingAPIKeyError   no key for the vendor's own API: nothing was sent
        │                            (a ProviderConfigError too)
        ├── ModelNotFoundError       the server does not know the model
        ├── ProviderRateLimitError   still rate limited after the retries
        ├── ProviderConnectionError  nothing answered, or the call timed out
        ├── ProviderResponseError    an error answer, or a body that is not a response
        │   └── ContextLengthError   the request does not fit the model's context
        └── MockExhaustedError       the mock provider's script ran out
    """

    retry_after: float | None = None
    """Seconds the server asked to wait (``retry-after``) in its last answer, if it did."""

    stage_error: StageError | None = None
    """The engine's :class:`StageError` around this failure, when it came out of a run."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        quoted: tuple[str, ...] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        if quoted is not None:  # what the server (or the transport) said, as quoted here
            self.quoted = quoted


class ProviderConfigError(ProviderError, ConfigurationError):
    """A provider was built with an option it cannot take (a bad URL, a negative retry)."""


class ProviderRequestError(ProviderError, ValueError):
    """A request this provider cannot send as it is (e.g. a tool result without its id)."""


class ProviderAuthError(ProviderError):
    """The API key was refused (401/403)."""


class MissingAPIKeyError(ProviderAuthError, ProviderConfigError):
    """No API key for the vendor's own endpoint (no ``api_key=``, no environment variable):
    refused at the first call, before any connection, so it never looks like a network
    fault. A server that needs no key (a local one, at another ``base_url``) is not checked;
    ``api_key=""`` says on purpose that none is sent."""


class ModelNotFoundError(ProviderError):
    """The server does not know the model."""


class ProviderRateLimitError(ProviderError):
    """Still rate limited (429) after the retries."""


class ProviderConnectionError(ProviderError):
    """Nothing answered at the base URL, or the call timed out."""


class ProviderResponseError(ProviderError):
    """The server answered with an error or a body that is not a valid response."""


class ContextLengthError(ProviderResponseError):
    """The server said the request does not fit the model's context window."""
