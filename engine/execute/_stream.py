"""``Executor.stream``: a run's commits, as they are made, to an ``async for``.

The run and its reader are two tasks joined by a bounded in-memory channel (anyio, so
asyncio and trio alike). The run hands each commit over as it lands in the log
(``RunContext.append``, after the redaction funnel: the reader sees what
``RunResult.snapshot`` holds). When the channel is full the commit waits beside it and the
run waits before its next stage — the same place a full ``"batch"`` store queue makes it
wait — so a slow reader slows the run down instead of letting memory grow. Leaving the
``async with`` block early cancels the run (see :class:`RunStream`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Generic, Self, TypeVar

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..core._commit import Commit
from ..core._errors import ExecutorUsageError

if TYPE_CHECKING:
    from ._executor import RunResult

__all__ = ["CommitTap", "Pumped", "RunStream", "Tap"]

_GONE = (anyio.BrokenResourceError, anyio.ClosedResourceError)


_T = TypeVar("_T")


class Tap(Generic[_T]):
    """The producer's end of a stream: takes each item without waiting; an item that finds
    the channel full waits here (``waiting``) until ``make_room`` hands it over, in order.
    A run's commits go through one (:data:`CommitTap`), an agent turn's events another."""

    def __init__(self, send: MemoryObjectSendStream[_T]) -> None:
        self._send = send
        self._overflow: deque[_T] = deque()  # items made since the channel filled up
        self._lock = anyio.Lock()  # parallel strands wait for room together, in log order
        self.waiting = False

    def __call__(self, item: _T) -> None:
        if not self._overflow:
            try:
                self._send.send_nowait(item)
                return
            except anyio.WouldBlock:
                pass
            except _GONE:  # the reader left; the run is being cancelled
                return
        self._overflow.append(item)
        self.waiting = True

    async def make_room(self) -> None:
        """Wait until the reader has taken enough for every waiting item to be handed
        over, in order."""
        async with self._lock:
            while self._overflow:
                try:
                    await self._send.send(self._overflow[0])
                except _GONE:
                    self._overflow.clear()
                    break
                self._overflow.popleft()
            self.waiting = False


CommitTap = Tap[Commit]
"""A run's end of :class:`RunStream`."""


class Pumped(Generic[_T]):
    """The shape both streams share (a run's commits here, an agent turn's events in the
    agent layer): entering starts one task, the pump, that writes items to a bounded
    channel; ``async for`` reads them inside the block; leaving cancels what is left. The
    pump catches what the run raises (kept in ``_crash``) so the block's own exception is
    never wrapped in an exception group."""

    _receive: MemoryObjectReceiveStream[_T] | None
    _group: TaskGroup | None
    _entered: bool

    def _setup(self, buffer: int) -> None:
        self._buffer = buffer
        self._entered = False
        self._receive = None
        self._group = None
        self._crash: BaseException | None = None

    def _again(self) -> Exception:
        """The error for entering a second time."""
        raise NotImplementedError  # pragma: no cover - each stream says its own

    def _prepare(self) -> None:
        """Work to do when the block is entered, before the pump starts (may raise)."""

    async def _pump(self, send: MemoryObjectSendStream[_T]) -> None:
        raise NotImplementedError  # pragma: no cover - each stream pumps its own

    async def __aenter__(self) -> Self:
        if self._entered:
            raise self._again()
        self._entered = True
        self._prepare()
        send, receive = anyio.create_memory_object_stream[_T](self._buffer)
        self._receive = receive
        group = anyio.create_task_group()
        await group.__aenter__()
        self._group = group
        group.start_soon(self._pump, send)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._group is not None and self._receive is not None
        self._group.cancel_scope.cancel()  # nothing left to wait for when the run ended
        self._receive.close()
        # The pump catches what the run raises, so the group ends clean; the block's own
        # exception (the run's error from `async for`, a break's) goes on as itself rather
        # than wrapped in an ExceptionGroup.
        await self._group.__aexit__(None, None, None)
        return None

    def __aiter__(self) -> Self:
        return self

    async def _next(self, outside: str) -> _T | None:
        """The next item, or ``None`` once the pump closed the channel (then the caller
        raises what the run left, or ends). ``outside``: the error text for iterating
        outside the block."""
        if self._receive is None:
            raise self._outside(outside)
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            pass
        if self._crash is not None:
            raise self._crash
        return None

    def _outside(self, text: str) -> Exception:
        return ExecutorUsageError(text)


class RunStream(Pumped[Commit]):
    """A run's commits as they are made; use it as ``async with ... as commits``.

    Iterating yields each :class:`Commit` of the run in log order, then ends when the run
    ends (done, broken, paused or failed); :attr:`result` is then the run's
    :class:`RunResult` (with its checkpoint when paused). A failed run ends the iteration by
    raising its :class:`RunError` (after every commit was yielded), unless the stream was
    made with ``raise_on_error=False``. At most ``buffer`` commits wait unread: when the
    reader falls that far behind, the run waits before its next stage.

    Leaving the block before the run ended (a ``break``, an exception) **cancels the run**,
    as a cancellation from outside would: the stage in flight commits as ``cancelled``, a
    store marks the run failed (``Cancelled``) so ``Executor.recover(run_id)`` can continue
    it, and :attr:`result` stays ``None``. :attr:`run_id` is known from the start.
    """

    def __init__(
        self,
        run_id: str,
        open_run: Callable[[], Callable[[CommitTap], Awaitable[RunResult]]],
        *,
        buffer: int,
        raise_on_error: bool,
    ) -> None:
        self.run_id = run_id
        self.result: RunResult | None = None
        """How the run ended; ``None`` until then, and when the block was left early."""
        self._open = open_run  # checks and seeds the input, then gives the run to start
        self._start: Callable[[CommitTap], Awaitable[RunResult]] | None = None
        self._raise = raise_on_error
        self._setup(buffer)

    def __repr__(self) -> str:
        state = "ended" if self.result is not None else "open" if self._receive else "not started"
        return f"<RunStream run={self.run_id} {state}>"

    def _again(self) -> Exception:
        return ExecutorUsageError(
            "a RunStream runs its run once; call executor.stream(...) again for another run"
        )

    def _prepare(self) -> None:
        self._start = self._open()

    async def _pump(self, send: MemoryObjectSendStream[Commit]) -> None:
        assert self._start is not None
        tap = CommitTap(send)
        with send:
            try:
                self.result = await self._start(tap)
                await tap.make_room()  # the last commits, then the end of the stream
            except Exception as exc:  # raised to the reader, not as a task group's group
                self._crash = exc

    async def __anext__(self) -> Commit:
        commit = await self._next(
            "iterate a stream inside its block: `async with executor.stream(input) as "
            "commits: async for commit in commits: ...` (the block ends the run with it)"
        )
        if commit is not None:
            return commit
        result = self.result
        if self._raise and result is not None and result.error is not None:
            raise result.error
        raise StopAsyncIteration
