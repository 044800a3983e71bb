"""A retry policy and a circuit breaker, one of each per provider of a fallback chain.

Both are plain settings objects; the state a breaker keeps (the failures it counted, when it
opened) lives in :class:`BreakerState`, one per provider, so a policy can be shared.
"""

from __future__ import annotations

import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from .._provider import ProviderConfigError

__all__ = ["BreakerState", "CircuitBreaker", "RetryPolicy"]


@dataclass(frozen=True)
class RetryPolicy:
    """How often one provider is tried before the chain moves on.

    ``attempts`` calls in all (1: no retry); between two, ``backoff * 2**n`` seconds (less up
    to ``jitter`` of it, at most ``max_backoff``), or what the server asked for in
    ``retry-after`` when ``honour_retry_after`` (an ask longer than ``max_retry_after`` is
    not waited for: the chain moves on). Only errors the chain falls back on are retried.
    """

    attempts: int = 1
    backoff: float = 0.5
    max_backoff: float = 30.0
    jitter: float = 0.25
    honour_retry_after: bool = True
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if not isinstance(self.attempts, int) or self.attempts < 1:
            raise ProviderConfigError(
                f"RetryPolicy(attempts={self.attempts!r}): attempts counts every call, the "
                "first included, so it is an int of 1 or more (1: no retry)"
            )
        for name in ("backoff", "max_backoff", "max_retry_after"):
            if getattr(self, name) < 0:
                raise ProviderConfigError(
                    f"RetryPolicy({name}={getattr(self, name)!r}): a wait cannot be negative"
                )
        if not 0 <= self.jitter <= 1:
            raise ProviderConfigError(
                f"RetryPolicy(jitter={self.jitter!r}): jitter is the share of a wait taken "
                "off at random, between 0 and 1"
            )

    def wait(self, retry: int, asked: float | None) -> float | None:
        """Seconds to wait before retry number ``retry`` (0-based); ``None``: the server
        asked for longer than ``max_retry_after``, so this provider is not retried."""
        if asked is not None and self.honour_retry_after:
            return None if asked > self.max_retry_after else max(0.0, asked)
        delay = min(self.max_backoff, self.backoff * 2.0**retry)
        return delay * (1 - self.jitter * random.random())


@dataclass(frozen=True)
class CircuitBreaker:
    """Opens after ``failures`` failures within ``within`` seconds: while open, calls to
    the provider are skipped at once (no request). After ``cool_down`` seconds one call is
    let through (half-open): its success closes the breaker, its failure opens it again.

    ``clock`` is a monotonic clock in seconds (tests pass their own).
    """

    failures: int = 5
    within: float = 60.0
    cool_down: float = 30.0
    clock: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        if not isinstance(self.failures, int) or self.failures < 1:
            raise ProviderConfigError(
                f"CircuitBreaker(failures={self.failures!r}): the breaker opens after this "
                "many failures, an int of 1 or more"
            )
        if self.within <= 0 or self.cool_down < 0:
            raise ProviderConfigError(
                f"CircuitBreaker(within={self.within!r}, cool_down={self.cool_down!r}): "
                "within is a window of seconds above 0, cool_down seconds of 0 or more"
            )


@dataclass
class BreakerState:
    """One provider's breaker: the failure times in the window, and when it opened."""

    policy: CircuitBreaker
    failed_at: deque[float] = field(default_factory=deque)
    opened_at: float | None = None
    probing: bool = False

    def admit(self) -> str | None:
        """``"closed"`` or ``"half-open"`` (a probe) when a call may go, ``None`` when the
        breaker is open and the provider is skipped."""
        if self.opened_at is None:
            return "closed"
        if self.probing:  # one probe at a time; the others skip
            return None
        if self.policy.clock() - self.opened_at >= self.policy.cool_down:
            self.probing = True
            return "half-open"
        return None

    def success(self) -> None:
        self.failed_at.clear()
        self.opened_at = None
        self.probing = False

    def failure(self) -> bool:
        """Count a failure; ``True`` when it opened the breaker."""
        now = self.policy.clock()
        if self.probing or self.opened_at is not None:  # a failed probe opens it again
            self.opened_at, self.probing = now, False
            return True
        self.failed_at.append(now)
        while self.failed_at and now - self.failed_at[0] > self.policy.within:
            self.failed_at.popleft()
        if len(self.failed_at) >= self.policy.failures:
            self.opened_at = now
            self.failed_at.clear()
            return True
        return False

    def release(self) -> None:
        """A probe that ended without a verdict (cancelled): the next call may probe."""
        self.probing = False
