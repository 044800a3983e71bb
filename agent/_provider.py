"""The one provider interface, and the errors every provider raises.

A provider turns an :class:`LLMRequest` into an :class:`LLMResponse`. Streaming providers
also implement ``stream``, an async iterator of :class:`StreamDelta` pieces that ends with
the :class:`LLMResponse`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from trackway.engine import TrackwayError

from ._messages import LLMRequest, LLMResponse, StreamDelta

__all__ = [
    "ModelNotFoundError",
    "Provider",
    "ProviderAuthError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderRateLimitError",
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
    """A provider call failed; the message says what to do about it."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ProviderAuthError(ProviderError):
    """The API key was refused (401/403)."""


class ModelNotFoundError(ProviderError):
    """The server does not know the model."""


class ProviderRateLimitError(ProviderError):
    """Still rate limited (429) after the retries."""


class ProviderConnectionError(ProviderError):
    """Nothing answered at the base URL, or the call timed out."""


class ProviderResponseError(ProviderError):
    """The server answered with an error or a body that is not a valid response."""
