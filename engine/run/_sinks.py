"""Where a run's commits go besides its log: what the run context needs of a store's sink and
of a stream's tap, as protocols.

The run layer hands each commit on (``RunContext.append``) and waits for room before its next
stage (``RunContext.make_room``, the walker); the things it hands them to live above it (the
stores' sinks in ``stores._store`` and ``stores._group_commit``, the stream's tap in
``execute._stream``). Declaring here what the run calls keeps those layers above this one.
"""

from __future__ import annotations

from typing import Protocol

from ..core._commit import Commit

__all__ = ["Sink", "StreamTap"]


class Sink(Protocol):
    """A store's end of a run: takes each commit as it is logged and makes it durable by the
    run's ``durability`` (``stores._store.make_sink`` chooses one)."""

    @property
    def waiting(self) -> bool:
        """Commits are waiting: for room in a full queue (``"batch"``), or for the group
        flush that makes them durable (``"sync"`` shared by concurrent runs). The run waits,
        without blocking the event loop, in ``room()`` before its next stage."""

    def __call__(self, commit: Commit) -> None: ...
    async def room(self) -> None: ...
    def make_room(self) -> None: ...
    def flush(self) -> None: ...


class StreamTap(Protocol):
    """A stream's end of a run (``Executor.stream``; ``execute._stream.CommitTap`` is one):
    takes each commit without waiting, and holds one the reader has no room for."""

    @property
    def waiting(self) -> bool:
        """Commits are held for a reader with no room: the run waits in ``make_room()``
        before its next stage."""

    def __call__(self, commit: Commit, /) -> None: ...
    async def make_room(self) -> None:
        """Wait until the reader has taken every held commit, in order."""
