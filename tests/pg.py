"""A PostgreSQL schema of a test's own on the server ``.ci/run`` starts
(``TRACKWAY_TEST_PG_DSN``): its tables never meet another test's, and it is dropped after."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
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


def end_idle_sessions(store: Any, dsn: str) -> list[int]:
    """End every session the store's pool holds idle (taken out of the pool meanwhile, so no
    transaction of the store's is on them), and wait until the server has let them go;
    returns the ended backends' pids."""
    import psycopg

    pool = store._sessions.pool
    # every session the pool manages, the one it may be opening in the background included
    # (counted in ``pool_size`` from the moment it starts): one left out would serve the
    # next call alive and the replacement would go unseen
    held: list[Any] = []
    while True:
        # a getconn that waited can make the pool grow by one more session in the
        # background (CI saw that one serve the next call alive): take until none is left
        size = max(1, pool.get_stats()["pool_size"])
        while len(held) < size:
            held.append(pool.getconn(timeout=10))
        if pool.get_stats()["pool_size"] <= len(held):
            break
    pids = [db.info.backend_pid for db in held]
    try:
        with psycopg.connect(dsn, autocommit=True) as admin:
            for pid in pids:
                ended = admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()
                assert ended == (True,)
            deadline = time.monotonic() + 10
            while admin.execute(
                "SELECT 1 FROM pg_stat_activity WHERE pid = ANY(%s)", (pids,)
            ).fetchone():
                assert time.monotonic() < deadline, "the server never ended the sessions"
                time.sleep(0.01)
    finally:
        for db in held:
            pool.putconn(db)  # back idle, and dead: found at the next checkout
    return pids
