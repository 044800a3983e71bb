"""The run queue on PostgreSQL: runs submitted by name, claimed by workers under a lease.

One row per submitted run in ``trackway_queue``. A row is *runnable* when it is ``queued``
(new), ``answered`` (paused, and its answer arrived), ``running`` and let go (its worker
stopped, ``worker`` is NULL), or ``running`` with an expired lease (its worker died: a
*suspect*). Workers claim runnable rows with ``FOR UPDATE SKIP LOCKED`` — many workers never
wait on each other's claims — and renew their leases while they drive. Every time is the
database's clock (``clock_timestamp()``), so workers on hosts whose clocks disagree still
agree on who holds what. The run itself lives in the ordinary tables: the queue only says
who drives it and what it waits on.

Each claim gets a fresh ``lease_token``. A worker's store checks the token inside every
transaction that writes the run (:meth:`PgRunQueue._hold_leases`), so a worker that wakes
after losing its lease can change nothing. A suspect is claimed *solo*: by an idle worker
that takes nothing else until it ends. Only a solo claim whose worker died counts as an
attempt, so a run that kills its worker is charged alone, never the runs that happened to
share its worker, and a pause, an answer or a refused answer never counts.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, NamedTuple

import orjson

from ._errors import ConfigurationError, SealError, SealRequiredError, UnknownRunError
from ._seal import Seal, is_sealed

__all__ = ["Claim", "PgRunQueue", "QueueEntry", "WorkerInfo", "new_worker_id"]

_NOW = "EXTRACT(EPOCH FROM clock_timestamp())::float8"

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


class Claim(NamedTuple):
    """What a worker claimed: the run, its registered name and input, and why it is
    runnable (``was``: ``queued``, ``answered`` or ``running`` — let go, or a dead
    worker's). ``token`` fences every write of this claim; ``solo``: the worker drives this
    run alone (a dead worker's run is claimed so, to learn whether it is the one that kills
    its workers)."""

    run_id: str
    name: str
    input_doc: bytes
    """The input's JSON, or sealed (``PgRunQueue._queue_input`` opens it)."""
    was: str
    attempts: int
    checkpoint_id: str | None
    answer: bytes | None
    """The answer's JSON (``b"null"`` for an answer of ``None``), or sealed; ``None`` when
    unanswered (``PgRunQueue._queue_answer`` opens it)."""
    token: str = ""
    solo: bool = False


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


def _raw(value: Any) -> bytes | None:
    return None if value is None else bytes(value)


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


def _claim(r: Sequence[Any]) -> Claim:
    return Claim(r[0], r[1], bytes(r[2]), r[3], r[4], r[5], _raw(r[6]), r[7], r[8])


_ENTRY = (
    "run_id, name, state, submitted_at, updated_at, worker, lease_until, attempts, "
    "checkpoint_id, error, claims"
)
_FRESH = "(state IN ('queued', 'answered') OR (state = 'running' AND worker IS NULL))"
"""Runnable rows no worker died holding: new, answered, or let go."""
_SUSPECT = f"(state = 'running' AND worker IS NOT NULL AND lease_until < {_NOW})"
"""Runnable rows whose worker died (or froze) holding them: claimed solo."""
_CLAIMED = (
    "RETURNING q.run_id, q.name, q.input, picked.was, q.attempts, q.checkpoint_id, q.answer, "
    "q.lease_token, q.solo"
)


class PgRunQueue:
    """The queue's queries, mixed into :class:`PostgresStore`."""

    _tx: Callable[[], AbstractContextManager[Any]]  # the store's write transaction
    _fences: dict[str, str]  # run id -> the lease token its writes must hold
    seal: Seal | None  # seals inputs and answers (the store's seal=)

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
        from ._executor import new_run_id  # deferred: the executor imports the stores

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
            cur = db.execute(
                f"UPDATE trackway_queue SET state = 'answered', answer = %s, updated_at = {_NOW} "
                "WHERE checkpoint_id = %s AND state = 'paused'",
                (doc, checkpoint_id),
            )
            if cur.rowcount == 1:
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

    # -- what workers call -------------------------------------------------------------

    def _queue_claim(
        self, worker: str, lease: float, limit: int, names: Sequence[str], *, idle: bool = True
    ) -> list[Claim]:
        """Claim runnable runs of the charts ``names``, oldest first, skipping rows another
        worker is claiming right now. An ``idle`` worker (it drives nothing) first takes one
        suspect alone; a busy worker takes nothing while a suspect waits (it drains, so the
        suspect is never starved), else up to ``limit`` fresh runs. A claim of one run by a
        worker that drives one run at most (``limit == 1`` and idle) is solo too."""
        with self._tx() as db:
            if idle:
                rows = db.execute(
                    "WITH picked AS (SELECT run_id, state AS was FROM trackway_queue "
                    f"WHERE name = ANY(%s) AND {_SUSPECT} ORDER BY submitted_at, run_id "
                    "LIMIT 1 FOR UPDATE SKIP LOCKED) "
                    "UPDATE trackway_queue q SET worker = %s, "
                    f"lease_until = {_NOW} + %s, updated_at = {_NOW}, claims = q.claims + 1, "
                    "attempts = q.attempts + CASE WHEN q.solo THEN 1 ELSE 0 END, solo = TRUE, "
                    "lease_token = gen_random_uuid()::text "
                    f"FROM picked WHERE q.run_id = picked.run_id {_CLAIMED}",
                    (list(names), worker, lease),
                ).fetchall()
                if rows:
                    return [_claim(r) for r in rows]
            else:
                waiting = db.execute(
                    f"SELECT EXISTS (SELECT 1 FROM trackway_queue WHERE name = ANY(%s) "
                    f"AND {_SUSPECT})",
                    (list(names),),
                ).fetchone()
                if waiting[0]:
                    return []
            rows = db.execute(
                "WITH picked AS (SELECT run_id, state AS was FROM trackway_queue "
                f"WHERE name = ANY(%s) AND {_FRESH} "
                "ORDER BY submitted_at, run_id LIMIT %s FOR UPDATE SKIP LOCKED) "
                f"UPDATE trackway_queue q SET state = 'running', worker = %s, "
                f"lease_until = {_NOW} + %s, updated_at = {_NOW}, claims = q.claims + 1, "
                "solo = %s, lease_token = gen_random_uuid()::text "
                f"FROM picked WHERE q.run_id = picked.run_id {_CLAIMED}",
                (list(names), limit, worker, lease, idle and limit == 1),
            ).fetchall()
        return [_claim(r) for r in rows]

    def _queue_renew(self, worker: str, held: Mapping[str, str], lease: float) -> set[str]:
        """Extend this worker's leases (``held``: run id to lease token); returns the runs
        it still holds (a lease that expired and was claimed by another worker is lost),
        and beats for the worker."""
        with self._tx() as db:
            db.execute(
                f"UPDATE trackway_workers SET beat_at = {_NOW} WHERE worker_id = %s", (worker,)
            )
            if not held:
                return set()
            rows = db.execute(
                f"UPDATE trackway_queue SET lease_until = {_NOW} + %s WHERE state = 'running' "
                "AND (run_id, lease_token) IN (SELECT * FROM unnest(%s::text[], %s::text[])) "
                "RETURNING run_id",
                (lease, list(held), list(held.values())),
            ).fetchall()
        return {r[0] for r in rows}

    def _queue_settle(
        self,
        run_id: str,
        token: str,
        state: str,
        *,
        checkpoint_id: str | None = None,
        error: str | None = None,
    ) -> bool:
        """Record how a claimed run went (``done``/``failed``/``broken``, ``paused`` with its
        checkpoint, or ``running`` with the lease given up so another worker continues it).
        Only the holder of the lease ``token`` may: returns False when it no longer holds
        it. A recorded pause starts ``attempts`` again: the run got that far."""
        release = state == "running"
        with self._tx() as db:
            cur = db.execute(
                f"UPDATE trackway_queue SET state = %s, updated_at = {_NOW}, "
                "worker = NULL, lease_until = %s, checkpoint_id = %s, error = %s, "
                "lease_token = NULL, solo = FALSE, "
                "attempts = CASE WHEN %s = 'paused' THEN 0 ELSE attempts END, "
                "answer = CASE WHEN %s = 'running' THEN answer ELSE NULL END "
                "WHERE run_id = %s AND lease_token = %s AND state = 'running'",
                (
                    state,
                    0.0 if release else None,
                    checkpoint_id,
                    error,
                    state,
                    state,
                    run_id,
                    token,
                ),
            )
            return bool(cur.rowcount == 1)

    # -- sealed inputs and answers -----------------------------------------------------------

    def _queue_input(self, claim: Claim) -> Any:
        """The claimed run's input, opened if sealed."""
        doc = claim.input_doc
        if is_sealed(doc):
            doc = self._queue_open(doc, f"queue-input:{claim.run_id}")
        return orjson.loads(doc)

    def _queue_answer(self, claim: Claim) -> Any:
        """The answer a claimed run was given, opened if sealed."""
        doc = claim.answer
        assert doc is not None and claim.checkpoint_id is not None
        if is_sealed(doc):
            doc = self._queue_open(doc, f"queue-answer:{claim.checkpoint_id}")
        return orjson.loads(doc)

    def _queue_open(self, blob: bytes, place: str) -> bytes:
        if self.seal is None:
            raise SealError(
                f"{place} is sealed, and this worker's store was given no seal: give it "
                "seal=Seal(<the key the queue was sealed with>) (trackway worker reads "
                "TRACKWAY_SEAL_KEY)"
            )
        return self.seal.open(blob, place)

    def _queue_reseal(self, claim: Claim) -> bool:
        """Seal in place an input or answer that was submitted in clear for a run a
        redaction policy covers (submitted before any worker said so); under the claim's
        lease. True when something was sealed."""
        seal = self.seal
        assert seal is not None
        doc, answer = claim.input_doc, claim.answer
        sealed_input = None if is_sealed(doc) else seal.seal(doc, f"queue-input:{claim.run_id}")
        sealed_answer = None
        if answer is not None and not is_sealed(answer):
            sealed_answer = seal.seal(answer, f"queue-answer:{claim.checkpoint_id}")
        if sealed_input is None and sealed_answer is None:
            return False
        with self._tx() as db:
            db.execute(
                "UPDATE trackway_queue SET input = COALESCE(%s, input), "
                "answer = COALESCE(%s, answer) WHERE run_id = %s AND lease_token = %s",
                (sealed_input, sealed_answer, claim.run_id, claim.token),
            )
        return True

    # -- fencing: a worker's writes hold its lease ------------------------------------------

    def _fence(self, run_id: str, token: str) -> None:
        """From now on, every write of ``run_id`` through this store object must hold the
        lease ``token``, checked in the write's own transaction."""
        self._fences[run_id] = token

    def _unfence(self, run_id: str) -> None:
        self._fences.pop(run_id, None)

    def _hold_leases(self, db: Any, run_ids: Iterable[str]) -> set[str]:
        """Of the fenced runs among ``run_ids``, the ones whose lease this store object no
        longer holds. The ones it holds are locked (``FOR SHARE``) until the transaction
        ends, so no other worker can claim them before this write commits."""
        fences = self._fences
        pairs = {r: fences[r] for r in run_ids if r in fences}
        if not pairs:
            return set()
        rows = db.execute(
            "SELECT run_id FROM trackway_queue WHERE state = 'running' AND (run_id, lease_token) "
            "IN (SELECT * FROM unnest(%s::text[], %s::text[])) FOR SHARE",
            (list(pairs), list(pairs.values())),
        ).fetchall()
        return set(pairs) - {r[0] for r in rows}

    def _queue_outstanding(self, worker: str, names: Sequence[str]) -> tuple[int, int]:
        """How many runs of the charts ``names`` are runnable now, and how many other
        workers hold under a live lease (an idle worker waits for those: their worker may
        die)."""
        with self._tx() as db:
            row = db.execute(
                "SELECT count(*) FILTER (WHERE state IN ('queued', 'answered') "
                f"OR (state = 'running' AND lease_until < {_NOW})), "
                f"count(*) FILTER (WHERE state = 'running' AND lease_until >= {_NOW} "
                "AND worker IS DISTINCT FROM %s) "
                "FROM trackway_queue WHERE state IN ('queued', 'answered', 'running') "
                "AND name = ANY(%s)",
                (worker, list(names)),
            ).fetchone()
        return int(row[0]), int(row[1])

    def _worker_register(
        self,
        worker: str,
        lease: float,
        max_runs: int,
        charts: Sequence[str],
        redacting: Sequence[str] = (),
    ) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT INTO trackway_workers (worker_id, host, pid, started_at, beat_at, "
                "lease_seconds, max_runs, state, charts, redacting) VALUES "
                f"(%s, %s, %s, {_NOW}, {_NOW}, %s, %s, 'running', %s, %s) "
                "ON CONFLICT (worker_id) DO UPDATE SET beat_at = excluded.beat_at, "
                "state = 'running', redacting = excluded.redacting",
                (
                    worker,
                    socket.gethostname(),
                    os.getpid(),
                    lease,
                    max_runs,
                    orjson.dumps(list(charts)).decode(),
                    list(redacting),
                ),
            )

    def _worker_state(self, worker: str, state: str) -> None:
        with self._tx() as db:
            db.execute(
                f"UPDATE trackway_workers SET state = %s, beat_at = {_NOW} WHERE worker_id = %s",
                (state, worker),
            )
