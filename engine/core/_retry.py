"""Retry policy for a stage: re-run on failure with backoff; only the final attempt commits."""

from __future__ import annotations

from dataclasses import dataclass

from ._errors import ConfigurationError

__all__ = ["Retry"]


@dataclass(frozen=True)
class Retry:
    """Re-run a failing stage up to ``attempts`` times in all.

    The wait before attempt ``n + 1`` is ``backoff * factor ** (n - 1)`` seconds, capped at
    ``max_backoff``. Only exceptions of the types in ``on`` are retried. The staged writes of a
    failed attempt are discarded; the final attempt's commit records how many attempts ran.
    """

    attempts: int = 3
    backoff: float = 0.05
    factor: float = 2.0
    max_backoff: float = 5.0
    on: tuple[type[BaseException], ...] = (Exception,)

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ConfigurationError(
                f"Retry(attempts={self.attempts}) must allow at least 1 attempt"
            )
        if self.backoff < 0 or self.factor < 1 or self.max_backoff < 0:
            raise ConfigurationError("Retry backoff must be >= 0, factor >= 1 and max_backoff >= 0")

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        return float(min(self.max_backoff, self.backoff * self.factor ** (attempt - 1)))

    @classmethod
    def coerce(cls, value: Retry | int | None) -> Retry | None:
        if value is None or isinstance(value, Retry):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return cls(attempts=value)
        raise ConfigurationError(
            f"retry= takes a Retry(...) or an int number of attempts, got {value!r}"
        )
