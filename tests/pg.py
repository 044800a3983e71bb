"""A PostgreSQL schema of a test's own on the server ``.ci/run`` starts
(``TRACKWAY_TEST_PG_DSN``): its tables never meet another test's, and it is dropped after."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote

import pytest

PG_DSN = os.environ.get("TRACKWAY_TEST_PG_DSN")


@contextmanager
def pg_schema(prefix: str = "tw") -> Iterator[str]:
    """A DSN whose search_path is a new schema (a URL stays a URL: the command line takes
    URLs); skips the test without a server (fails it under CI, which must provide one)."""
    if not PG_DSN:
        if os.environ.get("CI"):
            pytest.fail("CI must provide TRACKWAY_TEST_PG_DSN (.ci/run starts PostgreSQL)")
        pytest.skip("no PostgreSQL: set TRACKWAY_TEST_PG_DSN (see .ci/postgres.sh)")
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    try:
        yield _with_options(PG_DSN, f"-csearch_path={name}")
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {name} CASCADE")


def _with_options(dsn: str, options: str) -> str:
    if "://" in dsn:
        sep = "&" if "?" in dsn else "?"
        return f"{dsn}{sep}options={quote(options)}"
    from psycopg.conninfo import make_conninfo

    return make_conninfo(dsn, options=options)
