"""Letting go of a run between stages: how a worker stops driving a run it still holds.

A worker asked to stop (SIGTERM), or one that lost a run's lease, sets the run's
:class:`StopSignal`. The walker checks it on the run's main line between stages (where it
already yields to the event loop, so the hot path pays nothing), and raises
:class:`Released`: the stage in flight has finished and committed, the store gets every
commit, and the run is left ``running`` — exactly a crash at a stage boundary, which the next
worker continues with ``recover()``, running nothing twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["Released", "StopSignal", "current_stop_signal", "driving_with"]


class StopSignal:
    """A flag one run's driver sets from any thread; the walker reads it between stages."""

    __slots__ = ("reason", "requested")

    def __init__(self) -> None:
        self.requested = False
        self.reason = ""

    def request(self, reason: str) -> None:
        self.reason = reason
        self.requested = True


class Released(Exception):
    """The run stopped at a stage boundary because its driver let it go (not a failure:
    the run stays ``running`` in its store, to be continued by ``recover()``)."""

    def __init__(self, run_id: str, reason: str, commits: int) -> None:
        super().__init__(f"run {run_id!r} released after commit {commits}: {reason}")
        self.run_id = run_id
        self.reason = reason
        self.commits = commits


_current: ContextVar[StopSignal | None] = ContextVar("trackway_stop_signal", default=None)


def current_stop_signal() -> StopSignal | None:
    """The signal of the run about to start in this context (``None`` outside a worker)."""
    return _current.get()


@contextmanager
def driving_with(signal: StopSignal) -> Iterator[None]:
    """Runs started inside this block stop between stages once ``signal`` is set."""
    token = _current.set(signal)
    try:
        yield
    finally:
        _current.reset(token)
