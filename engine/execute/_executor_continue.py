"""Continuing a run that stopped without ending: ``resume`` (a paused run, from its
checkpoint: checked, then claimed once, its answer kept) and ``recover`` (a run whose process
died or was stopped, from the store's log). Each makes the continued run's context and hands
it to the executor's drive loop. A part of :class:`~trackway.engine.Executor`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio.to_thread

from ..chart._chart import FlowChart
from ..core._errors import CheckpointError, ExecutorUsageError, RecoveryError
from ..core._paths import StagePath
from ..core._snapshot import Snapshot
from ..core._values import encode_value, freeze, to_bytes
from ..observe._redact import RedactionPolicy
from ..observe._seal import Seal
from ..run._context import RunContext
from ..run._cursor import RootCursor
from ..stores._checkpoint import Checkpoint, check_chart
from ..stores._store import RunStore
from ._recovery import Pending, recovery_plan, replay_index
from ._session import StoreSession, claim
from ._trust import as_checkpoint, trusted_log

if TYPE_CHECKING:
    from ..core._commit import Commit
    from ._executor import RunResult

__all__ = ["ContinuingRuns"]


class ContinuingRuns:
    """``resume`` and ``recover`` (mixed into :class:`~trackway.engine.Executor`)."""

    chart: FlowChart
    store: RunStore | None
    redact: RedactionPolicy | None
    allow_unsigned_checkpoints: bool
    _key: bytes
    _session: StoreSession | None
    _seal: Seal | None

    if TYPE_CHECKING:

        def _continued(self, run_id: str, snapshot: Snapshot) -> RunContext: ...

        async def _drive(
            self,
            run: RunContext,
            cursor: RootCursor | None,
            timeout: float | None,
            raise_on_error: bool,
            *,
            opening: Commit | None = None,
        ) -> RunResult: ...

    async def resume(
        self,
        checkpoint: Checkpoint | str | bytes,
        value: Any = None,
        *,
        timeout: float | None = None,
        raise_on_error: bool = True,
    ) -> RunResult:
        """Continue a paused run: the paused stage's ``on_resume(scope, value)`` runs first.

        The run keeps its id, its commit log and its counters; nothing that committed runs
        again. A checkpoint resumes once: a second resume raises
        :class:`CheckpointClaimedError` (with a store, the claim is atomic across processes).
        Everything is checked before the claim: the chart, the cursor, the value.

        ``checkpoint`` may also be a str naming the paused run in this executor's store: its
        run id (the checkpoint it waits on now) or a checkpoint id (``store.paused()`` lists
        both).
        """
        session = self._session
        if session is not None and session.offload:  # its lookups and claim wait on a network
            claimed = await anyio.to_thread.run_sync(self._claimed, checkpoint, value)
        else:
            claimed = self._claimed(checkpoint, value)
        cp, snapshot, owned, known = claimed
        run = self._continued(cp.run_id, snapshot)
        run.resume_value = freeze(owned)
        run.resume_taken = False
        run.resume_target = str(StagePath.parse(cp.paused_at).base())
        if session is not None:
            await session.opened(run, with_log=not known)
        return await self._drive(run, cp.cursor, timeout, raise_on_error)

    def _claimed(
        self, checkpoint: Checkpoint | str | bytes, value: Any
    ) -> tuple[Checkpoint, Snapshot, Any, bool]:
        """``resume``'s store work before the run opens: the checkpoint checked and claimed,
        the log it continues, the resume value, and whether the store knows the run (a
        checkpoint that carries its log may come from elsewhere: its log is then stored as
        the run opens)."""
        cp = as_checkpoint(checkpoint, self.store, opened=self.redact is not None)
        if cp.redacted or cp.cursor is None:
            raise CheckpointError(
                f"checkpoint {cp.checkpoint_id} is a masked copy (a store keeps masked "
                "checkpoints under a redaction policy, and redact_checkpoints=True masks the "
                "returned one too), so it holds no real values to resume with; resume with "
                "the RunResult.checkpoint of the run that paused"
            )
        check_chart(cp, self.chart)
        data, owned = encode_value(value, "resume value", cp.paused_at)
        snapshot = trusted_log(cp, self._session, self._key, self.allow_unsigned_checkpoints)
        kept_answer, sealed = data, None
        if self.redact is not None and self.redact.pauses:  # redacted, and sealed if it can
            kept_answer = to_bytes(self.redact.marker)
            if self._seal is not None:
                sealed = self._seal.seal(data, f"answer:{cp.checkpoint_id}")
        claim(self.store, cp, kept_answer, sealed)  # the store keeps the answer
        session = self._session
        known = session is None or session.knows(cp.run_id, embedded=cp.snapshot is not None)
        return cp, snapshot, owned, known

    async def recover(
        self, run_id: str, *, timeout: float | None = None, raise_on_error: bool = True
    ) -> RunResult:
        """Continue a run that stopped without ending: its process died, or its store or a
        cancellation from outside stopped it.

        The store's log is the truth, at any depth: nothing that committed runs again
        (stages, decisions, merges, subflow mappings are taken from the log), and whatever
        was in flight — a stage, the branches of a fork, selector or for-each and their merge —
        runs again. A run that paused is paused again (its checkpoint made anew if the crash
        lost it); one whose resume claimed an answer and died before using it continues
        with that answer. Runs that ended (done, broken, or failed by a rule such as a loop
        limit) and runs whose checkpoint waits to be resumed are refused with
        :class:`RecoveryError`.
        """
        if self._session is None:
            raise ExecutorUsageError("recover() needs the run's store: Executor(chart, store=...)")
        opened = self.redact is not None
        if opened and self._seal is None:
            raise ExecutorUsageError(
                "recover() cannot continue a run under a redaction policy from a store that "
                "holds its redacted values only: give the store a seal "
                "(SqliteStore(path, seal=Seal(key)) or PostgresStore(dsn, seal=Seal(key))), "
                "which keeps the real values sealed beside the redacted ones"
            )
        session = self._session
        if session.offload:  # its lookups wait on a network
            read = await anyio.to_thread.run_sync(self._recovery, session, run_id, opened)
        else:
            read = self._recovery(session, run_id, opened)
        snapshot, pending = read
        run = self._continued(run_id, snapshot)
        run.replay = replay_index(snapshot.commits)
        if pending is not None:  # a resume claimed its answer and died before using it
            where = pending.paused_at or run_id
            run.resume_value = freeze(encode_value(pending.value, "resume value", where)[1])
            run.resume_taken = False
            if pending.paused_at:
                run.resume_target = str(StagePath.parse(pending.paused_at).base())
        await session.opened(run)
        return await self._drive(run, None, timeout, raise_on_error)

    def _recovery(
        self, session: StoreSession, run_id: str, opened: bool
    ) -> tuple[Snapshot, Pending | None]:
        """``recover``'s store work before the run opens: its log, and the answer a resume
        claimed and did not use, if any."""
        snapshot = session.call(
            lambda s: s._load(run_id, opened=True) if opened else s.load(run_id),  # type: ignore[attr-defined]
            f"load run {run_id!r}",
        )
        if snapshot.chart_id != self.chart.id:
            raise RecoveryError(
                f"run {run_id!r} was made by chart {snapshot.chart_id!r}, not {self.chart.id!r}"
            )
        pending = session.call(
            lambda s: recovery_plan(s, snapshot, opened=opened), "read the run's claims"
        )
        return snapshot, pending
