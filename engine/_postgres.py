"""PostgresStore: runs, commits and checkpoints in PostgreSQL (psycopg 3, the postgres extra)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import orjson

from ._checkpoint import Checkpoint
from ._commit import ROW_FIELDS, Commit
from ._errors import StoreError, UnknownRunError
from ._snapshot import Snapshot
from ._sqlite import initial_doc, initial_from_doc
from ._store import CommitMeta, RunInfo, TransactionalPrune, snapshot_from_rows

__all__ = ["PostgresStore"]

_EIGHT = ", ".join(["%s"] * 8)
_SPAN = 1 << 32  # commits of one run: ids run_no * _SPAN + seq
_ROW = "id - (id / 4294967296) * 4294967296, " + ", ".join(ROW_FIELDS[1:])

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


class PostgresStore(TransactionalPrune):
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

    def _rows(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        with self._tx() as db:
            return list(db.execute(sql, args).fetchall())

    def begin_run(self, run_id: str, chart_id: str, initial: dict[str, bytes]) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT INTO trackway_runs (run_id, chart_id, status, started_at, initial) "
                "VALUES (%s, %s, 'running', %s, %s) ON CONFLICT (run_id) DO UPDATE SET "
                "status = 'running', ended_at = NULL, outcome = NULL",
                (run_id, chart_id, time.time(), initial_doc(initial)),
            )

    def append(self, run_id: str, commits: Sequence[Commit]) -> None:
        base = self._run_no(run_id) * _SPAN
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
        with self._tx() as db, db.cursor() as cur:
            cur.executemany(f"INSERT INTO trackway_commits VALUES ({_EIGHT})", rows)

    def load_checkpoint(self, checkpoint_id: str) -> Checkpoint:
        with self._tx() as db:
            row = db.execute(
                "SELECT doc FROM trackway_checkpoints WHERE checkpoint_id = %s AND doc IS NOT NULL",
                (checkpoint_id,),
            ).fetchone()
        if row is None:
            raise UnknownRunError(f"no checkpoint {checkpoint_id!r} in {self!r}")
        return Checkpoint.from_json(bytes(row[0]))

    def load(self, run_id: str) -> Snapshot:
        with self._tx() as db:
            run = db.execute(
                "SELECT chart_id, status, initial, outcome FROM trackway_runs WHERE run_id = %s",
                (run_id,),
            ).fetchone()
            docs = []
            if run is not None:
                lo, hi = self._span(db, run_id)
                docs = [
                    (bytes(r[7]), r[:7])
                    for r in db.execute(
                        f"SELECT {_ROW}, doc FROM trackway_commits "
                        "WHERE id BETWEEN %s AND %s ORDER BY id",
                        (lo, hi),
                    )
                ]
        if run is None:
            raise UnknownRunError(
                f"no run {run_id!r} in {self!r}; store.list_runs() lists the runs it holds"
            )
        chart_id, status, initial, outcome = run
        return snapshot_from_rows(
            run_id,
            chart_id,
            status,
            initial_from_doc(bytes(initial)),
            docs,
            None if outcome is None else orjson.loads(bytes(outcome)),
        )

    def history(self, run_id: str) -> list[CommitMeta]:
        """Commit metadata from its own columns: no document is read or decoded."""
        with self._tx() as db:
            lo, hi = self._span(db, run_id)
            rows = db.execute(
                f"SELECT {_ROW} FROM trackway_commits WHERE id BETWEEN %s AND %s ORDER BY id",
                (lo, hi),
            ).fetchall()
        return [CommitMeta(*row) for row in rows]

    def list_runs(self) -> list[RunInfo]:
        with self._tx() as db:
            rows = db.execute(
                "SELECT r.run_id, r.chart_id, r.status, r.started_at, r.ended_at, "
                "COALESCE((SELECT MAX(c.id) FROM trackway_commits c WHERE c.id BETWEEN "
                f"r.run_no * {_SPAN} AND r.run_no * {_SPAN} + {_SPAN - 1}) "
                f"- r.run_no * {_SPAN}, 0) "
                "FROM trackway_runs r ORDER BY r.started_at, r.run_id"
            ).fetchall()
        return [RunInfo(*row) for row in rows]

    def _run_no(self, run_id: str, db: Any = None) -> int:
        no = self._run_nos.get(run_id)
        if no is None:
            if db is None:
                with self._tx() as inner:
                    return self._run_no(run_id, inner)
            row = db.execute(
                "SELECT run_no FROM trackway_runs WHERE run_id = %s", (run_id,)
            ).fetchone()
            if row is None:
                raise UnknownRunError(f"no run {run_id!r} in {self!r}")
            no = self._run_nos[run_id] = int(row[0])
        return no

    def _span(self, db: Any, run_id: str) -> tuple[int, int]:
        base = self._run_no(run_id, db) * _SPAN
        return base, base + _SPAN - 1

    def _delete(self, db: Any, run_id: str) -> bool:
        try:
            lo, hi = self._span(db, run_id)
        except UnknownRunError:
            return False
        self._run_nos.pop(run_id, None)
        db.execute("DELETE FROM trackway_commits WHERE id BETWEEN %s AND %s", (lo, hi))
        ids = (f"{run_id}@", f"{run_id}A")  # ids are "<run id>@<commit count>"
        # A claim outlives its run: a resumed checkpoint must never resume again.
        db.execute(
            "DELETE FROM trackway_checkpoints WHERE checkpoint_id >= %s AND checkpoint_id < %s "
            "AND claimed_at IS NULL",
            ids,
        )
        db.execute(
            "UPDATE trackway_checkpoints SET doc = NULL WHERE checkpoint_id >= %s "
            "AND checkpoint_id < %s",
            ids,
        )
        cur = db.execute("DELETE FROM trackway_runs WHERE run_id = %s", (run_id,))
        return bool(cur.rowcount > 0)

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
