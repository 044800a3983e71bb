"""The engine tests run once per anyio backend (asyncio, trio)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.backends import BACKENDS, use_backend


@pytest.fixture(params=BACKENDS, autouse=True)
def async_backend(request: pytest.FixtureRequest) -> Iterator[str]:
    yield from use_backend(request.param)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Any]:
    """Each store the conformance tests run on: memory, a SQLite file and PostgreSQL (when
    TRACKWAY_TEST_PG_DSN is set; skipped otherwise). A module may narrow it with its own."""
    from trackway import MemoryStore, SqliteStore

    from .test_stores import _postgres

    if request.param == "postgres":
        yield from _postgres()
        return
    s: Any = MemoryStore() if request.param == "memory" else SqliteStore(tmp_path / "runs.db")
    yield s
    s.close()
