"""The agent layer's errors (the provider errors live with the provider interface)."""

from __future__ import annotations

from trackway.engine import TrackwayError

__all__ = [
    "AgentBuildError",
    "InvalidRunInputError",
    "OutputContractError",
    "ReplayDivergence",
    "RunInFlightError",
]


class AgentBuildError(TrackwayError, ValueError):
    """The agent was configured wrongly (e.g. two tools with one name)."""


class InvalidRunInputError(TrackwayError, ValueError):
    """``run`` was given input it cannot take; nothing ran."""


class RunInFlightError(TrackwayError, RuntimeError):
    """``run`` was called while this agent was still running another turn."""


class OutputContractError(TrackwayError):
    """``run_typed`` could not get an answer that matches the output schema."""

    def __init__(self, message: str, *, attempts: int, last_error: str, answer: str) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.last_error = last_error
        self.answer = answer


class ReplayDivergence(TrackwayError):
    """A replay committed something other than the recording did."""

    def __init__(self, message: str, *, stage_path: str, key: str | None) -> None:
        super().__init__(message)
        self.stage_path = stage_path
        self.key = key
