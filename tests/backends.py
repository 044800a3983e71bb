"""Run the engine and agent tests on both anyio backends (asyncio and trio).

Every ``*_sync`` entry point goes through ``trackway.engine.core._sync.run_sync``; the
``async_backend`` fixtures (autouse in ``tests/engine`` and ``tests/agent``) points it at one
backend per test, and ``run_async`` runs a test's own coroutine on the same backend.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import anyio

from trackway.engine.core import _sync

BACKENDS = ("asyncio", "trio")
_T = TypeVar("_T")


def current_backend() -> str:
    return _sync._backend


def run_async(fn: Callable[..., Awaitable[_T]], *args: Any) -> _T:
    """``anyio.run`` on the backend the test runs on."""
    return anyio.run(fn, *args, backend=_sync._backend)


def use_backend(backend: str) -> Iterator[str]:
    """Body of the ``async_backend`` fixtures: point the sync bridge at ``backend``."""
    before = _sync._backend
    _sync._backend = backend
    try:
        yield backend
    finally:
        _sync._backend = before
