"""SqliteStore: the embedded default store (stdlib sqlite3, WAL, one file)."""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path
from typing import Any, Literal

from ._errors import ConfigurationError, StoreError
from ._sqlstore import SqlRunStore

__all__ = ["SqliteStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS trackway_runs (
    run_no INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL UNIQUE,
    chart_id TEXT NOT NULL,
    status TEXT NOT NULL,
    started_at REAL NOT NULL,
    ended_at REAL,
    initial BLOB NOT NULL,
    outcome BLOB
);
-- One row per commit, keyed by run_no * 2^32 + seq: ordered per run with no extra index and
-- no run id repeated per row, so storage stays close to the bytes written.
CREATE TABLE IF NOT EXISTS trackway_commits (
    id INTEGER PRIMARY KEY,
    stage_path TEXT NOT NULL,
    kind TEXT NOT NULL,
    frame TEXT NOT NULL,
    outcome TEXT NOT NULL,
    started_at REAL NOT NULL,
    ended_at REAL NOT NULL,
    doc BLOB NOT NULL
);
-- Saved checkpoints and claims (a claim may name a checkpoint this store never saved).
CREATE TABLE IF NOT EXISTS trackway_checkpoints (
    checkpoint_id TEXT PRIMARY KEY,
    doc BLOB,
    claimed_at REAL
) WITHOUT ROWID;
"""
SCHEMA_VERSION = 2  # PRAGMA user_version
PAGE_SIZE = 8192  # ~1 KB commit documents pack 7 to a page (3 on 4 KB pages)


class SqliteStore(SqlRunStore):
    """Runs, commits and checkpoints in one SQLite file (WAL mode).

    ``synchronous="FULL"`` (default) makes each transaction durable against power loss;
    ``"NORMAL"`` against a crash of the process only, and is much faster per commit.
    Safe to share between threads; several processes may use one file (SQLite locks it).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: Literal["FULL", "NORMAL"] = "FULL",
        busy_timeout: float = 10.0,
    ) -> None:
        self.path = Path(path)
        if synchronous not in ("FULL", "NORMAL"):
            raise ConfigurationError("synchronous must be 'FULL' or 'NORMAL'")
        self._lock = threading.Lock()
        self._run_nos: dict[str, int] = {}
        try:
            self._db = sqlite3.connect(
                self.path,
                check_same_thread=False,
                isolation_level=None,
                timeout=busy_timeout,
            )
            self._db.execute(f"PRAGMA page_size={PAGE_SIZE}")  # new files only
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={synchronous}")
            self._db.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, SCHEMA_VERSION):
                raise sqlite3.DatabaseError(
                    f"it has trackway schema version {version}; this trackway reads version "
                    f"{SCHEMA_VERSION}"
                )
            self._db.executescript(_SCHEMA)
            self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot open the SQLite store at {str(self.path)!r}: {exc}. Check that its "
                "directory exists and is writable, and that the file is a SQLite database."
            ) from exc

    def __repr__(self) -> str:
        return f"<SqliteStore {str(self.path)!r}>"

    # -- transactions ---------------------------------------------------------------------

    class _Tx:
        """The store's lock plus a transaction: ``IMMEDIATE`` for writes, deferred for reads
        (WAL readers never wait for a writer)."""

        def __init__(self, store: SqliteStore, begin: str) -> None:
            self.store = store
            self.begin = begin

        def __enter__(self) -> sqlite3.Connection:
            self.store._lock.acquire()
            try:
                self.store._db.execute(self.begin)
            except BaseException:
                self.store._lock.release()
                raise
            return self.store._db

        def __exit__(self, exc_type: Any, *rest: Any) -> None:
            try:
                self.store._db.execute("COMMIT" if exc_type is None else "ROLLBACK")
            finally:
                self.store._lock.release()

    def _tx(self) -> SqliteStore._Tx:
        return SqliteStore._Tx(self, "BEGIN IMMEDIATE")

    def _read_tx(self) -> SqliteStore._Tx:
        return SqliteStore._Tx(self, "BEGIN")

    def close(self) -> None:
        with self._lock:
            self._db.close()
