"""The one bridge from synchronous code to trackway's async core.

Every ``*_sync`` entry point (``Executor.run_sync``, ``Agent.run_sync``, ``replay``) goes
through :func:`run_sync`: outside an event loop it starts one with anyio; inside one
(asyncio or trio, found with sniffio) it refuses with a message naming the async twin to
await instead, never a bare "already running" from the event loop.
"""

from __future__ import annotations

import asyncio
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
    return anyio.run(call, backend=_backend)
