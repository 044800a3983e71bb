"""Checking heard events against the catalogue: a recorder (or listener) that tests attach.

Tests only: the agent never consults the registry when it emits.
"""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase
from typing import Any

from trackway.engine import EmitEvent, Recorder

from ._registry import payload_problems

__all__ = ["EventAudit"]


class EventAudit(Recorder):
    """Hears every event of the runs it is attached to (``.recorder(audit)`` on a builder,
    ``agent.attach(audit)``, or as a listener: ``agent.on("*", audit)``) and checks each
    against the catalogue: the name registered, required keys present, no unknown key.

    ``allow`` names your own events (exact names or patterns such as ``"app.*"``): they are
    heard but not checked. :meth:`check` raises ``AssertionError`` listing every problem;
    :meth:`check_events` checks events read back from a log (``commit.events``)."""

    name = "event-audit"

    def __init__(self, allow: Iterable[str] = ()) -> None:
        self.allow = tuple(allow)
        self.heard: list[str] = []
        """Every event name heard, in order."""
        self.problems: list[str] = []
        """What did not fit the catalogue, one line each (first seen first, no repeats)."""

    def __call__(self, event: EmitEvent) -> None:
        self.on_emit(event)

    def on_emit(self, event: EmitEvent) -> None:
        self.hear(event.name, event.payload)

    def hear(self, name: str, payload: Any) -> None:
        """Check one event."""
        self.heard.append(name)
        if any(fnmatchcase(name, pattern) for pattern in self.allow):
            return
        for problem in payload_problems(name, payload):
            if problem not in self.problems:
                self.problems.append(problem)

    def check_events(self, events: Iterable[Any]) -> None:
        """Check events read back from a log: anything with ``name`` and ``payload``
        (``commit.events`` of a snapshot's history)."""
        for event in events:
            self.hear(event.name, event.payload)

    def check(self) -> None:
        """Raise ``AssertionError`` naming every event that did not fit the catalogue."""
        if self.problems:
            lines = "\n  ".join(self.problems)
            raise AssertionError(
                f"{len(self.problems)} event(s) do not fit the catalogue (register them in "
                f"trackway/agent/events/, then run `python -m trackway.agent.events "
                f"docs/guide/events.md`):\n  {lines}"
            )
