"""``durability="batch"`` (and ``"exit"`` on a store that keeps its I/O off the loop): one
writer thread per store, shared by every run on it.

A run's commits queue in its :class:`BatchSink` and the run goes on; the store's writer
takes what every run has queued and writes it in one transaction (``append_group`` where
the store has it), so a thousand concurrent runs share one thread and each fsync instead of
starting a thread each. The bounds are a run's own, as with a writer of its own: a
transaction takes at most ``queue_size + 1`` of a run's commits, and a run with more than
``queue_size`` queued waits before its next stage (``waiting``, then ``room()`` in a worker
thread) until the writer has taken them, so its unwritten window stays at most
``2 * queue_size + 1`` commits of finished stages and memory never grows without bound.

Under ``"exit"`` a sink *holds* its commits (``hold=True``: no bound, nothing written)
until the run pauses or ends; then the writer takes all of them at once, in one transaction
it may share with other runs.

A run's ending rides with its last commits where the store writes groups (``write_group``,
the SQL stores): ``end_with(closing)`` before the run's flush, and how it ended is recorded
in the writer's next transaction, not in a transaction (and an fsync) of its own.

A failed write fails exactly the runs it held (the whole transaction, or one run the store
reports alone); that run's later commits are dropped unwritten, so its stored log stays a
gap-free prefix, and the error is raised at its next commit or at its flush. The writer
thread starts with the store's first batch run and ends when its last one closes.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

import anyio.to_thread

from ..core._commit import Commit
from ._group_commit import GroupWrite, RunClosing, append_group

if TYPE_CHECKING:
    from ._store import RunStore

__all__ = ["BatchSink", "batch_sink"]

_WRITERS: dict[int, _Writer] = {}  # by id(store), while the store has open batch runs
_WRITERS_LOCK = threading.Lock()


def _forget_after_fork() -> None:
    """A forked child has none of its parent's writer threads: its runs start their own."""
    global _WRITERS_LOCK
    _WRITERS.clear()
    _WRITERS_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)


class _Writer:
    """The writer thread of one store, and the runs it serves."""

    def __init__(self, store: RunStore) -> None:
        self.store = store
        self.cond = threading.Condition()
        self.queued: dict[BatchSink, None] = {}  # runs with commits to take, in order
        self.users = 0
        self.thread: threading.Thread | None = None

    def join(self) -> None:
        """A run starts using the writer (under ``_WRITERS_LOCK``)."""
        with self.cond:
            self.users += 1
            if self.thread is None:
                self.thread = threading.Thread(
                    target=self._run, name="trackway-batch-writer", daemon=True
                )
                self.thread.start()

    def leave(self) -> None:
        """A run is done with the writer (under ``_WRITERS_LOCK``): the thread ends with
        the last one, once everything queued is written."""
        with self.cond:
            self.users -= 1
            self.cond.notify_all()

    def _run(self) -> None:
        while True:
            with self.cond:
                while not self.queued and self.users > 0:
                    self.cond.wait()
                if not self.queued:
                    self.thread = None
                    return
                taken = [(sink, *sink._take()) for sink in self.queued]
                self.queued = {sink: None for sink, *_ in taken if sink._pending}
                self.cond.notify_all()  # room for the runs that waited for it
            try:
                if any(closing is not None for *_, closing in taken):
                    failed = self.store.write_group(  # type: ignore[attr-defined]
                        [GroupWrite(s.run_id, None, cs, e) for s, cs, e in taken]
                    )
                else:
                    failed = append_group(self.store, [(s.run_id, cs) for s, cs, _ in taken])
            except Exception as exc:  # the whole transaction failed: every run in it fails
                failed = {s.run_id: exc for s, *_ in taken}
            with self.cond:
                for sink, commits, closing in taken:
                    sink._inflight -= len(commits) + (closing is not None)
                    err = failed.get(sink.run_id)
                    if err is not None and sink.error is None:
                        sink.error = err
                        sink._pending.clear()  # nothing after a gap is written
                        sink._closing = None
                        self.queued.pop(sink, None)
                self.cond.notify_all()  # flushes and room waits


class BatchSink:
    """One run's end of its store's batch writer (a ``run._sinks.Sink``)."""

    def __init__(self, writer: _Writer, run_id: str, queue_size: int, hold: bool = False) -> None:
        self._writer = writer
        self.run_id = run_id
        self._queue_size = queue_size
        self._hold = hold  # "exit": written only once the run pauses or ends
        self._exit = hold  # then all at once, in one transaction
        self._pending: list[Commit] = []  # queued, not yet taken by the writer
        self._closing: RunClosing | None = None  # the run's ending, queued after them
        self._inflight = 0  # taken, not yet written (commits, and the ending)
        self.error: Exception | None = None
        self._closed = False

    @property
    def waiting(self) -> bool:
        return not self._hold and len(self._pending) > self._queue_size

    def __call__(self, commit: Commit) -> None:
        if self.error is not None:
            raise self.error
        with self._writer.cond:
            if self.error is not None:  # failed while this commit was made: never after a gap
                raise self.error
            self._pending.append(commit)
            if not self._hold:
                self._enqueue()

    @property
    def ends_in_group(self) -> bool:
        """The store writes a run's ending with its commits (``end_with`` applies)."""
        return hasattr(self._writer.store, "write_group")

    def end_with(self, closing: RunClosing) -> None:
        """Queue how the run ended, to be written with its last commits (the run has ended:
        no commit follows); ``flush`` then waits for it too. Needs ``ends_in_group``."""
        with self._writer.cond:
            if self.error is not None:
                return  # the flush raises it; the session records the ending alone
            self._closing = closing
            self._hold = False
            self._enqueue()

    def _take(self) -> tuple[list[Commit], RunClosing | None]:
        """The writer takes up to ``queue_size + 1`` commits, and the ending once none is
        left behind it (under its lock)."""
        n = len(self._pending) if self._exit else self._queue_size + 1
        taken, self._pending = self._pending[:n], self._pending[n:]
        closing = None
        if not self._pending and self._closing is not None:
            closing, self._closing = self._closing, None
        self._inflight += len(taken) + (closing is not None)
        return taken, closing

    async def room(self) -> None:
        """``make_room`` in a worker thread: the event loop keeps turning meanwhile."""
        await anyio.to_thread.run_sync(self.make_room, abandon_on_cancel=True)

    def make_room(self) -> None:
        """Block until the writer has taken this run's commits beyond ``queue_size`` (call
        it from a worker thread). A failed write ends the wait; the run's next commit (or
        its flush) raises it, as a ``StoreWriteError`` naming the commit."""
        cond = self._writer.cond
        with cond:
            while len(self._pending) > self._queue_size and self.error is None:
                cond.wait()

    def flush(self) -> None:
        """Block until every commit of this run (and its ending, if queued) is written (call
        it from a worker thread); held commits (``"exit"``) are handed to the writer first."""
        with self._writer.cond:
            self._wait_written()
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        """Write what is queued (its errors are the flush's to raise), then leave the
        writer; idempotent."""
        if self._closed:
            return
        self._closed = True
        with self._writer.cond:
            self._wait_written()
        _leave(self._writer)

    def _enqueue(self) -> None:
        """Under the writer's lock: have the writer take this run's commits (or ending)."""
        writer = self._writer
        if self not in writer.queued:
            writer.queued[self] = None
            writer.cond.notify_all()

    def _wait_written(self) -> None:
        """Under the writer's lock: hand held commits (``"exit"``) over, then wait until
        nothing of this run is unwritten, or a write of it failed."""
        if self._hold:
            self._hold = False
            if self._pending:
                self._enqueue()
        while (self._pending or self._inflight or self._closing is not None) and (
            self.error is None
        ):
            self._writer.cond.wait()


def batch_sink(store: RunStore, run_id: str, queue_size: int, hold: bool = False) -> BatchSink:
    """A run's sink on ``store``'s shared writer (started if it is not running); ``hold``
    for ``"exit"``."""
    with _WRITERS_LOCK:
        writer = _WRITERS.get(id(store))
        if writer is None or writer.store is not store:
            writer = _WRITERS[id(store)] = _Writer(store)
        writer.join()
    return BatchSink(writer, run_id, queue_size, hold)


def _leave(writer: _Writer) -> None:
    with _WRITERS_LOCK:
        writer.leave()
        if writer.users == 0 and _WRITERS.get(id(writer.store)) is writer:
            del _WRITERS[id(writer.store)]
