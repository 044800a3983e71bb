"""The executor's side of a store: open or reopen a run, claim checkpoints, close the run.

Every write to a store goes through the run's redaction funnel first (a store keeps only
what the policy lets through). A store failure becomes a :class:`StoreError`, or, while a
run is writing, a :class:`StoreWriteError` that fails the run.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace
from typing import Any, NamedTuple, TypeVar

import anyio
import anyio.to_thread

from ..core._commit import ErrorInfo
from ..core._errors import CheckpointClaimedError, StoreError, StoreWriteError, TrackwayError
from ..core._snapshot import Snapshot
from ..core._values import thaw, to_bytes
from ..run._context import RunContext, error_info
from ..run._sinks import Sink
from ..stores._batch_writer import BatchSink
from ..stores._checkpoint import Checkpoint, core_digest, masked
from ..stores._group_commit import GroupSink, RunClosing, RunOpening
from ..stores._sqlstore import initial_doc
from ..stores._store import Durability, RunStore, make_sink

__all__ = ["ProcessClaims", "StoreSession", "claim"]

_T = TypeVar("_T")


class ProcessClaims:
    """Checkpoints resumed in this process by executors without a store.

    A claim must outlive the run that made it (a spent checkpoint never resumes again), so
    it cannot be run-local; it is kept here, bounded: the oldest ``limit`` claims are
    forgotten first. Only a store makes resume-once hold across processes.
    """

    def __init__(self, limit: int = 65_536) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._ids: OrderedDict[str, None] = OrderedDict()

    def claim(self, checkpoint_id: str) -> bool:
        """True the first time ``checkpoint_id`` is claimed here."""
        with self._lock:
            if checkpoint_id in self._ids:
                return False
            self._ids[checkpoint_id] = None
            if len(self._ids) > self.limit:
                self._ids.popitem(last=False)
            return True

    def __len__(self) -> int:
        return len(self._ids)


PROCESS_CLAIMS = ProcessClaims()


def claim(
    store: RunStore | None, cp: Checkpoint, answer: bytes, sealed: bytes | None = None
) -> None:
    """Claim ``cp`` once: atomically in the store (which keeps ``answer``, the resume
    value's JSON, so a resume that dies before using it can be recovered, and ``sealed``,
    the real one sealed when ``answer`` is redacted), or in this process without one."""
    if store is not None:
        won = call_store(
            store,
            lambda s: (
                s.claim_checkpoint(cp.checkpoint_id, answer)
                if sealed is None
                else s.claim_checkpoint(cp.checkpoint_id, answer, sealed=sealed)  # type: ignore[call-arg]
            ),
            "claim the checkpoint",
        )
    else:
        won = PROCESS_CLAIMS.claim(cp.checkpoint_id)
    if not won:
        raise CheckpointClaimedError(
            f"checkpoint {cp.checkpoint_id} was already resumed; a checkpoint resumes once. "
            "If the run paused again, resume its newer checkpoint (RunResult.checkpoint)."
        )


def call_store(
    store: RunStore, action: Callable[[RunStore], _T], what: str, *, in_run: bool = False
) -> _T:
    """Call the store; a failure names the store and what it could not do. ``in_run``: the
    run is under way, so the failure fails it (:class:`StoreWriteError`)."""
    try:
        return action(store)
    except Exception as exc:
        failure = store_failure(store, exc, what, in_run=in_run)
        if failure is exc:
            raise
        raise failure from exc


def store_failure(store: RunStore, exc: Exception, what: str, *, in_run: bool) -> Exception:
    """The error a store's failure raises: a trackway error as it is (or, in a run, as the
    :class:`StoreWriteError` that fails it), any other naming the store and what it could
    not do."""
    if isinstance(exc, StoreWriteError):
        return exc
    if isinstance(exc, TrackwayError):
        if not in_run:
            return exc
        return StoreWriteError(f"{type(store).__name__} could not {what}: {exc}")
    cls = StoreWriteError if in_run else StoreError
    return cls(f"{type(store).__name__} could not {what}: {type(exc).__name__}: {exc}")


class RunEnding(NamedTuple):
    """How a run ended, as its store records it: the status, the error, the checkpoint of a
    pause, the break reason, and the real log a returned checkpoint carries past a policy."""

    status: str
    info: ErrorInfo | None
    checkpoint: Checkpoint | None
    broke: str | None
    carried: Snapshot | None = None


class StoreSession:
    """One executor's store, durability and queue size; opened and closed per run."""

    def __init__(self, store: RunStore, chart_id: str, durability: Durability, queue_size: int):
        self.store = store
        self.chart_id = chart_id
        self.durability = durability
        self.queue_size = queue_size
        self.offload = bool(getattr(store, "offloads_io", False))
        """Open and close the run in a worker thread, off the event loop (a store whose
        calls wait on a network: the loop serves the other runs meanwhile)."""
        self.groups_ends = hasattr(store, "write_group")
        """The store writes runs' openings and endings in a group transaction: concurrent
        ``"sync"`` runs open and end in the group commit's flushes."""

    def call(self, action: Callable[[RunStore], _T], what: str, *, in_run: bool = False) -> _T:
        return call_store(self.store, action, what, in_run=in_run)

    def opening(self, run: RunContext) -> RunOpening:
        """What opening the run stores: its input through the redaction funnel, like every
        other retained write, and the real input sealed beside where a policy hid some."""
        initial = run.initial
        sealed = None
        redactor = run.redactor
        if redactor is not None:
            initial = {k: to_bytes(v) for k, v in redactor.initial(run.initial).items()}
            seal = redactor.seal
            if seal is not None and initial != run.initial:
                sealed = seal.seal(initial_doc(run.initial), f"initial:{run.run_id}")
        return RunOpening(self.chart_id, initial, sealed, time.time())

    def begin(self, run: RunContext, *, with_log: bool = False) -> None:
        """Open (or reopen) the run in the store; ``with_log`` also stores the commits it
        already has."""
        chart_id, initial, sealed, _ = self.opening(run)
        if sealed is None:
            self.call(lambda s: s.begin_run(run.run_id, chart_id, initial), "open the run")
        else:
            self.call(
                lambda s: s.begin_run(run.run_id, chart_id, initial, sealed=sealed),  # type: ignore[call-arg]
                "open the run",
            )
        redactor = run.redactor
        if with_log and run.log:
            log = run.log if redactor is None else [redactor.for_store(c) for c in run.log]
            self.call(lambda s: s.append(run.run_id, log), "store the log so far")

    async def opened(self, run: RunContext, *, with_log: bool = False) -> None:
        """``begin``: in the group commit's next flush where other runs share it, else in a
        worker thread where the store's calls wait on a network."""
        grouped = None
        if self.groups_ends and self.durability == "sync" and not with_log:
            grouped = self._grouped(self.open_sink(run))
        try:
            if grouped is not None:
                try:
                    await grouped.open_run(self.opening(run))
                except Exception as exc:
                    failure = store_failure(self.store, exc, "open the run", in_run=False)
                    if failure is exc:
                        raise
                    raise failure from exc
            elif self.offload:
                await anyio.to_thread.run_sync(
                    functools.partial(self.begin, run, with_log=with_log)
                )
            else:
                self.begin(run, with_log=with_log)
        except BaseException:
            self.drop_sink(run)
            raise

    def _grouped(self, sink: Sink) -> GroupSink | None:
        """The run's group-commit sink, where its opening or ending can join a flush: the
        store writes them in a group, and other runs share the committer now."""
        if self.groups_ends and isinstance(sink, GroupSink) and sink.shared:
            return sink
        return None

    def knows(self, run_id: str, *, embedded: bool) -> bool:
        """Whether the store holds a resumed run: one whose checkpoint carries its log
        (``embedded``) may come from elsewhere, and then gets the log so far as it opens."""
        from ..core._errors import UnknownRunError

        if not embedded:
            return True
        try:
            self.call(lambda s: s.history(run_id), "look the run up")
        except UnknownRunError:
            return False
        return True

    def open_sink(self, run: RunContext) -> Sink:
        """The run's sink (made once: ``opened`` may have made it to open the run)."""
        sink = run.sink
        if sink is None:
            sink = run.sink = make_sink(self.store, run.run_id, self.durability, self.queue_size)
        return sink

    def drop_sink(self, run: RunContext) -> None:
        """The run never started: close the sink ``opened`` made for it."""
        sink, run.sink = run.sink, None
        closer: Callable[[], None] | None = getattr(sink, "close", None)
        if closer is not None:
            closer()

    def close(self, run: RunContext, sink: Sink, ending: RunEnding) -> None:
        """Flush the last commits, keep the checkpoint (masked under a policy) with the
        digest of what the run returns (``carried``: the log the returned checkpoint will
        embed), and record how the run ended."""
        self.end_sink(run, sink)
        self.record_end(run, ending)

    async def closed(self, run: RunContext, sink: Sink, ending: RunEnding) -> None:
        """``close``, off the event loop where it would wait there: ``"batch"`` drains its
        queue in a worker thread (its end written with its last commits where the store
        writes groups); with a store that offloads, a group-commit sink settles on
        the loop (never blocking it) and the run's end is written in a worker thread. Never
        abandoned by a cancellation. Where other runs share the group commit, the run's end
        rides in its next flush with the last commits (not a run that pauses: its checkpoint
        is written on its own; nor one whose writes failed: its end is then recorded alone)."""
        grouped = self._grouped(sink)
        if grouped is not None and ending.checkpoint is None and grouped.error is None:
            closing = RunClosing(ending.status, self.outcome(run, ending), time.time())
            try:
                await grouped.close_run(closing)
            finally:
                grouped.close()
            return
        if isinstance(sink, BatchSink) and sink.ends_in_group and ending.checkpoint is None:
            # the run's end rides in the batch writer's next transaction, with its last
            # commits (no transaction of its own); a lost write is recorded as end_sink does
            closing = RunClosing(ending.status, self.outcome(run, ending), time.time())
            sink.end_with(closing)
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self.end_sink, run, sink)
            return
        loop_bound = getattr(sink, "loop_bound", False)
        if isinstance(sink, BatchSink) or (self.offload and not loop_bound):
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self.close, run, sink, ending)
        elif self.offload:
            try:
                with anyio.CancelScope(shield=True):
                    await sink.room()
            finally:
                self.end_sink(run, sink)  # nothing left to write: it closes the sink
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self.record_end, run, ending)
        else:
            self.close(run, sink, ending)

    def end_sink(self, run: RunContext, sink: Sink) -> None:
        """Flush the run's last commits and close its sink; a lost write still records how
        the run ended, then raises :class:`StoreWriteError`."""
        try:
            sink.flush()
        except StoreWriteError:
            raise
        except Exception as exc:
            # Still record how the run ended, then report the lost writes.
            with contextlib.suppress(Exception):
                self.store.finish_run(run.run_id, "failed", {"error": list(error_info(exc))})
            raise StoreWriteError(
                f"{type(self.store).__name__} could not write the run's last commits: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        finally:
            closer: Callable[[], None] | None = getattr(sink, "close", None)
            if closer is not None:
                closer()

    def record_end(self, run: RunContext, ending: RunEnding) -> None:
        """Keep the checkpoint and record how the run ended (the store calls of ``close``
        after its sink is flushed)."""
        status, checkpoint, carried = ending.status, ending.checkpoint, ending.carried
        if checkpoint is not None:
            # the digest of what the run returns: a resume is checked against it
            kept = replace(checkpoint, digest=core_digest(checkpoint, carried))
            sealed = None
            if run.redactor is not None:
                # Store rows are always redacted: the store keeps a masked copy, which cannot
                # be resumed; RunResult.checkpoint keeps the real values for the caller. A
                # store with a seal keeps the real checkpoint sealed beside it.
                seal = run.redactor.seal
                if seal is not None and carried is not None:
                    real = replace(kept, snapshot=carried).to_json()
                    sealed = seal.seal(real, f"checkpoint:{kept.checkpoint_id}")
                kept = masked(kept, thaw(run.redactor.state(run.root.current())), None)
                kept = replace(kept, payload=run.redactor.pause_value(kept.payload))
            if sealed is None:
                self.call(lambda s: s.save_checkpoint(kept), "save the checkpoint", in_run=True)
            else:
                self.call(
                    lambda s: s.save_checkpoint(kept, sealed=sealed),  # type: ignore[call-arg]
                    "save the checkpoint",
                    in_run=True,
                )
        outcome = self.outcome(run, ending)
        self.call(
            lambda s: s.finish_run(run.run_id, status, outcome), "finish the run", in_run=True
        )

    @staticmethod
    def outcome(run: RunContext, ending: RunEnding) -> dict[str, Any]:
        """How the run ended, as its store keeps it: the error, the break reason, and the
        recorders that failed."""
        return {
            "error": None if ending.info is None else list(ending.info),
            "break_reason": ending.broke,
            "recorder_failures": [
                {"recorder": f.recorder, "hook": f.hook, "error": list(f.error)}
                for f in run.recorders.failures
            ],
        }

    def release(self, sink: Sink) -> None:
        """A worker let the run go at a stage boundary: write what it committed and leave
        the run ``running`` (never finished), so ``recover()`` continues it."""
        try:
            sink.flush()
        finally:
            closer: Callable[[], None] | None = getattr(sink, "close", None)
            if closer is not None:
                closer()

    def abandon(self, run: RunContext, sink: Sink | None) -> None:
        """The run was cancelled from outside: keep what committed, mark it failed."""
        if sink is None:
            return
        with contextlib.suppress(Exception):
            cancelled = ErrorInfo("Cancelled", "the run was cancelled from outside")
            self.close(run, sink, RunEnding("failed", cancelled, None, None))
