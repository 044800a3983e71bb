"""What workers call on the run queue: claims under a lease, renewals, outcomes, fencing.

A row is *runnable* when it is ``queued`` (new), ``answered`` (paused, and its answer
arrived), ``running`` and let go (its worker stopped, ``worker`` is NULL), or ``running``
with an expired lease (its worker died: a *suspect*). Workers claim runnable rows with
``FOR UPDATE SKIP LOCKED`` — many workers never wait on each other's claims — and renew their
leases while they drive. Every time is the database's clock (``clock_timestamp()``), so
workers on hosts whose clocks disagree still agree on who holds what.

Each claim gets a fresh ``lease_token``. A worker's store checks the token inside every
transaction that writes the run (:meth:`QueueClaims._hold_leases`, or a condition in the
write itself), so a worker that wakes after losing its lease can change nothing. A suspect
is claimed *solo*: by an idle worker that takes nothing else until it ends. Only a solo claim
whose worker died counts as an attempt, so a run that kills its worker is charged alone,
never the runs that happened to share its worker, and a pause, an answer or a refused answer
never counts.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, NamedTuple

import orjson

from ...core._errors import SealError
from ...observe._seal import Seal, is_sealed
from ._listen import NOTIFY_SQL, QueueListener

__all__ = ["NOW", "Claim", "QueueClaims"]

NOW = "EXTRACT(EPOCH FROM clock_timestamp())::float8"
"""The database's clock, in seconds: every queue time is the database's."""
_NOW = NOW


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
    claims: int = 0
    """The row's claim count with this claim: a later claim by another worker raises it."""


def _raw(value: Any) -> bytes | None:
    return None if value is None else bytes(value)


def _claim(r: Sequence[Any]) -> Claim:
    return Claim(r[0], r[1], bytes(r[2]), r[3], r[4], r[5], _raw(r[6]), r[7], r[8], r[9])


_FRESH = "(state IN ('queued', 'answered') OR (state = 'running' AND worker IS NULL))"
"""Runnable rows no worker died holding: new, answered, or let go."""
_SUSPECT = f"(state = 'running' AND worker IS NOT NULL AND lease_until < {_NOW})"
"""Runnable rows whose worker died (or froze) holding them: claimed solo."""
_CLAIMED = (
    "RETURNING q.run_id, q.name, q.input, picked.was, q.attempts, q.checkpoint_id, q.answer, "
    "q.lease_token, q.solo, q.claims"
)


class QueueClaims:
    """The worker's side of the queue, mixed into :class:`~._run_queue.PgRunQueue`."""

    _tx: Callable[[], AbstractContextManager[Any]]  # the store's write transaction
    _fences: dict[str, str]  # run id -> the lease token its writes must hold
    seal: Seal | None  # seals inputs and answers (the store's seal=)
    _dsn: str
    _connect_timeout: int

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
            # the rows locked in run id order, as every writer that holds leases locks them
            # (a group transaction's FOR SHARE): taken in any other order, two such
            # transactions can deadlock
            rows = db.execute(
                "WITH mine AS (SELECT run_id FROM trackway_queue WHERE state = 'running' "
                "AND (run_id, lease_token) IN (SELECT * FROM unnest(%s::text[], %s::text[])) "
                f"ORDER BY run_id FOR UPDATE) UPDATE trackway_queue q SET lease_until = {_NOW} "
                "+ %s FROM mine WHERE q.run_id = mine.run_id RETURNING q.run_id",
                (list(held), list(held.values()), lease),
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
                "WHERE run_id = %s AND lease_token = %s AND state = 'running' RETURNING name",
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
            settled = cur.fetchone()
            if settled is not None and release:  # claimable again: a listening worker wakes
                db.execute(NOTIFY_SQL, (settled[0],))
            return settled is not None

    def _queue_settled(self, claim: Claim, state: str) -> bool:
        """Whether this claim's settle as ``state`` landed: asked when the connection was
        lost during it (it may have committed). It did if the row holds ``state`` with no
        lease and no worker claimed the run since."""
        with self._tx() as db:
            row = db.execute(
                "SELECT state, claims, lease_token FROM trackway_queue WHERE run_id = %s",
                (claim.run_id,),
            ).fetchone()
        return row is not None and (row[0], row[1], row[2]) == (state, claim.claims, None)

    def _queue_listener(
        self, names: Sequence[str], heard: Callable[[], None], label: str
    ) -> QueueListener:
        """A listener (not started) that calls ``heard()`` when a run of ``names`` was
        submitted, answered or released, on a connection of its own."""
        return QueueListener(
            self._dsn, names, heard, label=label, connect_timeout=self._connect_timeout
        )

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
            "IN (SELECT * FROM unnest(%s::text[], %s::text[])) ORDER BY run_id FOR SHARE",
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
