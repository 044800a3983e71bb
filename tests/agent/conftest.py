"""Fixtures the agent tests share."""

from __future__ import annotations

import pytest

from trackway.agent import _http


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits between provider attempts, recorded instead of slept."""
    waited: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        waited.append(seconds)

    monkeypatch.setattr(_http, "_sleep", fake_sleep)
    return waited
