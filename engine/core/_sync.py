"""The one bridge from synchronous code to trackway's async core.

Every ``*_sync`` entry point (``Executor.run_sync``, ``Agent.run_sync``, ``replay``) goes
through :func:`run_sync`: outside an event loop it runs the call on an asyncio event loop
kept for the thread; inside one (asyncio or trio, found with sniffio) it refuses with a
message naming the async twin to await instead, never a bare "already running" from the
event loop.

Starting and closing an event loop per call (what ``asyncio.run`` does) costs more than a
short agent turn, so the loop is reused: one per thread, made on the thread's first call.
Each call still runs as if on a fresh loop: in a copy of the caller's context (a context
variable set inside does not leak into the next call), and a task the call left running is
cancelled and awaited before it returns, as ``asyncio.run`` does. A forked child makes its
own loop; an interrupted call (``KeyboardInterrupt``) closes the loop and the next call makes
another; a thread's loop is closed when the thread ends, the main thread's at exit.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import os
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
import sniffio

from ._errors import ExecutorUsageError

__all__ = ["run_sync"]

_T = TypeVar("_T")

_backend = "asyncio"
"""The anyio backend ``run_sync`` starts (the test suite runs every test on both)."""


def _running_library() -> str | None:
    try:
        return sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        pass
    try:
        asyncio.get_running_loop()  # a loop callback outside any task: sniffio cannot tell
    except RuntimeError:
        return None
    return "asyncio"


def run_sync(call: Callable[[], Awaitable[_T]], *, name: str, twin: str) -> _T:
    """Run ``call()`` to completion in a new event loop.

    ``name`` is the sync entry point (``"Executor.run_sync"``) and ``twin`` what to await in
    async code (``"await executor.run(...)"``); both go into the error raised when an event
    loop is already running in this thread.
    """
    library = _running_library()
    if library is not None:
        raise ExecutorUsageError(
            f"{name}() was called inside a running {library} event loop, which it would "
            f"block; in async code use the async twin instead: {twin}"
        )
    if _backend != "asyncio":
        return anyio.run(call, backend=_backend)
    held = _loop_of_thread()
    try:
        return held.runner.run(_awaited(call), context=contextvars.copy_context())
    except BaseException as exc:
        if not isinstance(exc, Exception):  # interrupted: the loop may be mid-way; drop it
            _THREAD.held = None
            held.close()
        raise
    finally:
        if _THREAD.held is held:
            held.settle()


async def _awaited(call: Callable[[], Awaitable[_T]]) -> _T:
    return await call()


class _HeldLoop:
    """A thread's reused event loop (an ``asyncio.Runner``), closed when dropped."""

    def __init__(self) -> None:
        self.runner = asyncio.Runner()
        self.pid = os.getpid()
        self.thread = threading.get_ident()
        _OPEN.add(self)

    def settle(self) -> None:
        """Cancel and await the tasks a call left running (``asyncio.run`` does the same
        before it closes its loop): nothing of one call runs on into the next."""
        loop = self.runner.get_loop()
        left = [t for t in asyncio.all_tasks(loop) if not t.done()]
        if not left:
            return
        for task in left:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))

    def close(self) -> None:
        """Close the loop: on its own thread, with nothing running, as ``asyncio.run`` does
        (async generators finalized, the default executor shut down); dropped anywhere else
        (a garbage collection inside another thread or another running loop, a forked child
        holding a copy) the loop is only closed, never run there."""
        _OPEN.discard(self)
        loop = getattr(self.runner, "_loop", None)  # None: the runner never made its loop
        if loop is None or loop.is_closed() or loop.is_running():
            return
        home = self.pid == os.getpid() and self.thread == threading.get_ident()
        if home and _running_library() is None:
            self.runner.close()
        else:
            loop.close()

    def __del__(self) -> None:  # the thread ended (its locals are dropped)
        with contextlib.suppress(Exception):  # at interpreter exit: nothing left to save
            self.close()


class _Thread(threading.local):
    held: _HeldLoop | None = None


_THREAD = _Thread()
_OPEN: weakref.WeakSet[_HeldLoop] = weakref.WeakSet()


def _loop_of_thread() -> _HeldLoop:
    held = _THREAD.held
    if held is None or held.pid != os.getpid():
        held = _THREAD.held = _HeldLoop()
    return held


@atexit.register
def _close_open_loops() -> None:
    for held in list(_OPEN):
        held.close()
