"""Worker tests run against the real PostgreSQL ``.ci/run`` starts (TRACKWAY_TEST_PG_DSN),
each in a schema of its own so their queues never meet."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from urllib.parse import quote

import pytest

from tests.backends import BACKENDS, use_backend
from trackway import PostgresStore

PG_DSN = os.environ.get("TRACKWAY_TEST_PG_DSN")
needs_pg = pytest.mark.skipif(PG_DSN is None, reason="needs TRACKWAY_TEST_PG_DSN (.ci/postgres.sh)")


@pytest.fixture(params=BACKENDS)
def async_backend(request: pytest.FixtureRequest) -> Iterator[str]:
    yield from use_backend(request.param)


@pytest.fixture
def pg_dsn() -> Iterator[str]:
    """A DSN whose search_path is a fresh schema (dropped after the test)."""
    if PG_DSN is None:
        pytest.skip("needs TRACKWAY_TEST_PG_DSN (.ci/postgres.sh)")
    import psycopg

    schema = f"tw_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_DSN, autocommit=True) as db:
        db.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in PG_DSN else "?"
    yield f"{PG_DSN}{sep}options={quote(f'-csearch_path={schema}')}"
    with psycopg.connect(PG_DSN, autocommit=True) as db:
        db.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture
def store(pg_dsn: str) -> Iterator[PostgresStore]:
    """A PostgresStore on the test's own schema, closed after."""
    s = PostgresStore(pg_dsn)
    yield s
    s.close()
