"""PostgresStore: runs, commits and checkpoints in PostgreSQL (psycopg 3, the postgres extra)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from ..core._commit import Commit
from ..core._errors import ConfigurationError, StoreError
from ..observe._seal import Seal, check_seal
from ._artifact_rows import ARTIFACTS_TABLE
from ._group_rows import PgGroupRows
from ._pg_sessions import PgSessions, check_pool_size
from ._sqlstore import commit_rows, run_deleted
from .queue._run_queue import QUEUE_SCHEMA, PgRunQueue

_ONE_STATEMENT = 8  # up to this many commit rows: lock and insert in one statement
_ROW = "(%s::bigint, %s::text, %s::text, %s::text, %s::text, %s::float8, %s::float8, %s::bytea)"

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
-- saved checkpoints and claims (the answer a claim resumed with, for recovery)
CREATE TABLE IF NOT EXISTS trackway_checkpoints (
    checkpoint_id TEXT PRIMARY KEY,
    doc BYTEA,
    claimed_at DOUBLE PRECISION,
    answer BYTEA
);
ALTER TABLE trackway_checkpoints ADD COLUMN IF NOT EXISTS answer BYTEA;
-- sealed copies of what a redaction policy hides (a store given seal=Seal(key))
ALTER TABLE trackway_runs ADD COLUMN IF NOT EXISTS sealed BYTEA;
ALTER TABLE trackway_checkpoints ADD COLUMN IF NOT EXISTS sealed BYTEA;
ALTER TABLE trackway_checkpoints ADD COLUMN IF NOT EXISTS sealed_answer BYTEA;
-- an agent's memory (_memory_rows): entries numbered per scope and memory, and facts (one per
-- key digest: a unique index), each read newest first along its primary key
CREATE TABLE IF NOT EXISTS trackway_memory (
    scope TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    kind TEXT NOT NULL,
    written_at DOUBLE PRECISION NOT NULL,
    doc BYTEA NOT NULL,
    PRIMARY KEY (scope, memory_id, seq)
);
CREATE TABLE IF NOT EXISTS trackway_memory_facts (
    scope TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    fact TEXT NOT NULL,
    written_at DOUBLE PRECISION NOT NULL,
    doc BYTEA NOT NULL,
    PRIMARY KEY (scope, memory_id, seq, fact)
);
CREATE UNIQUE INDEX IF NOT EXISTS trackway_memory_facts_key
    ON trackway_memory_facts (scope, memory_id, fact);
{artifacts}
-- the schema's version: a store opened by an older trackway than the one that wrote it is
-- refused by name rather than written in a shape it does not know
CREATE TABLE IF NOT EXISTS trackway_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
""".replace("{artifacts}", ARTIFACTS_TABLE.format(int="BIGINT", blob="BYTEA"))
SCHEMA_VERSION = 3
"""The PostgreSQL schema's version (``trackway_meta``): 1 was every schema before the table
(no memory tables), 2 adds an agent's memory, 3 artifacts (``trackway_artifacts``)."""


_HELD = (
    " AND EXISTS (SELECT 1 FROM trackway_queue WHERE run_id = %s AND lease_token = %s "
    "AND state = 'running' FOR SHARE)"
)
"""A worker's write lands only while its claim's lease is held (the queue row locked)."""
_DDL_LOCK = 0x7472_6B77_6179  # "trkway": the advisory lock stores take to create the schema
_NEWEST = (
    ("trackway_runs", "sealed"),
    ("trackway_commits", "doc"),
    ("trackway_checkpoints", "answer"),
    ("trackway_checkpoints", "sealed"),
    ("trackway_checkpoints", "sealed_answer"),
    ("trackway_queue", "claims"),
    ("trackway_queue", "lease_token"),
    ("trackway_queue", "solo"),
    ("trackway_workers", "redacting"),
    ("trackway_memory", "doc"),
    ("trackway_memory_facts", "doc"),
    ("trackway_artifacts", "data"),
    ("trackway_meta", "value"),
)
"""A column of each table, and every column a later version added: all present, the schema
is this version's."""


def _schema_version(db: Any) -> int | None:
    """The version ``trackway_meta`` records (``None``: no such table, or no row: a schema
    of version 1, or none yet)."""
    if db.execute("SELECT to_regclass('trackway_meta')").fetchone()[0] is None:
        return None
    row = db.execute("SELECT value FROM trackway_meta WHERE name = 'schema_version'").fetchone()
    return None if row is None else int(row[0])


def _refuse_newer(version: int | None, where: str) -> None:
    if version is not None and version > SCHEMA_VERSION:
        raise StoreError(
            f"the PostgreSQL schema at {where} is trackway schema version {version}, written by "
            f"a newer trackway; this trackway reads schema version {SCHEMA_VERSION} and older. "
            "Upgrade trackway to use it (it is left as it is), or point at another database "
            "or schema (search_path)."
        )


def _schema_current(db: Any) -> bool:
    """Whether the tables, columns and index this version uses are all there and the
    recorded version is this one (catalog queries, no lock taken)."""
    if _schema_version(db) != SCHEMA_VERSION:
        return False
    found = db.execute(
        "SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema() "
        "AND (table_name, column_name) IN (SELECT * FROM unnest(%s::text[], %s::text[]))",
        ([t for t, _ in _NEWEST], [c for _, c in _NEWEST]),
    ).fetchone()[0]
    if found != len(_NEWEST):
        return False
    index = db.execute(
        "SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() "
        "AND indexname = 'trackway_queue_open'"
    ).fetchone()[0]
    return bool(index == 1)


def _where(dsn: str) -> str:
    """``host:port/dbname`` of a DSN, never its password."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        info = conninfo_to_dict(dsn)
    except Exception:
        return "the given DSN (unparseable)"
    host = info.get("host") or "localhost"
    return f"{host}:{info.get('port') or 5432}/{info.get('dbname') or ''}"


class PostgresStore(PgRunQueue, PgGroupRows):
    """A :class:`RunStore` on PostgreSQL. Claims are atomic across processes and hosts.

    ``dsn`` is a libpq connection string or URL. Install with ``pip install
    'trackway[postgres]'``. Each transaction takes a session from a pool of at most
    ``pool_size`` (``psycopg_pool``), so threads, workers and a group commit's writer no
    longer queue on one connection. A session the server ended while it sat idle (a
    restart, a failover, a pooler recycling it) fails at ``BEGIN``, before anything of the
    caller's was sent, and is replaced there: no call sees it. With ``offload`` (the
    default) a run opens and closes in a worker thread, so the event loop serves the other
    runs while the server answers; ``offload=False`` makes those calls on the loop, which
    costs less CPU where the server answers in microseconds (a local socket). When no session can be
    opened within ``connect_timeout`` seconds, the checkout is tried again up to
    ``reconnect_attempts`` times, waiting 0.1 s, 0.2 s, 0.4 s, ... A call whose transaction
    a lost connection broke fails with :class:`StoreError` and is never retried blindly (its
    writes may or may not have committed; a run's log tells which). ``seal``: a
    :class:`Seal` that keeps what a redaction policy hides sealed beside its redacted rows
    and seals the queue's inputs and answers, so workers can resume and recover redacted
    runs while no table holds a hidden value in clear.
    """

    _P = "%s"
    _RETURNING = True

    def __init__(
        self,
        dsn: str,
        *,
        pool_size: int = 4,
        offload: bool = True,
        connect_timeout: float = 10.0,
        reconnect_attempts: int = 5,
        seal: Seal | None = None,
    ) -> None:
        try:
            import psycopg
            import psycopg_pool  # noqa: F401
        except ImportError as exc:
            raise StoreError(
                "PostgresStore needs psycopg 3 and psycopg-pool: pip install 'trackway[postgres]'"
            ) from exc
        if isinstance(reconnect_attempts, bool) or not isinstance(reconnect_attempts, int):
            raise ConfigurationError("reconnect_attempts must be an int >= 0")
        if reconnect_attempts < 0:
            raise ConfigurationError("reconnect_attempts must be an int >= 0")
        pool_size = check_pool_size(pool_size)
        if not isinstance(offload, bool):
            raise ConfigurationError(
                f"PostgresStore(offload=...) takes True or False, got {offload!r}"
            )
        self.offloads_io = offload
        """Runs open and close in a worker thread, off the event loop (``offload=``)."""
        self.seal = check_seal(seal)
        self.where = _where(dsn)
        self._dsn = dsn
        self._connect_timeout = max(1, int(connect_timeout))
        self.reconnect_attempts = reconnect_attempts
        self._run_nos: dict[str, int] = {}
        self._fences: dict[str, str] = {}
        db = self._connect()
        try:
            with db.transaction():
                # Only a store missing a table, a column or the index runs the DDL: ALTER TABLE
                # takes an exclusive lock even when the column exists, which would stall (and
                # can deadlock with) the workers already writing these tables. Stores opened
                # at once on a new database take turns (CREATE ... IF NOT EXISTS is not safe
                # against itself), each asking again once it has the lock.
                _refuse_newer(_schema_version(db), self.where)
                if not _schema_current(db):
                    db.execute("SELECT pg_advisory_xact_lock(%s)", (_DDL_LOCK,))
                    _refuse_newer(_schema_version(db), self.where)
                    if not _schema_current(db):  # an older schema is brought up to date
                        db.execute(_SCHEMA)
                        db.execute(QUEUE_SCHEMA)
                        db.execute(
                            "INSERT INTO trackway_meta VALUES ('schema_version', %s) ON CONFLICT "
                            "(name) DO UPDATE SET value = excluded.value",
                            (str(SCHEMA_VERSION),),
                        )
        except psycopg.Error as exc:
            raise self._unreachable(exc) from None
        finally:  # a newer schema (StoreError) is left as it is
            db.close()
        self._sessions = PgSessions(
            lambda: self._dsn,
            pool_size=pool_size,
            connect_timeout=self._connect_timeout,
            reconnect_attempts=reconnect_attempts,
            unreachable=self._unreachable,
            lost=self._lost,
        )

    @property
    def pool_size(self) -> int:
        """The most sessions this store opens at once (``pool_size=``)."""
        size: int = self._sessions.pool.max_size
        return size

    @property
    def reconnects(self) -> int:
        """How many sessions this store found dead (ended by the server while idle, or lost
        in a transaction) and replaced."""
        return self._sessions.replaced

    def __repr__(self) -> str:
        return f"<PostgresStore {self.where}>"

    def _source(self) -> str:
        return self.where

    def _connect(self) -> Any:
        import psycopg

        try:
            return psycopg.connect(self._dsn, connect_timeout=self._connect_timeout)
        except psycopg.Error as exc:
            raise self._unreachable(exc) from None

    def _unreachable(self, exc: BaseException) -> StoreError:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return StoreError(
            f"cannot reach PostgreSQL at {self.where}: {_scrub(reason, self._dsn)}. Check that "
            "the server is running and accepts connections there, and the user and password."
        )

    def _tx(self) -> AbstractContextManager[Any]:
        return self._sessions.checkout()

    def _one(self) -> AbstractContextManager[Any]:
        return self._sessions.checkout(single=True)

    def _lost(self, exc: BaseException) -> StoreError:
        reason = _scrub(str(exc).strip(), self._dsn) or "no reason"
        return StoreError(
            f"the connection to PostgreSQL at {self.where} was lost during a transaction "
            f"({reason}); it was not retried, since it may have committed. The next call "
            "takes another session."
        )

    def _write_commits(
        self, db: Any, run_id: str, run_no: int, rows: Sequence[tuple[Any, ...]]
    ) -> None:
        """Lock the run's row for this transaction (a concurrent prune waits until it ends)
        and insert only while the row is there, and, for a worker's run, only while its
        lease is held (the queue row locked too): a few rows in one statement (one round
        trip, the common "sync" case), many rows after the checks (a pipelined batch)."""
        if len(rows) > _ONE_STATEMENT:
            self._check_lease(db, run_id)
            row = db.execute(
                "SELECT 1 FROM trackway_runs WHERE run_no = %s FOR SHARE", (run_no,)
            ).fetchone()
            if row is None:
                self._run_nos.pop(run_id, None)
                raise run_deleted(run_id, self)
            self._insert_many(db, "INSERT INTO trackway_commits VALUES " + _ROW, rows)
            return
        token = self._fences.get(run_id)
        params: list[Any] = [run_no]
        held = ""
        if token is not None:  # the lease check rides in the same statement
            held = (
                ", held AS (SELECT 1 FROM trackway_queue WHERE run_id = %s AND lease_token = %s "
                "AND state = 'running' FOR SHARE)"
            )
            params += [run_id, token]
        for one in rows:
            params.extend(one)
        cur = db.execute(
            "WITH live AS (SELECT run_no FROM trackway_runs WHERE run_no = %s FOR SHARE)"
            + held
            + " INSERT INTO trackway_commits SELECT v.* FROM (VALUES "
            + ", ".join([_ROW] * len(rows))
            + ") AS v WHERE EXISTS (SELECT 1 FROM live)"
            + (" AND EXISTS (SELECT 1 FROM held)" if held else ""),
            params,
        )
        if cur.rowcount != len(rows):
            self._check_lease(db, run_id)  # a lost lease, said as such; else it was deleted
            self._run_nos.pop(run_id, None)
            raise run_deleted(run_id, self)

    def append(self, run_id: str, commits: Sequence[Commit]) -> None:
        """A run's few commits (its number known, no worker's lease) in ONE statement, its
        own transaction: one round trip. Else as every SQL store does."""
        run_no = self._run_nos.get(run_id)
        if run_no is None or run_id in self._fences or len(commits) > _ONE_STATEMENT:
            super().append(run_id, commits)
            return
        with self._one() as db:
            self._write_commits(db, run_id, run_no, commit_rows(run_no, commits))

    def _insert_many(self, db: Any, sql: str, rows: Sequence[tuple[Any, ...]]) -> None:
        with db.cursor() as cur:
            cur.executemany(sql, rows)

    def _memory_lock(self, db: Any, scope: str, memory_id: str) -> None:
        """Writers of one scope and memory take turns (each numbers its entry after the
        last): a transaction-scoped advisory lock on a digest of the pair."""
        digest = hashlib.sha256(f"{scope}\x00{memory_id}".encode()).digest()
        db.execute(
            "SELECT pg_advisory_xact_lock(%s)", (int.from_bytes(digest[:8], "big", signed=True),)
        )

    def _held_clause(self, run_id: str) -> tuple[str, tuple[Any, ...]]:
        token = self._fences.get(run_id)
        if token is None:
            return "", ()
        return _HELD, (run_id, token)

    def close(self) -> None:
        self._sessions.close()


def _scrub(text: str, dsn: str) -> str:
    """Remove the password from a driver message, in case the driver echoed it."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        password = conninfo_to_dict(dsn).get("password")
    except Exception:
        return text
    return text.replace(str(password), "***") if password else text
