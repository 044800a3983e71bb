"""Fixtures the agent tests share; every agent test runs once per anyio backend."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.backends import BACKENDS, use_backend
from trackway.agent.providers import _http


@pytest.fixture(params=BACKENDS, autouse=True)
def async_backend(request: pytest.FixtureRequest) -> Iterator[str]:
    yield from use_backend(request.param)


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits between provider attempts, recorded instead of slept."""
    waited: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        waited.append(seconds)

    monkeypatch.setattr(_http, "_sleep", fake_sleep)
    return waited
