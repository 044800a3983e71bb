"""Shared fixtures: small charts and a recorder that keeps every event."""

from __future__ import annotations

from typing import Any

import pytest


class EventLog:
    """A recorder that appends (hook, event) for every hook (a test double)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("on_"):
            raise AttributeError(name)
        return lambda event: self.events.append((name, event))

    def hooks(self) -> list[str]:
        return [h for h, _ in self.events]


@pytest.fixture
def event_log() -> EventLog:
    return EventLog()
