"""SqliteStore: the embedded default store (stdlib sqlite3, WAL, one file)."""

from __future__ import annotations

import os
import re
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from ..core._errors import ConfigurationError, StoreError
from ..observe._seal import Seal, check_seal
from ._artifact_rows import ARTIFACTS_TABLE
from ._group_rows import GroupRows

__all__ = ["SqliteStore"]

# AUTOINCREMENT: a run number is never given out again, even after the run is deleted, so a
# writer that still holds a pruned run's number can never write into another run.
_RUNS = """
CREATE TABLE IF NOT EXISTS trackway_runs (
    run_no INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL UNIQUE,
    chart_id TEXT NOT NULL,
    status TEXT NOT NULL,
    started_at REAL NOT NULL,
    ended_at REAL,
    initial BLOB NOT NULL,
    outcome BLOB
);
"""

_COMMITS = """
-- One row per commit, found by id = run_no * 2^32 + seq (unique index; no run id repeated per
-- row). The rows themselves lie in the order they were written (the rowid), so the commits of
-- concurrent runs that one group transaction writes share a few pages: clustered by id, each
-- run's last page was written again in every group (schema 3, ~2x the bytes per fsync).
CREATE TABLE IF NOT EXISTS trackway_commits (
    id INTEGER NOT NULL UNIQUE,
    stage_path TEXT NOT NULL,
    kind TEXT NOT NULL,
    frame TEXT NOT NULL,
    outcome TEXT NOT NULL,
    started_at REAL NOT NULL,
    ended_at REAL NOT NULL,
    doc BLOB NOT NULL
);
"""

_SCHEMA = (
    _RUNS
    + _COMMITS
    + """
-- Saved checkpoints and claims (the answer a claim resumed with, for recovery).
CREATE TABLE IF NOT EXISTS trackway_checkpoints (
    checkpoint_id TEXT PRIMARY KEY,
    doc BLOB,
    claimed_at REAL,
    answer BLOB
) WITHOUT ROWID;
"""
)
SCHEMA_VERSION = 7  # PRAGMA user_version
# 3 -> 4: commits in written order, found through a unique index on id (see _COMMITS)
_TO_4 = (
    "ALTER TABLE trackway_commits RENAME TO trackway_commits_v3;"
    + _COMMITS
    + """
INSERT INTO trackway_commits SELECT * FROM trackway_commits_v3 ORDER BY id;
DROP TABLE trackway_commits_v3;
"""
)
# 4 -> 5: sealed copies of what a redaction policy hides (a store given seal=Seal(key))
_TO_5 = """
ALTER TABLE trackway_runs ADD COLUMN sealed BLOB;
ALTER TABLE trackway_checkpoints ADD COLUMN sealed BLOB;
ALTER TABLE trackway_checkpoints ADD COLUMN sealed_answer BLOB;
"""
# 5 -> 6: an agent's memory (``_memory_rows``): entries numbered per scope and memory, and
# facts (one per key digest: a unique index), each table clustered by (scope, memory, number)
# so a recall reads one range of its primary key, newest first
_TO_6 = """
CREATE TABLE IF NOT EXISTS trackway_memory (
    scope TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    written_at REAL NOT NULL,
    doc BLOB NOT NULL,
    PRIMARY KEY (scope, memory_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS trackway_memory_facts (
    scope TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    fact TEXT NOT NULL,
    written_at REAL NOT NULL,
    doc BLOB NOT NULL,
    PRIMARY KEY (scope, memory_id, seq, fact)
) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS trackway_memory_facts_key
    ON trackway_memory_facts (scope, memory_id, fact);
"""
# 6 -> 7: artifacts (``_artifact_rows``): large results kept by ref under a scope, one row per
# content of a scope and kind (a unique index), listed newest first along a second index
_TO_7 = ARTIFACTS_TABLE.format(int="INTEGER", blob="BLOB")
_MIGRATIONS = {
    # 2 -> 3: run numbers never reused (AUTOINCREMENT, above the highest ever given out),
    # claims keep their answer
    2: "ALTER TABLE trackway_runs RENAME TO trackway_runs_v2;"
    + _RUNS
    + """
INSERT INTO trackway_runs SELECT * FROM trackway_runs_v2;
DROP TABLE trackway_runs_v2;
ALTER TABLE trackway_checkpoints ADD COLUMN answer BLOB;
"""
    + _TO_4
    + _TO_5
    + _TO_6
    + _TO_7,
    3: _TO_4 + _TO_5 + _TO_6 + _TO_7,
    4: _TO_5 + _TO_6 + _TO_7,
    5: _TO_6 + _TO_7,
    6: _TO_7,
}
_TABLES = {"trackway_runs", "trackway_commits", "trackway_checkpoints"}
_UNDECODABLE = re.compile(r"Could not decode to UTF-8 column '([^']*)'")
_LIVE_KEPT = 10_000  # run numbers remembered as live at most (then asked again)
PAGE_SIZE = 8192  # ~1 KB commit documents pack 7 to a page (3 on 4 KB pages)


class SqliteStore(GroupRows):
    """Runs, commits and checkpoints in one SQLite file (WAL mode).

    ``synchronous="FULL"`` (default) makes each transaction durable against power loss;
    ``"NORMAL"`` against a crash of the process only, and is much faster per commit.
    Safe to share between threads; several processes may use one file (SQLite locks it).
    ``read_only=True`` opens an existing store without changing anything in the file (no
    tables made, no WAL switch, no migration) and refuses writes; a file that is not a
    trackway store is refused, named, in both modes. ``seal``: a :class:`Seal` that keeps
    what a redaction policy hides sealed beside its redacted rows, so redacted runs can be
    resumed by id and recovered (see ``trackway.engine.observe._seal``).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: Literal["FULL", "NORMAL"] = "FULL",
        busy_timeout: float = 10.0,
        read_only: bool = False,
        seal: Seal | None = None,
    ) -> None:
        self.seal = check_seal(seal)
        self.path = Path(path)
        self.read_only = read_only
        if synchronous not in ("FULL", "NORMAL"):
            raise ConfigurationError("synchronous must be 'FULL' or 'NORMAL'")
        self._lock = threading.Lock()
        self._run_nos: dict[str, int] = {}
        self._live: set[int] = set()  # run numbers known to exist (see _live_run_nos)
        self._live_version = -1
        where = repr(str(self.path))
        if read_only and not self.path.is_file():
            raise StoreError(f"no SQLite store at {where}: the file does not exist")
        try:
            if read_only:  # never creates, migrates or rewrites the file
                uri = f"{self.path.resolve().as_uri()}?mode=ro"
                self._db = sqlite3.connect(
                    uri, uri=True, check_same_thread=False, isolation_level=None,
                    timeout=busy_timeout,
                )  # fmt: skip
            else:
                self._db = sqlite3.connect(
                    self.path, check_same_thread=False, isolation_level=None,
                    timeout=busy_timeout,
                )  # fmt: skip
            self._db.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            tables = {
                r[0]
                for r in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot open the SQLite store at {where}: {exc}. Check that its directory "
                "exists and is writable, and that the file is a SQLite database."
            ) from exc
        known = version == SCHEMA_VERSION or version in _MIGRATIONS
        empty = version == 0 and not tables
        if version > SCHEMA_VERSION and tables >= _TABLES:
            self._db.close()
            raise StoreError(
                f"{where} is a trackway store of schema version {version}, written by a newer "
                f"trackway; this trackway reads schema version {SCHEMA_VERSION} and older. "
                "Upgrade trackway to open it (it is left as it is), or point at another file."
            )
        if not empty and not (known and tables >= _TABLES):
            self._db.close()
            found = f"schema version {version}" if version else "no trackway tables"
            raise StoreError(
                f"{where} is not a trackway store this version reads ({found}; tables: "
                f"{', '.join(sorted(tables)) or 'none'}). Point at a store trackway made, or "
                f"at a new file; this trackway reads schema version {SCHEMA_VERSION}."
            )
        if read_only:
            if empty:
                self._db.close()
                raise StoreError(f"{where} is an empty SQLite file, not a trackway store")
            return
        try:
            if empty:
                self._db.execute(f"PRAGMA page_size={PAGE_SIZE}")  # new files only
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={synchronous}")
            self._migrate(version)
        except sqlite3.Error as exc:
            self._db.close()
            raise StoreError(
                f"cannot prepare the SQLite store at {where}: {exc}. Check that the file and "
                "its directory are writable."
            ) from exc

    def _migrate(self, version: int) -> None:
        """Create the tables of a new file, or bring an older store up to date in one
        transaction."""
        if version == SCHEMA_VERSION:
            return
        script = _SCHEMA + _TO_5 + _TO_6 + _TO_7 if version == 0 else _MIGRATIONS[version]
        self._db.executescript(
            f"BEGIN IMMEDIATE; {script}; PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
        )

    def __repr__(self) -> str:
        return f"<SqliteStore {str(self.path)!r}>"

    def _source(self) -> str:
        return str(self.path)

    def _undecodable(self, exc: Exception) -> str | None:
        # sqlite3 reads TEXT as str: bytes that are not UTF-8 (written by another program)
        # fail the whole query with this message, which names the column
        if isinstance(exc, sqlite3.OperationalError):
            found = _UNDECODABLE.match(str(exc))
            if found is not None:
                return found.group(1)
        return None

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
        if self.read_only:
            raise StoreError(
                f"{self!r} was opened read-only (read_only=True): it does not write. Open it "
                "without read_only to run charts on it."
            )
        return SqliteStore._Tx(self, "BEGIN IMMEDIATE")

    def _read_tx(self) -> SqliteStore._Tx:
        return SqliteStore._Tx(self, "BEGIN")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- group commit ----------------------------------------------------------------------

    def _live_run_nos(self, db: Any, run_nos: Sequence[int]) -> set[int]:
        """Which of these runs still exist, asking the file only about runs not already
        known to: the answer holds while ``PRAGMA data_version`` says no other connection
        wrote (a prune elsewhere) and this store deleted nothing (``_delete`` forgets it).
        Saves a query per group transaction (~150 µs for 100 runs)."""
        version = db.execute("PRAGMA data_version").fetchone()[0]
        live = self._live
        if version != self._live_version or len(live) > _LIVE_KEPT:
            live.clear()
            self._live_version = version
        unknown = [n for n in run_nos if n not in live]
        if unknown:
            live.update(super()._live_run_nos(db, unknown))
        return {n for n in run_nos if n in live}

    def _delete(self, db: Any, run_id: str) -> bool:
        self._live.clear()
        return super()._delete(db, run_id)
