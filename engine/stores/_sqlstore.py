"""What the SQL stores share: one schema shape and every query, in any DB-API dialect.

Commits are keyed ``run_no * 2**32 + seq``: ordered per run with no extra index and no run id
repeated per row. A store subclass provides the connection (``_tx``, ``_read_tx``), its
parameter placeholder ``_P`` and, if its connection has no ``executemany``, ``_insert_many``.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

import orjson

from ..core._commit import ROW_FIELDS, Commit
from ..core._errors import (
    UnknownRunError,
)
from ..core._snapshot import Snapshot
from ._artifact_rows import SqlArtifactRows
from ._checkpoint import Checkpoint
from ._damaged import DamagedRows, check_run_rows, stored_as
from ._lease_fence import LeaseFence, lease_lost
from ._memory_rows import SqlMemoryRows
from ._paused import PausedRun, paused_run
from ._sealed_rows import SealedRows
from ._store import CheckpointClaim, CommitMeta, RunInfo, select_prunable, snapshot_from_rows

__all__ = [
    "SqlRunStore",
    "close_sql",
    "initial_doc",
    "initial_from_doc",
    "lease_lost",
    "open_sql",
    "outcome_doc",
    "run_deleted",
]

SPAN = 1 << 32
"""Commits of one run have ids ``run_no * SPAN + seq``."""
ROW = "id & 4294967295, " + ", ".join(ROW_FIELDS[1:])
"""The columns of a commit row, seq first (the low 32 bits of the id)."""


def initial_doc(initial: dict[str, bytes]) -> bytes:
    return orjson.dumps({k: orjson.Fragment(v) for k, v in initial.items()})


def initial_from_doc(doc: bytes) -> dict[str, bytes]:
    return {k: orjson.dumps(v) for k, v in orjson.loads(doc).items()}


class SqlRunStore(SealedRows, LeaseFence, DamagedRows, SqlMemoryRows, SqlArtifactRows):
    """The :class:`RunStore` interface on the trackway tables, for any SQL dialect here (and
    :class:`~._memory_rows.MemoryRows` on its memory tables, :class:`~._artifact_rows.ArtifactRows`
    on its artifacts table)."""

    _P = "?"
    _RETURNING = sqlite3.sqlite_version_info >= (3, 35, 0)
    """Whether the dialect has ``INSERT ... RETURNING`` (SQLite from 3.35, PostgreSQL): a
    run's number then comes back from ``begin_run`` itself, so its first commits take the
    one-statement path instead of a lookup first."""
    _run_nos: dict[str, int]

    # -- what a dialect provides -----------------------------------------------------------

    def _tx(self) -> AbstractContextManager[Any]:  # pragma: no cover - provided
        """A write transaction yielding the connection."""
        raise NotImplementedError

    def _read_tx(self) -> AbstractContextManager[Any]:
        """A read transaction yielding the connection (a write one unless cheaper exists)."""
        return self._tx()

    def _one(self) -> AbstractContextManager[Any]:
        """A connection for ONE statement that is its own transaction (a write transaction
        unless the dialect has cheaper: PostgreSQL sends it alone, one round trip)."""
        return self._tx()

    def _insert_many(self, db: Any, sql: str, rows: Sequence[tuple[Any, ...]]) -> None:
        db.executemany(sql, rows)

    # -- runs and commits ------------------------------------------------------------------

    def begin_run(
        self,
        run_id: str,
        chart_id: str,
        initial: dict[str, bytes],
        *,
        sealed: bytes | None = None,
    ) -> None:
        """Open (or reopen) a run; ``sealed``: its real input, sealed, when a redaction
        policy hid some of ``initial`` (a store with a seal only)."""
        self._run_nos.pop(run_id, None)  # a run deleted elsewhere and begun again: a new number
        fenced = run_id in self._fences  # a worker's: the lease is checked first
        with self._tx() if fenced else self._one() as db:
            self._check_lease(db, run_id)
            cur = db.execute(
                open_sql(self._P, self._RETURNING),
                (run_id, chart_id, time.time(), initial_doc(initial), sealed),
            )
            rows = cur.fetchall() if self._RETURNING else ()  # all: the statement ends here
        if rows:  # known once the run's row is committed
            self._run_nos[run_id] = int(rows[0][0])

    def append(self, run_id: str, commits: Sequence[Commit]) -> None:
        """Write commits of a run this store holds; a run deleted meanwhile (by another
        store object, another process) is refused, never written to."""
        with self._tx() as db:
            run_no = self._run_no(db, run_id)
            self._write_commits(db, run_id, run_no, commit_rows(run_no, commits))

    def _write_commits(
        self, db: Any, run_id: str, run_no: int, rows: Sequence[tuple[Any, ...]]
    ) -> None:
        """Insert commit rows of a run that must still exist, and whose lease a worker's
        store must still hold (checked in this transaction, which serializes writers in
        SQLite). A dialect may do all of it in one statement."""
        self._check_lease(db, run_id)
        self._check_live(db, run_id, run_no)
        marks = ", ".join([self._P] * 8)
        self._insert_many(db, f"INSERT INTO trackway_commits VALUES ({marks})", rows)

    def finish_run(self, run_id: str, status: str, outcome: Any = None) -> None:
        held, fence = self._held_clause(run_id)
        with self._one() as db:  # the lease, if any, is checked in the same statement
            cur = db.execute(
                close_sql(self._P, held),
                (status, time.time(), outcome_doc(outcome), run_id, *fence),
            )
            if cur.rowcount != 1:
                self._check_lease(db, run_id)  # a lost lease, said as such
                raise run_deleted(run_id, self)

    def load(self, run_id: str) -> Snapshot:
        return self._load(run_id, opened=False)

    def _load(self, run_id: str, *, opened: bool) -> Snapshot:
        """The run as stored; ``opened``: with the real values its sealed copies hold (the
        resume and recovery paths of a store with a seal; ``load`` never opens them)."""
        p = self._P
        with self._read_tx() as db:
            # (an older store opened read-only has no ``sealed`` column: only ask for it
            # when opening)
            try:
                run = db.execute(
                    f"SELECT chart_id, status, initial, outcome{', sealed' if opened else ''} "
                    f"FROM trackway_runs WHERE run_id = {p}",
                    (run_id,),
                ).fetchone()
            except Exception as exc:
                damaged = self._reading(exc, run_id, "trackway_runs")
                if damaged is None:
                    raise
                raise damaged from None
            if run is None:
                raise UnknownRunError(
                    f"no run {run_id!r} in {self!r}; store.list_runs() lists the runs it holds"
                )
            lo, hi = self._span(db, run_id)
            try:
                docs = [
                    (bytes(r[7]), r[:7])
                    for r in db.execute(
                        f"SELECT {ROW}, doc FROM trackway_commits WHERE id BETWEEN {p} AND {p} "
                        "ORDER BY id",
                        (lo, hi),
                    )
                ]
            except TypeError:  # bytes() of a document that is not bytes
                raise self._not_bytes(db, run_id, lo, hi) from None
            except Exception as exc:
                damaged = self._reading(exc, run_id, "trackway_commits")
                if damaged is None:
                    raise
                raise damaged from None
        chart_id, status, initial, outcome = run[:4]
        if opened:
            if run[4] is not None:
                initial = self._open(bytes(run[4]), f"initial:{run_id}")
            docs = [(self._open_doc(doc, run_id, row[0]), row) for doc, row in docs]
        for column, value in (("chart_id", chart_id), ("status", status)):
            if type(value) is not str:
                raise self._damaged(
                    run_id, f"trackway_runs.{column}", f"its {column} is {stored_as(value)}"
                )
        column = "trackway_runs.initial"
        try:
            initial_values = initial_from_doc(bytes(initial))
            column = "trackway_runs.outcome"
            ending = None if outcome is None else orjson.loads(bytes(outcome))
        except (ValueError, TypeError) as exc:
            what = "its input" if column.endswith("initial") else "its ending"
            raise self._damaged(
                run_id, column, f"{what} cannot be read ({type(exc).__name__}: {exc})"
            ) from exc
        return snapshot_from_rows(
            run_id, chart_id, status, initial_values, docs, ending, repr(self), self._source()
        )

    def history(self, run_id: str) -> list[CommitMeta]:
        """Commit metadata from its own columns: no document is read or decoded."""
        p = self._P
        with self._read_tx() as db:
            lo, hi = self._span(db, run_id)
            try:
                cur = db.execute(
                    f"SELECT {ROW} FROM trackway_commits WHERE id BETWEEN {p} AND {p} ORDER BY id",
                    (lo, hi),
                )
                return list(map(CommitMeta._make, cur.fetchall()))
            except Exception as exc:
                damaged = self._reading(exc, run_id, "trackway_commits")
                if damaged is None:
                    raise
                raise damaged from None

    def list_runs(self) -> list[RunInfo]:
        with self._read_tx() as db:
            try:
                rows = db.execute(
                    "SELECT r.run_id, r.chart_id, r.status, r.started_at, r.ended_at, "
                    "COALESCE((SELECT MAX(c.id) FROM trackway_commits c WHERE c.id BETWEEN "
                    f"r.run_no * {SPAN} AND r.run_no * {SPAN} + {SPAN - 1}) - "
                    f"r.run_no * {SPAN}, 0) FROM trackway_runs r ORDER BY r.started_at, r.run_id"
                ).fetchall()
            except Exception as exc:
                damaged = self._reading(exc, None, "trackway_runs")
                if damaged is None:
                    raise
                raise damaged from None
        check_run_rows(repr(self), self._source(), rows)
        return [RunInfo(*row) for row in rows]

    def paused(self) -> list[PausedRun]:
        """The runs waiting to be resumed, with what they wait on (oldest pause first): a
        run ``paused`` whose checkpoint at its last commit (``<run id>@<commits>``) is kept
        and not claimed, in one query."""
        count = (
            f"COALESCE((SELECT MAX(c.id) FROM trackway_commits c WHERE c.id BETWEEN "
            f"r.run_no * {SPAN} AND r.run_no * {SPAN} + {SPAN - 1}) - r.run_no * {SPAN}, 0)"
        )
        with self._read_tx() as db:
            rows = db.execute(
                "SELECT r.chart_id, r.ended_at, k.doc FROM trackway_runs r "
                "JOIN trackway_checkpoints k "
                f"ON k.checkpoint_id = r.run_id || '@' || CAST({count} AS TEXT) "
                "WHERE r.status = 'paused' AND k.claimed_at IS NULL AND k.doc IS NOT NULL "
                "ORDER BY r.ended_at, r.run_id"
            ).fetchall()
        try:
            return [paused_run(chart_id, since, bytes(doc)) for chart_id, since, doc in rows]
        except TypeError:  # bytes() of a document that is not bytes
            text = [doc for _, _, doc in rows if isinstance(doc, str)]
            if not text:
                raise
            raise self._damaged(
                None,
                "trackway_checkpoints.doc",
                f"a paused run's checkpoint is stored as {stored_as(text[0])}, not as bytes",
            ) from None

    # -- checkpoints and claims ----------------------------------------------------------

    def save_checkpoint(self, checkpoint: Checkpoint, *, sealed: bytes | None = None) -> None:
        """Keep a checkpoint; ``sealed``: the real one, sealed, beside a masked copy (a store
        with a seal, under a redaction policy)."""
        p = self._P
        with self._tx() as db:
            self._check_lease(db, checkpoint.run_id)
            db.execute(
                f"INSERT INTO trackway_checkpoints (checkpoint_id, doc, sealed) VALUES ({p}, "
                f"{p}, {p}) ON CONFLICT (checkpoint_id) DO UPDATE SET doc = excluded.doc, "
                "sealed = excluded.sealed",
                (checkpoint.checkpoint_id, checkpoint.to_json(), sealed),
            )

    def claim_checkpoint(
        self, checkpoint_id: str, answer: bytes | None = None, *, sealed: bytes | None = None
    ) -> bool:
        """Atomic: the first claim inserts or fills ``claimed_at`` and keeps ``answer`` (the
        resume value, so a resume the process did not finish can be recovered; ``sealed``:
        the real one, sealed, when ``answer`` is redacted); later claims change nothing."""
        p = self._P
        with self._tx() as db:
            self._check_lease(db, checkpoint_id.rpartition("@")[0])
            cur = db.execute(
                "INSERT INTO trackway_checkpoints (checkpoint_id, claimed_at, answer, "
                f"sealed_answer) VALUES ({p}, {p}, {p}, {p}) ON CONFLICT (checkpoint_id) DO "
                "UPDATE SET claimed_at = excluded.claimed_at, answer = excluded.answer, "
                "sealed_answer = excluded.sealed_answer "
                "WHERE trackway_checkpoints.claimed_at IS NULL",
                (checkpoint_id, time.time(), answer, sealed),
            )
            return bool(cur.rowcount == 1)

    def checkpoint_claim(self, checkpoint_id: str) -> CheckpointClaim | None:
        """Whether the checkpoint was claimed, with what answer, and where it paused."""
        p = self._P
        with self._read_tx() as db:
            row = db.execute(
                "SELECT claimed_at, answer, doc FROM trackway_checkpoints "
                f"WHERE checkpoint_id = {p}",
                (checkpoint_id,),
            ).fetchone()
        if row is None:
            return None
        claimed_at, answer, doc = row
        paused_at = "" if doc is None else self._checkpoint(checkpoint_id, doc).paused_at
        return CheckpointClaim(
            claimed_at is not None, None if answer is None else bytes(answer), paused_at
        )

    def load_checkpoint(self, checkpoint_id: str) -> Checkpoint:
        p = self._P
        with self._read_tx() as db:
            row = db.execute(
                f"SELECT doc FROM trackway_checkpoints WHERE checkpoint_id = {p} "
                "AND doc IS NOT NULL",
                (checkpoint_id,),
            ).fetchone()
        if row is None:
            raise UnknownRunError(f"no checkpoint {checkpoint_id!r} in {self!r}")
        return self._checkpoint(checkpoint_id, row[0])

    # -- pruning -------------------------------------------------------------------------

    def prune(
        self,
        *,
        run_ids: Sequence[str] | None = None,
        older_than: float | None = None,
        keep_latest: int | None = None,
    ) -> int:
        """Delete runs by id, by age (seconds since they ended) or beyond the newest N."""
        doomed = select_prunable(self.list_runs(), run_ids, older_than, keep_latest)
        with self._tx() as db:
            for rid in doomed:
                self._delete(db, rid)
        return len(doomed)

    def delete(self, run_id: str) -> None:
        """Delete one run, its commits and its checkpoints (claims stay: see ``_delete``)."""
        with self._tx() as db:
            if not self._delete(db, run_id):
                raise UnknownRunError(f"no run {run_id!r} in {self!r}")

    def _run_no(self, db: Any, run_id: str) -> int:
        no = self._run_nos.get(run_id)
        if no is None:
            row = db.execute(
                f"SELECT run_no FROM trackway_runs WHERE run_id = {self._P}", (run_id,)
            ).fetchone()
            if row is None:
                raise UnknownRunError(f"no run {run_id!r} in {self!r}")
            no = self._run_nos[run_id] = int(row[0])
        return no

    def _check_live(self, db: Any, run_id: str, run_no: int) -> None:
        """The run still exists, inside this transaction (another store object may have
        pruned it)."""
        row = db.execute(
            f"SELECT 1 FROM trackway_runs WHERE run_no = {self._P}", (run_no,)
        ).fetchone()
        if row is None:
            self._run_nos.pop(run_id, None)
            raise run_deleted(run_id, self)

    def _span(self, db: Any, run_id: str) -> tuple[int, int]:
        base = self._run_no(db, run_id) * SPAN
        return base, base + SPAN - 1

    def _delete(self, db: Any, run_id: str) -> bool:
        try:
            lo, hi = self._span(db, run_id)
        except UnknownRunError:
            return False
        p = self._P
        self._run_nos.pop(run_id, None)
        # the run row first: a writer holding it (see _live_run_no) finishes before the
        # commits are deleted, so none of its commits outlive the run
        cur = db.execute(f"DELETE FROM trackway_runs WHERE run_id = {p}", (run_id,))
        db.execute(f"DELETE FROM trackway_commits WHERE id BETWEEN {p} AND {p}", (lo, hi))
        ids = (f"{run_id}@", f"{run_id}A")  # ids are "<run id>@<commit count>"; 'A' > '@'
        # A claim outlives its run: a resumed checkpoint must never resume again.
        db.execute(
            f"DELETE FROM trackway_checkpoints WHERE checkpoint_id >= {p} "
            f"AND checkpoint_id < {p} AND claimed_at IS NULL",
            ids,
        )
        db.execute(
            "UPDATE trackway_checkpoints SET doc = NULL, sealed = NULL, sealed_answer = NULL "
            f"WHERE checkpoint_id >= {p} "
            f"AND checkpoint_id < {p}",
            ids,
        )
        return bool(cur.rowcount > 0)


def commit_rows(run_no: int, commits: Sequence[Commit]) -> list[tuple[Any, ...]]:
    """The ``trackway_commits`` rows of a run's commits (ids ``run_no * SPAN + seq``)."""
    base = run_no * SPAN
    return [
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


def open_sql(p: str, returning: bool) -> str:
    """Open (or reopen) a run: its row inserted, or set running again; ``returning``: the
    run's number comes back."""
    return (
        "INSERT INTO trackway_runs (run_id, chart_id, status, started_at, initial, sealed) "
        f"VALUES ({p}, {p}, 'running', {p}, {p}, {p}) ON CONFLICT (run_id) DO UPDATE SET "
        "status = 'running', ended_at = NULL, outcome = NULL, "
        "sealed = COALESCE(excluded.sealed, trackway_runs.sealed)"
        + (" RETURNING run_no" if returning else "")
    )


def close_sql(p: str, held: str) -> str:
    """Record how a run ended (status, end time, outcome), ``held``: only while a worker's
    lease is (see ``_held_clause``)."""
    return (
        f"UPDATE trackway_runs SET status = {p}, ended_at = {p}, outcome = {p} "
        f"WHERE run_id = {p}{held}"
    )


def outcome_doc(outcome: Any) -> bytes | None:
    return None if outcome is None else orjson.dumps(outcome)


def run_deleted(run_id: str, store: object) -> UnknownRunError:
    return UnknownRunError(
        f"run {run_id!r} is no longer in {store!r}: it was deleted (pruned) while it ran, so "
        "nothing more is written for it. Prune only runs that have ended "
        "(store.prune(older_than=...) picks by end time)"
    )
