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
from ._store import CommitMeta, RunInfo, TransactionalPrune, snapshot_from_rows

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
_SPAN = 1 << 32  # commits of one run: ids run_no * _SPAN + seq
_ROW = "id & 4294967295, " + ", ".join(ROW_FIELDS[1:])


def initial_doc(initial: dict[str, bytes]) -> bytes:
    return orjson.dumps({k: orjson.Fragment(v) for k, v in initial.items()})


def initial_from_doc(doc: bytes) -> dict[str, bytes]:
    return {k: orjson.dumps(v) for k, v in orjson.loads(doc).items()}


class SqliteStore(TransactionalPrune):
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

    def _run_no(self, db: sqlite3.Connection, run_id: str) -> int:
        no = self._run_nos.get(run_id)
        if no is None:
            row = db.execute("SELECT run_no FROM trackway_runs WHERE run_id = ?", (run_id,))
            found = row.fetchone()
            if found is None:
                raise UnknownRunError(f"no run {run_id!r} in {self!r}")
            no = self._run_nos[run_id] = int(found[0])
        return no

    def _span(self, db: sqlite3.Connection, run_id: str) -> tuple[int, int]:
        base = self._run_no(db, run_id) * _SPAN
        return base, base + _SPAN - 1

    def append(self, run_id: str, commits: Sequence[Commit]) -> None:
        with self._tx() as db:
            base = self._run_no(db, run_id) * _SPAN
            rows = [
                (
                    base + c.seq,
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
            # A rowid table packs ~1 KB documents densely; WITHOUT ROWID would spill each
            # large row to an overflow page (4 KB per commit).
            db.executemany("INSERT INTO trackway_commits VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)

    def load_checkpoint(self, checkpoint_id: str) -> Checkpoint:
        rows = self._read(
            "SELECT doc FROM trackway_checkpoints WHERE checkpoint_id = ? AND doc IS NOT NULL",
            (checkpoint_id,),
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
                docs = []
                if run is not None:
                    lo, hi = self._span(db, run_id)
                    docs = [
                        (r[7], r[:7])
                        for r in db.execute(
                            f"SELECT {_ROW}, doc FROM trackway_commits "
                            "WHERE id BETWEEN ? AND ? ORDER BY id",
                            (lo, hi),
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
        with self._lock:
            lo, hi = self._span(self._db, run_id)
            cur = self._db.execute(
                f"SELECT {_ROW} FROM trackway_commits WHERE id BETWEEN ? AND ? ORDER BY id",
                (lo, hi),
            )
            return list(map(CommitMeta._make, cur))

    def list_runs(self) -> list[RunInfo]:
        rows = self._read(
            "SELECT r.run_id, r.chart_id, r.status, r.started_at, r.ended_at, "
            "COALESCE((SELECT MAX(c.id) FROM trackway_commits c WHERE c.id BETWEEN "
            f"r.run_no * {_SPAN} AND r.run_no * {_SPAN} + {_SPAN - 1}) - r.run_no * {_SPAN}, 0) "
            "FROM trackway_runs r ORDER BY r.started_at, r.run_id"
        )
        return [RunInfo(*row) for row in rows]

    def _delete(self, db: sqlite3.Connection, run_id: str) -> bool:
        try:
            lo, hi = self._span(db, run_id)
        except UnknownRunError:
            return False
        self._run_nos.pop(run_id, None)
        db.execute("DELETE FROM trackway_commits WHERE id BETWEEN ? AND ?", (lo, hi))
        ids = (f"{run_id}@", f"{run_id}A")  # ids are "<run id>@<commit count>"; 'A' > '@'
        # A claim outlives its run: a resumed checkpoint must never resume again.
        db.execute(
            "DELETE FROM trackway_checkpoints WHERE checkpoint_id >= ? AND checkpoint_id < ? "
            "AND claimed_at IS NULL",
            ids,
        )
        db.execute(
            "UPDATE trackway_checkpoints SET doc = NULL WHERE checkpoint_id >= ? "
            "AND checkpoint_id < ?",
            ids,
        )
        return db.execute("DELETE FROM trackway_runs WHERE run_id = ?", (run_id,)).rowcount > 0

    def close(self) -> None:
        with self._lock:
            self._db.close()
