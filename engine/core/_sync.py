"""The one bridge from synchronous code to trackway's async core.

Every ``*_sync`` entry point (``Executor.run_sync``, ``Agent.run_sync``, ``replay``) goes
through :func:`run_sync`: outside an event loop it starts one; inside one (asyncio or
trio, found with sniffio) it refuses with a message naming the async twin to await
instead, never a bare "already running" from the event loop.

On asyncio the loop is started as ``asyncio.run`` starts it (a new loop, the call in a copy
of the caller's context, Ctrl-C cancelling the call and raising ``KeyboardInterrupt``, every
task the call left cancelled and async generators finalized before the loop closes), minus
the steps a short call pays for and rarely needs: the generators' and the default
executor's shutdowns run only when there is something to shut down. That is about half of
``asyncio.run``'s own cost, which was most of a short agent turn's.
"""

from __future__ import annotations

import asyncio
import contextvars
import signal
import threading
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
    return _run_on_new_loop(call)


async def _awaited(call: Callable[[], Awaitable[_T]]) -> _T:
    return await call()


def _run_on_new_loop(call: Callable[[], Awaitable[_T]]) -> _T:
    """``asyncio.run(call())``, with the shutdowns skipped when there is nothing to shut
    down (see the module's docstring)."""
    loop = asyncio.new_event_loop()
    try:
        asyncio.set_event_loop(loop)
        task = loop.create_task(_awaited(call), context=contextvars.copy_context())
        interrupted = False

        def on_sigint(signum: int, frame: object) -> None:
            nonlocal interrupted
            if interrupted or task.done():  # a second Ctrl-C: stop waiting for the call
                raise KeyboardInterrupt()
            interrupted = True
            task.cancel()
            loop.call_soon_threadsafe(lambda: None)  # wake the loop if it sleeps in select

        handles_sigint = (
            threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler
        )
        if handles_sigint:
            signal.signal(signal.SIGINT, on_sigint)
        try:
            return loop.run_until_complete(task)
        except asyncio.CancelledError:
            if interrupted and task.uncancel() == 0:
                raise KeyboardInterrupt() from None
            raise
        finally:
            if handles_sigint and signal.getsignal(signal.SIGINT) is on_sigint:
                signal.signal(signal.SIGINT, signal.default_int_handler)
    finally:
        try:
            _cancel_left(loop)
            if getattr(loop, "_asyncgens", True):  # none tracked: nothing to finalize
                loop.run_until_complete(loop.shutdown_asyncgens())
            if getattr(loop, "_default_executor", True) is not None:  # none made: none to join
                loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            asyncio.set_event_loop(None)
            loop.close()


def _cancel_left(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel and await the tasks the call left running (as ``asyncio.run`` does)."""
    left = [t for t in asyncio.all_tasks(loop) if not t.done()]
    if not left:
        return
    for task in left:
        task.cancel()
    loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
    for task in left:
        if not task.cancelled() and task.exception() is not None:
            loop.call_exception_handler(
                {
                    "message": "unhandled exception during run_sync() shutdown",
                    "exception": task.exception(),
                    "task": task,
                }
            )
