"""A worker's ear on the queue: its :class:`QueueListener` wakes the claim loop the moment a
run it can drive is submitted, answered or released (polling stays as the fallback)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel

from ..stores.queue._listen import QueueListener

__all__ = ["start_listening", "wake_from_thread"]


def start_listening(
    store: Any, names: Sequence[str], label: str, wake: Callable[[], None]
) -> QueueListener:
    """Start a listener whose notes call ``wake()`` on the calling event loop.

    Called from the worker's event loop. The listener's thread hands each wake to the loop
    and waits for it; it holds no lock the loop could want, so a loop busy elsewhere only
    delays the wake. The worker stops the listener from a worker thread while its loop still
    runs, so a wake in flight always completes."""
    token = anyio.lowlevel.current_token()
    heard = lambda: wake_from_thread(wake, token)  # noqa: E731 - one line, named for reading
    listener: QueueListener = store._queue_listener(names, heard, label)
    listener.start()
    return listener


def wake_from_thread(wake: Callable[[], None], token: Any) -> None:
    """Run ``wake()`` on the event loop of ``token`` from another thread (waits for it)."""
    with contextlib.suppress(RuntimeError):  # the loop has ended: nobody to wake
        anyio.from_thread.run_sync(wake, token=token)
