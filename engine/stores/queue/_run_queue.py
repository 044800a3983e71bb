"""The run queue on PostgreSQL: runs submitted by name, claimed by workers under a lease.

One row per submitted run in ``trackway_queue``. A row is *runnable* when it is ``queued``
(new), ``answered`` (paused, and its answer arrived), ``running`` and let go (its worker
stopped, ``worker`` is NULL), or ``running`` with an expired lease (its worker died: a
*suspect*). Workers claim runnable rows with ``FOR UPDATE SKIP LOCKED`` — many workers never
wait on each other's claims — and renew their leases while they drive. Every time is the
database's clock (``clock_timestamp()``), so workers on hosts whose clocks disagree still
agree on who holds what. The run itself lives in the ordinary tables: the queue only says
who drives it and what it waits on.

What workers call (claims, leases, fencing, sealed inputs) is in ``_claims``.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import orjson

from ...core._errors import ConfigurationError, SealRequiredError, UnknownRunError
from ...core._paths import new_run_id
from ._claims import NOW as _NOW
from ._claims import Claim, QueueClaims
from ._listen import NOTIFY_SQL

__all__ = ["Claim", "PgRunQueue", "QueueEntry", "WorkerInfo", "new_worker_id"]

QUEUE_SCHEMA = """
CREATE TABLE IF NOT EXISTS trackway_queue (
    run_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    input BYTEA NOT NULL,
    state TEXT NOT NULL,
    submitted_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    worker TEXT,
    lease_until DOUBLE PRECISION,
    attempts INTEGER NOT NULL DEFAULT 0,
    checkpoint_id TEXT,
    answer BYTEA,
    error TEXT
);
ALTER TABLE trackway_queue ADD COLUMN IF NOT EXISTS claims INTEGER NOT NULL DEFAULT 0;
ALTER TABLE trackway_queue ADD COLUMN IF NOT EXISTS lease_token TEXT;
ALTER TABLE trackway_queue ADD COLUMN IF NOT EXISTS solo BOOLEAN NOT NULL DEFAULT FALSE;
CREATE INDEX IF NOT EXISTS trackway_queue_open ON trackway_queue (submitted_at)
    WHERE state IN ('queued', 'answered', 'running');
CREATE TABLE IF NOT EXISTS trackway_workers (
    worker_id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    started_at DOUBLE PRECISION NOT NULL,
    beat_at DOUBLE PRECISION NOT NULL,
    lease_seconds DOUBLE PRECISION NOT NULL,
    max_runs INTEGER NOT NULL,
    state TEXT NOT NULL,
    charts TEXT NOT NULL
);
-- the names whose runs a redaction policy covers: submitted and answered sealed only
ALTER TABLE trackway_workers ADD COLUMN IF NOT EXISTS redacting TEXT[] NOT NULL DEFAULT '{}';
"""

SETTLED = frozenset({"done", "failed", "broken"})
"""Queue states a run never leaves."""


class QueueEntry(NamedTuple):
    """A submitted run as the queue sees it (``store.queued(run_id)``, ``store.queue()``).

    ``state``: ``queued`` (waiting for a worker), ``running`` (a worker holds its lease
    until ``lease_until``), ``paused`` (waits for ``store.answer(checkpoint_id, value)``),
    ``answered`` (waiting for a worker to resume it), or how it ended: ``done``,
    ``failed`` (``error`` says why), ``broken``. ``attempts`` counts the claims whose worker
    died while driving the run alone (what ``max_attempts`` bounds; a recorded pause starts
    it again from 0); ``claims`` counts every claim.
    """

    run_id: str
    name: str
    state: str
    submitted_at: float
    updated_at: float
    worker: str | None
    lease_until: float | None
    attempts: int
    checkpoint_id: str | None
    error: str | None
    claims: int

    @property
    def ended(self) -> bool:
        return self.state in SETTLED


class WorkerInfo(NamedTuple):
    """A worker as it registered itself (``store.workers()``); ``live`` when its last beat
    is within two leases, ``held`` the runs whose lease it holds now."""

    worker_id: str
    host: str
    pid: int
    started_at: float
    beat_at: float
    lease_seconds: float
    max_runs: int
    state: str
    charts: tuple[str, ...]
    live: bool
    held: tuple[str, ...]


def _refuse_clear(db: Any, name: str, call: str) -> None:
    """A store without a seal may not take an input or answer for ``name`` if a worker
    registered it as redacted: it would rest in clear."""
    row = db.execute(
        "SELECT EXISTS (SELECT 1 FROM trackway_workers WHERE %s = ANY(redacting))", (name,)
    ).fetchone()
    if row[0]:
        raise SealRequiredError(
            f"{call}: runs of {name!r} are redacted (its workers drive it under a redaction "
            "policy), so what you pass may not rest in the queue in clear. Use a store given "
            "the workers' seal: PostgresStore(dsn, seal=Seal(key)) (the trackway command "
            "line reads TRACKWAY_SEAL_KEY)"
        )


def new_worker_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def _entry(row: Sequence[Any]) -> QueueEntry:
    return QueueEntry(*row)


_ENTRY = (
    "run_id, name, state, submitted_at, updated_at, worker, lease_until, attempts, "
    "checkpoint_id, error, claims"
)


class PgRunQueue(QueueClaims):
    """The queue's queries, mixed into :class:`PostgresStore`: what users call here, what
    workers call in :class:`~._claims.QueueClaims`."""

    # -- what users call ---------------------------------------------------------------

    def submit(self, name: str, input: Any = None, *, run_id: str | None = None) -> str:
        """Queue a run of the chart or agent a worker registered as ``name``; returns its
        run id (a worker starts the run under it). ``input`` is the run's input: a dict of
        state keys for a chart, the message (or ``{"message": ..., "identity": ...}``) for
        an agent; it must be JSON. Checked against the chart by the worker that claims it:
        a refused input ends the run ``failed`` with the reason. A store with a seal keeps
        the input sealed; one without refuses a name whose workers redact its runs
        (:class:`SealRequiredError`), so the input never rests in clear."""
        if not isinstance(name, str) or not name:
            raise ConfigurationError("submit(name, ...) takes the registered name, a non-empty str")
        try:
            doc = orjson.dumps(input)
        except TypeError as exc:
            raise ConfigurationError(
                f"submit({name!r}, input): the input must be JSON (dicts, lists, str, numbers, "
                f"bools, None): {exc}"
            ) from None
        rid = run_id or new_run_id()
        with self._tx() as db:
            if self.seal is not None:
                doc = self.seal.seal(doc, f"queue-input:{rid}")
            else:
                _refuse_clear(db, name, "submit")
            cur = db.execute(
                "INSERT INTO trackway_queue (run_id, name, input, state, submitted_at, "
                f"updated_at) VALUES (%s, %s, %s, 'queued', {_NOW}, {_NOW}) "
                "ON CONFLICT (run_id) DO NOTHING",
                (rid, name, doc),
            )
            if cur.rowcount != 1:
                raise ConfigurationError(f"run {rid!r} is already in the queue; pick another id")
            db.execute(NOTIFY_SQL, (name,))  # delivered at commit: a listening worker wakes
        return rid

    def answer(self, checkpoint_id: str, value: Any = None) -> None:
        """Answer the question a queued run paused on (``QueueEntry.checkpoint_id``, or the
        ``checkpoint_id`` of ``store.paused()``); a worker claims it and resumes the run with
        ``value``. Answering twice, or a checkpoint no queued run waits on, is refused. A store
        with a seal keeps the answer sealed (one without refuses a run whose workers redact)."""
        try:
            doc = orjson.dumps(value)
        except TypeError as exc:
            raise ConfigurationError(f"answer({checkpoint_id!r}, value): not JSON: {exc}") from None
        with self._tx() as db:
            if self.seal is not None:
                doc = self.seal.seal(doc, f"queue-answer:{checkpoint_id}")
            else:
                row = db.execute(
                    "SELECT name FROM trackway_queue WHERE checkpoint_id = %s", (checkpoint_id,)
                ).fetchone()
                if row is not None:
                    _refuse_clear(db, row[0], "answer")
            answered = db.execute(
                f"UPDATE trackway_queue SET state = 'answered', answer = %s, updated_at = {_NOW} "
                "WHERE checkpoint_id = %s AND state = 'paused' RETURNING name",
                (doc, checkpoint_id),
            ).fetchone()
            if answered is not None:
                db.execute(NOTIFY_SQL, (answered[0],))
                return
            row = db.execute(
                "SELECT run_id, state FROM trackway_queue WHERE checkpoint_id = %s",
                (checkpoint_id,),
            ).fetchone()
        if row is None:
            raise UnknownRunError(
                f"no queued run waits on checkpoint {checkpoint_id!r}: store.queue() lists the "
                "queued runs; a run not started through store.submit() is resumed with "
                "Executor.resume (or Agent.resume)"
            )
        raise UnknownRunError(
            f"run {row[0]!r} no longer waits on {checkpoint_id!r} (it is {row[1]}): it was "
            "answered already"
        )

    def queued(self, run_id: str) -> QueueEntry:
        """The queue's row for a submitted run."""
        with self._tx() as db:
            row = db.execute(
                f"SELECT {_ENTRY} FROM trackway_queue WHERE run_id = %s", (run_id,)
            ).fetchone()
        if row is None:
            raise UnknownRunError(f"no run {run_id!r} in the queue; store.queue() lists them")
        return _entry(row)

    def queue(self, states: Iterable[str] | None = None, *, limit: int = 1000) -> list[QueueEntry]:
        """Submitted runs, oldest first; ``states`` keeps only those in these states."""
        with self._tx() as db:
            if states is None:
                rows = db.execute(
                    f"SELECT {_ENTRY} FROM trackway_queue ORDER BY submitted_at, run_id LIMIT %s",
                    (limit,),
                ).fetchall()
            else:
                rows = db.execute(
                    f"SELECT {_ENTRY} FROM trackway_queue WHERE state = ANY(%s) "
                    "ORDER BY submitted_at, run_id LIMIT %s",
                    (list(states), limit),
                ).fetchall()
        return [_entry(r) for r in rows]

    def queue_counts(self) -> dict[str, int]:
        """How many submitted runs are in each state."""
        with self._tx() as db:
            rows = db.execute("SELECT state, count(*) FROM trackway_queue GROUP BY state")
            return {str(s): int(n) for s, n in rows.fetchall()}

    def workers(self, *, include_gone: bool = False) -> list[WorkerInfo]:
        """Registered workers with the runs they hold; gone ones (stopped, or silent for two
        leases) only with ``include_gone``."""
        with self._tx() as db:
            now = float(db.execute(f"SELECT {_NOW}").fetchone()[0])
            rows = db.execute(
                "SELECT w.worker_id, w.host, w.pid, w.started_at, w.beat_at, w.lease_seconds, "
                "w.max_runs, w.state, w.charts, COALESCE(array_agg(q.run_id ORDER BY q.run_id) "
                "FILTER (WHERE q.run_id IS NOT NULL), '{}') FROM trackway_workers w "
                "LEFT JOIN trackway_queue q ON q.worker = w.worker_id AND q.state = 'running' "
                "GROUP BY w.worker_id ORDER BY w.started_at, w.worker_id"
            ).fetchall()
        out = []
        for r in rows:
            live = r[7] != "stopped" and now - r[4] <= 2 * r[5]
            if live or include_gone:
                charts = tuple(orjson.loads(r[8]))
                w_id, host, pid, started, beat, lease, max_runs, state = r[:8]
                out.append(
                    WorkerInfo(
                        w_id,
                        host,
                        pid,
                        started,
                        beat,
                        lease,
                        max_runs,
                        state,
                        charts,
                        live,
                        tuple(r[9]),
                    )
                )
        return out
