"""Group commit for ``durability="sync"``: concurrent runs on one loop share each fsync.

Under ``"sync"`` a commit is durable before its run's next stage starts. With one run per
(store, event loop) that stays a direct write on the loop (no latency added). With several,
a run's commit joins a queue and the run waits (the sink's ``waiting``, then ``room()``
before its next stage). A run that waits while no flush is pending *leads* one: it lets the
runs woken with it queue their commits, then writes everything queued in ONE transaction
(``append_group`` where the store has it). Where it writes depends on the loop: if every run
sharing the committer now waits for this flush (the usual lockstep of many runs), the loop
writes it itself, as a lone run does, since nothing could run meanwhile and two thread
hand-offs are saved; if a run is still going (a model call, a sleep), a worker thread writes
it once it holds the write lock, and the loop goes on with that run while the new commits
queue for the next flush. A commit is acknowledged (its run goes on) only once the flush
holding it is durable, so the guarantee is ``"sync"``'s, with the fsync amortized over every
run that joined.

A run's opening and its ending join the flushes too, where the store can write them in the
group (``write_group``, the SQL stores): a run opens before its first stage starts and
returns once its end is recorded, as with a write of its own, but the transaction (and its
fsync, or its round trip) is shared. A run's end rides with its last commits.

A failed flush fails exactly the runs whose commits it held (with the store's error, as a
:class:`StoreWriteError`); a run deleted meanwhile fails alone (``write_group`` reports it
per run). After a failure nothing more of that run is written, so its stored log stays a
gap-free prefix.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import anyio
import anyio.to_thread
from anyio.lowlevel import RunVar

from ..core._errors import StoreWriteError

if TYPE_CHECKING:
    from ..core._commit import Commit
    from ._store import RunStore

__all__ = [
    "ENABLED",
    "STATS",
    "FlushStats",
    "GroupSink",
    "GroupWrite",
    "RunClosing",
    "RunOpening",
    "append_group",
    "group_sink",
]

ENABLED = True
"""Private switch: ``False`` gives every ``"sync"`` run the old direct write per commit (one
fsync each), which the scale bench measures against."""

ON_LOOP = True
"""Private switch: ``False`` writes every flush in a worker thread, even when every run waits
for it (the scale bench measures the loop-side write against it)."""

_COMMITTERS: RunVar[dict[int, _Committer]] = RunVar("trackway_group_committers")


class RunOpening(NamedTuple):
    """What ``begin_run`` writes: the chart, the input (as stored), its sealed copy, and
    when the run started."""

    chart_id: str
    initial: dict[str, bytes]
    sealed: bytes | None
    started_at: float


class RunClosing(NamedTuple):
    """What ``finish_run`` writes: how the run ended, and when."""

    status: str
    outcome: Any
    ended_at: float


class GroupWrite(NamedTuple):
    """One run's share of a group transaction. A run's opening is written alone (its
    commits come only once it is open), its commits before its ending."""

    run_id: str
    opening: RunOpening | None = None
    commits: Sequence[Commit] = ()
    closing: RunClosing | None = None


class FlushStats:
    """Process-wide counters of group flushes (for the scale bench): how many flushes ran and
    how many commits they wrote."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.flushes = 0
        self.commits = 0

    def add(self, commits: int) -> None:
        with self._lock:
            self.flushes += 1
            self.commits += commits

    def reset(self) -> None:
        with self._lock:
            self.flushes = self.commits = 0


STATS = FlushStats()


def append_group(
    store: RunStore, items: Sequence[tuple[str, Sequence[Commit]]]
) -> dict[str, Exception]:
    """Write several runs' commits: in one transaction where the store has
    ``append_group`` (the SQL stores), else one ``append`` per run. Returns the runs that
    failed alone (deleted meanwhile), with their error; a failure of the whole write raises."""
    grouped = getattr(store, "append_group", None)
    if grouped is not None:
        result: dict[str, Exception] = grouped(items)
        return result
    failed: dict[str, Exception] = {}
    for run_id, commits in items:
        try:
            store.append(run_id, commits)
        except Exception as exc:
            failed[run_id] = exc
    return failed


class _Flush:
    """One group transaction: started by a leader on the loop, it takes the queue only once
    it holds the write lock (so it carries everything that queued while the flush before it
    was writing). Its writer (the loop or a worker thread) sets ``finished``; the leader sets
    ``done`` on the loop."""

    __slots__ = ("done", "finished", "size")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.finished = threading.Event()
        self.size = 0  # the runs it took


class _Committer:
    """The group committer of one store on one event loop.

    At most two flushes exist at a time: one writing (``writing``), and one *pending*, which
    every run that queues meanwhile joins. A pending flush written by a worker thread starts
    the moment the one before it is durable, whatever the loop is doing; one the loop writes
    (every run waits for it) first waits, without blocking the loop, for the one before it.
    """

    __slots__ = ("lock", "parts", "pending", "queue", "store", "users", "write_lock", "writing")

    def __init__(self, store: RunStore) -> None:
        self.store = store
        self.users = 0  # open sinks: one alone writes directly
        self.lock = threading.Lock()  # guards queue, pending and each sink's holder
        self.write_lock = threading.Lock()  # one group transaction at a time
        self.queue: dict[GroupSink, list[Commit]] = {}
        self.pending: _Flush | None = None
        self.writing: _Flush | None = None  # the flush whose transaction is under way
        self.parts = 0  # openings and endings queued (a flush of commits alone has none)

    async def settle(self, sink: GroupSink, target: int) -> None:
        """Wait until ``sink``'s commits up to ``target`` are durable (or failed): wait for
        the flush that holds them, or the pending one that will take them, or else start
        that pending flush (leading it)."""
        while sink.durable < target and sink.error is None:
            with self.lock:
                flush = sink.holder
                lead = False
                if flush is None:  # still queued: the pending flush takes them
                    flush = self.pending
                    if flush is None:
                        flush = self.pending = _Flush()
                        lead = True
            if lead:
                await self._lead(flush)
            else:
                await flush.done.wait()

    async def _lead(self, flush: _Flush) -> None:
        """Write ``flush``: first let the runs woken with this one queue their commits; if
        then every run sharing this committer waits for it, write it here on the loop, as a
        lone run does (nothing could run meanwhile, and two thread hand-offs are saved),
        else in a worker thread while the loop goes on. Shielded: once started, a flush
        always finishes and reports, whoever is cancelled."""
        try:
            with anyio.CancelScope(shield=True):
                await anyio.lowlevel.checkpoint()
                while True:
                    with self.lock:
                        writing = self.writing
                        held = 0 if writing is None else writing.size
                        everyone = len(self.queue) + held == self.users
                    if not everyone or not ON_LOOP:  # a run is still going: keep the loop free
                        await anyio.to_thread.run_sync(self._write, flush)
                        return
                    if writing is None:
                        break
                    # every other run waits for the flush being written: wait with them (not
                    # blocking the loop), let them queue, and write all of it here in one go
                    await writing.done.wait()
                    await anyio.lowlevel.checkpoint()
                if not self.write_lock.acquire(blocking=False):  # a thread's flush just began
                    await anyio.to_thread.run_sync(self._write, flush)
                    return
                try:
                    self._write_held(flush)
                finally:
                    self.write_lock.release()
        finally:
            flush.done.set()

    def _write(self, flush: _Flush) -> None:
        """In a worker thread: take the queue once the write lock is ours, write it in one
        transaction, publish each run's outcome."""
        with self.write_lock:
            self._write_held(flush)

    def _write_held(self, flush: _Flush) -> None:
        """With the write lock held: take the queue, write it in one transaction, publish
        each run's outcome, then set ``finished``."""
        try:
            with self.lock:
                if self.pending is flush:
                    self.pending = None  # runs queuing from now on start the next flush
                taken = [
                    (s, cs, s.opening, s.closing) for s, cs in self.queue.items() if s.error is None
                ]
                parts, self.parts = self.parts, 0
                self.queue = {}
                for s, *_ in taken:
                    s.holder = flush
                    s.opening = s.closing = None
                if not taken:
                    return
                flush.size = len(taken)
                self.writing = flush
            try:
                if parts:  # only queued where the store has it (see the session's ``_grouped``)
                    failed = self.store.write_group(  # type: ignore[attr-defined]
                        [GroupWrite(s.run_id, o, cs, e) for s, cs, o, e in taken]
                    )
                else:  # commits alone: no record built per run
                    failed = append_group(self.store, [(s.run_id, cs) for s, cs, _, _ in taken])
            except Exception as exc:  # the whole transaction failed: every run in it fails
                failed = {s.run_id: exc for s, *_ in taken}
            with self.lock:
                for sink, commits, opening, closing in taken:
                    err = failed.get(sink.run_id)
                    if err is None:
                        sink.durable += len(commits) + (opening is not None) + (closing is not None)
                    elif commits:
                        sink.fail(err, commits[0])
                    else:
                        sink.fail(err, None, "open the run" if opening else "finish the run")
                    sink.holder = None
                self.writing = None
            STATS.add(sum(len(cs) for _, cs, _, _ in taken))
        finally:
            flush.finished.set()


class GroupSink:
    """A run's ``"sync"`` sink on a shared group committer (see the module docstring)."""

    __slots__ = (
        "_committer",
        "_reported",
        "closing",
        "durable",
        "error",
        "failed_at",
        "failed_what",
        "holder",
        "opening",
        "queued",
        "run_id",
    )

    loop_bound = True
    """Settled on its event loop (``room()``), not from a worker thread."""

    def __init__(self, committer: _Committer, run_id: str) -> None:
        self._committer = committer
        self.run_id = run_id
        self.queued = 0  # writes handed to the sink (counted on the loop thread only)
        self.durable = 0  # of those, durable (updated under the committer's lock)
        self.holder: _Flush | None = None  # the flush that took this run's writes
        self.opening: RunOpening | None = None  # queued for the next flush (see open_run)
        self.closing: RunClosing | None = None  # queued for the next flush (see close_run)
        self.error: Exception | None = None
        self.failed_at: Commit | None = None
        self.failed_what = "write"
        self._reported = False
        committer.users += 1

    @property
    def waiting(self) -> bool:
        """Commits are not yet durable: the run waits in ``room()`` before going on."""
        return self.durable < self.queued

    @property
    def shared(self) -> bool:
        """Other runs share this committer now (alone, a run writes directly)."""
        return self._committer.users > 1

    def fail(self, error: Exception, first: Commit | None, what: str = "write") -> None:
        self.error, self.failed_at, self.failed_what = error, first, what

    async def open_run(self, opening: RunOpening) -> None:
        """Open the run in the next group flush, and wait until that is durable (shielded:
        once queued, the opening is written). A failure raises the store's own error."""
        await self._write_part(opening, None)
        if self.error is not None:
            self._reported = True
            raise self.error

    async def close_run(self, closing: RunClosing) -> None:
        """Record how the run ended in the next group flush, with its last commits, and wait
        until that is durable (shielded); a failure raises :class:`StoreWriteError`."""
        await self._write_part(None, closing)
        self._raise_once()

    async def _write_part(self, opening: RunOpening | None, closing: RunClosing | None) -> None:
        c = self._committer
        self.queued += 1
        with c.lock:
            self.opening, self.closing = opening, closing
            c.parts += 1
            if self not in c.queue:
                c.queue[self] = []
        with anyio.CancelScope(shield=True):
            await c.settle(self, self.queued)

    def __call__(self, commit: Commit) -> None:
        if self.error is not None:
            raise self.error
        c = self._committer
        self.queued += 1
        if c.users == 1 and self.durable == self.queued - 1:
            # alone on this store and loop: today's direct write, no latency added
            try:
                c.store.append(self.run_id, [commit])
            except Exception as exc:
                self.fail(exc, commit)
                self._reported = True  # raised here, to the commit that failed
                raise
            self.durable += 1
            return
        with c.lock:
            queued = c.queue.get(self)
            if queued is None:
                c.queue[self] = [commit]
            else:
                queued.append(commit)

    async def room(self) -> None:
        """Wait, without blocking the loop, until every commit so far is durable; a failed
        flush fails the run here with :class:`StoreWriteError`."""
        await self._committer.settle(self, self.queued)
        self._raise_once()

    def make_room(self) -> None:
        """Blocking form of ``room()`` (the run's end after a timeout or cancellation): wait
        for the flush that holds this run's commits (its worker thread never needs the
        loop), then write what is still queued directly."""
        c = self._committer
        with c.lock:
            flush = self.holder
            pending = c.queue.pop(self, None)
        if flush is not None:
            flush.finished.wait()
        if pending and self.error is None:
            try:
                c.store.append(self.run_id, pending)
            except Exception as exc:
                self.fail(exc, pending[0])
            else:
                with c.lock:
                    self.durable += len(pending)
        self._raise_once()

    def flush(self) -> None:
        """Called when the run ends: everything it committed is durable, or the error that
        lost it is raised (once: an error the run already failed with is not raised again)."""
        if self.waiting or (self.error is not None and not self._reported):
            self.make_room()

    def _raise_once(self) -> None:
        err = self.error
        if err is None or self._reported:
            return
        self._reported = True
        at = self.failed_at
        where = self.failed_what if at is None else f"write commit {at.seq} ({at.stage_path})"
        raise StoreWriteError(
            f"{type(self._committer.store).__name__} could not {where}: "
            f"{type(err).__name__}: {err}",
            stage_path=None if at is None else at.stage_path,
        ) from err

    def close(self) -> None:
        """The run is over: it no longer counts as a user of the committer, and what it still
        had queued is dropped (only after a failure: nothing is written past a lost commit)."""
        c = self._committer
        with c.lock:
            c.queue.pop(self, None)
        c.users -= 1
        if c.users == 0:
            registry = _COMMITTERS.get(None)
            if registry is not None and registry.get(id(c.store)) is c:
                del registry[id(c.store)]


def group_sink(store: RunStore, run_id: str) -> GroupSink | None:
    """A group-commit sink for a ``"sync"`` run on ``store``, sharing this event loop's
    committer for it; ``None`` outside an event loop or with the switch off."""
    if not ENABLED:
        return None
    try:
        registry = _COMMITTERS.get(None)
    except RuntimeError:  # no event loop: nothing to share with
        return None
    if registry is None:
        registry = {}
        _COMMITTERS.set(registry)
    committer = registry.get(id(store))
    if committer is None:
        committer = registry[id(store)] = _Committer(store)
    return GroupSink(committer, run_id)
