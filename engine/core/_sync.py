"""The one bridge from synchronous code to trackway's async core.

Every ``*_sync`` entry point (``Executor.run_sync``, ``Agent.run_sync``, ``replay``) goes
through :func:`run_sync`: outside an event loop it starts one; inside one (asyncio or
trio, found with sniffio) it refuses with a message naming the async twin to await
instead, never a bare "already running" from the event loop.

On asyncio each thread keeps one event loop between calls (made at its first call, closed
when the thread ends or the interpreter exits): a call runs as ``asyncio.run`` would run
it (the call in a copy of the caller's context, Ctrl-C cancelling the call and raising
``KeyboardInterrupt``, every task the call left cancelled and async generators it left
suspended finalized before it returns) without paying for a new loop, its self-pipe and
its default executor's threads each time. A loop the caller closed, or one inherited
across ``fork``, is replaced. That was most of a short agent turn's cost through
``run_sync``.
"""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import importlib
import os
import signal
import sys
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import sniffio

from ._errors import ExecutorUsageError

__all__ = ["cancelled_exc_class", "run_sync"]

_T = TypeVar("_T")

_backend = "asyncio"
"""The anyio backend ``run_sync`` starts (the test suite runs every test on both)."""


def _named_library() -> str | None:
    """The library sniffio's own markers name (trio sets them; asyncio does not)."""
    return sniffio.thread_local.name or sniffio.current_async_library_cvar.get()


def _running_library() -> str | None:
    # sniffio's own markers first, then asyncio's running loop: what
    # sniffio.current_async_library() asks, without the exception it raises when none runs
    name = _named_library()
    if name is not None:
        return name
    if asyncio._get_running_loop() is not None:  # a task, or a loop callback outside one
        return "asyncio"
    if "curio" in sys.modules:  # the one other library sniffio sniffs
        try:
            return sniffio.current_async_library()
        except sniffio.AsyncLibraryNotFoundError:
            pass
    return None


def cancelled_exc_class() -> type[BaseException]:
    """``anyio.get_cancelled_exc_class()``, without its backend lookup on asyncio (the
    exception a run in this task is cancelled with; asked once per run, from a task). A
    library other than asyncio says its name to sniffio; asyncio is found without asking
    for the running loop (which costs a ``getpid`` system call each time)."""
    if _named_library() is None and "curio" not in sys.modules:
        return asyncio.CancelledError
    return anyio.get_cancelled_exc_class()


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
    return _run_on_thread_loop(call)


async def _awaited(awaitable: Awaitable[_T]) -> _T:
    return await awaitable


class _ThreadLoop:
    """One thread's event loop, kept between ``run_sync`` calls; closed when the thread's
    locals are dropped (the thread ended) or at interpreter exit (the main thread)."""

    __slots__ = ("loop", "pid")

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.pid = os.getpid()

    def close(self) -> None:
        if self.pid == os.getpid() and not self.loop.is_closed() and not self.loop.is_running():
            self.loop.close()  # its default executor's idle threads are let go, not joined

    def __del__(self) -> None:
        self.close()


_local = threading.local()
_SIGINT = int(signal.SIGINT)
# signal's C half: the module's Python wrappers convert to and from enums (~17 µs for the
# four calls a run_sync makes, against 0.6 µs)
_signal: Any = importlib.import_module("_signal")


def _thread_loop() -> asyncio.AbstractEventLoop:
    kept: _ThreadLoop | None = getattr(_local, "kept", None)
    if kept is None or kept.loop.is_closed() or kept.pid != os.getpid():
        kept = _local.kept = _ThreadLoop()
        if threading.current_thread() is threading.main_thread():
            atexit.register(kept.close)
    return kept.loop


def _anyio_run_vars() -> Any:
    """anyio's per-loop state (``RunVar`` values by loop), or None if this anyio keeps it
    elsewhere: then no loop is kept, for a kept one would carry it from call to call."""
    import anyio.lowlevel

    run_vars = getattr(anyio.lowlevel, "_run_vars", None)
    return run_vars if hasattr(run_vars, "pop") else None


_RUN_VARS = _anyio_run_vars()


def _forget_call_state(loop: asyncio.AbstractEventLoop) -> None:
    """Leave the kept loop as a new one would be for the next call: without anyio's state
    of this call (its worker threads' pool, its default thread limiter, its root task:
    a limiter token a lost task never gave back would otherwise stay lost for every later
    call) and without the timers the call left (they would fire inside another call)."""
    state = _RUN_VARS.pop(loop, None) if _RUN_VARS is not None else None
    for value in (state or {}).values():
        if isinstance(value, set):  # the pool's workers: any still running is told to end
            for worker in list(value):
                stop = getattr(worker, "stop", None)
                if callable(stop):
                    stop()
    for handle in getattr(loop, "_scheduled", ()):
        handle.cancel()


def _run_on_thread_loop(call: Callable[[], Awaitable[_T]]) -> _T:
    """``asyncio.run(call())`` on this thread's kept loop (see the module's docstring)."""
    kept = _RUN_VARS is not None
    # not made the thread's current loop: the caller's policy is left as it was
    loop = _thread_loop() if kept else asyncio.new_event_loop()
    try:
        # as asyncio.run(main()) takes main() made outside the loop: an async function's
        # coroutine is the task's own (no wrapper's frame); any other awaitable is wrapped
        awaitable = call()
        coro = awaitable if asyncio.iscoroutine(awaitable) else _awaited(awaitable)
        task = loop.create_task(coro, context=contextvars.copy_context())
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
            and _signal.getsignal(_SIGINT) is signal.default_int_handler
        )
        if handles_sigint:
            _signal.signal(_SIGINT, on_sigint)
        try:
            return loop.run_until_complete(task)
        except asyncio.CancelledError:
            if interrupted and task.uncancel() == 0:
                raise KeyboardInterrupt() from None
            raise
        finally:
            if handles_sigint and _signal.getsignal(_SIGINT) is on_sigint:
                _signal.signal(_SIGINT, signal.default_int_handler)
    finally:
        try:
            _cancel_left(loop)
            _close_left_generators(loop)
        finally:
            if kept:
                _forget_call_state(loop)
            else:
                loop.close()


# Python 3.11's weak set of every task alive in the process (later versions keep tasks
# elsewhere: then every call looks, as asyncio.run does)
_ALL_TASKS = getattr(asyncio.tasks, "_all_tasks", None)
if not isinstance(_ALL_TASKS, weakref.WeakSet):
    _ALL_TASKS = None


def _cancel_left(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel and await the tasks the call left running (as ``asyncio.run`` does)."""
    if _ALL_TASKS is not None and len(_ALL_TASKS) <= 1:
        return  # the call's own task (still held by the caller) is the only one alive
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


def _close_left_generators(loop: asyncio.AbstractEventLoop) -> None:
    """Finalize the async generators the call left suspended (as ``asyncio.run`` does).
    Not ``loop.shutdown_asyncgens()``: after it the loop warns at every new generator,
    and this loop serves the thread's next call."""
    tracked = getattr(loop, "_asyncgens", None)  # the loop's weak set of live generators
    if not tracked:  # none live: nothing to finalize
        return
    left = list(tracked)
    tracked.clear()
    results = loop.run_until_complete(_aclose_all(left))
    for result, gen in zip(results, left, strict=True):
        if isinstance(result, Exception):
            loop.call_exception_handler(
                {
                    "message": f"an error occurred closing the async generator {gen!r}",
                    "exception": result,
                    "asyncgen": gen,
                }
            )


async def _aclose_all(gens: list[Any]) -> list[Any]:
    return await asyncio.gather(*(gen.aclose() for gen in gens), return_exceptions=True)
