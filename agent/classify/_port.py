"""The classifier port: one question over named criteria, one ranked answer.

A classifier reads a request (the criteria, each by its own description, and the state the
question is about) and ranks the criteria it scored, highest first. Everything it says lands
on the record as data (``ClassifyAnswer.record()``), so a replay serves the recorded answer
and needs no classifier.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from trackway.engine import TrackwayError

__all__ = [
    "Classifier",
    "ClassifierError",
    "ClassifyAnswer",
    "ClassifyCriterion",
    "ClassifyRequest",
]


@dataclass(frozen=True)
class ClassifyCriterion:
    """One thing the classifier may pick: its name and its own description."""

    name: str
    description: str


@dataclass(frozen=True)
class ClassifyRequest:
    """One choice question: which of ``criteria`` fits ``state`` (e.g. the user's message and
    the active skill). ``question_id`` names the question for the record and for a scripted
    classifier (``TOOL_CHOICE_QUESTION``, ``ENTRY_QUESTION``)."""

    question_id: str
    question: str
    criteria: tuple[ClassifyCriterion, ...]
    state: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ClassifyAnswer:
    """The classifier's reading: ``ranked`` is ``(name, score)`` per criterion it scored,
    highest first (an unscored criterion is absent, not zero); ``chosen`` its own pick
    (``None`` when it named nothing offered). ``usage`` and ``latency_ms`` are measured by
    the adapter, so a replay can serve them back exactly."""

    ranked: tuple[tuple[str, float], ...]
    chosen: str | None = None
    confidence: float | None = None
    usage: Mapping[str, int] | None = None
    latency_ms: float = 0.0
    model: str | None = None

    def record(self) -> dict[str, Any]:
        """The answer as plain JSON, as a row keeps it."""
        out: dict[str, Any] = {
            "ranked": [{"name": n, "score": s} for n, s in self.ranked],
            "latency_ms": self.latency_ms,
        }
        if self.chosen is not None:
            out["chosen"] = self.chosen
        if self.confidence is not None:
            out["confidence"] = self.confidence
        if self.usage is not None:
            out["usage"] = dict(self.usage)
        if self.model is not None:
            out["model"] = self.model
        return out

    @classmethod
    def from_record(cls, row: Mapping[str, Any]) -> ClassifyAnswer:
        """The answer a row recorded (:meth:`record`'s inverse)."""
        return cls(
            ranked=tuple((r["name"], float(r["score"])) for r in row.get("ranked", ())),
            chosen=row.get("chosen"),
            confidence=row.get("confidence"),
            usage=row.get("usage"),
            latency_ms=float(row.get("latency_ms", 0.0)),
            model=row.get("model"),
        )


class ClassifierError(TrackwayError):
    """A classifier call failed. ``status`` is the provider's HTTP status when there was one;
    ``retryable`` says whether asking again may succeed (429, 529 and other overloads).
    Its message never carries an API key."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False):
        super().__init__(message)
        self.status = status
        self.retryable = retryable


@runtime_checkable
class Classifier(Protocol):
    """Anything with a ``name`` and an async ``classify(request) -> ClassifyAnswer`` that
    raises :class:`ClassifierError` when it cannot answer."""

    name: str

    async def classify(self, request: ClassifyRequest) -> ClassifyAnswer: ...
