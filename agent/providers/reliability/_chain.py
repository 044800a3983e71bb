"""A fallback chain: providers tried in order, each with its own retry policy and circuit
breaker, every decision kept for the receipt.

The answering provider's own description of the call (``via``) is extended with ``chain``
(the providers' names, in order) and ``attempts``: one entry per decision, e.g.
``{"provider": "openai", "outcome": "error", "error": "ProviderResponseError", "status":
529}``, ``{"provider": "anthropic", "outcome": "skipped", "breaker": "open"}`` and last
``{"provider": "backup", "outcome": "answered"}``. A replay hands the recorded ``via`` back,
so it is exact.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import aclosing
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import anyio

from ...messages._messages import LLMRequest, LLMResponse, StreamDelta
from ...messages._usage import via
from .._provider import (
    ContextLengthError,
    Provider,
    ProviderConfigError,
    ProviderConnectionError,
    ProviderRateLimitError,
    ProviderResponseError,
)
from ._policy import BreakerState, CircuitBreaker, RetryPolicy

__all__ = ["CircuitOpenError", "FallbackProvider", "transient", "with_fallback"]

Trigger = tuple[type[BaseException], ...] | Callable[[BaseException], bool]


class CircuitOpenError(ProviderConnectionError):
    """Every provider of a fallback chain was skipped by its open circuit breaker, so no
    request was sent; ``attempts`` lists the decisions. Wait for the cool-down, or add a
    provider to the chain."""

    attempts: list[dict[str, Any]]


def transient(error: BaseException) -> bool:
    """The default trigger of a fallback: nothing answered (connection refused, timeout),
    still rate limited, or the server failed (408 or 5xx, 529 "overloaded" included). A
    request the server refused (4xx, a context overflow) would fail the same way elsewhere."""
    if isinstance(error, ProviderConnectionError | ProviderRateLimitError):
        return True
    if isinstance(error, ProviderResponseError) and not isinstance(error, ContextLengthError):
        return error.status is not None and (error.status == 408 or error.status >= 500)
    return False


async def _sleep(seconds: float) -> None:
    """The wait between two attempts (a seam: tests replace it to record the delays)."""
    await anyio.sleep(seconds)


_last: ContextVar[tuple[FallbackProvider, Provider, list[dict[str, Any]]] | None] = ContextVar(
    "trackway_fallback_last", default=None
)


@dataclass
class _Call:
    """One call through the chain: its attempts, the last error, whether to move on."""

    attempts: list[dict[str, Any]] = field(default_factory=list)
    error: BaseException | None = None
    moved_on: bool = False


def _each(value: Any, n: int, kind: type, what: str) -> list[Any]:
    if value is None or isinstance(value, kind):
        return [value] * n
    items = list(value)
    if len(items) != n or not all(v is None or isinstance(v, kind) for v in items):
        raise ProviderConfigError(
            f"with_fallback({what}=...) takes one {kind.__name__} for every provider, or a "
            f"list of {n} (one per provider, None for none), not {value!r}"
        )
    return items


class FallbackProvider:
    """Providers tried in order (see :func:`with_fallback`); a provider itself."""

    def __init__(
        self,
        providers: Sequence[Provider],
        *,
        on: Trigger = transient,
        retry: RetryPolicy | Sequence[RetryPolicy | None] | None = None,
        breaker: CircuitBreaker | Sequence[CircuitBreaker | None] | None = None,
    ) -> None:
        n = len(providers)
        for p in providers:
            if not callable(getattr(p, "complete", None)) or not isinstance(
                getattr(p, "name", None), str
            ):
                raise ProviderConfigError(
                    f"with_fallback(...) chains providers (a name and an async complete()), "
                    f"not {p!r}"
                )
        if isinstance(on, tuple):
            if not all(isinstance(c, type) and issubclass(c, BaseException) for c in on):
                raise ProviderConfigError(
                    f"with_fallback(on={on!r}) takes a tuple of exception classes (e.g. "
                    "(ProviderConnectionError,)) or a function of the error"
                )
        elif not callable(on):
            raise ProviderConfigError(
                f"with_fallback(on={on!r}) takes a tuple of exception classes or a function "
                "of the error returning True to fall back"
            )
        self.providers = tuple(providers)
        self.name = "fallback"
        self._on = on
        self._retry = [r or RetryPolicy() for r in _each(retry, n, RetryPolicy, "retry")]
        self._breakers = [
            None if b is None else BreakerState(b)
            for b in _each(breaker, n, CircuitBreaker, "breaker")
        ]
        kinds = {getattr(p, "native_output", None) for p in self.providers}
        if len(kinds) == 1 and None not in kinds:  # every provider asks for it the same way
            self.native_output = kinds.pop()
        if any(callable(getattr(p, "stream", None)) for p in self.providers):
            self.stream = self._stream

    def __repr__(self) -> str:
        return f"<FallbackProvider {[p.name for p in self.providers]}>"

    def breaker_state(self, index: int) -> str:
        """``"closed"``, ``"open"`` or ``"half-open"`` (a probe is out) for provider ``index``
        (``"none"`` without a breaker)."""
        state = self._breakers[index]
        if state is None:
            return "none"
        if state.opened_at is None:
            return "closed"
        return "half-open" if state.probing else "open"

    def _falls_back(self, error: BaseException) -> bool:
        on = self._on
        return isinstance(error, on) if isinstance(on, tuple) else bool(on(error))

    def describe_call(self, streamed: bool) -> dict[str, Any] | None:
        """The answering provider's ``via``, with the chain and the attempts of this call."""
        last = _last.get()
        if last is None or last[0] is not self:
            return {"provider": self.name, "chain": [p.name for p in self.providers]}
        inner = via(last[1], streamed) or {"provider": last[1].name}
        return {**inner, "chain": [p.name for p in self.providers], "attempts": last[2]}

    async def complete(self, request: LLMRequest) -> LLMResponse:
        call = _Call()
        attempts = call.attempts
        async with aclosing(self._tries(call)) as tries:
            async for index, provider, probe, retry in tries:
                try:
                    response = await provider.complete(request)
                except BaseException as exc:
                    await self._failed(exc, index, provider, probe, retry, call)
                    continue
                self._answered(index, provider, probe, attempts)
                return response
        raise AssertionError("unreachable: _tries raises when every provider failed")

    async def _stream(self, request: LLMRequest) -> AsyncIterator[StreamDelta | LLMResponse]:
        call = _Call()
        attempts = call.attempts
        async with aclosing(self._tries(call)) as tries:
            async for index, provider, probe, retry in tries:
                started = False
                try:
                    stream = getattr(provider, "stream", None)
                    if not callable(stream):
                        response = await provider.complete(request)
                    else:
                        final: LLMResponse | None = None
                        async with aclosing(stream(request)) as pieces:
                            async for piece in pieces:
                                if isinstance(piece, LLMResponse):
                                    final = piece
                                else:
                                    started = True
                                    yield piece
                        if final is None:
                            raise ProviderResponseError(
                                f"provider {provider.name!r} ended a stream without its final "
                                "response: retry the call",
                                quoted=(),
                            )
                        response = final
                except BaseException as exc:
                    if started:  # text was given out: never sent again elsewhere
                        if isinstance(exc, Exception):
                            self._verdict(index, probe, ok=False)
                        elif probe and (state := self._breakers[index]) is not None:
                            state.release()
                        raise
                    await self._failed(exc, index, provider, probe, retry, call)
                    continue
                self._answered(index, provider, probe, attempts)
                yield response
                return

    async def _tries(self, call: _Call) -> AsyncGenerator[tuple[int, Provider, bool, int]]:
        """Each attempt to make, in order: provider index, provider, probe?, retry number.
        Raises when none is left (the last error, or :class:`CircuitOpenError`)."""
        attempts = call.attempts
        for index, provider in enumerate(self.providers):
            policy = self._retry[index]
            for retry in range(policy.attempts):
                state = self._breakers[index]
                admitted = "closed" if state is None else state.admit()
                if admitted is None:
                    attempts.append(
                        {"provider": provider.name, "outcome": "skipped", "breaker": "open"}
                    )
                    break
                call.moved_on = False
                yield index, provider, admitted == "half-open", retry
                if call.moved_on:
                    break
        error = call.error
        names = ", ".join(p.name for p in self.providers)
        if error is None:
            raised = CircuitOpenError(
                f"every provider of the fallback chain ({names}) has an open circuit breaker, "
                "so nothing was sent: wait for the cool-down, or add a provider to the chain",
                quoted=(),
            )
            raised.attempts = attempts
            raise raised
        error.attempts = attempts  # type: ignore[attr-defined]
        error.add_note(f"fallback chain ({names}) attempts: {attempts}")
        raise error

    def _verdict(self, index: int, probe: bool, *, ok: bool) -> str | None:
        state = self._breakers[index]
        if state is None:
            return None
        if ok:
            state.success()
            return "closed" if probe else None
        return "opened" if state.failure() else None

    def _answered(
        self, index: int, provider: Provider, probe: bool, attempts: list[dict[str, Any]]
    ) -> None:
        entry: dict[str, Any] = {"provider": provider.name, "outcome": "answered"}
        if (closed := self._verdict(index, probe, ok=True)) is not None:
            entry["breaker"] = closed
        attempts.append(entry)
        _last.set((self, provider, attempts))

    async def _failed(
        self,
        exc: BaseException,
        index: int,
        provider: Provider,
        probe: bool,
        retry: int,
        call: _Call,
    ) -> None:
        """Record a failed attempt; re-raise what the chain does not fall back on; wait
        before a retry of the same provider."""
        if not isinstance(exc, Exception) or not self._falls_back(exc):
            if probe and self._breakers[index] is not None:
                self._breakers[index].release()  # type: ignore[union-attr]
            raise exc
        entry: dict[str, Any] = {
            "provider": provider.name,
            "outcome": "error",
            "error": type(exc).__name__,
        }
        status = getattr(exc, "status", None)
        if isinstance(status, int):
            entry["status"] = status
        if (opened := self._verdict(index, probe, ok=False)) is not None:
            entry["breaker"] = opened
        call.error = exc
        attempts = call.attempts
        policy = self._retry[index]
        if opened is None and retry + 1 < policy.attempts:
            asked = getattr(exc, "retry_after", None)
            wait = policy.wait(retry, asked if isinstance(asked, int | float) else None)
            if wait is None:
                entry["retry_after"] = asked
                call.moved_on = True
            else:
                entry["wait"] = round(wait, 3)
                attempts.append(entry)
                await _sleep(wait)
                return
        else:
            call.moved_on = True
        attempts.append(entry)


def with_fallback(
    provider: Provider,
    *,
    fallback: Sequence[Provider],
    on: Trigger = transient,
    retry: RetryPolicy | Sequence[RetryPolicy | None] | None = None,
    breaker: CircuitBreaker | Sequence[CircuitBreaker | None] | None = None,
) -> FallbackProvider:
    """``provider``, then each of ``fallback`` in turn when a call fails with an error ``on``
    names (a tuple of exception classes, or a function of the error; by default
    :func:`transient`: connection errors, rate limits, 408 and 5xx).

    ``retry`` and ``breaker`` are one :class:`RetryPolicy` / :class:`CircuitBreaker` for every
    provider, or a list with one per provider (``None``: no retry, no breaker). Each provider
    keeps its own breaker state, on this object, across calls and runs.
    """
    given: object = fallback
    if isinstance(given, str) or not isinstance(given, Sequence):
        raise ProviderConfigError(
            f"with_fallback(fallback={fallback!r}) takes a list of providers to try in turn"
        )
    return FallbackProvider([provider, *fallback], on=on, retry=retry, breaker=breaker)
