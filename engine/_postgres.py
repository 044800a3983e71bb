"""PostgresStore: runs, commits and checkpoints in PostgreSQL (psycopg 3, the postgres extra)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ._errors import StoreError
from ._sqlstore import SqlRunStore

__all__ = ["PostgresStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS trackway_runs (
    run_no BIGSERIAL PRIMARY KEY,
    run_id TEXT NOT NULL UNIQUE,
    chart_id TEXT NOT NULL,
    status TEXT NOT NULL,
    started_at DOUBLE PRECISION NOT NULL,
    ended_at DOUBLE PRECISION,
    initial BYTEA NOT NULL,
    outcome BYTEA
);
-- keyed by run_no * 2^32 + seq: no run id repeated per row, one small integer index
CREATE TABLE IF NOT EXISTS trackway_commits (
    id BIGINT PRIMARY KEY,
    stage_path TEXT NOT NULL,
    kind TEXT NOT NULL,
    frame TEXT NOT NULL,
    outcome TEXT NOT NULL,
    started_at DOUBLE PRECISION NOT NULL,
    ended_at DOUBLE PRECISION NOT NULL,
    doc BYTEA NOT NULL
);
-- saved checkpoints and claims (a claim may name a checkpoint this store never saved)
CREATE TABLE IF NOT EXISTS trackway_checkpoints (
    checkpoint_id TEXT PRIMARY KEY,
    doc BYTEA,
    claimed_at DOUBLE PRECISION
);
"""


def _where(dsn: str) -> str:
    """``host:port/dbname`` of a DSN, never its password."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        info = conninfo_to_dict(dsn)
    except Exception:
        return "the given DSN (unparseable)"
    host = info.get("host") or "localhost"
    return f"{host}:{info.get('port') or 5432}/{info.get('dbname') or ''}"


class PostgresStore(SqlRunStore):
    """A :class:`RunStore` on PostgreSQL. Claims are atomic across processes and hosts.

    ``dsn`` is a libpq connection string or URL. Install with ``pip install
    'trackway[postgres]'``.
    """

    _P = "%s"

    def __init__(self, dsn: str, *, connect_timeout: float = 10.0) -> None:
        try:
            import psycopg
        except ImportError as exc:
            raise StoreError(
                "PostgresStore needs psycopg 3: pip install 'trackway[postgres]'"
            ) from exc
        self.where = _where(dsn)
        self._lock = threading.Lock()
        self._run_nos: dict[str, int] = {}
        try:
            self._db = psycopg.connect(dsn, connect_timeout=max(1, int(connect_timeout)))
            with self._db.transaction():
                self._db.execute(_SCHEMA)
        except psycopg.Error as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise StoreError(
                f"cannot reach PostgreSQL at {self.where}: {_scrub(reason, dsn)}. Check that the "
                "server is running and accepts connections there, and the user and password."
            ) from None

    def __repr__(self) -> str:
        return f"<PostgresStore {self.where}>"

    @contextmanager
    def _tx(self) -> Iterator[Any]:
        with self._lock, self._db.transaction():
            yield self._db

    def _insert_many(self, db: Any, sql: str, rows: Sequence[tuple[Any, ...]]) -> None:
        with db.cursor() as cur:
            cur.executemany(sql, rows)

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _scrub(text: str, dsn: str) -> str:
    """Remove the password from a driver message, in case the driver echoed it."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        password = conninfo_to_dict(dsn).get("password")
    except Exception:
        return text
    return text.replace(str(password), "***") if password else text
