"""SqliteStore: the embedded default store (stdlib sqlite3, WAL, one file)."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import orjson

from ._checkpoint import Checkpoint
from ._commit import ROW_FIELDS, Commit
from ._errors import StoreError, UnknownRunError
from ._snapshot import Snapshot
from ._store import CommitMeta, RunInfo, select_prunable, snapshot_from_rows

__all__ = ["SqliteStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS trackway_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trackway_runs (
    run_id TEXT PRIMARY KEY,
    chart_id TEXT NOT NULL,
    status TEXT NOT NULL,
    started_at REAL NOT NULL,
    ended_at REAL,
    initial BLOB NOT NULL,
    outcome BLOB
);
CREATE TABLE IF NOT EXISTS trackway_commits (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    stage_path TEXT NOT NULL,
    kind TEXT NOT NULL,
    frame TEXT NOT NULL,
    outcome TEXT NOT NULL,
    started_at REAL NOT NULL,
    ended_at REAL NOT NULL,
    doc BLOB NOT NULL,
    UNIQUE (run_id, seq)
);
CREATE TABLE IF NOT EXISTS trackway_checkpoints (
    checkpoint_id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    doc BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS trackway_claims (
    checkpoint_id TEXT PRIMARY KEY,
    claimed_at REAL NOT NULL
);
"""
SCHEMA_VERSION = "1"
_ROW = ", ".join(ROW_FIELDS)


def initial_doc(initial: dict[str, bytes]) -> bytes:
    return orjson.dumps({k: orjson.Fragment(v) for k, v in initial.items()})


def initial_from_doc(doc: bytes) -> dict[str, bytes]:
    return {k: orjson.dumps(v) for k, v in orjson.loads(doc).items()}


class SqliteStore:
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
            raise ValueError("synchronous must be 'FULL' or 'NORMAL'")
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(
                self.path,
                check_same_thread=False,
                isolation_level=None,
                timeout=busy_timeout,
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={synchronous}")
            self._db.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
            self._db.executescript(_SCHEMA)
            with self._tx():
                self._db.execute(
                    "INSERT OR IGNORE INTO trackway_meta VALUES ('schema', ?)", (SCHEMA_VERSION,)
                )
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot open the SQLite store at {str(self.path)!r}: {exc}. Check that its "
                "directory exists and is writable, and that the file is a SQLite database."
            ) from exc

    def __repr__(self) -> str:
        return f"<SqliteStore {str(self.path)!r}>"

    # -- transactions ---------------------------------------------------------------------

    class _Tx:
        def __init__(self, store: SqliteStore) -> None:
            self.store = store

        def __enter__(self) -> sqlite3.Connection:
            self.store._lock.acquire()
            try:
                self.store._db.execute("BEGIN IMMEDIATE")
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
        return SqliteStore._Tx(self)

    def _rows(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        return self._read(sql, args)

    def _read(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    # -- the RunStore interface ---------------------------------------------------------

    def begin_run(self, run_id: str, chart_id: str, initial: dict[str, bytes]) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT INTO trackway_runs (run_id, chart_id, status, started_at, initial) "
                "VALUES (?, ?, 'running', ?, ?) ON CONFLICT(run_id) DO UPDATE SET "
                "status = 'running', ended_at = NULL, outcome = NULL",
                (run_id, chart_id, time.time(), initial_doc(initial)),
            )

    def append(self, run_id: str, commits: Sequence[Commit]) -> None:
        rows = [
            (
                run_id,
                c.seq,
                c.stage_path,
                c.kind,
                c.frame,
                c.outcome,
                c.started_at,
                c.ended_at,
                c.to_bytes(slim=True),
            )
            for c in commits
        ]
        with self._tx() as db:
            # A rowid table packs ~1 KB documents densely; WITHOUT ROWID would spill each
            # large row to an overflow page (4 KB per commit).
            db.executemany("INSERT INTO trackway_commits VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)

    def finish_run(self, run_id: str, status: str, outcome: Any = None) -> None:
        with self._tx() as db:
            db.execute(
                "UPDATE trackway_runs SET status = ?, ended_at = ?, outcome = ? WHERE run_id = ?",
                (status, time.time(), None if outcome is None else orjson.dumps(outcome), run_id),
            )

    def save_checkpoint(self, checkpoint: Checkpoint) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO trackway_checkpoints VALUES (?, ?, ?)",
                (checkpoint.checkpoint_id, checkpoint.run_id, checkpoint.to_json()),
            )

    def claim_checkpoint(self, checkpoint_id: str) -> bool:
        with self._tx() as db:
            cur = db.execute(
                "INSERT OR IGNORE INTO trackway_claims VALUES (?, ?)", (checkpoint_id, time.time())
            )
            return cur.rowcount == 1

    def load_checkpoint(self, checkpoint_id: str) -> Checkpoint:
        rows = self._read(
            "SELECT doc FROM trackway_checkpoints WHERE checkpoint_id = ?", (checkpoint_id,)
        )
        if not rows:
            raise UnknownRunError(f"no checkpoint {checkpoint_id!r} in {self!r}")
        return Checkpoint.from_json(rows[0][0])

    def load(self, run_id: str) -> Snapshot:
        with self._lock:
            db = self._db
            db.execute("BEGIN")
            try:
                run = db.execute(
                    "SELECT chart_id, status, initial, outcome FROM trackway_runs WHERE run_id = ?",
                    (run_id,),
                ).fetchone()
                docs = [
                    (r[7], r[:7])
                    for r in db.execute(
                        f"SELECT {_ROW}, doc FROM trackway_commits WHERE run_id = ? ORDER BY seq",
                        (run_id,),
                    )
                ]
            finally:
                db.execute("COMMIT")
        if run is None:
            raise UnknownRunError(
                f"no run {run_id!r} in {self!r}; store.list_runs() lists the runs it holds"
            )
        chart_id, status, initial, outcome = run
        return snapshot_from_rows(
            run_id,
            chart_id,
            status,
            initial_from_doc(initial),
            docs,
            None if outcome is None else orjson.loads(outcome),
        )

    def history(self, run_id: str) -> list[CommitMeta]:
        """Commit metadata from its own columns: no document is read or decoded."""
        rows = self._rows(
            "SELECT seq, stage_path, kind, frame, outcome, started_at, ended_at "
            "FROM trackway_commits WHERE run_id = ? ORDER BY seq",
            (run_id,),
        )
        if not rows and not self._rows("SELECT 1 FROM trackway_runs WHERE run_id = ?", (run_id,)):
            raise UnknownRunError(f"no run {run_id!r} in {self!r}")
        return [CommitMeta(*row) for row in rows]

    def list_runs(self) -> list[RunInfo]:
        rows = self._read(
            "SELECT r.run_id, r.chart_id, r.status, r.started_at, r.ended_at, "
            "COALESCE((SELECT MAX(c.seq) FROM trackway_commits c "
            "WHERE c.run_id = r.run_id), 0) "
            "FROM trackway_runs r ORDER BY r.started_at, r.run_id"
        )
        return [RunInfo(*row) for row in rows]

    def prune(
        self,
        *,
        run_ids: Sequence[str] | None = None,
        older_than: float | None = None,
        keep_latest: int | None = None,
    ) -> int:
        doomed = select_prunable(self.list_runs(), run_ids, older_than, keep_latest)
        with self._tx() as db:
            for rid in doomed:
                self._delete(db, rid)
        return len(doomed)

    def delete(self, run_id: str) -> None:
        with self._tx() as db:
            if not self._delete(db, run_id):
                raise UnknownRunError(f"no run {run_id!r} in {self!r}")

    @staticmethod
    def _delete(db: sqlite3.Connection, run_id: str) -> bool:
        db.execute("DELETE FROM trackway_commits WHERE run_id = ?", (run_id,))
        db.execute("DELETE FROM trackway_checkpoints WHERE run_id = ?", (run_id,))
        return db.execute("DELETE FROM trackway_runs WHERE run_id = ?", (run_id,)).rowcount > 0

    def close(self) -> None:
        with self._lock:
            self._db.close()
