"""Worker tests run against the real PostgreSQL ``.ci/run`` starts (TRACKWAY_TEST_PG_DSN),
each in a schema of its own so their queues never meet."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.backends import BACKENDS, use_backend
from tests.pg import pg_schema
from trackway import PostgresStore


@pytest.fixture(params=BACKENDS)
def async_backend(request: pytest.FixtureRequest) -> Iterator[str]:
    yield from use_backend(request.param)


@pytest.fixture
def pg_dsn() -> Iterator[str]:
    """A DSN whose search_path is a fresh schema (dropped after the test)."""
    with pg_schema("tw") as dsn:
        yield dsn


@pytest.fixture
def store(pg_dsn: str) -> Iterator[PostgresStore]:
    """A PostgresStore on the test's own schema, closed after."""
    s = PostgresStore(pg_dsn)
    yield s
    s.close()
